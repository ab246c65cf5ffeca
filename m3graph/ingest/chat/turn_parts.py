"""A turn longer than one memory holds, cut into parts; a turn longer than `MAX_TURN_PARTS` parts is refused.

A memory's text is bounded (`MemoryIn.text`), so a long turn is stored as ``id``, ``id#p2``, ... (see
`ingest.py`). A turn far beyond that is a pasted document, not something said, and storing it costs an
embedding per part: a 20 MB single-line turn became 2,633 parts and was still embedding after 600 s (issue 37).
So the caller refuses a turn of more than `MAX_TURN_PARTS` parts before anything is embedded, and the cutting
works by offsets, linear in the turn's length.
"""

from __future__ import annotations

MAX_TURN_PARTS = 16  # a turn stored in more memories than this is refused (share a long text as a file)


def split_turn(body: str, size: int) -> list[str]:
    """`body` cut into pieces of at most `size` characters, at a space where one is near the cut (by offsets:
    no copy of the rest per cut)."""
    out = []
    pos = 0
    while len(body) - pos > size:
        cut = body.rfind(" ", pos + size * 4 // 5, pos + size + 1)
        cut = pos + size if cut <= pos else cut
        out.append(body[pos:cut].rstrip())
        pos = cut
        while pos < len(body) and body[pos].isspace():
            pos += 1
    return [*out, body[pos:]] if pos < len(body) else out
