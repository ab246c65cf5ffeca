"""One very long conversation built from the BEAM development chats (../shared/data/beam): the input of
`python -m bench.conversation`.

Why a generator: no public conversation of 10^7 tokens exists with dated turns and questions whose evidence is
known; the ten BEAM chats (about 500K tokens each) are real user–assistant conversations with changing facts.
The generator lays them end to end as ONE conversation in the product's generic JSON (docs/conversations.md),
so `m3graph ingest-chat --source-id ID part-*.json` ingests it as a user would:

- chats in the given order (default 500K-1 … 500K-10), each whole; after the last one the set starts again as
  *copy* 1, 2, … with its projects renamed (below), until the requested number of tokens is reached;
- re-dated so time runs forward: the first chat keeps its dates, every later chat (and copy) is shifted by whole
  days so its first batch falls `gap_days` after the previous chat's last one (gaps inside a chat are kept);
- each BEAM batch (one date) becomes sessions of at most `session_messages` messages, cut only before a user
  message so a question stays with its answer; a batch's sessions start at 09:00 of its date, 20 minutes apart;
- ids are stable (turn ``500K-1/c0/m17``: chat, copy, BEAM message id; session ``500K-1/c0/b3/s2``), so a
  regenerated file is the same conversation and a re-run of the ingestion skips what is stored;
- renaming, copy k >= 1: every capitalised word of four letters or more that a chat uses at least five times and
  never writes in lower case (product, library and person names: ``Flask``, ``Socket``; not sentence starts, which
  also occur in lower case, nor months and weekdays) gets the suffix k + 1 (``Flask2``): the copy's facts keep
  their values but no longer share their names with the original's, so the copies read as other projects.

Tokens are *estimated* as characters / 4 (`tokens`), the usual figure for English with GPT-style tokenizers; by
it the BEAM chats hold 465K–700K tokens. Sizes are cut at session boundaries. Only messages are written (the
markers `->-> b,t` stripped, as `m3graph.devkit.eval.beam` does); no question, answer or rubric of the set.
Files go under `.m3graph/` (never committed): one part per chat copy, plus `manifest.json` saying what each holds.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from m3graph.devkit.eval.beam import SPEAKERS, Batch, Chat, Message, load_chat

VERSION = 1  # of the layout below: a manifest of another version is regenerated
GAP_DAYS = 7
SESSION_MESSAGES = 20
_CAPITALISED = re.compile(r"\b[A-Z][a-z]{3,}(?:[A-Z][a-z]+)*\b")
_LOWER = re.compile(r"\b[a-z][a-z]{3,}\b")
_CALENDAR = frozenset(("January", "February", "March", "April", "May", "June", "July", "August", "September",
                       "October", "November", "December", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday",
                       "Saturday", "Sunday"))


def tokens(text: str) -> int:
    """Estimated tokens of a text: characters / 4, at least 1 (module docstring)."""
    return max(1, (len(text) + 3) // 4)


def clean(text: str) -> str:
    """The text as the product stores a turn (one line, whitespace collapsed: `ingest.chat.parsing.clean`)."""
    return " ".join(text.split())


def chat_names(root: Path) -> list[str]:
    """The chat folders under `root` in natural order (500K-2 before 500K-10)."""
    found = [p.name for p in root.iterdir() if (p / "chat.json").is_file()] if root.is_dir() else []
    return sorted(found, key=lambda n: [int(x) if x.isdigit() else x for x in re.split(r"(\d+)", n)])


def renames(chat: Chat) -> list[str]:
    """The names a copy of this chat renames (module docstring), longest first."""
    texts = [m.text for b in chat.batches for m in b.messages]
    caps: Counter[str] = Counter()
    lower: set[str] = set()
    for t in texts:
        caps.update(_CAPITALISED.findall(t))
        lower.update(_LOWER.findall(t))
    names = [w for w, n in caps.items() if n >= 5 and w.lower() not in lower and w not in _CALENDAR]
    return sorted(names, key=lambda w: (-len(w), w))


def renamer(names: Sequence[str], copy: int) -> Any:
    """A function renaming `names` in a text for copy `copy` (copy 0: the text unchanged)."""
    if copy == 0 or not names:
        return lambda text: text
    pattern = re.compile(r"\b(" + "|".join(re.escape(n) for n in names) + r")\b")
    return lambda text: pattern.sub(lambda m: f"{m.group(1)}{copy + 1}", text)


@dataclass(frozen=True)
class Spec:
    """What the generated conversation is; equal specs give the same files (and the same source id)."""

    chats: tuple[str, ...]
    session_messages: int = SESSION_MESSAGES
    gap_days: int = GAP_DAYS

    @property
    def source_id(self) -> str:
        digest = hashlib.sha1(json.dumps([VERSION, asdict(self)]).encode()).hexdigest()[:8]
        return f"conv-beam-{digest}"


@dataclass
class Part:
    file: str
    chat: str
    copy: int
    shift_days: int
    renamed: list[str]
    sessions: int = 0
    messages: int = 0
    tokens: int = 0
    first: str = ""
    last: str = ""


@dataclass
class Manifest:
    spec: Spec
    tokens_target: int
    tokens: int = 0
    parts: list[Part] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"version": VERSION, "source_id": self.spec.source_id, "spec": asdict(self.spec),
                "tokens_target": self.tokens_target, "tokens": self.tokens,
                "parts": [asdict(p) for p in self.parts]}

    @classmethod
    def read(cls, path: Path) -> Manifest | None:
        """The manifest at `path`, or None when there is none or it is of another layout version."""
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            return None
        if raw.get("version") != VERSION:
            return None
        spec = raw["spec"]
        return cls(Spec(tuple(spec["chats"]), spec["session_messages"], spec["gap_days"]), raw["tokens_target"],
                   raw["tokens"], [Part(**p) for p in raw["parts"]])


def sessions_of(batch: Batch, limit: int) -> list[list[Message]]:
    """The batch's messages in sessions of at most `limit`, cut only before a user message (when one is near)."""
    out: list[list[Message]] = [[]]
    for m in batch.messages:
        if len(out[-1]) >= limit and (m.role == "user" or len(out[-1]) >= 2 * limit):
            out.append([])
        out[-1].append(m)
    return [s for s in out if s]


