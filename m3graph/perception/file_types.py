"""What a shared file is, from its bytes: an allow-list of types, never the name alone.

A name says what the sender claims; the bytes say what a parser will meet. Each allowed type is recognised by
its signature (PDF ``%PDF-``, PNG, JPEG, GIF, WebP, WAV, MP3, FLAC, OGG, and zip archives holding a DOCX's or an
XLSX's main part); text types (plain text, Markdown, CSV, SVG) must decode as UTF-8 without NUL bytes, and the
extension only chooses between them. Anything else is refused with `FileRejected`, and a name that promises an
image whose bytes are not one is refused too ("photo.jpg" holding text is not a photo).
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path

from m3graph.errors import InvalidInputError

HEAD_BYTES = 8192
IMAGE_EXTS = {".jpg", ".jpeg", ".png", ".gif", ".webp", ".bmp", ".tif", ".tiff", ".heic"}


class FileRejected(InvalidInputError):
    """One shared file that is not ingested (its reason says why); the rest of the conversation still is."""


@dataclass(frozen=True)
class FileType:
    kind: str  # image | document | chart | audio | other
    mime: str
    ext: str  # the stored copy's extension, from the type (never from the sender's name)
    parser: str  # which reader makes its surrogate: pdf, text, markdown, csv, docx, xlsx, svg, image, audio


_BINARY = (
    (b"%PDF-", FileType("document", "application/pdf", ".pdf", "pdf")),
    (b"\x89PNG\r\n\x1a\n", FileType("image", "image/png", ".png", "image")),
    (b"\xff\xd8\xff", FileType("image", "image/jpeg", ".jpg", "image")),
    (b"GIF87a", FileType("image", "image/gif", ".gif", "image")),
    (b"GIF89a", FileType("image", "image/gif", ".gif", "image")),
    (b"fLaC", FileType("audio", "audio/flac", ".flac", "audio")),
    (b"ID3", FileType("audio", "audio/mpeg", ".mp3", "audio")),
    (b"OggS", FileType("audio", "audio/ogg", ".ogg", "audio")),
)
DOCX = FileType("document", "application/vnd.openxmlformats-officedocument.wordprocessingml.document", ".docx", "docx")
XLSX = FileType("chart", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", ".xlsx", "xlsx")


def _riff(head: bytes) -> FileType | None:
    if head[:4] != b"RIFF" or len(head) < 12:
        return None
    if head[8:12] == b"WEBP":
        return FileType("image", "image/webp", ".webp", "image")
    if head[8:12] == b"WAVE":
        return FileType("audio", "audio/wav", ".wav", "audio")
    return None


def _zip(path: Path) -> FileType | None:
    """DOCX and XLSX by the part names in the central directory (nothing is inflated here)."""
    try:
        with zipfile.ZipFile(path) as z:
            names = set(z.namelist())
    except (zipfile.BadZipFile, OSError, ValueError):
        raise FileRejected("a damaged zip archive (not a readable DOCX/XLSX)") from None
    if "word/document.xml" in names:
        return DOCX
    if "xl/workbook.xml" in names:
        return XLSX
    return None


def _text(head: bytes, name: str) -> FileType | None:
    if b"\x00" in head:
        return None
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # a character cut at the end of the sample is fine
            return None
        text = head[:exc.start].decode("utf-8")
    ext = Path(name).suffix.lower()
    start = text.lstrip("\ufeff \t\r\n")[:400].lower()
    if "<svg" in start or (start.startswith("<?xml") and "<svg" in text.lower()):
        return FileType("chart", "image/svg+xml", ".svg", "svg")
    if ext in (".csv", ".tsv"):
        return FileType("chart", "text/csv", ".csv", "csv")
    if ext in (".md", ".markdown"):
        return FileType("document", "text/markdown", ".md", "markdown")
    return FileType("document", "text/plain", ".txt", "text")


def sniff(path: Path, name: str) -> FileType:
    """The file's type from its first bytes (and the zip directory for Office files); raises `FileRejected`."""
    with path.open("rb") as f:
        head = f.read(HEAD_BYTES)
    if not head:
        raise FileRejected("the file is empty")
    found = next((t for sig, t in _BINARY if head.startswith(sig)), None) or _riff(head)
    if found is None and head[:2] == b"\xff\xfb":  # MP3 frame sync without an ID3 tag
        found = FileType("audio", "audio/mpeg", ".mp3", "audio")
    if found is None and head.startswith(b"PK\x03\x04"):
        found = _zip(path)
        if found is None:
            raise FileRejected("a zip archive that is neither a DOCX nor an XLSX (not an allowed type)")
    if found is None:
        found = _text(head, name)
    claims_image = Path(name).suffix.lower() in IMAGE_EXTS
    if claims_image and (found is None or found.kind != "image"):
        what = found.mime if found else "unrecognised bytes"
        raise FileRejected(f"named like an image but it is not one (its bytes are {what})")
    if found is None:
        raise FileRejected("not an allowed type (PDF, PNG/JPEG/GIF/WebP, text/Markdown, CSV, DOCX, XLSX, SVG, "
                           "WAV/MP3/FLAC/OGG are)")
    return found
