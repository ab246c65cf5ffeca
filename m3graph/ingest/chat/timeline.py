"""Where a conversation's sessions and turns sit on the source's one timeline (ingest.py's module docstring).

A turn with cue times (subtitles) keeps them; any other turn counts `chat.turn_seconds`; sessions are laid end to
end, so clip lengths stay proportional to what was said. Its own module so ingest.py stays one screenful of logic.
"""

from __future__ import annotations

from collections.abc import Sequence

from m3graph.ingest.chat.model import Session

TURN_SECONDS = 10.0  # default of settings.chat.turn_seconds: a turn without cue times on the timeline


def session_timeline(sessions: Sequence[Session], offset: float,
                     turn_seconds: float = TURN_SECONDS) -> list[tuple[float, float, list[tuple[float, float]]]]:
    """(start_s, end_s, per-turn spans) for each session, laid end to end from `offset`."""
    out = []
    for session in sessions:
        spans, cursor = [], 0.0
        for turn in session.turns:
            if turn.start_s is not None and turn.end_s is not None:
                start, end = turn.start_s, max(turn.end_s, turn.start_s + 0.001)
            else:
                start, end = cursor, cursor + turn_seconds
            spans.append((offset + start, offset + end))
            cursor = max(cursor, end)
        length = max(cursor, turn_seconds)
        out.append((offset, offset + length, spans))
        offset += length
    return out