def chat_sessions(chat: Chat, copy: int, shift: timedelta, limit: int, rename: Any) -> Iterator[dict[str, Any]]:
    """The chat copy's sessions in the generic JSON (`sessions[]` items), dated and renamed."""
    for b in chat.batches:
        day = (b.when + shift).replace(hour=9, minute=0, second=0, microsecond=0)
        for s, msgs in enumerate(sessions_of(b, limit)):
            turns = [{"id": f"{chat.name}/c{copy}/m{m.id}", "speaker": SPEAKERS[m.role], "text": clean(rename(m.text))}
                     for m in msgs]
            yield {"id": f"{chat.name}/c{copy}/b{b.number}/s{s}",
                   "started_at": (day + timedelta(minutes=20 * s)).isoformat(), "turns": turns}


def session_tokens(session: dict[str, Any]) -> int:
    return sum(tokens(t["text"]) for t in session["turns"])


def generate(root: Path, out_dir: Path, target: int, spec: Spec) -> Manifest:
    """Writes the conversation (`part-NNNN.json` + `manifest.json`) under `out_dir` until it holds `target`
    estimated tokens; reuses what is there when it was made from the same spec and is at least that long."""
    path = out_dir / "manifest.json"
    have = Manifest.read(path)
    if have is not None and have.spec == spec and have.tokens >= target:
        return have
    if not spec.chats:
        raise SystemExit(f"no BEAM chats in {root} (the shared data set)")
    loaded: dict[str, Chat] = {}  # read when first needed: a small size reads one chat
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob("part-*.json"):
        old.unlink()
    manifest = Manifest(spec, target)
    previous_end: datetime | None = None
    k = 0
    while manifest.tokens < target:
        name = spec.chats[k % len(spec.chats)]
        chat = loaded[name] if name in loaded else loaded.setdefault(name, load_chat(root / name))
        copy = k // len(spec.chats)
        k += 1
        first = chat.batches[0].when
        shift = timedelta(0) if previous_end is None else timedelta(
            days=max(0, (previous_end - first).days + spec.gap_days))
        part = Part(f"part-{k:04d}.json", chat.name, copy, shift.days, renames(chat) if copy else [])
        sessions = []
        for s in chat_sessions(chat, copy, shift, spec.session_messages, renamer(part.renamed, copy)):
            if manifest.tokens >= target:
                break
            sessions.append(s)
            n = session_tokens(s)
            manifest.tokens += n
            part.tokens += n
            part.messages += len(s["turns"])
        part.sessions = len(sessions)
        part.first, part.last = sessions[0]["started_at"], sessions[-1]["started_at"]
        previous_end = chat.batches[-1].when + shift
        body = {"source_id": spec.source_id, "speakers": list(SPEAKERS.values()), "sessions": sessions}
        (out_dir / part.file).write_text(json.dumps(body, ensure_ascii=False, indent=0), encoding="utf-8")
        manifest.parts.append(part)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(manifest.to_json(), indent=1), encoding="utf-8")
    tmp.replace(path)
    return manifest
