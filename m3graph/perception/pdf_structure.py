"""A PDF's text with its structure: headings and section numbers, lists and table rows, page numbers; running
headers and footers and line-end hyphenation removed (issue 39).

Why not `page.extract_text()` alone: it gives a page's words in reading order and nothing else, so every passage
of a 40-page manual was "page N" with no section, a table came back as words run together ("Item Qty Price Keys
2 10 EUR"), the header and footer printed on every page were repeated in every passage, and a word broken at a
line end stayed broken ("re- nt"). Here pypdf's text visitor gives each run of text with its position and font
size, and the lines are rebuilt from them:

* **Headings** come from the PDF's outline (bookmarks) where it has one: a line that is an outline title is a
  heading at the title's depth, and a page whose headings are not found in its text takes the section of the last
  bookmark before it. Beside the outline (and without one), a short line in a font clearly larger than the
  body's (1.15x the most used size, counted by characters) or a numbered title (``3.2 Payment terms``: a
  section number, a capital, no final full stop, at most 12 words) is a heading; its level is its number's
  depth, else its size's rank.
* **Lists and tables are rows**: a line that starts with a bullet or an item number is its own row, and a line
  whose runs sit at separate column positions (a gap of more than 1.5 em after the estimated end of the text
  before it, plus a tenth of that text's width for the estimate's error) is a table row, its cells written
  ``Item | Qty | Price``.
* **Running headers and footers**: among each page's first and last two lines, a line that recurs (digits
  ignored) at the top or bottom of at least 60 % of the pages (and 3), in a font no larger than the body's, is
  removed, and so is a bare page number ("4", "Page 4 of 17", "- 4 -").
* **Hyphenation**: a line ending in ``letter-`` followed by a line starting in lower case is joined without the
  hyphen.

The page each passage starts on is kept for citation (`Passage.page`, "lease.pdf, p. 4"); a passage never spans
two pages or two sections, so the page and heading it shows are those of all its words.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

MAX_SECTION_CHARS = 160  # a heading path longer than this is cut (it is shown in every passage's header)
BULLET = re.compile(r"^\s*(?:[•·▪◦‣∙\-–—*]|\(?\d{1,2}[.)]|\(?[a-z][.)])\s+\S")
_NUMBERED = re.compile(r"^(\d{1,2}(?:\.\d{1,2}){0,3})\.?\s+([A-Z][^\n]*)$")
_PAGE_NUMBER = re.compile(r"^[\s\-–—]*(?:page\s*)?\d{1,4}(?:\s*(?:of|/)\s*\d{1,4})?[\s\-–—]*$", re.IGNORECASE)
_HYPHEN_END = re.compile(r"[A-Za-z]-$")


@dataclass
class Line:
    """One rebuilt line of a page: its text (table cells joined by `` | ``), font size and cell count."""

    text: str
    size: float
    cells: int = 1


@dataclass(frozen=True)
class Block:
    """A passage's raw material: text under one heading path on one page."""

    text: str
    page: int
    section: str | None


@dataclass
class _Run:
    text: str
    x: float
    y: float
    size: float


@dataclass
class _Builder:
    lines: list[Line] = field(default_factory=list)
    parts: list[str] = field(default_factory=list)
    cells: int = 1
    size: float = 0.0
    y: float | None = None
    end_x: float = 0.0
    start_x: float = 0.0

    def flush(self) -> None:
        text = " ".join("".join(self.parts).split())
        if text.strip(" |"):
            self.lines.append(Line(text.strip(" |"), self.size, self.cells))
        self.parts, self.cells, self.size, self.y = [], 1, 0.0, None

    def add(self, run: _Run) -> None:
        if self.y is not None and abs(run.y - self.y) > max(2.0, 0.5 * run.size):
            self.flush()
        if self.y is None:
            self.y, self.end_x, self.start_x = run.y, run.x, run.x
        elif run.x - self.end_x > 1.5 * max(run.size, 1.0) + 0.1 * (self.end_x - self.start_x):
            self.parts.append(" | ")  # a jump to a column further right: the next cell of a table row
            self.cells += 1
        elif run.x > 0 and self.parts and not self.parts[-1].endswith(" ") and not run.text.startswith(" "):
            self.parts.append(" ")
        self.parts.append(run.text)
        self.size = max(self.size, run.size)
        self.end_x = max(self.end_x, run.x) + 0.55 * run.size * len(run.text)  # about a sans font's mean advance


