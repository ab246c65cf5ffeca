"""Text a small offline stack can read from a shared document or chart: passages that keep where they came from.

A surrogate is only useful as evidence if it says where its words are, so every passage keeps its page and
heading path (PDF, rebuilt with its headings, rows, hyphenation and running headers: `pdf_structure`), its section
(Markdown/DOCX heading path) or its sheet and row numbers (CSV/XLSX/DOCX tables, each row written as
``row 3: month=March, km=42``), and a chart's numbers are read from the file that carries them (CSV/XLSX cells,
an SVG's text and titles). Readers are well-kept libraries (pypdf, python-docx, openpyxl in read-only mode) behind
checks that come first: DOCX/XLSX are zip archives and are refused from the central directory when their
declared sizes or ratios say "bomb" (zipfile never inflates past an entry's declared size, so the declared sizes
bound the work); SVG with entity declarations is refused before it is parsed. Every failure is a `FileRejected`
naming the reason (corrupt, password-protected, ...); the caller keeps the rest of the conversation.

What a file *declares* is checked against `DeclaredLimits` before the reader is asked to build it (issue 37: a
CSV of 10^6 columns, an XLSX declaring a huge sheet, an SVG of many elements, a DOCX whose XML is 100 MB inside
every zip limit): a CSV's row width and columns, an XLSX's sheet dimensions and XML sizes, an SVG's element
count, a PDF's page count, a DOCX's document XML size. Readers then take only what the passages keep (the
first `max_passages` passages, rows up to the row budget), so the work is bounded by the settings, not by the
file. The time and memory a reader may still spend are bounded by the worker process that runs it
(`m3graph.ingest.chat.file_worker`).

Why this module is over 400 lines: each reader sits beside the declared-size checks that must run before it, so
a reader cannot be changed without its checks in view.
"""

from __future__ import annotations

import csv
import io
import logging
import math
import re
import zipfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from m3graph.perception import pdf_structure
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


@dataclass(frozen=True)
class DeclaredLimits:
    """What a shared document may declare before it is parsed (docs/reliability.md "Hostile files"). Far above a
    real chart or report; each refusal names the limit."""

    max_columns: int = 1_000  # CSV/XLSX columns (a table of more is not a chart's data)
    max_row_chars: int = 100_000  # one CSV line
    max_sheet_cells: int = 10_000_000  # an XLSX sheet's declared dimension, rows x columns
    max_xml_mb: float = 25.0  # one DOCX/XLSX part's uncompressed XML (python-docx holds it all as a tree)
    max_svg_elements: int = 20_000  # tags in an SVG
    max_pdf_pages: int = 2_000  # a PDF's declared page count


LIMITS = DeclaredLimits()


