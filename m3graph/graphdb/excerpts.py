"""The part of a long file passage that answers the question, in place of its first characters (issue 39).

Why: a document's passages are stored up to `files.passage_chars` (1,200) characters and shown to the reader cut at
900 (`reasoning.control.PASSAGE_CHARS`) with the header (file, page, heading path) taking the first hundred or more.
A passage ranked first for a question was often the right one with its answering sentence past the cut: on the
real-document dev set the answering page was shown for 43 of 47 questions and its answering text for 25. A
document QA pipeline shows the matching part of a chunk; this does the same where the passage hit is built
(`passages.rank_in_results`), so every front end that shows ranked file passages shows the same excerpt.

How: the body (after the ``[file ...]`` header, which is always kept: it cites the page and section) is cut into
units (sentences, list items and table rows; a unit longer than `MAX_UNIT` characters is cut again at word
boundaries), and the contiguous run of units that fits the budget and holds the most query-term weight is kept,
widened to neighbouring units while the budget allows. A term's weight is its inverse frequency among the
passage's units, so a word every sentence repeats ("font", the document's subject) counts less than one only
the answering sentence holds. Terms are the in-file BM25's terms (`passages.terms`: stemmed, stop words out),
matched as substrings of the lower-cased unit, as the in-file ranking matches them. A dropped beginning or end is
marked "…". A passage that fits is returned unchanged, and so is one that holds none of the terms (its beginning
is as good as any part).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

EXCERPT_CHARS = 860  # below the reader's PASSAGE_CHARS (900), with room for a name put beside a tag: never cut again
MAX_UNIT = 220  # a unit longer than this (a table without punctuation, a run-on line) is cut at word boundaries
ELLIPSIS = "…"
# A sentence ends at . ! ? ; or : followed by space and not inside a number ("3.2", "e.g. the" is rare enough), or
# at a line break (list items, table rows).
_UNIT_END = re.compile(r"(?<=[.!?;:])\s+(?=\S)|\s*\n\s*")


def units(body: str) -> list[str]:
    """The body cut into sentences / rows, each at most `MAX_UNIT` characters (long ones cut at spaces)."""
    out: list[str] = []
    for part in _UNIT_END.split(body):
        part = part.strip()
        while len(part) > MAX_UNIT:
            cut = part.rfind(" ", MAX_UNIT // 2, MAX_UNIT)
            cut = cut if cut > 0 else MAX_UNIT
            out.append(part[:cut].strip())
            part = part[cut:].strip()
        if part:
            out.append(part)
    return out


def _split_header(text: str) -> tuple[str, str]:
    """(``[file ...] `` header with its trailing space, body); no header: ("", text)."""
    if text.startswith("[file "):
        end = text.find("] ")
        if end > 0:
            return text[:end + 2], text[end + 2:]
    return "", text


def _terms_held(pieces: Sequence[str], words: Sequence[str]) -> tuple[list[set[str]], dict[str, float]]:
    """Per unit, the query terms it holds; and each held term's weight, its idf among the units (a term in every
    unit, the document's subject, weighs little)."""
    low = [p.lower() for p in pieces]
    held = [{w for w in words if w in p} for p in low]
    n = len(low)
    idf = {w: math.log(1.0 + (n - df + 0.5) / (df + 0.5)) for w in words if (df := sum(w in h for h in held))}
    return held, idf


def excerpt(text: str, words: Sequence[str], chars: int = EXCERPT_CHARS) -> str:
    """`text` (a file passage as shown: header, then body) within `chars` characters, keeping its header and the
    run of units that holds the most weight of the query's `words` (the module's docstring)."""
    if len(text) <= chars or not words:
        return text
    header, body = _split_header(text)
    budget = chars - len(header) - 2 * (len(ELLIPSIS) + 1)
    pieces = units(body)
    if budget < MAX_UNIT or not pieces:
        return text
    held, idf = _terms_held(pieces, words)
    if not idf:
        return text  # nothing matches: the reader's own cut shows the beginning
    sizes = [len(p) + 1 for p in pieces]
    # A window's worth: the weight of the distinct terms it holds, then (a tenth) how often they recur in it.
    best: tuple[float, int, int] = (-1.0, 0, 0)  # (worth, -start, end): the most worth, the earlier on ties
    for start in range(len(pieces)):
        used, terms_in, repeats = 0, set(), 0.0
        for end in range(start, len(pieces)):
            if used + sizes[end] > budget and end > start:
                break
            used += sizes[end]
            terms_in |= held[end]
            repeats += sum(idf[w] for w in held[end])
            worth = sum(idf[w] for w in terms_in) + 0.1 * repeats
            if (worth, -start, end + 1) > best:
                best = (worth, -start, end + 1)
    lo, hi = -best[1], best[2]
    used = sum(sizes[lo:hi])
    while lo > 0 and used + sizes[lo - 1] <= budget:  # the window reaches as far on as fits: fill before it
        lo -= 1
        used += sizes[lo]
    shown = " ".join(pieces[lo:hi])[:max(budget, 0)]
    return (header + (ELLIPSIS + " " if lo > 0 else "") + shown
            + (" " + ELLIPSIS if hi < len(pieces) else ""))


__all__ = ["EXCERPT_CHARS", "excerpt", "units"]
