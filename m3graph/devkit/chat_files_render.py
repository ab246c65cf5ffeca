"""Files for the chat-with-files development set, written from known facts with no extra dependency.

PDF, DOCX and XLSX are written by hand (a PDF with Helvetica text operators; DOCX and XLSX as the few XML
parts a reader needs), so the generator needs nothing the product does not already install and every byte
follows from the facts: the same facts give the same files. Charts are drawn with Pillow (PNG, with Pillow's
bundled font, so the pixels do not depend on the fonts of the machine) and as SVG with their numbers as text.
"""

from __future__ import annotations

import zipfile
from collections.abc import Sequence
from pathlib import Path
from xml.sax.saxutils import escape

_ZIP_TIME = (2024, 1, 1, 0, 0, 0)  # fixed member times: identical bytes on every run


def _pdf_text(value: str) -> str:
    return value.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def write_pdf(path: Path, pages: Sequence[Sequence[str]], title: str = "") -> None:
    """A PDF whose pages hold the given lines (Helvetica 11 pt, the first line of a page 15 pt bold)."""
    objects: list[bytes] = []
    n_pages = len(pages)
    # 1 catalog, 2 pages, 3 font, 4 bold font, then per page: page object, content stream, 5 info.
    kids = " ".join(f"{6 + 2 * i} 0 R" for i in range(n_pages))
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {n_pages} >>".encode())
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold /Encoding /WinAnsiEncoding >>")
    objects.append(f"<< /Title ({_pdf_text(title)}) /Producer (m3graph devkit) >>".encode("latin-1"))
    for i, lines in enumerate(pages):
        ops = ["BT", "/F2 15 Tf", "56 780 Td", "18 TL"]
        for j, line in enumerate(lines):
            if j == 1:
                ops.append("/F1 11 Tf")
            ops.append(f"({_pdf_text(line)}) Tj T*")
        ops.append("ET")
        stream = "\n".join(ops).encode("latin-1")
        objects.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 3 0 R "
                       f"/F2 4 0 R >> >> /Contents {7 + 2 * i} 0 R >>".encode())
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R /Info 5 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    path.write_bytes(bytes(out))


def _write_zip(path: Path, members: dict[str, str]) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, text in members.items():
            zf.writestr(zipfile.ZipInfo(name, _ZIP_TIME), text.encode("utf-8"), zipfile.ZIP_DEFLATED)


_XML = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
_RELS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_PKG_RELS = "http://schemas.openxmlformats.org/package/2006/relationships"


def write_docx(path: Path, heading: str, paragraphs: Sequence[str]) -> None:
    """A Word document: one heading paragraph (bold) and plain paragraphs."""
    body = [f'<w:p><w:r><w:rPr><w:b/></w:rPr><w:t xml:space="preserve">{escape(heading)}</w:t></w:r></w:p>']
    body += [f'<w:p><w:r><w:t xml:space="preserve">{escape(p)}</w:t></w:r></w:p>' for p in paragraphs]
    _write_zip(path, {
        "[Content_Types].xml": _XML + (
            '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
            '<Default Extension="xml" ContentType="application/xml"/>'
            '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.'
            'wordprocessingml.document.main+xml"/></Types>'),
        "_rels/.rels": _XML + (
            f'<Relationships xmlns="{_PKG_RELS}"><Relationship Id="rId1" Type="{_RELS}/officeDocument" '
            'Target="word/document.xml"/></Relationships>'),
        "word/document.xml": _XML + (
            '<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>'
            + "".join(body) + "</w:body></w:document>"),
    })


def _cell(ref: str, value: str | float) -> str:
    if isinstance(value, (int, float)):
        return f'<c r="{ref}"><v>{value:g}</v></c>'
    return f'<c r="{ref}" t="inlineStr"><is><t>{escape(value)}</t></is></c>'


def write_xlsx(path: Path, sheet: str, rows: Sequence[Sequence[str | float]]) -> None:
    """A workbook with one sheet of the given rows (strings inline, numbers as numbers)."""
    cols = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    xml_rows = "".join(
        f'<row r="{r}">' + "".join(_cell(f"{cols[c]}{r}", v) for c, v in enumerate(row)) + "</row>"
        for r, row in enumerate(rows, start=1))
    _write_zip(path, {
        "[Content_Types].xml": _XML + (
            '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
            '<Default Extension="xml" ContentType="application/xml"/>'
            '<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.'
            'spreadsheetml.sheet.main+xml"/>'
            '<Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-'
            'officedocument.spreadsheetml.worksheet+xml"/></Types>'),
        "_rels/.rels": _XML + (
            f'<Relationships xmlns="{_PKG_RELS}"><Relationship Id="rId1" Type="{_RELS}/officeDocument" '
            'Target="xl/workbook.xml"/></Relationships>'),
        "xl/workbook.xml": _XML + (
            '<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" '
            f'xmlns:r="{_RELS}"><sheets><sheet name="{escape(sheet)}" sheetId="1" r:id="rId1"/></sheets>'
            '</workbook>'),
        "xl/_rels/workbook.xml.rels": _XML + (
            f'<Relationships xmlns="{_PKG_RELS}"><Relationship Id="rId1" Type="{_RELS}/worksheet" '
            'Target="worksheets/sheet1.xml"/></Relationships>'),
        "xl/worksheets/sheet1.xml": _XML + (
            '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>'
            + xml_rows + "</sheetData></worksheet>"),
    })


