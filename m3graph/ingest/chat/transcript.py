"""Plain "Speaker: text" transcripts.

One turn per ``Name: text`` line; a line without a label continues the previous turn (wrapped text). A line
starting with ``---`` begins a new session, optionally with its start time after the dashes
(``--- 2024-05-01T09:00:00Z`` or ``--- 1:56 pm on 8 May, 2023``). Lines starting with ``#`` are comments.
Turn ids are ``<file stem>:L<line>``, so evidence points at a line of the file.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

from m3graph.ingest.chat.generic_json import session_digest
from m3graph.ingest.chat.model import ChatFormatError, Conversation, Session, Turn, speakers_in_order
from m3graph.ingest.chat.parsing import DEFAULT_LIMITS, ReadLimits, clean, parse_when, read_lines

_LINE = re.compile(r"^\s*([^\s:#][^:]{0,60}?)\s*:\s*(.*)$")
_SEPARATOR = re.compile(r"^\s*-{3,}\s*(.*?)\s*-*\s*$")
_NAME = re.compile(r"^[\w][\w.'\- ]{0,60}$")


def load_transcript(path: str | Path, source_id: str | None = None,
                    limits: ReadLimits = DEFAULT_LIMITS) -> Conversation:
    """Parsed line by line; refused at the first line past `limits.max_turns` (nothing after it is built)."""
    p = Path(path)
    count = 0
    sessions: list[Session] = []
    turns: list[Turn] = []
    started: datetime | None = None

    def close() -> None:
        if turns:
            sessions.append(Session(index=len(sessions), started_at=started, turns=tuple(turns),
                                    key=session_digest(tuple(turns), started)))
            turns.clear()

    for number, line in enumerate(read_lines(p, limits), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        sep = _SEPARATOR.match(line)
        if sep:
            close()
            try:
                started = parse_when(sep.group(1) or None)
            except ValueError as exc:
                raise ChatFormatError(p, number, f"session separator: {exc}") from None
            continue
        m = _LINE.match(line)
        if m and _NAME.match(m.group(1).strip()) and not m.group(1).strip().isdigit():
            text = clean(m.group(2))
            count += 1
            limits.check_turns(p, number, count)
            turns.append(Turn(turn_id=f"{p.stem}:L{number}", speaker=clean(m.group(1)), text=text))
        elif turns:
            last = turns[-1]
            turns[-1] = Turn(last.turn_id, last.speaker, clean(f"{last.text} {line}"))
        else:
            raise ChatFormatError(p, number, "expected 'Speaker: text' (a line without a speaker can only "
                                             "continue a turn)")
    close()
    empty = next((t for s in sessions for t in s.turns if not t.text), None)
    if empty is not None:
        raise ChatFormatError(p, int(empty.turn_id.rsplit(":L", 1)[1]), f"turn of {empty.speaker} has no text")
    if not sessions:
        raise ChatFormatError(p, None, "holds no 'Speaker: text' lines")
    return Conversation(source_id=source_id or p.stem, sessions=tuple(sessions),
                        speakers=speakers_in_order(tuple(sessions)), path=str(p))
