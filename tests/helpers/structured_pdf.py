"""A multi-page PDF with the structure real documents have, written here so no binary is committed: headings in a
larger bold font with section numbers, body paragraphs wrapped at a hyphen, bulleted lists, a table drawn as cells
at column positions, a running header and a footer with the page number, and optionally an outline (bookmarks)
added with pypdf. What the reader of `m3graph.perception.documents` must keep or remove is in each page's
`Block`s, so tests can say what came back."""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from typing import Any

from tests.helpers.shared_files import assemble_pdf


@dataclass(frozen=True)
class Block:
    """One thing drawn on a page: a heading (`level` 1 or 2), a paragraph's lines, list items or table rows."""

    kind: str  # "heading" | "para" | "list" | "table"
    lines: tuple[str, ...]
    level: int = 1


@dataclass
class Page:
    blocks: list[Block] = field(default_factory=list)


def _esc(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def _page_ops(page: Page, number: int, total: int, header: str) -> str:
    ops = ["BT", "/F1 9 Tf", f"1 0 0 1 72 760 Tm ({_esc(header)}) Tj", "ET"]
    y = 730.0
    for b in page.blocks:
        if b.kind == "heading":
            size = 16 if b.level == 1 else 13
            y -= 8
            ops += ["BT", f"/F2 {size} Tf", f"1 0 0 1 72 {y:.0f} Tm ({_esc(b.lines[0])}) Tj", "ET"]
            y -= size + 8
        elif b.kind == "table":
            for row in b.lines:
                for c, cell in enumerate(row.split("|")):
                    ops += ["BT", "/F1 11 Tf", f"1 0 0 1 {72 + 150 * c} {y:.0f} Tm ({_esc(cell.strip())}) Tj", "ET"]
                y -= 14
            y -= 6
        else:
            for line in b.lines:
                text = f"\x95 {line}" if b.kind == "list" else line
                ops += ["BT", "/F1 11 Tf", f"1 0 0 1 {84 if b.kind == 'list' else 72} {y:.0f} Tm ({_esc(text)}) Tj",
                        "ET"]
                y -= 14
            y -= 6
    ops += ["BT", "/F1 9 Tf", f"1 0 0 1 280 40 Tm (Page {number} of {total}) Tj", "ET"]
    return "\n".join(ops)


def structured_pdf(pages: list[Page], header: str = "ACME Rental Spec - confidential",
                   outline: list[tuple[str, int, int]] | None = None) -> bytes:
    """The PDF's bytes; `outline`: (title, level, 1-based page) bookmarks, added with pypdf when given."""
    objects: list[bytes] = [b"<< /Type /Catalog /Pages 2 0 R >>"]
    n = len(pages)
    f1, f2 = 3 + 2 * n, 4 + 2 * n
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(n))
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {n} >>".encode())
    for i, page in enumerate(pages):
        stream = _page_ops(page, i + 1, n, header).encode("latin-1")
        objects.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {4 + 2 * i} 0 R "
                       f"/Resources << /Font << /F1 {f1} 0 R /F2 {f2} 0 R >> >> >>".encode())
        objects.append(b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream + b"\nendstream")
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold /Encoding /WinAnsiEncoding >>")
    data = assemble_pdf(objects)
    if not outline:
        return data
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(data)))
    parents: dict[int, Any] = {}
    for title, level, page_no in outline:
        parents[level] = writer.add_outline_item(title, page_no - 1, parent=parents.get(level - 1))
    buf = io.BytesIO()
    writer.write(buf)
    return buf.getvalue()
