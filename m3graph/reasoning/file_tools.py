"""The reader's tools for files shared in a conversation: list them by type, name and date, and look closer at one.

Why tools and not only search: a surrogate is retrieved by its words, but "the PDF I sent before the trip" or
"the first spreadsheet" is a question about the files themselves (their type, their order, when they were
shared), and a surrogate is a summary: when it is not enough the reader asks for the file's full text, one page,
the faces in a photo with the names the graph knows for them, or the OCR of one region (M3Proctor's cascade).

Both tools see only the question's scope (its sources, up to its clip), never bytes, and are bounded: at most
`MAX_FILES` files listed, at most `MAX_LOOK_CHARS` characters of text, one OCR region of a stored image. The
argument is untrusted model text: it is parsed into a few allow-listed filters (kinds, types, a name fragment,
ISO dates), every value is passed as a Cypher parameter, and a file is named only by the name it was shared under
or by its key, never by a path.

Argument forms (case-insensitive, words in any order):

* list_files: ``pdf``, ``photo``, ``chart``, ``spreadsheet``, ``csv``, ... (kinds/types), ``name:receipt``,
  ``after 2024-05-01``, ``before 2024-05-10``, ``on 2024-05-03``, ``first``/``last``.
* look_at_file: ``NAME`` (its surrogate text in full), ``NAME page 2``, ``NAME faces``, ``NAME region x0,y0,x1,y1``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from m3graph.graphdb.executor import Executor
from m3graph.graphdb.facts import character_names
from m3graph.graphdb.query_text import file_types_of
from m3graph.graphdb.search import render_memory
from m3graph.graphdb.tags import safe_text
from m3graph.settings import Settings

MAX_FILES = 20
MAX_LOOK_CHARS = 4000
_DATE = r"(\d{4}-\d{2}-\d{2})"
_WHEN = re.compile(rf"\b(after|since|before|until|on)\s+{_DATE}\b", re.IGNORECASE)
_NAME = re.compile(r"\bname[:=]\s*([\w.\- ]{1,80}?)(?=\s+(?:after|since|before|until|on|first|last)\b|$)",
                   re.IGNORECASE)
_LOOK = re.compile(r"^\s*(?P<name>.+?)(?:\s+(?:(?P<faces>faces?)|page\s+(?P<page>\d{1,4})|"
                   r"region\s+(?P<box>\d{1,5}\s*,\s*\d{1,5}\s*,\s*\d{1,5}\s*,\s*\d{1,5})))?\s*$", re.IGNORECASE)
_PAGE = re.compile(r"^\[file [^\]]*?, page (\d+)[,\]]")


@dataclass(frozen=True)
class FileQuery:
    """What a list_files argument asks for, after the allow-lists."""

    kinds: list[str] | None = None
    mimes: list[str] | None = None
    name: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    order: str = "all"  # "first" | "last" | "all"


def _day(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=UTC)


def parse_file_query(argument: str) -> FileQuery:
    """The filters a list_files argument names; words it does not know are ignored (a listing is never refused)."""
    text = argument.strip()
    since = until = None
    for how, day in _WHEN.findall(text):
        start = _day(day)
        if how.lower() in ("after", "since"):
            since = start + timedelta(days=1) if how.lower() == "after" else start
        elif how.lower() in ("before", "until"):
            until = start if how.lower() == "before" else start + timedelta(days=1)
        else:
            since, until = start, start + timedelta(days=1)
    named = _NAME.search(text)
    words = re.findall(r"[a-z]+", _WHEN.sub(" ", _NAME.sub(" ", text)).lower())
    kinds, mimes = file_types_of(words)
    order = "first" if "first" in words or "earliest" in words else "last" if {"last", "latest"} & set(words) \
        else "all"
    name = named.group(1).strip().lower() if named else None
    return FileQuery(kinds or None, mimes or None, name, since, until, order)


@dataclass
class FileLook:
    """What the reader is shown: lines grouped by clip (as search results are), and the files shown."""

    knowledge: dict[tuple[str, int], list[str]] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)  # sha256 of each file shown
    note: str | None = None  # why nothing (or less) was shown


def _when(value: Any) -> str:
    native = value.to_native() if hasattr(value, "to_native") else value
    return f"{native.day} {native:%B %Y}" if isinstance(native, datetime) else "an unknown date"


def list_files(ex: Executor, argument: str, videos: Sequence[str] | None, before_clip: int | None,
               limit: int = MAX_FILES) -> FileLook:
    """The files in scope that match `argument`, each with its reference and the sharing turn as evidence."""
    q = parse_file_query(argument)
    rows = ex.read("files/list_files", videos=list(videos) if videos else None, before_clip=before_clip,
                   kinds=q.kinds, mimes=q.mimes, name=q.name, since=q.since, until=q.until,
                   limit=max(1, min(limit, MAX_FILES)) if q.order != "last" else MAX_FILES)
    if q.order == "first":
        rows = rows[:1]
    elif q.order == "last":
        rows = rows[-1:]
    turns = {m.memory_id: m for m in (render_memory(r) for r in ex.read(
        "search/memories_by_id", ids=[r["turn_memory"] for r in rows if r["turn_memory"]]))}
    out = FileLook()
    for r in rows:
        turn = turns.get(r["turn_memory"])
        said = f' Shared with: "{turn.text}"' if turn is not None else ""
        line = (f"file {r['name']} ({r['kind']}, {r['mime']}, {r['size']} bytes), shared on {_when(r['shared_at'])} "
                f"in turn {r['turn_id']}; {r['surrogates']} surrogate passages; ref {r['sha256'][:16]}.{said}")
        out.knowledge.setdefault((r["source_id"], r["clip_index"]), []).append(line)
        out.files.append(r["sha256"])
    if not rows:
        out.note = "no shared file matches"
    return out


def _page_of(raw: str) -> int | None:
    m = _PAGE.match(raw)
    return int(m.group(1)) if m else None


def look_at_file(ex: Executor, settings: Settings, argument: str, videos: Sequence[str] | None,
                 before_clip: int | None, max_chars: int = MAX_LOOK_CHARS) -> FileLook:
    """One file in scope looked at closer: its surrogate in full, one page, its faces with their names, or the
    OCR of a region of a stored image; at most `max_chars` characters."""
    m = _LOOK.match(argument or "")
    if m is None or not m.group("name").strip():
        return FileLook(note="name a file: NAME, NAME page N, NAME faces or NAME region x0,y0,x1,y1")
    name = m.group("name").strip().strip("\"'").lower()
    key = name if re.fullmatch(r"[0-9a-f]{64}", name) else None
    limit = settings.files.max_passages
    found = ex.read("files/file_view", videos=list(videos) if videos else None, before_clip=before_clip,
                    name=None if key else name, sha256=key, limit=limit)
    if not found:
        return FileLook(note=f"no file named {name!r} was shared in this conversation")
    f = found[0]
    out = FileLook(files=[f["sha256"]])
    lines: list[str] = []
    if m.group("faces"):
        chars = [x["char_id"] for x in f["faces"] if x["char_id"] is not None]
        names = character_names(ex, chars) if chars else {}
        lines = [f"face in {f['name']}: <character_{x['char_id']}>"
                 + (f" ({names[x['char_id']]})" if x["char_id"] in names else " (no name known)")
                 for x in f["faces"] if x["char_id"] is not None] or [f"no face was found in {f['name']}"]
    elif m.group("box"):
        lines = [_region_text(settings, f, m.group("box"))]
    else:
        memories = [render_memory(r) for r in ex.read("search/memories_by_id", ids=f["memory_ids"])]
        order = {mid: i for i, mid in enumerate(f["memory_ids"])}
        memories.sort(key=lambda x: order.get(x.memory_id, 0))
        page = int(m.group("page")) if m.group("page") else None
        if page is not None:
            memories = [x for x in memories if _page_of(x.raw_text) == page]
            if not memories:
                out.note = f"{f['name']} has no text on page {page}"
        lines = [x.text for x in memories]
    budget, kept = max_chars, []
    for line in lines:
        if budget <= 0:
            out.note = f"cut at {max_chars} characters"
            break
        kept.append(line[:budget])
        budget -= len(kept[-1])
    out.knowledge[(f["source_id"], f["clip_index"])] = kept
    return out


def _region_text(settings: Settings, f: dict[str, Any], box_text: str) -> str:
    """OCR of one rectangle of a stored image (`image_text.ocr_region`); only a copy under the data directory's
    files folder is read, and only an image's."""
    if not str(f["mime"] or "").startswith("image/") or f["mime"] == "image/svg+xml":
        return f"{f['name']} is not a picture: look at its text instead"
    root = (settings.data_dir / "files").resolve()
    path = (settings.data_dir / str(f["stored"] or "")).resolve()
    if not path.is_relative_to(root) or not path.is_file():
        return f"the stored copy of {f['name']} is missing"
    from m3graph.errors import InvalidInputError
    from m3graph.perception.image_text import OcrError, ocr_region

    x0, y0, x1, y1 = (int(v) for v in box_text.replace(" ", "").split(","))
    try:
        text = safe_text(" ".join(ocr_region(Path(path), (x0, y0, x1, y1), settings).split()))  # OCR is text
    except (InvalidInputError, OcrError) as exc:
        return f"the region of {f['name']} could not be read ({exc})"
    return f'text in {f["name"]} region {x0},{y0},{x1},{y1}: "{text}"' if text else \
        f"no text was read in that region of {f['name']}"


