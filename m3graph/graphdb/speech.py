"""Who said what: the said lines of memory with their speakers, read from the graph's structure.

Every said line is stored with its speaker as structure: ``<voice_8> says: "..."`` (a video; the voice is resolved
to a character by votes) or ``Ann <speaker_3>: ...`` (a conversation or transcript). Two reads answer "who said
this line?" (`who_said`: the memory full-text index with the quote's words, then a character-level similarity, so
a transcript's slips, "favorite fruit in a ripe mango", still match) and "who speaks here?" (`speaker_counts`:
every said line in scope, grouped by speaker: by character where the voice has one, else by the voice itself).
Both keep a question's scope (sources, clips up to `before_clip`). The controller shows them to its reader
(`reasoning/speakers.py`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any

from m3graph.graphdb.executor import Executor
from m3graph.graphdb.query_text import lucene_query_terms

MATCH_FLOOR = 0.75  # character-level similarity of a quote to a said line (lowercased words) for it to match
QUOTE_HITS = 200  # full-text hits read per quote before the scope filter
SPEECH_CAP = 20000  # said lines read to count speakers; a scope with more says "at least"

# A said line in a video: "<voice_8> says: "text"" (or a face's).
_TAG_SAYS = re.compile(r"^\s*<(?P<kind>voice|face|speaker)_(?P<id>\d+)>\s+(?:says|said|asks|asked)\s*:?\s*"
                       r"(?P<body>.*)$", re.IGNORECASE | re.DOTALL)
# A conversation's turn names its speaker: "Ann <speaker_3>: text" as stored, "Ann <character_1>: text" as rendered
# (the speaker-attribution rule reads rendered lines with it too).
SPEAKER_LINE = re.compile(r"^\s*(?P<name>[^\s<:\[][^<:\n]{0,60}?)\s*<(?P<kind>speaker|character)_(?P<id>\d+)>\s*:\s*"
                          r"(?P<body>.*)$", re.IGNORECASE | re.DOTALL)
_WORDS = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")

Speaker = tuple[str, int]  # ("character", K), or the entity itself where no character holds it ("voice", 8)
Label = Callable[[str, int], str]  # (source, clip index) -> the clip as the caller names it


@dataclass(frozen=True)
class SaidLine:
    """One remembered line with who said it: `who` as a reader sees them ("<character_7>", "Ann <character_3>")."""

    label: str  # the clip, as the caller's `Label` names it ("CLIP_0", "tm-b/CLIP_0")
    who: str
    key: Speaker
    body: str  # what was said, without quotation marks


def words(text: str) -> str:
    """Lowercased words, apostrophes kept ("don't"), everything else dropped."""
    return " ".join(_WORDS.findall(text.lower().replace("’", "'")))


def said_line(row: dict[str, Any], label: Label) -> SaidLine | None:
    """A memory row (`video_id`, `clip_index`, `text`, `chars` as [kind, entity id, character id]) as a said line,
    or None when the line is not somebody saying something."""
    text = str(row["text"])
    match = _TAG_SAYS.match(text) or SPEAKER_LINE.match(text)
    if match is None:
        return None
    kind, number = match.group("kind").lower(), int(match.group("id"))
    chars = {(str(k), int(n)): c for k, n, c in (row.get("chars") or []) if k is not None}
    char = chars.get((kind, number))
    tag = f"<character_{char}>" if char is not None else f"<{kind}_{number}>"
    name = match.groupdict().get("name")
    who = f"{' '.join(name.split())} {tag}" if name else tag
    key = ("character", int(char)) if char is not None else (kind, number)
    body = match.group("body").strip().strip("\"“”").strip()
    return SaidLine(label(str(row["source_id"]), int(row["clip_index"])), who, key, body)


def similarity(quote: str, body: str) -> float:
    """How closely a said line's words follow a quote's (1.0: the same words), letters compared, case ignored."""
    a, b = words(quote), words(body)
    return SequenceMatcher(None, a, b, autojunk=False).ratio() if a and b else 0.0


def who_said(ex: Executor, quote: str, videos: Sequence[str] | None, before_clip: int | None,
             label: Label) -> list[SaidLine]:
    """The said lines in scope that are the quote (similarity ≥ `MATCH_FLOOR`), closest first."""
    terms = lucene_query_terms(quote, "text")
    if terms is None:
        return []
    rows = ex.read("search/speech_matching", query=terms, videos=list(videos) if videos else None,
                   before_clip=before_clip, limit=QUOTE_HITS)
    scored = [(similarity(quote, line.body), line) for row in rows if (line := said_line(row, label)) is not None]
    return [line for score, line in sorted(scored, key=lambda x: -x[0]) if score >= MATCH_FLOOR]


@dataclass(frozen=True)
class Speakers:
    """Who speaks in a scope: each speaker as shown, with the number of lines they said, most first."""

    who: dict[Speaker, str]
    lines: Counter[Speaker]
    capped: bool  # `SPEECH_CAP` lines were read: there may be more speakers


def speaker_counts(ex: Executor, videos: Sequence[str], before_clip: int | None, label: Label) -> Speakers:
    """Every speaker of a said line in the given sources (up to `before_clip`)."""
    rows = ex.read("search/speech_lines", videos=list(videos), before_clip=before_clip, cap=SPEECH_CAP)
    who: dict[Speaker, str] = {}
    lines: Counter[Speaker] = Counter()
    for row in rows:
        line = said_line(row, label)
        if line is not None:
            who.setdefault(line.key, line.who)
            lines[line.key] += 1
    return Speakers(who, lines, len(rows) >= SPEECH_CAP)
