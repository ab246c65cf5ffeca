"""Text a small offline stack can read from a shared document or chart: passages that keep where they came from.

A surrogate is only useful as evidence if it says where its words are, so every passage keeps its page (PDF),
its section (Markdown/DOCX headings) or its sheet and row numbers (CSV/XLSX/DOCX tables, each row written as
``row 3: month=March, km=42``), and a chart's numbers are read from the file that carries them (CSV/XLSX cells,
an SVG's text and titles). Readers are well-kept libraries (pypdf, python-docx, openpyxl in read-only mode) behind
checks that come first: DOCX/XLSX are zip archives and are refused from the central directory when their
declared sizes or ratios say "bomb" (zipfile never inflates past an entry's declared size, so the declared sizes
bound the work); SVG with entity declarations is refused before it is parsed. Every failure is a `FileRejected`
naming the reason (corrupt, password-protected, ...); the caller keeps the rest of the conversation.
"""

from __future__ import annotations

import csv
import io
import logging
import math
import re
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from m3graph.perception.file_types import FileRejected
from m3graph.settings import FilesConfig

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Passage:
    text: str
    page: int | None = None  # 1-based PDF page
    section: str | None = None  # heading, sheet name, "table 2"

    @property
    def where(self) -> str:
        return ", ".join(x for x in (f"page {self.page}" if self.page else "", self.section or "") if x)