_CALL = re.compile(r"^\s*(list_files|look_at_file)\s*[:(]\s*(.*?)\s*\)?\s*$", re.IGNORECASE | re.DOTALL)
READER_HINT = ("To see the files shared in the conversation, set next_query to 'list_files: pdf before 2024-05-10' "
               "(types: pdf, photo, chart, spreadsheet, document; first/last; after/before/on a date); to read one "
               "file closer, 'look_at_file: NAME', 'look_at_file: NAME page 2' or 'look_at_file: NAME faces'.")


def files_in_scope(ex: Executor, videos: Sequence[str] | None, before_clip: int | None) -> bool:
    """Whether any file was shared in a question's scope: the controller offers the file tools (`READER_HINT`)
    only then, so the prompts of conversations and videos without files stay exactly as they were."""
    return bool(ex.read("files/list_files", videos=list(videos) if videos else None, before_clip=before_clip,
                        kinds=None, mimes=None, name=None, since=None, until=None, limit=1))


def file_tool_call(query: str) -> tuple[str, str] | None:
    """(tool, argument) when a reader's next query asks for a file tool (``list_files: pdf``,
    ``look_at_file(IMG_1.jpg faces)``), else None: the query is an ordinary search."""
    m = _CALL.match(query or "")
    return (m.group(1).lower(), m.group(2)) if m else None
