"""A conversation as a folder: one sub-folder per session, each with its ``chat.txt`` and the files it shares.

```
trip/                           the conversation; its name is the source id
  2024-05-01_session-1/         one session; folders are read in name order, a leading date is the start (UTC)
    chat.txt                    "Name: text" lines; "Name: [file: receipt.pdf]" shares a file of this folder
    receipt.pdf
  2024-05-08/
    chat.txt
    photos/anna.jpg             "Ann: look! [file: photos/anna.jpg]"
```
A line may mix text and files (``Ann: here it is [file: a.pdf] [file: b.png]``); a line without a speaker
continues the previous turn; ``#`` lines are comments. Turn ids are ``<session folder>:L<line>``. File paths are
relative to the session folder and are stored relative to the conversation folder, which is the default files
root (`ingest-chat --files-root`): nothing is opened here, `attachments.py` checks and reads the files.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

from m3graph.ingest.chat.model import (
    ChatFormatError,
    Conversation,
    FileRef,
    Session,
    Turn,
    file_refs,
    speakers_in_order,
)
from m3graph.ingest.chat.parsing import DEFAULT_LIMITS, ReadLimits, clean, read_lines

CHAT_FILE = "chat.txt"
_LINE = re.compile(r"^\s*([^\s:#\[][^:]{0,60}?)\s*:\s*(.*)$")
_FILE = re.compile(r"\[file:\s*([^\]\n]{1,1000}?)\s*\]", re.IGNORECASE)
_DATE = re.compile(r"^(\d{4}-\d{2}-\d{2})")
MAX_SESSIONS = 10_000


def looks_like_folder(path: Path) -> bool:
    """A directory with at least one session folder holding a chat.txt (any other directory is refused as one
    by the file readers: "is a directory, not a regular file")."""
    try:
        return path.is_dir() and any(d.is_dir() and (d / CHAT_FILE).is_file() for d in path.iterdir())
    except OSError:
        return False


def _session_start(name: str) -> datetime | None:
    m = _DATE.match(name)
    if not m:
        return None
    try:
        return datetime.fromisoformat(m.group(1)).replace(tzinfo=UTC)
    except ValueError:
        return None


def _session(folder: Path, index: int, limits: ReadLimits, count: int) -> tuple[Session | None, int]:
    chat = folder / CHAT_FILE
    turns: list[Turn] = []
    for number, line in enumerate(read_lines(chat, limits), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = _LINE.match(line)
        body = m.group(2) if m else line
        try:
            files = file_refs([f"{folder.name}/{name.strip()}" for name in _FILE.findall(body)])
        except ValueError as exc:
            raise ChatFormatError(chat, number, str(exc)) from None
        text = clean(_FILE.sub(" ", body))
        if m:
            count += 1
            limits.check_turns(chat, number, count)
            turns.append(Turn(turn_id=f"{folder.name}:L{number}", speaker=clean(m.group(1)), text=text,
                              files=tuple(FileRef(f.path) for f in files)))
        elif turns:
            last = turns[-1]
            turns[-1] = Turn(last.turn_id, last.speaker, clean(f"{last.text} {text}"), files=last.files + files)
        else:
            raise ChatFormatError(chat, number, "expected 'Speaker: text' (a line without a speaker can only "
                                                "continue a turn)")
    empty = next((t for t in turns if not t.text and not t.files), None)
    if empty is not None:
        raise ChatFormatError(chat, int(empty.turn_id.rsplit(":L", 1)[1]), f"turn of {empty.speaker} has no text")
    if not turns:
        return None, count
    return Session(index=index, started_at=_session_start(folder.name), turns=tuple(turns), key=folder.name), count


def load_folder(path: str | Path, source_id: str | None = None, limits: ReadLimits = DEFAULT_LIMITS) -> Conversation:
    """Every session folder that holds a ``chat.txt``, in name order (other entries are ignored)."""
    p = Path(path)
    if not p.is_dir():
        raise ChatFormatError(p, None, "not a directory")
    folders = sorted(d for d in p.iterdir() if d.is_dir() and not d.is_symlink() and (d / CHAT_FILE).is_file())
    if len(folders) > MAX_SESSIONS:
        raise ChatFormatError(p, None, f"{len(folders)} session folders (at most {MAX_SESSIONS})")
    sessions: list[Session] = []
    count = 0
    for folder in folders:
        session, count = _session(folder, len(sessions), limits, count)
        if session is not None:
            sessions.append(session)
    if not sessions:
        raise ChatFormatError(p, None, f"holds no session folder with a {CHAT_FILE} of 'Speaker: text' lines")
    return Conversation(source_id=source_id or p.name, sessions=tuple(sessions),
                        speakers=speakers_in_order(tuple(sessions)), path=str(p))