_TABLE_RULE = re.compile(r"^\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?$")


def rows_text(lines: Iterable[str]) -> str:
    """Lines of a Markdown or DOCX body in the shape PDF passages have: list items and table rows (``| a | b |``,
    its ``|---|`` rule dropped) each a row ending in ``;``, other lines run together as paragraphs."""
    units: list[str] = []
    para: list[str] = []
    for raw in lines:
        line = " ".join(raw.split())
        if not line or _TABLE_RULE.match(line):
            if para:
                units.append(" ".join(para))
                para.clear()
            continue
        if BULLET.match(line) or (line.startswith("|") and line.count("|") >= 2):
            if para:
                units.append(" ".join(para))
                para.clear()
            row = " | ".join(c.strip() for c in line.strip("|").split("|")) if line.startswith("|") else line
            units.append(row if row.endswith((".", ";", ":")) else row + ";")
        else:
            para.append(line)
    if para:
        units.append(" ".join(para))
    return " ".join(units)


def page_lines(page: Any) -> list[Line]:
    """The page's lines rebuilt from pypdf's text runs (position and size); pypdf's plain text when it gives no
    runs."""
    runs: list[_Run] = []

    def visit(text: str, cm: list[float], tm: list[float], font: Any, size: float) -> None:
        scale = abs(tm[3] * cm[3]) or abs(tm[0] * cm[0]) or 1.0
        x = tm[4] * cm[0] + cm[4]
        y = tm[5] * cm[3] + cm[5]
        for i, piece in enumerate(text.split("\n")):
            if i > 0:
                runs.append(_Run("\n", 0.0, 0.0, 0.0))
            if piece:
                runs.append(_Run(piece, x, y, round(float(size) * scale, 1)))

    plain = page.extract_text(visitor_text=visit) or ""
    if not any(r.text.strip() for r in runs):
        return [Line(" ".join(t.split()), 0.0) for t in plain.splitlines() if t.strip()]
    b = _Builder()
    for run in runs:
        if run.text == "\n":  # pypdf's own line break
            b.flush()
            continue
        b.add(run)
    b.flush()
    return b.lines


def strip_running(pages: list[list[Line]]) -> list[list[Line]]:
    """The pages without their running headers and footers and bare page numbers (see the module's docstring)."""
    def key(line: Line) -> str:
        return re.sub(r"\d+", "#", line.text.lower()).strip()

    body = _body_size(pages)
    edge: Counter[str] = Counter()
    for lines in pages:
        edge.update({key(x) for x in lines[:2] + lines[-2:]})
    for lines in pages:  # a heading (larger than the body) is never a running header, however often it recurs
        edge.subtract({key(x) for x in lines if body and x.size >= body * 1.15})
    need = max(3, 0.6 * len(pages))
    out = []
    for lines in pages:
        n = len(lines)
        kept = [x for i, x in enumerate(lines)
                if not ((i < 2 or i >= n - 2) and (edge[key(x)] >= need or _PAGE_NUMBER.match(x.text)))]
        out.append(kept)
    return out


def _norm(text: str) -> str:
    return re.sub(r"[^0-9a-z]+", "", text.lower())


def outline_items(reader: Any) -> list[tuple[str, int, int]]:
    """(title, depth from 1, 1-based page) of every bookmark, in order; [] when the PDF has none or it is broken."""
    out: list[tuple[str, int, int]] = []

    def walk(items: Iterable[Any], depth: int) -> None:
        for item in items:
            if isinstance(item, list):
                walk(item, depth + 1)
                continue
            try:
                page = reader.get_destination_page_number(item) + 1
                title = " ".join(str(item.title or "").split())
            except Exception:  # a bookmark to nowhere: pypdf raises several types for a broken destination
                continue
            if title and page > 0:
                out.append((title, depth, page))

    try:
        walk(reader.outline, 1)
    except Exception:  # a malformed outline is no outline; the text is still read
        return []
    return out[:5000]


