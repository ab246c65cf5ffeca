"""The generic multi-session conversation JSON (schema in docs/conversations.md).

```json
{"source_id": "standup", "speakers": ["Ann", "Bob"],
 "sessions": [{"id": "2024-05-01", "started_at": "2024-05-01T09:00:00Z",
               "turns": [{"id": "t1", "speaker": "Ann", "text": "...", "image_caption": "...",
                          "start_s": 0.0, "end_s": 3.5,
                          "files": [{"path": "docs/receipt.pdf", "name": "receipt.pdf", "kind": "document"}]}]}]}
```
Only `sessions[].turns[].speaker` and `text` (or `image_caption`, or `files`) are required. Unknown keys are
refused, so a typo ("speker") is an error naming its line instead of a turn silently losing its speaker.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

from m3graph.ingest.chat.model import ChatFormatError, Conversation, Session, Turn, file_refs, speakers_in_order
from m3graph.ingest.chat.parsing import DEFAULT_LIMITS, ReadLimits, clean, item_lines, line_of, load_json, parse_when

TOP_KEYS = {"source_id", "speakers", "sessions"}
SESSION_KEYS = {"id", "started_at", "turns"}
TURN_KEYS = {"id", "speaker", "text", "image_caption", "start_s", "end_s", "files"}


def looks_like_generic(data: Any) -> bool:
    return isinstance(data, dict) and isinstance(data.get("sessions"), list)


def session_digest(turns: tuple[Turn, ...], started_at: datetime | None = None) -> str:
    """A content key for sessions that carry no id: the same session ingested twice is recognised."""
    h = hashlib.sha1(f"{started_at.isoformat() if started_at else ''}\x1d".encode())
    for t in turns:
        h.update(f"{t.speaker}\x1f{t.text}\x1f{t.caption or ''}\x1e".encode())
        for f in t.files:  # only turns that share files add to the key: older sessions keep theirs
            h.update(f"\x1d{f.path}\x1f{f.name or ''}\x1f{f.kind or ''}".encode())
    return "sha1:" + h.hexdigest()[:16]


def _number(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{value!r} is not a non-negative number of seconds")
    return float(value)


def load_generic_json(path: str | Path, source_id: str | None = None,
                      limits: ReadLimits = DEFAULT_LIMITS) -> Conversation:
    p = Path(path)
    raw, data = load_json(p, limits)
    if not looks_like_generic(data):
        raise ChatFormatError(p, 1, "not a conversation JSON (needs a top-level 'sessions' list)")
    unknown = sorted(set(data) - TOP_KEYS)
    if unknown:
        raise ChatFormatError(p, line_of(raw, f'"{unknown[0]}"'), f"unknown key {unknown[0]!r} (allowed: "
                              f"{sorted(TOP_KEYS)})")
    declared = data.get("speakers", [])
    if not isinstance(declared, list) or not all(isinstance(s, str) and s.strip() for s in declared):
        raise ChatFormatError(p, line_of(raw, '"speakers"'), "'speakers' must be a list of names")
    sid = source_id or data.get("source_id") or p.stem
    if not isinstance(sid, str):
        raise ChatFormatError(p, line_of(raw, '"source_id"'), "'source_id' must be a string")
    sessions: list[Session] = []
    limits.check_turns(p, line_of(raw, '"sessions"'), sum(  # before any turn is built or located
        len(s["turns"]) for s in data["sessions"] if isinstance(s, dict) and isinstance(s.get("turns"), list)))
    s_starts, s_lines = item_lines(raw, "sessions")
    for si, s in enumerate(data["sessions"]):
        where = f"sessions[{si}]"
        s_line = s_lines[si] if si < len(s_lines) else line_of(raw, '"sessions"')
        if not isinstance(s, dict):
            raise ChatFormatError(p, s_line, f"{where} must be an object")
        bad = sorted(set(s) - SESSION_KEYS)
        if bad:
            raise ChatFormatError(p, s_line, f"{where}: unknown key {bad[0]!r} (allowed: {sorted(SESSION_KEYS)})")
        if not isinstance(s.get("turns"), list):
            raise ChatFormatError(p, s_line, f"{where} has no 'turns' list")
        try:
            started = parse_when(s.get("started_at"))
        except ValueError as exc:
            raise ChatFormatError(p, s_line, f"{where}.started_at: {exc}") from None
        _, t_lines = item_lines(raw, "turns", s_starts[si]) if si < len(s_starts) else ([], [])
        turns = []
        for ti, t in enumerate(s["turns"]):
            t_line = t_lines[ti] if ti < len(t_lines) else s_line
            twhere = f"{where}.turns[{ti}]"
            if not isinstance(t, dict):
                raise ChatFormatError(p, t_line, f"{twhere} must be an object")
            bad = sorted(set(t) - TURN_KEYS)
            if bad:
                raise ChatFormatError(p, t_line, f"{twhere}: unknown key {bad[0]!r} (allowed: {sorted(TURN_KEYS)})")
            speaker, text, caption = t.get("speaker"), t.get("text", ""), t.get("image_caption")
            if not isinstance(speaker, str) or not speaker.strip():
                raise ChatFormatError(p, t_line, f"{twhere} has no 'speaker'")
            if not isinstance(text, str) or (caption is not None and not isinstance(caption, str)):
                raise ChatFormatError(p, t_line, f"{twhere}: 'text' and 'image_caption' must be strings")
            try:
                files = file_refs(t.get("files"))
            except ValueError as exc:
                raise ChatFormatError(p, t_line, f"{twhere}: {exc}") from None
            if not clean(text) and not (caption and clean(caption)) and not files:
                raise ChatFormatError(p, t_line, f"{twhere} has neither 'text' nor 'image_caption' nor 'files'")
            try:
                start, end = _number(t.get("start_s")), _number(t.get("end_s"))
            except ValueError as exc:
                raise ChatFormatError(p, t_line, f"{twhere}: {exc}") from None
            if (start is None) != (end is None) or (start is not None and end is not None and end < start):
                raise ChatFormatError(p, t_line, f"{twhere}: give both start_s and end_s, end after start")
            tid = t.get("id", f"S{si + 1}:{ti + 1}")
            if not isinstance(tid, str | int) or isinstance(tid, bool):
                raise ChatFormatError(p, t_line, f"{twhere}: 'id' must be a string or an integer")
            turns.append(Turn(turn_id=str(tid), speaker=clean(speaker), text=clean(text),
                              caption=clean(caption) if caption else None, start_s=start, end_s=end, files=files))
        key = s.get("id")
        if key is not None and (not isinstance(key, str | int) or isinstance(key, bool)):
            raise ChatFormatError(p, s_line, f"{where}: 'id' must be a string or an integer")
        if turns:
            sessions.append(Session(index=len(sessions), started_at=started, turns=tuple(turns),
                                    key=str(key) if key is not None else session_digest(tuple(turns), started)))
    ids = Counter(t.turn_id for s in sessions for t in s.turns)
    dup = next((i for i, n in ids.items() if n > 1), None)
    if dup is not None:
        raise ChatFormatError(p, line_of(raw, f'"{dup}"'), f"turn id {dup!r} appears twice")
    keys = Counter(s.key for s in sessions)
    dup = next((k for k, n in keys.items() if n > 1), None)
    if dup is not None:
        raise ChatFormatError(p, line_of(raw, f'"{dup}"'), f"session id {dup!r} appears twice")
    return Conversation(source_id=sid, sessions=tuple(sessions),
                        speakers=speakers_in_order(tuple(sessions), tuple(clean(s) for s in declared)), path=str(p))
