"""One very long conversation built from the BEAM development chats (../shared/data/beam): the input of
`python -m bench.conversation`.

Why a generator: no public conversation of 10^7 tokens exists with dated turns and questions whose evidence is
known; the ten BEAM chats (about 500K tokens each) are real user–assistant conversations with changing facts.
The generator lays them end to end as ONE conversation in the product's generic JSON (docs/conversations.md),
so `m3graph ingest-chat --source-id ID part-*.json` ingests it as a user would:

- chats in the given order (default 500K-1 … 500K-10), each whole; after the last one the set starts again as
  *copy* 1, 2, … with its projects renamed (below), until the requested number of tokens is reached; the first
  `unique` chats of the order (default 1) are never copied: the copies are of the chats after them only;
- re-dated so time runs forward, by whole calendar years (below): the first chat keeps its dates, every later
  chat (and copy) moves by the fewest years that put its first batch at least `gap_days` after the previous
  chat's last one;
- each BEAM batch (one date) becomes sessions of at most `session_messages` messages, cut only before a user
  message so a question stays with its answer; a batch's sessions start at 09:00 of its date, 20 minutes apart;
- ids are stable (turn ``500K-1/c0/m17``: chat, copy, BEAM message id; session ``500K-1/c0/b3/s2``), so a
  regenerated file is the same conversation and a re-run of the ingestion skips what is stored;
- renaming, copy k >= 1: every capitalised word of four letters or more that a chat uses at least five times and
  never writes in lower case (product, library and person names: ``Flask``, ``Socket``; not sentence starts, which
  also occur in lower case, nor months and weekdays) gets the suffix k + 1 (``Flask2``): the copy's facts keep
  their values but no longer share their names with the original's, so the copies read as other projects.

Why some chats are never copied (version 3): `bench.conversation --quality` asks the questions of the first chats
and pads them with the later ones as unrelated history. A copy of an asked chat is not unrelated: renaming changes
its product names, but the user still says "my sprint deadline is April 5" or "my object detection app runs at
180 ms" in the copy, decades later, with the same generic words, so the newest statement of the very fact asked
about is the copy's (moved by its years), and a memory that answers with the newest statement is scored wrong for
doing so. Version 2 copied every chat; at 10^7 tokens its quality fell 5/12 -> 3/12, and the misses at the large
size were the copies' days and values ("April 5, 2072"). With `unique` set to the chats asked about, their facts
are stated once, and the padding is the other chats and their renamed copies.

Re-dating (`year_shift`, `shift_text`): a chat's text, its session dates and the gold of its questions must say
the same days, or a temporal question of a later chat mixes shifted session days with the unshifted days its
messages name (the defect of version 1, which shifted by days: "0 days, from 15 March 2024 to 15 March 2024").
A chat therefore moves by N calendar years, N a multiple of 4 chosen so that every year the chat touches keeps its
leap status (`calendar.isleap(y) == isleap(y + N)`; this skips 2100). Then every date keeps its month and day,
every span between two dates of the chat is unchanged to the day, and what the text says without a year stays
right as written: "by March 15", "next month", "in Q2", "this summer", "two weeks ago" are read against a session
date that moved by whole years. Only explicit years in date contexts move, by the same N: "February 15, 2024",
"15 Feb 2025", "March 2024", "2024-02-15", "2023/03/16", "03/15/2024", ``datetime(2024, 3, 1``, "Q3 2024",
"summer of 2024", "as of 2024", "since 2019"; a four-digit number in no such context ("RTX 2060", "maxconn 2000",
"Amazon Linux 2018.03") is not a year and stays. The questions asked of a chat (text, gold answer, rubric, the
stale value a knowledge-update item warns of) get the same `shift_text` (`shift_question`), so a date-valued
gold ("April 5, 2024") names the day the shifted chat names. The other way, shifting by days and rewriting
every date the product's date finder reads, would have to resolve each year-less date, month and season against
its session and rewrite it into another month or season: heavier, and wrong wherever the finder is.
What the year shift does not keep: weekdays. A session day (and a named date) falls on another weekday N years
on, so a weekday said relative to the session ("by Friday") may name a different day; a weekday written beside a
date is left as written, and is then wrong. In the ten chats, 1 of 247 weekday names sits beside a date ("April 1
(Easter Monday)"), and no knowledge-update or temporal question rests on a weekday. The cost of whole 4-year steps:
each chat takes 4 years, so the 23 chats of 10^7 tokens run from 2024 to 2116 (2100, not a leap year, is skipped);
the product's date finder reads named years 1900–2099 only (`m3graph.dates.YEAR`), so in the parts after 2099 (the
last four renamed copies, from about 8.35 × 10^6 tokens on in the default order; the questions asked come from
the first pass of the set) "in 2108" or "March 2108" is not read as a date, while "March 15, 2108" is (as March 15
of its session's year) and the session dates are right.

Tokens are *estimated* as characters / 4 (`tokens`), the usual figure for English with GPT-style tokenizers; by
it the BEAM chats hold 313K–520K tokens, 4.4 × 10^6 the ten. Sizes are cut at session boundaries. Only messages
are written (the markers `->-> b,t` stripped, as `m3graph.devkit.eval.beam` does; years moved before names are
renamed); no question, answer or rubric of the set. Files go under `.m3graph/` (never committed): one part per
chat copy, plus `manifest.json` saying what each holds (each part's `shift_years`, which `bench.conversation`
applies to the chat's questions).
"""