def _body_size(pages: list[list[Line]]) -> float:
    sizes: Counter[float] = Counter()
    for lines in pages:
        for x in lines:
            sizes[round(x.size * 2) / 2] += len(x.text)
    return sizes.most_common(1)[0][0] if sizes else 0.0


def heading_finder(pages: list[list[Line]], outline: list[tuple[str, int, int]]
                   ) -> Callable[[Line], int | None]:
    """A function giving a line's heading level, or None for a line of text (cues in the module's docstring)."""
    levels = {_norm(t): d for t, d, _ in outline if _norm(t)}
    body = _body_size(pages)
    larger = sorted({round(x.size * 2) / 2 for lines in pages for x in lines if body and x.size >= body * 1.15},
                    reverse=True)

    def level(x: Line) -> int | None:
        if levels and len(x.text) <= 200 and _norm(x.text) in levels:
            return levels[_norm(x.text)]
        if x.cells > 1 or len(x.text) > 120 or not re.search(r"[A-Za-z]", x.text):
            return None
        numbered = _NUMBERED.match(x.text)
        if numbered and len(x.text.split()) <= 12 and not x.text.endswith((".", ",", ";", ":")) \
                and x.size >= body - 0.5:
            return numbered.group(1).count(".") + 1
        if body and x.size >= body * 1.15 and not x.text.endswith((".", ",", ";")):
            return larger.index(round(x.size * 2) / 2) + 1
        return None

    return level


def _section(trail: list[tuple[int, str]]) -> str | None:
    if not trail:
        return None
    text = " > ".join(t for _, t in trail).replace("[", "(").replace("]", ")")
    return text if len(text) <= MAX_SECTION_CHARS else text[:MAX_SECTION_CHARS - 1] + "…"


class _PageText:
    """One page's text as it is gathered: the paragraph being read, the rows and paragraphs read, and the blocks
    they become under the heading path in force."""

    def __init__(self, number: int, out: list[Block]) -> None:
        self.number, self.out = number, out
        self.units: list[str] = []
        self.para: list[str] = []

    def end_para(self) -> None:
        if self.para:
            self.units.append(" ".join(self.para))
            self.para.clear()

    def flush(self, trail: list[tuple[int, str]]) -> None:
        self.end_para()
        text = " ".join(self.units).strip()
        if text:
            self.out.append(Block(text, self.number, _section(trail)))
        self.units.clear()

    def row(self, text: str) -> None:
        self.end_para()
        self.units.append(text if text.endswith((".", ";", ":")) else text + ";")

    def line(self, text: str) -> None:
        if self.para and _HYPHEN_END.search(self.para[-1]) and text[:1].islower():
            self.para[-1] = self.para[-1][:-1] + text
        elif not self.para and self.units and not self.units[-1].endswith(";") and text[:1].islower():
            self.units[-1] += " " + text  # a paragraph's wrapped line after a row that ended it
        else:
            self.para.append(text)


def blocks(pages: list[list[Line]], outline: list[tuple[str, int, int]]) -> list[Block]:
    """The pages' text as blocks under one heading path on one page, rows kept (list items and table rows end in
    ``;``), hyphenation undone; headings themselves are the blocks' sections, not their text."""
    pages = strip_running(pages)
    level_of = heading_finder(pages, outline)
    by_page: dict[int, list[tuple[int, str]]] = {}
    for title, depth, page in outline:
        by_page.setdefault(page, []).append((depth, title))
    out: list[Block] = []
    trail: list[tuple[int, str]] = []
    for number, lines in enumerate(pages, start=1):
        text = _PageText(number, out)
        found_heading = False
        for x in lines:
            level = level_of(x)
            if level is not None:
                text.flush(trail)
                found_heading = True
                trail = [(lv, t) for lv, t in trail if lv < level] + [(level, x.text)]
            elif x.cells > 1 or BULLET.match(x.text):
                text.row(x.text)
            else:
                text.line(x.text)
        if not found_heading and number in by_page:  # bookmarks to a page whose text does not show them
            for depth, title in by_page[number]:
                trail = [(lv, t) for lv, t in trail if lv < depth] + [(depth, title)]
        text.flush(trail)
    return out