def write_csv(path: Path, header: Sequence[str], rows: Sequence[Sequence[str | float]]) -> None:
    import csv

    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(header)
        writer.writerows([[f"{v:g}" if isinstance(v, (int, float)) else v for v in row] for row in rows])


def write_chart_png(path: Path, title: str, labels: Sequence[str], values: Sequence[float]) -> None:
    """A bar chart with a data row, as spreadsheet charts draw it: the title on top, under each bar its label and
    under that its value, so the two rows line up (what OCR can read back in order)."""
    from PIL import Image, ImageDraw, ImageFont

    width, height, margin = 1200, 700, 60
    img = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(img)
    title_font, font = ImageFont.load_default(size=34), ImageFont.load_default(size=24)
    draw.text((margin, 20), title, font=title_font, fill="black")
    top, bottom = 110, height - 110
    slot = (width - 2 * margin) / len(values)
    peak = max(values) or 1.0
    for i, (label, value) in enumerate(zip(labels, values, strict=True)):
        x0 = margin + i * slot + slot * 0.2
        x1 = margin + (i + 1) * slot - slot * 0.2
        y0 = bottom - (bottom - top) * value / peak
        draw.rectangle((x0, y0, x1, bottom), fill=(60, 110, 190))
        draw.text(((x0 + x1) / 2, bottom + 12), label, font=font, fill="black", anchor="ma")
        draw.text(((x0 + x1) / 2, bottom + 46), f"{value:g}", font=font, fill="black", anchor="ma")
    draw.line((margin, bottom, width - margin, bottom), fill="black", width=2)
    img.save(path, format="PNG", optimize=False)


def write_chart_svg(path: Path, title: str, labels: Sequence[str], values: Sequence[float]) -> None:
    """The same bar chart as SVG: bars as rects, labels and values as text elements."""
    width, height, margin, top, bottom = 1200, 700, 60, 130, 620
    slot = (width - 2 * margin) / len(values)
    peak = max(values) or 1.0
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}">', f'<rect width="{width}" height="{height}" fill="white"/>',
             f'<text x="{margin}" y="60" font-size="34" font-family="sans-serif">{escape(title)}</text>']
    for i, (label, value) in enumerate(zip(labels, values, strict=True)):
        x0 = margin + i * slot + slot * 0.2
        bar_h = (bottom - top) * value / peak
        mid = x0 + slot * 0.3
        parts.append(f'<rect x="{x0:.1f}" y="{bottom - bar_h:.1f}" width="{slot * 0.6:.1f}" height="{bar_h:.1f}" '
                     'fill="#3c6ebe"/>')
        parts.append(f'<text x="{mid:.1f}" y="{bottom - bar_h - 8:.1f}" font-size="24" text-anchor="middle">'
                     f"{value:g}</text>")
        parts.append(f'<text x="{mid:.1f}" y="{bottom + 36}" font-size="24" text-anchor="middle">'
                     f"{escape(label)}</text>")
    parts.append("</svg>")
    path.write_text("\n".join(parts) + "\n", encoding="utf-8")


def write_receipt_photo(path: Path, lines: Sequence[str], seed: int) -> None:
    """A receipt as a phone photo would show it: a paper strip on a darker table, turned a little, JPEG-compressed
    with mild noise; the lines are what OCR should read back."""
    import random

    import numpy as np
    from PIL import Image, ImageDraw, ImageFilter, ImageFont

    rng = random.Random(seed)
    font = ImageFont.load_default(size=30)
    paper = Image.new("L", (720, 80 + 46 * len(lines)), 246)
    draw = ImageDraw.Draw(paper)
    for i, line in enumerate(lines):
        draw.text((40, 40 + 46 * i), line, font=font, fill=25)
    paper = paper.rotate(rng.uniform(-2.0, 2.0), resample=Image.Resampling.BICUBIC, expand=True, fillcolor=90)
    table = Image.new("L", (paper.width + 160, paper.height + 160), 90)
    table.paste(paper, (80, 80))
    pixels = np.asarray(table, dtype=np.float32)
    pixels += np.random.default_rng(seed).normal(0.0, 6.0, pixels.shape)  # sensor noise, seeded
    grey = Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8)).filter(ImageFilter.GaussianBlur(0.6))
    photo = Image.merge("RGB", [grey] * 3)
    photo.save(path, format="JPEG", quality=85)


def write_voice_note(path: Path, sentences: Sequence[str], voice: str = "A", pause_s: float = 0.6) -> None:
    """A WAV voice note (16 kHz mono) of `sentences` spoken by one espeak-ng voice of the test media
    (`devkit.testmedia.VOICES`), with a pause between them; needs espeak-ng and sox, as the test videos do."""
    import tempfile

    import numpy as np

    from m3graph.devkit import testmedia

    gap = np.zeros(round(pause_s * testmedia.SR), dtype=np.int16)
    parts: list[np.ndarray] = [gap]
    with tempfile.TemporaryDirectory(prefix="m3g-voice-") as tmp:
        for i, text in enumerate(sentences):
            line = testmedia.Line(voice=voice, start_s=0.0, text=text, keywords=[])
            parts += [testmedia._speak(line, Path(tmp) / f"line{i}.wav"), gap]
    testmedia._write_wav(path, np.concatenate(parts))
