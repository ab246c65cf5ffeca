"""The real-document category of `m3graph eval chat-files`: was the answering passage among the lines shown?

Answer match says whether the reader got it right; on a forty-page manual it does not say why not. Each real
question (m3graph/devkit/real_docs.py) records the page its answer is on and the exact text that answers it, so
the results record's rounds tell two things the answer alone does not:

* **answering passage in the shown lines**: some line the reader was shown (any round's ``knowledge``: search
  results and file-tool output alike, as cut for the reader) contains the supporting text, compared after
  `real_docs.normalize` (ligatures, quotes, whitespace, case) on letters and digits only (`loose`). Why letters
  and digits: the supporting text was copied from pypdf's plain extraction, and the product's PDF reading
  (perception/pdf_structure.py) writes the same words differently on purpose or by pypdf's spacing: table cells
  as ``"RI" | Reverse Italic``, line-end hyphens joined ("pack- age" -> "package"), a space inside quotes or before
  a comma. The words and their order must still all be there. The exact comparison (``exact``: normalized text
  only) is reported beside it. A passage that was found but cut before the supporting text counts under neither:
  the reader never saw the answer.
* **answering page shown**: some shown line is a surrogate of the question's file for its page
  (``[file NAME, document, page P, ...``), whatever part of the page it shows.

Both are 0 for the text-only baseline by construction (it keeps no file text); they are computed the same way for
both systems so that the table cannot say otherwise.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from m3graph.devkit.real_docs import normalize

_FILE_LINE = re.compile(r"\[file (?P<name>[^,\]]+), [^\]]*?\bpage (?P<page>\d+)\b")
_NOT_ALNUM = re.compile(r"[\W_]+")


def shown_lines(record: dict[str, Any]) -> list[str]:
    """Every line the reader was shown for one question, in round order (the record's ``rounds[].knowledge``)."""
    out: list[str] = []
    for r in record.get("rounds") or []:
        for lines in (r.get("knowledge") or {}).values():
            out.extend(str(line) for line in lines)
    return out


def loose(text: str) -> str:
    """`normalize`d text with its letters and digits only: what the comparison of words in order looks at."""
    return _NOT_ALNUM.sub("", normalize(text))


def passage_shown(lines: Iterable[str], name: str, page: int, support: str) -> tuple[bool, bool, bool]:
    """(the supporting text is in a shown line, letters and digits compared; a shown line is the file's surrogate
    for that page; the supporting text is in a shown line, normalized text compared)."""
    want, want_loose = normalize(support), loose(support)
    passage = on_page = exact = False
    for line in lines:
        if want and want in normalize(line):
            exact = passage = True
        elif want_loose and want_loose in loose(line):
            passage = True
        m = _FILE_LINE.search(line)
        if m is not None and m.group("name").strip() == name and int(m.group("page")) == page:
            on_page = True
    return passage, on_page, exact


@dataclass
class ShownCell:
    n: int = 0
    passage: int = 0
    page: int = 0
    exact: int = 0

    def add(self, passage: bool, page: bool, exact: bool) -> None:
        self.n += 1
        self.passage += passage
        self.page += page
        self.exact += exact

    def to_dict(self) -> dict[str, Any]:
        n = self.n or 1
        return {"n": self.n, "passage_in_shown_lines": round(self.passage / n, 4),
                "passage_in_shown_lines_exact": round(self.exact / n, 4), "page_shown": round(self.page / n, 4)}


@dataclass
class ShownScores:
    """Per system: how often the answering passage / page was among the shown lines."""

    cells: dict[str, ShownCell] = field(default_factory=dict)

    def add(self, system: str, record: dict[str, Any], name: str, page: int, support: str) -> None:
        self.cells.setdefault(system, ShownCell()).add(*passage_shown(shown_lines(record), name, page, support))

    def to_dict(self) -> dict[str, Any]:
        return {system: cell.to_dict() for system, cell in self.cells.items()}


def format_table(category_label: str, match: dict[str, dict[str, Any]], shown: ShownScores,
                 systems: Sequence[str]) -> list[str]:
    """The real-document rows: answer match, answering passage in the shown lines, answering page shown and file
    recall@5, each system beside the other (`match`: system -> the category's Cell.to_dict())."""
    files, base = systems[0], systems[1]
    f, t = match.get(files, {}), match.get(base, {})
    fs, ts = shown.cells.get(files, ShownCell()), shown.cells.get(base, ShownCell())

    def pct(cell: dict[str, Any], key: str) -> str:
        return "-" if cell.get(key) is None else f"{cell[key]:.1%}"

    def rate(part: int, cell: ShownCell) -> str:
        return f"{part / cell.n:.1%} ({part}/{cell.n})" if cell.n else "-"

    file_recall = f.get("file_recall_at_5")
    return [
        f"| {category_label} | {files} | {base} |", "| --- | ---: | ---: |",
        f"| questions | {f.get('n', 0)} | {t.get('n', 0)} |",
        f"| answer match | {pct(f, 'answer_match')} | {pct(t, 'answer_match')} |",
        f"| answering passage in shown lines | {rate(fs.passage, fs)} | {rate(ts.passage, ts)} |",
        f"| the same, exact text | {rate(fs.exact, fs)} | {rate(ts.exact, ts)} |",
        f"| answering page shown | {rate(fs.page, fs)} | {rate(ts.page, ts)} |",
        f"| file recall@5 | {'-' if file_recall is None else f'{file_recall:.2f}'} | - |",
        f"| tokens per question | {f.get('tokens_per_question', 0):.0f} | {t.get('tokens_per_question', 0):.0f} |",
    ]
