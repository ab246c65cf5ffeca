"""Files a conversation shares, generated at test time from known content (nothing binary is committed).

A PDF is written by hand (one text object per page, a correct xref), since no PDF-drawing library is installed;
pypdf's writer encrypts one for the password case; openpyxl and python-docx write their own formats; the photo is
drawn with Pillow. The bad files are built to fail one check each.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from m3graph.observations import FaceCluster, FaceObservation


def _pdf_text(s: str) -> str:
    return s.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def pdf_bytes(pages: list[list[str]]) -> bytes:
    """A valid PDF whose page i shows the lines `pages[i]` (Helvetica, extractable text)."""
    objects: list[bytes] = []
    n_pages = len(pages)
    font_id = 3 + 2 * n_pages
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(n_pages))
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {n_pages} >>".encode())
    for i, lines in enumerate(pages):
        ops = ["BT", "/F1 12 Tf", "14 TL", "72 720 Td"]
        for line in lines:
            ops += [f"({_pdf_text(line)}) Tj", "T*"]
        ops.append("ET")
        stream = "\n".join(ops).encode("latin-1")
        objects.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {4 + 2 * i} 0 R "
                       f"/Resources << /Font << /F1 {font_id} 0 R >> >> >>".encode())
        objects.append(b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream + b"\nendstream")
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    return assemble_pdf(objects)


def assemble_pdf(objects: list[bytes]) -> bytes:
    """A PDF file from its numbered objects (object 1 the catalog): the header, each object, the cross-reference
    table and the trailer. Shared by the generated PDFs of the tests (here and structured_pdf.py)."""
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for k, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(f"{k} 0 obj\n".encode() + body + b"\nendobj\n")
    xref = out.tell()
    out.write(f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode())
    for off in offsets:
        out.write(f"{off:010d} 00000 n \n".encode())
    out.write(f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode())
    return out.getvalue()


def encrypted_pdf(path: Path, password: str = "s3cret") -> Path:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter()
    for page in PdfReader(io.BytesIO(pdf_bytes([["Salary: 98,000 EUR"]]))).pages:
        writer.add_page(page)
    writer.encrypt(user_password=password, owner_password=password + "-owner")
    with path.open("wb") as f:
        writer.write(f)
    return path


def xlsx(path: Path, rows: list[list[object]], sheet: str = "Runs") -> Path:
    import openpyxl

    book = openpyxl.Workbook()
    ws = book.active
    assert ws is not None
    ws.title = sheet
    for row in rows:
        ws.append(row)
    book.save(path)
    return path


def docx_file(path: Path, heading: str, paragraphs: list[str], table: list[list[str]]) -> Path:
    import docx

    document = docx.Document()
    document.add_heading(heading, level=1)
    for p in paragraphs:
        document.add_paragraph(p)
    t = document.add_table(rows=len(table), cols=len(table[0]))
    for r, row in enumerate(table):
        for c, value in enumerate(row):
            t.cell(r, c).text = value
    document.save(str(path))
    return path


def photo(path: Path, colour: tuple[int, int, int] = (30, 60, 200), size: tuple[int, int] = (160, 120)) -> Path:
    from PIL import Image

    arr = np.zeros((size[1], size[0], 3), dtype=np.uint8)
    arr[:] = colour
    arr[: size[1] // 4] = (250, 250, 250)  # a white band on top
    Image.fromarray(arr).save(path)
    return path


def chart_svg(path: Path, values: dict[str, int], title: str = "Kilometres run per month") -> Path:
    bars, labels = [], []
    for i, (label, v) in enumerate(values.items()):
        bars.append(f'<rect x="{20 + 40 * i}" y="{200 - v}" width="30" height="{v}" fill="steelblue"/>')
        labels.append(f'<text x="{20 + 40 * i}" y="215">{label}</text><text x="{20 + 40 * i}" '
                      f'y="{195 - v}">{v}</text>')
    path.write_text(f'<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="400" height="230">'
                    f"<title>{title}</title>{''.join(bars)}{''.join(labels)}</svg>", encoding="utf-8")
    return path


def zip_bomb_xlsx(path: Path, inflated_mb: int = 8, part: str = "xl/workbook.xml") -> Path:
    """An "XLSX" (or, with part="word/document.xml", a "DOCX") with an entry that inflates ~1000x (zeros):
    refused from its central directory."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", "<Types/>")
        z.writestr(part, "<root/>")
        z.writestr("payload.xml", b"\0" * (inflated_mb * 2**20))
    return path


def stand_in_photo_faces(by_sha: dict[str, list[np.ndarray]]) -> Any:
    """A stand-in for `attachments.photo_faces` (face detection only; the graph stays the real Neo4j): the faces of
    each photo by its SHA-256, which the stored copy's name carries."""
    def detect(path: Path, settings: Any, crop_dir: Path | None, start_s: float) -> list[FaceCluster]:
        vectors = next((v for sha, v in by_sha.items() if sha in path.name), [])
        return [FaceCluster(label=i, observations=[FaceObservation(
            frame_time_s=start_s, bbox=(0, 0, 40, 40), det_score=0.99, quality=30.0, embedding=v.tolist())])
            for i, v in enumerate(vectors)]
    return detect