def chunks(text: str, size: int) -> list[str]:
    """`text` (whitespace collapsed) in pieces of at most `size` characters, cut at a sentence or a space."""
    text = " ".join(text.split())
    out = []
    while len(text) > size:
        cut = max(text.rfind(". ", size // 2, size), text.rfind(" ", size * 3 // 4, size))
        cut = size if cut <= 0 else cut + 1
        out.append(text[:cut].strip())
        text = text[cut:].strip()
    return [*out, text] if text else out


def check_zip(path: Path, cfg: FilesConfig) -> None:
    """Refuses a zip bomb from the central directory alone: entry count, declared total, per-entry ratio."""
    try:
        with zipfile.ZipFile(path) as z:
            infos = z.infolist()
    except (zipfile.BadZipFile, OSError, ValueError):
        raise FileRejected("a damaged zip archive") from None
    if len(infos) > cfg.max_zip_entries:
        raise FileRejected(f"a zip archive of {len(infos)} entries (more than files.max_zip_entries = "
                           f"{cfg.max_zip_entries}): refused as a possible zip bomb")
    total = sum(i.file_size for i in infos)
    if total > cfg.max_unzipped_mb * 2**20:
        raise FileRejected(f"unpacks to {total / 2**20:.0f} MB (more than files.max_unzipped_mb = "
                           f"{cfg.max_unzipped_mb:g}): refused as a zip bomb")
    for i in infos:
        if i.file_size > 2**20 and i.file_size > cfg.max_zip_ratio * max(i.compress_size, 1):
            raise FileRejected(f"entry {i.filename[:80]!r} inflates {i.file_size / max(i.compress_size, 1):.0f}x "
                               f"(more than files.max_zip_ratio = {cfg.max_zip_ratio:g}): refused as a zip bomb")


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return " ".join(str(value).split())


def _number(cell: str) -> float | None:
    try:
        value = float(cell.replace(",", ""))
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def table_passages(rows: Iterable[list[object]], section: str | None, cfg: FilesConfig) -> list[Passage]:
    """A table as rows ``row N: header=value, ...`` (the first non-empty row is the header), grouped into
    passages, plus one line per numeric column with its range and where the extremes are (what a chart shows)."""
    it = iter(rows)
    header: list[str] = []
    for raw in it:
        header = [_cell(v) for v in raw]
        if any(header):
            break
    header = [h or f"column {i + 1}" for i, h in enumerate(header)]
    lines: list[str] = []
    numbers: dict[int, list[tuple[float, str]]] = {}
    budget = cfg.max_passages * cfg.rows_per_passage
    for n, raw in enumerate(it, start=1):
        cells = [_cell(v) for v in raw]
        if not any(cells):
            continue
        if len(lines) >= budget:
            log.warning("table %s: more than %d rows, the rest is not kept", section or "", budget)
            break
        names = header + [f"column {i + 1}" for i in range(len(header), len(cells))]
        pairs = [f"{names[i]}={c}" for i, c in enumerate(cells) if c]
        lines.append(f"row {n}: " + ", ".join(pairs))
        label = cells[0] if cells else str(n)
        for i, c in enumerate(cells[1:], start=1):
            value = _number(c)
            if value is not None:
                numbers.setdefault(i, []).append((value, label))
    out = [Passage("; ".join(lines[i:i + cfg.rows_per_passage]), section=section)
           for i in range(0, len(lines), cfg.rows_per_passage)]
    summary = [series_summary(header[i], values) for i, values in sorted(numbers.items())
               if len(values) >= 2 and i < len(header)]
    if summary:
        out.insert(0, Passage("columns " + ", ".join(header) + ". " + "; ".join(summary), section=section))
    return out


MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")
_MONTH_OF = {m[:3].lower(): m for m in MONTHS} | {"sept": "September"}


def label_name(label: str) -> str:
    """A point's label as a reader names it: an abbreviated month is written out ("Jan" -> "January"), since the
    question says "January" and a small reader does not expand it; any other label is kept as it is."""
    key = label.strip().rstrip(".").lower()
    full = _MONTH_OF.get(key)
    return full if full is not None and key != full.lower() else label


def series_summary(name: str, points: list[tuple[float, str]]) -> str:
    """One numeric series in words a reader needs without arithmetic: where it peaks and where it is lowest, with
    their labels and values, and its total, e.g. ``km peaks in May (61), lowest in January (12); 7 values, total
    300``. Ties name every label (a chart question asking "which month" must not get one of two at random)."""
    hi_value = max(v for v, _ in points)
    lo_value = min(v for v, _ in points)
    highs = " and ".join(label_name(lab) for v, lab in points if v == hi_value)
    lows = " and ".join(label_name(lab) for v, lab in points if v == lo_value)
    total = sum(v for v, _ in points)
    return (f"{name} peaks in {highs} ({hi_value:g}), lowest in {lows} ({lo_value:g}); "
            f"{len(points)} values, total {total:g}")


def paired_series(lines: list[str]) -> tuple[str, list[tuple[float, str]]] | None:
    """A chart's printed values from text read off it (OCR lines): the first pair of adjacent lines where one is
    only labels and the other only numbers, as many of each (a value row under a label row, as spreadsheet
    charts draw a data table), with the nearest line above them that is neither as the series' name. None when
    no such pair is found (then the numbers could not be read)."""
    rows = [line.split() for line in lines]
    for i in range(len(rows) - 1):
        a, b = rows[i], rows[i + 1]
        if len(a) < 2 or len(a) != len(b):
            continue
        for labels, values in ((a, b), (b, a)):
            numbers = [_number(v) for v in values]
            if all(n is not None for n in numbers) and all(_number(x) is None for x in labels):
                title = next((lines[j].strip() for j in range(i - 1, -1, -1) if lines[j].strip()), "values")
                return title, [(float(n), lab) for n, lab in zip(numbers, labels, strict=True) if n is not None]
    return None


def pdf_passages(path: Path, cfg: FilesConfig) -> list[Passage]:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError, PyPdfError

    try:
        reader = PdfReader(str(path))
        if reader.is_encrypted and not reader.decrypt(""):
            raise FileRejected("a password-protected PDF (no text can be read without the password)")
        pages = list(reader.pages)
        out: list[Passage] = []
        for number, page in enumerate(pages, start=1):
            out += [Passage(c, page=number) for c in chunks(page.extract_text() or "", cfg.passage_chars)]
            if len(out) >= cfg.max_passages:
                break
    except FileRejected:
        raise
    except (PdfReadError, PyPdfError, ValueError, KeyError, TypeError, AttributeError, OSError) as exc:
        raise FileRejected(f"a corrupt PDF ({type(exc).__name__}: {str(exc)[:120]})") from None
    return out


_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.+?)\s*#*\s*$")


def text_passages(path: Path, cfg: FilesConfig, markdown: bool) -> list[Passage]:
    """Plain text in passages; Markdown by section (the heading path, "Budget > Travel")."""
    text = path.read_bytes().decode("utf-8", errors="replace")
    if not markdown:
        return [Passage(c) for c in chunks(text, cfg.passage_chars)]
    out: list[Passage] = []
    trail: list[tuple[int, str]] = []
    body: list[str] = []

    def flush() -> None:
        section = " > ".join(t for _, t in trail) or None
        out.extend(Passage(c, section=section) for c in chunks("\n".join(body), cfg.passage_chars))
        body.clear()

    for line in text.splitlines():
        m = _HEADING.match(line)
        if m:
            flush()
            level = len(m.group(1))
            trail = [(lv, t) for lv, t in trail if lv < level] + [(level, m.group(2))]
        else:
            body.append(line)
    flush()
    return out


def docx_passages(path: Path, cfg: FilesConfig) -> list[Passage]:
    check_zip(path, cfg)
    import docx

    try:
        document = docx.Document(str(path))
    except Exception as exc:  # python-docx raises many types for a broken package (KeyError, lxml errors, ...)
        raise FileRejected(f"a corrupt DOCX ({type(exc).__name__})") from None
    out: list[Passage] = []
    section: str | None = None
    body: list[str] = []

    def flush() -> None:
        out.extend(Passage(c, section=section) for c in chunks("\n".join(body), cfg.passage_chars))
        body.clear()

    for para in document.paragraphs:
        style = (para.style.name if para.style is not None else "") or ""
        if style.lower().startswith(("heading", "title")) and para.text.strip():
            flush()
            section = " ".join(para.text.split())
        else:
            body.append(para.text)
    flush()
    for t, table in enumerate(document.tables, start=1):
        rows = ([cell.text for cell in row.cells] for row in table.rows)
        out += table_passages(rows, f"table {t}", cfg)
    return out


def csv_passages(path: Path, cfg: FilesConfig) -> list[Passage]:
    text = path.read_bytes().decode("utf-8", errors="replace")
    try:
        dialect = csv.Sniffer().sniff(text[:4096], delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel  # type: ignore[assignment]
    try:
        rows: Iterator[list[object]] = csv.reader(io.StringIO(text), dialect)
        return table_passages(rows, None, cfg)
    except csv.Error as exc:
        raise FileRejected(f"an unreadable CSV ({exc})") from None


def xlsx_passages(path: Path, cfg: FilesConfig) -> list[Passage]:
    check_zip(path, cfg)
    import openpyxl

    try:
        book = openpyxl.load_workbook(str(path), read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises KeyError/InvalidFileException/lxml errors for a broken package
        raise FileRejected(f"a corrupt XLSX ({type(exc).__name__})") from None
    out: list[Passage] = []
    try:
        for sheet in book.worksheets:
            rows = (list(r) for r in sheet.iter_rows(values_only=True))
            out += table_passages(rows, f"sheet {sheet.title}", cfg)
    finally:
        book.close()
    return out


def svg_passages(path: Path, cfg: FilesConfig) -> list[Passage]:
    """A chart drawn as SVG: its title, description and every text label in document order (axis labels and
    values are text in a generated chart)."""
    import xml.etree.ElementTree as ET

    data = path.read_bytes()
    if b"<!ENTITY" in data or b"<!entity" in data:
        raise FileRejected("an SVG with entity declarations (refused: entity expansion)")
    try:
        root = ET.fromstring(data)
    except ET.ParseError as exc:
        raise FileRejected(f"an SVG that is not well-formed XML ({exc})") from None
    words = []
    columns: dict[str, list[str]] = {}  # x position -> the texts drawn there (a bar's label and its value)
    for el in root.iter():
        tag = el.tag.rsplit("}", 1)[-1]
        if tag in ("title", "desc", "text", "tspan") and el.text and el.text.strip():
            words.append(" ".join(el.text.split()))
            if tag == "text" and el.get("x"):
                columns.setdefault(el.get("x", "").strip(), []).append(words[-1])
    if not words:
        return []
    out = [Passage(c) for c in chunks("chart labels: " + " | ".join(words), cfg.passage_chars)]
    points = _svg_points(columns)
    if points:
        paired = {lab for _, lab in points}
        title = next((w for w in words if w not in paired and _number(w) is None), "values")
        out.insert(0, Passage("chart values: " + series_summary(title, points)))
    return out


def _svg_points(columns: dict[str, list[str]]) -> list[tuple[float, str]]:
    """(value, label) for every x position that holds exactly one label and one number (a bar with its value
    printed over it and its label under it); fewer than two such positions is no series."""
    points = []
    for texts in columns.values():
        numbers = [n for t in texts if (n := _number(t)) is not None]
        labels = [t for t in texts if _number(t) is None]
        if len(texts) == 2 and len(numbers) == 1 and len(labels) == 1:
            points.append((numbers[0], labels[0]))
    return points if len(points) >= 2 else []


def passages(path: Path, parser: str, cfg: FilesConfig) -> list[Passage]:
    """The passages of one document or table file (parser names from `file_types.FileType.parser`)."""
    readers = {"pdf": lambda: pdf_passages(path, cfg), "text": lambda: text_passages(path, cfg, False),
               "markdown": lambda: text_passages(path, cfg, True), "docx": lambda: docx_passages(path, cfg),
               "csv": lambda: csv_passages(path, cfg), "xlsx": lambda: xlsx_passages(path, cfg),
               "svg": lambda: svg_passages(path, cfg)}
    if parser not in readers:
        return []
    found = readers[parser]()
    if len(found) > cfg.max_passages:
        log.warning("%s: %d passages, the first %d are kept (files.max_passages)", path.name, len(found),
                    cfg.max_passages)
    return found[:cfg.max_passages]
