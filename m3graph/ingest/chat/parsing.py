"""Small helpers every chat loader shares: reading a file, locating a line, parsing a session date."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from m3graph.ingest.chat.model import ChatFormatError

MAX_BYTES = 64 * 1024 * 1024  # a transcript bigger than this is not a conversation; refuse before reading it
_LOCOMO_DATE = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})\s*$", re.I)
_MONTHS = {m: i for i, m in enumerate(("january", "february", "march", "april", "may", "june", "july", "august",
                                       "september", "october", "november", "december"), start=1)}


def read_text(path: str | Path) -> str:
    p = Path(path)
    try:
        if p.stat().st_size > MAX_BYTES:
            raise ChatFormatError(p, None, f"file is larger than {MAX_BYTES // 2**20} MiB")
        data = p.read_bytes()
    except OSError as exc:
        raise ChatFormatError(p, None, f"cannot be read ({exc.strerror or exc})") from exc
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ChatFormatError(p, line, "is not UTF-8 text") from exc


def load_json(path: str | Path) -> tuple[str, Any]:
    raw = read_text(path)
    try:
        return raw, json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ChatFormatError(path, exc.lineno, f"invalid JSON ({exc.msg})") from exc


def line_of(raw: str, *needles: str) -> int | None:
    """The line of the first needle found after the previous one (a JSON path located by its keys/values), so a
    semantic error in a JSON file still names a line; None when a needle is not found."""
    pos = 0
    for needle in needles:
        found = raw.find(needle, pos)
        if found < 0:
            return raw.count("\n", 0, pos) + 1 if pos else None
        pos = found
    return raw.count("\n", 0, pos) + 1


def parse_when(value: object) -> datetime | None:
    """A session's absolute start: LoCoMo's "1:56 pm on 8 May, 2023" or ISO 8601; naive times are read as UTC.
    Raises ValueError for anything else (the caller names the line)."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ValueError(f"a date must be a string, not {type(value).__name__}")
    m = _LOCOMO_DATE.match(value)
    if m:
        hour, minute, ampm, day, month, year = m.groups()
        if month.lower() not in _MONTHS:
            raise ValueError(f"unknown month {month!r} in date {value!r}")
        h = int(hour) % 12 + (12 if ampm.lower() == "pm" else 0)
        return datetime(int(year), _MONTHS[month.lower()], int(day), h, int(minute), tzinfo=UTC)
    try:
        when = datetime.fromisoformat(value.strip())
    except ValueError:
        raise ValueError(f"unrecognised date {value!r} (use ISO 8601, e.g. 2023-05-08T13:56:00Z)") from None
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def clean(text: str) -> str:
    """One line of text: inner whitespace collapsed (turns are stored as single lines)."""
    return " ".join(text.split())


_DECODER = json.JSONDecoder()


def _skip_ws(raw: str, pos: int) -> int:
    while pos < len(raw) and raw[pos] in " \t\r\n":
        pos += 1
    return pos


def item_lines(raw: str, key: str, begin: int = 0) -> tuple[list[int], list[int]]:
    """Start offsets and lines of the elements of the array under `"key"` (the first one after `begin`).

    The standard parser keeps no positions; re-decoding element by element from the key's array gives each
    session or turn its own line for messages. Empty lists when the key or its array is not found.
    """
    at = raw.find(f'"{key}"', begin)
    while at >= 0:
        pos = _skip_ws(raw, at + len(key) + 2)
        if pos < len(raw) and raw[pos] == ":":
            pos = _skip_ws(raw, pos + 1)
            break
        at = raw.find(f'"{key}"', at + 1)
    if at < 0 or pos >= len(raw) or raw[pos] != "[":
        return [], []
    starts: list[int] = []
    pos = _skip_ws(raw, pos + 1)
    while pos < len(raw) and raw[pos] != "]":
        starts.append(pos)
        try:
            _, pos = _DECODER.raw_decode(raw, pos)
        except json.JSONDecodeError:
            break
        pos = _skip_ws(raw, pos)
        if pos < len(raw) and raw[pos] == ",":
            pos = _skip_ws(raw, pos + 1)
    return starts, [raw.count("\n", 0, s) + 1 for s in starts]