from __future__ import annotations

import calendar
import hashlib
import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from m3graph.dates import DAY, MONTH, SEASON, YEAR
from m3graph.devkit.eval.beam import SPEAKERS, Batch, Chat, Message, Question, load_chat

VERSION = 3  # of the layout below: a manifest of another version is regenerated
# (1: shifted by days, not years; 2: every chat copied, the asked ones too)
GAP_DAYS = 7  # at least, between one chat's last batch and the next one's first
YEAR_STEP = 4  # a chat moves by a multiple of this many years: leap days stay (module docstring)
SESSION_MESSAGES = 20
_CAPITALISED = re.compile(r"\b[A-Z][a-z]{3,}(?:[A-Z][a-z]+)*\b")
_LOWER = re.compile(r"\b[a-z][a-z]{3,}\b")
_CALENDAR = frozenset(("January", "February", "March", "April", "May", "June", "July", "August", "September",
                       "October", "November", "December", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday",
                       "Saturday", "Sunday"))


# Explicit years in date contexts (module docstring); each pattern's group "y" is the year.
_NOT_A_COUNT = (r"(?![-/.%]?\d|%|\s*(?i:ms|s|sec|secs|seconds?|km|kb|mb|gb|px|bytes|rows|records|items|users|"
                r"requests|people|times|steps)\b)")
_YEARS_IN_DATES = tuple(re.compile(p) for p in (
    # 2024-02-15, 2024-02, 2023/03/16 (not a path's /2015-03-31/)
    rf"(?<!/)\b(?P<y>{YEAR})(?=[-/](?:0[1-9]|1[0-2])[-/](?:0[1-9]|[12]\d|3[01])(?!\d)|-(?:0[1-9]|1[0-2])\b(?![-/.]\d))",
    rf"\b\d{{1,2}}/\d{{1,2}}/(?P<y>{YEAR})\b",  # 03/15/2024 or 15/03/2024: the year either way
    # May 5, 2024; March 1-15, 2024; 15 Feb 2025 (its "Feb 2025"); April.2023
    rf"\b{MONTH}(?:\b|(?<=\.))(?:\s+{DAY}\b(?:\s*[-–]\s*{DAY}\b)?)?[\s,.]*(?P<y>{YEAR})\b(?![-/.]\d)",
    rf"\b(?:{SEASON}|Q[1-4]|H[12]|FY)(?:\s+(?i:of))?[\s,'-]*(?P<y>{YEAR})\b(?!/)",  # summer of 2024, Q3 2024
    rf"(?<!/)\b(?P<y>{YEAR})\s*-?\s*Q[1-4]\b",  # 2024 Q3 (not the comet C/2019 Q4)
    rf"\b(?:datetime|date|Date)\(\s*(?P<y>{YEAR})\s*,",  # datetime(2024, 3, 1), new Date(2024, 1, 1)
    rf"\b(?i:in|since|during|until|till|by|before|after|around|circa|as\s+of|back\s+in|early|late|mid|"
    rf"end\s+of|start\s+of|beginning\s+of)\s+(?P<y>{YEAR})\b{_NOT_A_COUNT}",  # as of 2024, since 2019
))
# Dates that are names, not days of the story: an API's version ("Version": "2012-10-17"). A path's "/2015-03-31/",
# a URL's "fall-2010/" and the comet "C/2019 Q4" are kept out by the patterns above.
_NAMES = re.compile(rf"""(?i:version)["']?\s*[:=]\s*["']?(?P<y>{YEAR})-""")


def date_years(text: str) -> list[tuple[int, int]]:
    """The (start, end) character spans of the explicit years in date contexts (module docstring), in order."""
    spans = {m.span("y") for p in _YEARS_IN_DATES for m in p.finditer(text)}
    return sorted(spans - {m.span("y") for m in _NAMES.finditer(text)})


def shift_text(text: str, years: int) -> str:
    """The text with every explicit year in a date context moved by `years` (module docstring)."""
    if not years:
        return text
    out, at = [], 0
    for a, b in date_years(text):
        out += [text[at:a], str(int(text[a:b]) + years)]
        at = b
    return "".join(out) + text[at:]


