"""A generated 17-page PDF read back with its structure (issue 39): headings and section numbers, page numbers,
list items and table rows kept; running header, page-number footer and line-end hyphenation removed; an outline
gives the same sections as the font and numbering cues."""

from __future__ import annotations

from pathlib import Path

import pytest

from m3graph.perception import documents
from m3graph.settings import FilesConfig
from tests.helpers.spec_pdf import NOTICE_PAGE, TOPICS, spec_pdf
from tests.helpers.structured_pdf import Block, Page, structured_pdf


@pytest.mark.parametrize("outline", [False, True])
def test_pages_headings_rows_survive_and_running_text_goes(tmp_path: Path, outline: bool) -> None:
    path = tmp_path / "spec.pdf"
    path.write_bytes(spec_pdf(outline=outline))
    found = documents.passages(path, "pdf", FilesConfig())
    assert [p.page for p in found] == list(range(1, len(TOPICS) + 1))  # one section a page, each cited by page
    assert [p.section for p in found] == [f"{i + 1} {t}" for i, (t, _) in enumerate(TOPICS)]
    notice = found[NOTICE_PAGE - 1]
    assert "three months' written notice" in notice.text and notice.where == "page 4, 4 Termination and notice"
    text = " ".join(p.text for p in found)
    assert "rental specification" not in text and "Page 4 of 17" not in text  # running header and footer
    assert "sec-" not in text and "section 4 continues" in text  # "sec-" / "tion" joined
    keys = next(p for p in found if p.section == "12 Keys")
    assert "• cellar key;" in keys.text and "Key | Copies | Cost; Front door | 1 | 35 EUR;" in keys.text


def test_nested_numbered_headings_make_a_path_and_a_passage_never_spans_pages(tmp_path: Path) -> None:
    pages = [Page([Block("heading", ("2 Payment",)), Block("para", ("Rent is paid monthly.",)),
                   Block("heading", ("2.1 Late payment",), 2), Block("para", ("A late fee of 5 EUR applies.",))]),
             Page([Block("para", ("The fee is waived once a year.",))]),
             Page([Block("heading", ("3 Signatures",)), Block("para", ("Both parties sign.",))])]
    path = tmp_path / "pay.pdf"
    path.write_bytes(structured_pdf(pages))
    found = documents.passages(path, "pdf", FilesConfig())
    assert [(p.page, p.section, p.text) for p in found] == [
        (1, "2 Payment", "Rent is paid monthly."),
        (1, "2 Payment > 2.1 Late payment", "A late fee of 5 EUR applies."),
        (2, "2 Payment > 2.1 Late payment", "The fee is waived once a year."),
        (3, "3 Signatures", "Both parties sign.")]  # three pages: the running header recurs enough to go


def test_a_long_section_is_cut_between_rows(tmp_path: Path) -> None:
    rows = tuple(f"Item {i} | {i} | {i * 3} EUR" for i in range(60))
    path = tmp_path / "t.pdf"
    path.write_bytes(structured_pdf([Page([Block("heading", ("1 Price list",)), Block("table", rows[:40])]),
                                     Page([Block("table", rows[40:])]), Page([Block("para", ("End.",))])]))
    found = documents.passages(path, "pdf", FilesConfig(passage_chars=200))
    assert all(len(p.text) <= 200 for p in found) and len(found) > 3
    assert all(p.text.endswith(" EUR;") for p in found[:-1])  # every passage ends at a row's end
    assert [p.page for p in found if "Item 39 " in p.text or "Item 40 " in p.text] == [1, 2]
    assert {p.section for p in found} == {"1 Price list"}


def test_a_structure_failure_falls_back_to_plain_text_by_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    from m3graph.perception import pdf_structure

    def broken(*_: object) -> list[pdf_structure.Block]:
        raise IndexError("odd text runs")

    monkeypatch.setattr(pdf_structure, "blocks", broken)
    path = tmp_path / "spec.pdf"
    path.write_bytes(spec_pdf())
    found = documents.passages(path, "pdf", FilesConfig())
    assert [p.page for p in found] == list(range(1, len(TOPICS) + 1)) and {p.section for p in found} == {None}
    assert "three months' written notice" in found[NOTICE_PAGE - 1].text


def test_markdown_and_docx_passages_have_the_same_shape(tmp_path: Path) -> None:
    import docx

    md = tmp_path / "notes.md"
    md.write_text("# Move\n## Keys\nWe got three keys\nfrom the caretaker.\n\n- front door\n- cellar\n\n"
                  "| Key | Copies |\n|---|---|\n| Front | 1 |\n", encoding="utf-8")
    rows = "We got three keys from the caretaker. - front door; - cellar; Key | Copies; Front | 1;"
    assert documents.passages(md, "markdown", FilesConfig()) == [documents.Passage(rows, section="Move > Keys")]
    d = docx.Document()
    d.add_heading("Move", level=1)
    d.add_heading("Keys", level=2)
    d.add_paragraph("We got three keys.")
    d.add_heading("Parking", level=2)
    d.add_paragraph("One space in the courtyard.")
    d.save(str(tmp_path / "notes.docx"))
    assert [(p.section, p.text) for p in documents.passages(tmp_path / "notes.docx", "docx", FilesConfig())] == [
        ("Move > Keys", "We got three keys."), ("Move > Parking", "One space in the courtyard.")]
