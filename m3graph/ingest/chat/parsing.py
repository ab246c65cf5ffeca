"""Small helpers every chat loader shares: reading a file, locating a line, parsing a session date."""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from m3graph.ingest.chat.model import ChatFormatError
from m3graph.settings import ChatConfig

_LOCOMO_DATE = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})\s*$", re.I)
_MONTHS = {m: i for i, m in enumerate(("january", "february", "march", "april", "may", "june", "july", "august",
                                       "september", "october", "november", "december"), start=1)}
_CHUNK = 1 << 20
_LINE_END = re.compile("\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")  # str.splitlines' line ends


@dataclass(frozen=True)
class ReadLimits:
    """Bounds on one chat file (settings `chat.max_file_mb`, `chat.max_turns`), checked while reading.

    The defaults hold real chats with room to spare (a 64 MiB transcript is ~900k short turns; 200,000 turns is
    years of daily conversation) and keep a hostile or mistaken input (`/dev/zero`, a 700k-turn dump) from
    costing more than a few hundred MB of memory: the bytes are refused at the cap while they are read, the
    turns at the cap while they are parsed, before anything is embedded or written.
    """

    max_bytes: int = 64 * 2**20
    max_turns: int = 200_000

    @classmethod
    def of(cls, chat: ChatConfig) -> ReadLimits:
        """The bounds configured in `settings.chat`."""
        return cls(max_bytes=chat.max_file_mb * 2**20, max_turns=chat.max_turns)

    def check_turns(self, path: str | Path, line: int | None, count: int) -> None:
        if count > self.max_turns:
            raise ChatFormatError(path, line, f"more than {self.max_turns} turns (the chat.max_turns bound); "
                                              "split the file or raise the bound")


DEFAULT_LIMITS = ReadLimits()
_KINDS = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory"))


def _not_regular(mode: int) -> str | None:
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def read_bytes(path: str | Path, limits: ReadLimits = DEFAULT_LIMITS) -> bytes:
    """A regular file's bytes, at most `limits.max_bytes`.

    Only regular files: `/dev/zero` never ends and a FIFO blocks until a writer comes, so the file is opened
    with O_NONBLOCK (opening a FIFO then returns at once) and `fstat`-ed before one byte is read. The size is
    checked before reading and again while reading (a file that grows is cut off at the cap, not read to the
    end).
    """
    p = Path(path)
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # opening a socket
            raise ChatFormatError(p, None, "is a socket, not a regular file") from None
        raise ChatFormatError(p, None, f"cannot be read ({exc.strerror or exc})") from None
    info = os.fstat(fd)
    kind = _not_regular(info.st_mode)
    if kind is not None:
        os.close(fd)
        raise ChatFormatError(p, None, f"is {kind}, not a regular file")
    with os.fdopen(fd, "rb", buffering=0) as f:
        cap = limits.max_bytes
        too_big = f"is larger than {cap / 2**20:g} MiB (the chat.max_file_mb bound)"
        if info.st_size > cap:
            raise ChatFormatError(p, None, too_big)
        parts: list[bytes] = []
        total = 0
        try:
            while chunk := f.read(_CHUNK):
                total += len(chunk)
                if total > cap:
                    raise ChatFormatError(p, None, too_big)
                parts.append(chunk)
        except OSError as exc:
            raise ChatFormatError(p, None, f"cannot be read ({exc.strerror or exc})") from None
    return b"".join(parts)


def decode(path: str | Path, data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ChatFormatError(path, line, "is not UTF-8 text") from None


def read_text(path: str | Path, limits: ReadLimits = DEFAULT_LIMITS) -> str:
    return decode(path, read_bytes(path, limits))


def read_lines(path: str | Path, limits: ReadLimits = DEFAULT_LIMITS) -> Iterator[str]:
    """The file's lines as `str.splitlines` cuts them, produced one at a time (a parser that refuses at its
    turn bound has not built the rest), from text bounded like `read_bytes`."""
    text = read_text(path, limits)
    pos = 0
    for m in _LINE_END.finditer(text):
        yield text[pos:m.start()]
        pos = m.end()
    if pos < len(text):
        yield text[pos:]


MAX_JSON_DEPTH = 64  # a conversation nests ~6 levels; deeper is refused as input, not a RecursionError later


def parse_json(path: str | Path, raw: str) -> Any:
    """`raw` parsed, or `ChatFormatError` naming the file: invalid JSON, or JSON nested deeper than
    `MAX_JSON_DEPTH` (a conversation nested 10^5 deep was an internal RecursionError, exit 70: issue 37)."""
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ChatFormatError(path, exc.lineno, f"invalid JSON ({exc.msg})") from exc
    except RecursionError:
        data = None
    else:
        if json_depth(data, MAX_JSON_DEPTH) <= MAX_JSON_DEPTH:
            return data
    raise ChatFormatError(path, None, f"JSON nested more than {MAX_JSON_DEPTH} levels deep (a conversation needs "
                                      "a handful)")


def json_depth(data: Any, stop: int) -> int:
    """How deep lists and objects nest in `data`, walked without recursion; stops counting past `stop`."""
    deepest = 0
    todo: list[tuple[Any, int]] = [(data, 1)]
    while todo:
        item, depth = todo.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if not isinstance(item, list):
            continue
        deepest = max(deepest, depth)
        if deepest > stop:
            break
        todo.extend((x, depth + 1) for x in item if isinstance(x, list | dict))
    return deepest


def load_json(path: str | Path, limits: ReadLimits = DEFAULT_LIMITS) -> tuple[str, Any]:
    raw = read_text(path, limits)
    return raw, parse_json(path, raw)


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
    lines, line, last = [], 1, 0
    for s in starts:  # counted incrementally: one pass over the text, not one per element
        line += raw.count("\n", last, s)
        last = s
        lines.append(line)
    return starts, lines