def shift_date(when: datetime, years: int) -> datetime:
    """The same month, day and time `years` later (`year_shift` keeps leap days, so the day exists)."""
    return when.replace(year=when.year + years)


def shift_question(q: Question, years: int) -> Question:
    """The question as asked of the chat moved by `years`: its text, gold, rubric and stale value shifted alike."""
    if not years:
        return q
    return replace(q, question=shift_text(q.question, years), gold=shift_text(q.gold, years),
                   rubric=tuple(shift_text(r, years) for r in q.rubric), confusion=shift_text(q.confusion, years))


def chat_years(chat: Chat) -> set[int]:
    """Every year the chat touches: its batches' and the explicit ones of its messages and questions."""
    texts = [m.text for b in chat.batches for m in b.messages]
    texts += [t for q in chat.questions for t in (q.question, q.gold, q.confusion, *q.rubric)]
    return {b.when.year for b in chat.batches} | {int(t[a:b]) for t in texts for a, b in date_years(t)}


def year_shift(first: datetime, years: Iterable[int], not_before: datetime | None) -> int:
    """The fewest years, a multiple of `YEAR_STEP`, that move `first` to `not_before` or later while every year in
    `years` keeps its leap status (so a date the chat names exists after the move and no span between two changes);
    0 when there is nothing to follow."""
    touched = set(years) | {first.year}
    n = 0
    while (not_before is not None and shift_date(first, n) < not_before) or any(
            calendar.isleap(y) != calendar.isleap(y + n) for y in touched):
        n += YEAR_STEP
    return n


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
    unique: int = 1  # the first chats of the order that are never copied (module docstring; 0: none)

    def chat_at(self, k: int) -> tuple[str, int]:
        """The `k`-th part's chat and copy number: the chats in order, then copies of those after `unique`."""
        if k < len(self.chats):
            return self.chats[k], 0
        repeated = self.chats[self.unique:]
        if not repeated:
            raise SystemExit(f"all {len(self.chats)} chats are unique (never copied): the conversation cannot grow "
                             "past them; lower --unique-chats or give more chats")
        j = k - len(self.chats)
        return repeated[j % len(repeated)], 1 + j // len(repeated)

    @property
    def source_id(self) -> str:
        digest = hashlib.sha1(json.dumps([VERSION, asdict(self)]).encode()).hexdigest()[:8]
        return f"conv-beam-{digest}"


@dataclass
class Part:
    file: str
    chat: str
    copy: int
    shift_years: int
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
        return cls(Spec(tuple(spec["chats"]), spec["session_messages"], spec["gap_days"], spec["unique"]),
                   raw["tokens_target"],
                   raw["tokens"], [Part(**p) for p in raw["parts"]])


def sessions_of(batch: Batch, limit: int) -> list[list[Message]]:
    """The batch's messages in sessions of at most `limit`, cut only before a user message (when one is near)."""
    out: list[list[Message]] = [[]]
    for m in batch.messages:
        if len(out[-1]) >= limit and (m.role == "user" or len(out[-1]) >= 2 * limit):
            out.append([])
        out[-1].append(m)
    return [s for s in out if s]


def chat_sessions(chat: Chat, copy: int, years: int, limit: int, rename: Any) -> Iterator[dict[str, Any]]:
    """The chat copy's sessions in the generic JSON (`sessions[]` items), moved by `years` and renamed."""
    for b in chat.batches:
        day = shift_date(b.when, years).replace(hour=9, minute=0, second=0, microsecond=0)
        for s, msgs in enumerate(sessions_of(b, limit)):
            turns = [{"id": f"{chat.name}/c{copy}/m{m.id}", "speaker": SPEAKERS[m.role],
                      "text": clean(rename(shift_text(m.text, years)))} for m in msgs]
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
    loaded: dict[str, tuple[Chat, set[int]]] = {}  # read when first needed: a small size reads one chat
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob("part-*.json"):
        old.unlink()
    manifest = Manifest(spec, target)
    previous_end: datetime | None = None
    k = 0
    while manifest.tokens < target:
        name, copy = spec.chat_at(k)
        if name not in loaded:
            read = load_chat(root / name)
            loaded[name] = read, chat_years(read)
        chat, years = loaded[name]
        k += 1
        shift = year_shift(chat.batches[0].when, years,
                           None if previous_end is None else previous_end + timedelta(days=spec.gap_days))
        part = Part(f"part-{k:04d}.json", chat.name, copy, shift, renames(chat) if copy else [])
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
        previous_end = shift_date(chat.batches[-1].when, shift)
        body = {"source_id": spec.source_id, "speakers": list(SPEAKERS.values()), "sessions": sessions}
        (out_dir / part.file).write_text(json.dumps(body, ensure_ascii=False, indent=0), encoding="utf-8")
        manifest.parts.append(part)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(manifest.to_json(), indent=1), encoding="utf-8")
    tmp.replace(path)
    return manifest