def chunks(text: str, size: int, limit: int | None = None) -> list[str]:
    """`text` (whitespace collapsed) in pieces of at most `size` characters, cut at a sentence or a space; at most
    `limit` pieces (the rest is never cut: a 50 MB text costs what its kept passages cost, not a copy per cut)."""
    text = " ".join(text.split())
    out: list[str] = []
    pos = 0
    while len(text) - pos > size and (limit is None or len(out) < limit):
        cut = max(text.rfind(". ", pos + size // 2, pos + size), text.rfind(" ", pos + size * 3 // 4, pos + size))
        cut = pos + size if cut <= pos else cut + 1
        out.append(text[pos:cut].strip())
        pos = cut + 1 if cut < len(text) and text[cut] == " " else cut  # the old `text[cut:].strip()`
    rest = text[pos:].strip()
    if rest and (limit is None or len(out) < limit):
        out.append(rest)
    return out


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


def check_parts(path: Path, names: tuple[str, ...], prefixes: tuple[str, ...], limits: DeclaredLimits) -> None:
    """Refuses an OOXML package whose named XML parts (or parts under `prefixes`) declare more than
    `limits.max_xml_mb` uncompressed: the reader would build all of it."""
    cap = limits.max_xml_mb * 2**20
    with zipfile.ZipFile(path) as z:
        for i in z.infolist():
            if (i.filename in names or i.filename.startswith(prefixes)) and i.file_size > cap:
                raise FileRejected(f"its part {i.filename[:80]!r} is {i.file_size / 2**20:.0f} MB of XML (more "
                                   f"than {limits.max_xml_mb:g} MB: DeclaredLimits.max_xml_mb)")


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
    while header and not header[-1]:  # a read-only sheet without a dimension pads every row to max_columns
        header.pop()
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


def pdf_passages(path: Path, cfg: FilesConfig, limits: DeclaredLimits = LIMITS) -> list[Passage]:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError, PyPdfError

    try:
        reader = PdfReader(str(path))
        if reader.is_encrypted and not reader.decrypt(""):
            raise FileRejected("a password-protected PDF (no text can be read without the password)")
        declared = _declared_pages(reader)
        if declared <= limits.max_pdf_pages:  # only then is the tree walked (it may hold more than it says)
            declared = max(declared, len(reader.pages))
        if declared > limits.max_pdf_pages:
            raise FileRejected(f"a PDF of {declared} pages (more than {limits.max_pdf_pages}: "
                               "DeclaredLimits.max_pdf_pages)")
        out = structured_passages(reader, cfg)
    except FileRejected:
        raise
    except (PdfReadError, PyPdfError, ValueError, KeyError, TypeError, AttributeError, OSError) as exc:
        raise FileRejected(f"a corrupt PDF ({type(exc).__name__}: {str(exc)[:120]})") from None
    return out


def structured_passages(reader: Any, cfg: FilesConfig) -> list[Passage]:
    """A PDF's passages with their page and heading path (`pdf_structure`): pages are read until their text could
    fill `max_passages` passages; a passage holds whole list items and table rows where they fit, never spans two
    pages or two sections, and is cut at a sentence only when one row or paragraph is longer than a passage. Should
    the structure fail on a page's odd text runs, the text is read page by page as before issue 39."""
    try:
        return _structured(reader, cfg)
    except (FileRejected, MemoryError):
        raise
    except Exception as exc:  # the structure's own failure on odd text runs: the text is still read, page by page
        log.warning("PDF structure not read (%s: %s); plain text by page", type(exc).__name__, str(exc)[:120])
    out: list[Passage] = []
    for number in range(1, len(reader.pages) + 1):
        text = reader.pages[number - 1].extract_text() or ""
        out += [Passage(c, page=number) for c in chunks(text, cfg.passage_chars, cfg.max_passages - len(out))]
        if len(out) >= cfg.max_passages:
            break
    return out


def _structured(reader: Any, cfg: FilesConfig) -> list[Passage]:
    budget = cfg.max_passages * cfg.passage_chars
    pages: list[list[pdf_structure.Line]] = []
    read = 0
    for page in reader.pages:
        pages.append(pdf_structure.page_lines(page))
        read += sum(len(x.text) for x in pages[-1])
        if read > budget * 2:  # headers, footers and headings are dropped from the text: read some beyond it
            break
    out: list[Passage] = []
    for block in pdf_structure.blocks(pages, pdf_structure.outline_items(reader)):
        room = cfg.max_passages - len(out)
        if room <= 0:
            break
        out += [Passage(c, page=block.page, section=block.section) for c in pack(block.text, cfg.passage_chars, room)]
    return out


def pack(text: str, size: int, limit: int | None) -> list[str]:
    """`chunks` that cut between rows first: a block's list items and table rows (each ending in ``;``) stay
    whole in one passage where they fit."""
    rows = [r.strip().rstrip(";") + ";" for r in text.split("; ") if r.strip().rstrip(";")]
    if rows and not text.rstrip().endswith(";"):
        rows[-1] = rows[-1][:-1]
    out: list[str] = []
    current = ""
    for row in rows:
        if len(current) + 1 + len(row) <= size:
            current = f"{current} {row}".strip()
            continue
        if current:
            out.append(current)
        if len(row) <= size:
            current = row
        else:
            out += chunks(row, size)
            current = ""
    if current:
        out.append(current)
    return out[:limit] if limit is not None else out


def _declared_pages(reader: Any) -> int:
    """The page tree's /Count, read before pypdf walks the tree to list the pages (0 when it is not a number)."""
    try:
        count = reader.trailer["/Root"]["/Pages"]["/Count"]
        return int(count) if isinstance(count, int) else 0
    except (KeyError, TypeError, ValueError, AttributeError):
        return 0


_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.+?)\s*#*\s*$")


def text_passages(path: Path, cfg: FilesConfig, markdown: bool) -> list[Passage]:
    """Plain text in passages; Markdown by section (the heading path, "Budget > Travel"). Only the head that the
    kept passages can come from is read (8 bytes per kept character: room for whitespace and markup)."""
    with path.open("rb") as f:
        text = f.read(8 * cfg.max_passages * cfg.passage_chars).decode("utf-8", errors="replace")
    if not markdown:
        return [Passage(c) for c in chunks(text, cfg.passage_chars, cfg.max_passages)]
    out: list[Passage] = []
    trail: list[tuple[int, str]] = []
    body: list[str] = []

    def flush() -> None:
        section = " > ".join(t for _, t in trail) or None
        room = max(0, cfg.max_passages - len(out))
        out.extend(Passage(c, section=section) for c in pack(pdf_structure.rows_text(body), cfg.passage_chars, room))
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


def docx_passages(path: Path, cfg: FilesConfig, limits: DeclaredLimits = LIMITS) -> list[Passage]:
    check_zip(path, cfg)
    check_parts(path, ("word/document.xml", "word/styles.xml", "word/numbering.xml"), ("word/header", "word/footer"),
                limits)
    import docx

    try:
        document = docx.Document(str(path))
    except Exception as exc:  # python-docx raises many types for a broken package (KeyError, lxml errors, ...)
        raise FileRejected(f"a corrupt DOCX ({type(exc).__name__})") from None
    out: list[Passage] = []
    trail: list[tuple[int, str]] = []
    body: list[str] = []

    def flush() -> None:
        room = max(0, cfg.max_passages - len(out))
        section = " > ".join(t for _, t in trail) or None
        out.extend(Passage(c, section=section) for c in pack(pdf_structure.rows_text(body), cfg.passage_chars, room))
        body.clear()

    for para in document.paragraphs:
        style = ((para.style.name if para.style is not None else "") or "").lower()
        if style.startswith(("heading", "title")) and para.text.strip():
            flush()  # the heading path, as Markdown's: "Heading 2" under the last "Heading 1"
            digits = re.sub(r"\D", "", style)
            level = int(digits) if style.startswith("heading") and digits else 0
            trail = [(lv, t) for lv, t in trail if lv < level] + [(level, " ".join(para.text.split()))]
        else:
            body.append(para.text)
    flush()
    for t, table in enumerate(document.tables, start=1):
        rows = ([cell.text for cell in row.cells] for row in table.rows)
        out += table_passages(rows, f"table {t}", cfg)
    return out


def _check_lines(text: str, limits: DeclaredLimits) -> None:
    """Refuses a CSV line wider than `limits.max_row_chars` before any row is split into cells."""
    pos, line = 0, 1
    while pos < len(text):
        end = text.find("\n", pos)
        end = len(text) if end < 0 else end
        if end - pos > limits.max_row_chars:
            raise FileRejected(f"a CSV whose line {line} is {end - pos} characters (more than "
                               f"{limits.max_row_chars}: DeclaredLimits.max_row_chars)")
        pos, line = end + 1, line + 1


def _bounded_rows(rows: Iterable[Sequence[object]], what: str, limits: DeclaredLimits) -> Iterator[list[object]]:
    for n, row in enumerate(rows, start=1):
        if len(row) > limits.max_columns:
            raise FileRejected(f"{what} row {n} has {len(row)} columns (more than {limits.max_columns}: "
                               "DeclaredLimits.max_columns)")
        yield list(row)


def csv_passages(path: Path, cfg: FilesConfig, limits: DeclaredLimits = LIMITS) -> list[Passage]:
    text = path.read_bytes().decode("utf-8", errors="replace")
    _check_lines(text, limits)
    try:
        dialect = csv.Sniffer().sniff(text[:4096], delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    try:
        rows = csv.reader(io.StringIO(text), dialect)
        return table_passages(_bounded_rows(rows, "a CSV whose", limits), None, cfg)
    except csv.Error as exc:
        raise FileRejected(f"an unreadable CSV ({exc})") from None


def xlsx_passages(path: Path, cfg: FilesConfig, limits: DeclaredLimits = LIMITS) -> list[Passage]:
    check_zip(path, cfg)
    check_parts(path, ("xl/sharedStrings.xml", "xl/styles.xml", "xl/workbook.xml"), (), limits)
    import openpyxl

    try:
        book = openpyxl.load_workbook(str(path), read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises KeyError/InvalidFileException/lxml errors for a broken package
        raise FileRejected(f"a corrupt XLSX ({type(exc).__name__})") from None
    out: list[Passage] = []
    try:
        for sheet in book.worksheets:
            out += _sheet_passages(sheet, cfg, limits)
    finally:
        book.close()
    return out


def _sheet_passages(sheet: Any, cfg: FilesConfig, limits: DeclaredLimits) -> list[Passage]:
    """One read-only sheet, checked against its declared dimension first (read-only rows are padded to it, so
    ``A1:XFD1048576`` would be 17 billion empty cells), then read no further than the passages keep."""
    rows_declared, cols_declared = sheet.max_row or 0, sheet.max_column or 0
    if cols_declared > limits.max_columns or rows_declared * cols_declared > limits.max_sheet_cells:
        raise FileRejected(f"sheet {str(sheet.title)[:40]!r} declares {rows_declared} x {cols_declared} cells "
                           f"(more than {limits.max_columns} columns or {limits.max_sheet_cells} cells: "
                           "DeclaredLimits)")
    budget = cfg.max_passages * cfg.rows_per_passage + 1  # + the header row
    cols = min(cols_declared, limits.max_columns) if cols_declared else limits.max_columns
    rows = (list(r) for r in sheet.iter_rows(max_row=budget, max_col=cols, values_only=True))
    return table_passages(rows, f"sheet {sheet.title}", cfg)


def svg_passages(path: Path, cfg: FilesConfig, limits: DeclaredLimits = LIMITS) -> list[Passage]:
    """A chart drawn as SVG: its title, description and every text label in document order (axis labels and
    values are text in a generated chart)."""
    import xml.etree.ElementTree as ET

    data = path.read_bytes()
    if b"<!ENTITY" in data or b"<!entity" in data:
        raise FileRejected("an SVG with entity declarations (refused: entity expansion)")
    tags = data.count(b"<")  # at least one per element: an upper bound, counted before anything is built
    if tags > limits.max_svg_elements:
        raise FileRejected(f"an SVG of up to {tags} elements (more than {limits.max_svg_elements}: "
                           "DeclaredLimits.max_svg_elements)")
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
    out = [Passage(c) for c in chunks("chart labels: " + " | ".join(words), cfg.passage_chars, cfg.max_passages)]
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
