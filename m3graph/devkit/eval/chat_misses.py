"""Why a chat-qa answer is wrong: the evidence never reached the reader (a retrieval miss), or it did and the
reader still answered wrong or abstained (a reading miss).

Every LoCoMo question names its evidence turns ("D1:3" = session 1, turn 3: the file's `dia_id`). Chat
ingestion stores a conversation's sessions as clips in file order (clip index = the session's position, 0-based)
and each turn as one memory ``Name <speaker_N>: text [shares an image: caption]`` (`ingest.chat.ingest.turn_line`,
an over-long turn in parts). A results record holds, per round, the lines the controller showed the reader under
clip labels (``CLIP_3``, or ``video/CLIP_3`` for several sources), rendered with ``<character_K>`` tags, resolved
dates inserted as ``[= 7 May 2023]`` and lines over `LINE_CHARS` cut with "…". So an evidence turn counts as
shown when a line under its session's label is that turn's text once the rendering is undone (the prefix, for a
cut line). The match is by text on the record alone, so it runs on any results file without Neo4j or a model.

A question is *all-shown* when every one of its evidence turns was shown in some round (what the reader needed),
*any-shown* when at least one was. Over everything the rounds showed, that is also the controller's multi-hop
evidence recall (issue 22): a second search that finds the other session shows up here, not in `eval retrieval`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from m3graph.devkit.eval.chat_qa import CATEGORIES, ChatQuestion, load_questions
from m3graph.devkit.eval.judge import answer_match, is_abstention
from m3graph.devkit.eval.runner import UNANSWERABLE
from m3graph.errors import InvalidInputError
from m3graph.ingest.chat.ingest import safe_conversation, turn_line
from m3graph.ingest.chat.locomo import load_locomo
from m3graph.ingest.chat.model import Conversation

_TURN_ID = re.compile(r"D\d+:\d+")
_LABEL = re.compile(r"^(?:(?P<video>.+)/)?CLIP_(?P<clip>\d+)$")
_TAG = re.compile(r" <[a-z]+_\d+>")  # the speaker tag as rendered (<character_K>; <speaker_N> as stored)
_DATE_NOTE = re.compile(r" \[= [^\]]*\]")  # dates.TimeNotes.insert
_CUT_DATE_NOTE = re.compile(r" \[=[^\]]*$")  # a note the line cut ran into
_SPACE = re.compile(r"\s+")
CUT = "…"  # what the controller appends to a line it shortened (reasoning.control.Evidence.take)


def evidence_ids(raw: Iterable[str]) -> tuple[str, ...]:
    """Turn ids of a question's evidence list; LoCoMo has entries like "D8:6; D9:17", so ids are found, not
    split on a fixed separator. Order kept, duplicates dropped."""
    return tuple(dict.fromkeys(m.group(0) for e in raw for m in _TURN_ID.finditer(e)))


def _plain(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def shown_text(line: str) -> tuple[str, bool]:
    """A line as the reader saw it, back to the stored turn's text: (text, whether it was cut)."""
    cut = line.endswith(CUT)
    text = line[:-len(CUT)] if cut else line
    text = _DATE_NOTE.sub("", _TAG.sub("", text))
    if cut:
        text = _CUT_DATE_NOTE.sub("", text)
    return _plain(text), cut


class ConversationTurns:
    """One conversation's turns as ingestion stores them: turn id -> clip index, and each clip's turn texts."""

    def __init__(self, conv: Conversation) -> None:
        stored = safe_conversation(conv)  # escaped tags and over-long turns in parts, exactly as written
        self.source_id = conv.source_id
        self.clip_of: dict[str, int] = {}
        self.texts: dict[int, list[tuple[str, str]]] = {}  # clip index -> (plain text, turn id) per stored part
        for clip, session in enumerate(stored.sessions):
            for turn in session.turns:
                base = turn.turn_id.split("#", 1)[0]
                self.clip_of.setdefault(base, clip)
                self.texts.setdefault(clip, []).append((_plain(turn_line(turn)), base))

    @classmethod
    def load(cls, path: Path) -> ConversationTurns:
        conv, _ = load_locomo(path)
        return cls(conv)

    def turns_in(self, line: str, clip: int) -> set[str]:
        """The turn ids a shown line of clip `clip` is (one, or none when it is no turn of that session)."""
        text, cut = shown_text(line)
        if not text:
            return set()
        return {tid for stored, tid in self.texts.get(clip, ())
                if stored == text or (cut and stored.startswith(text))}

    def shown(self, knowledge: Mapping[str, Sequence[str]]) -> set[str]:
        """Turn ids among one round's knowledge ({label: lines}); lines of other sources are ignored."""
        out: set[str] = set()
        for label, lines in knowledge.items():
            m = _LABEL.match(label)
            if m is None or (m.group("video") is not None and m.group("video") != self.source_id):
                continue
            for line in lines:
                out |= self.turns_in(line, int(m.group("clip")))
        return out


def _clip_index(key: str, source_id: str) -> int | None:
    video, _, clip = key.rpartition("#")
    return int(clip) if video == source_id and clip.isdigit() else None


@dataclass(frozen=True)
class QuestionMiss:
    id: str
    category: str
    answerable: bool
    evidence: tuple[str, ...]  # known evidence turn ids
    unknown: tuple[str, ...]  # evidence ids not in the conversation (a dataset slip)
    shown: tuple[str, ...]  # evidence turns some round showed the reader
    sessions_found: int  # evidence sessions among the clips the rounds retrieved
    sessions: int  # evidence sessions
    correct: bool  # answer match
    abstained: bool

    @property
    def all_shown(self) -> bool:
        return bool(self.evidence) and len(self.shown) == len(self.evidence)

    @property
    def any_shown(self) -> bool:
        return bool(self.shown)

    @property
    def kind(self) -> str:
        """correct | retrieval miss | reading miss | no evidence (answerable, nothing to check) | answered
        (an unanswerable question answered)."""
        if self.correct:
            return "correct"
        if not self.answerable:
            return "answered"
        if not self.evidence:
            return "no evidence"
        return "reading miss" if self.all_shown else "retrieval miss"

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "category": self.category, "kind": self.kind, "evidence": list(self.evidence),
                "shown": list(self.shown), "unknown_evidence": list(self.unknown), "all_shown": self.all_shown,
                "any_shown": self.any_shown, "sessions": self.sessions, "sessions_found": self.sessions_found,
                "abstained": self.abstained}


def classify(record: Mapping[str, Any], question: ChatQuestion, turns: ConversationTurns) -> QuestionMiss:
    """One results record against its question's evidence and the conversation it was answered from."""
    ids = evidence_ids(question.evidence)
    known = tuple(i for i in ids if i in turns.clip_of)
    shown: set[str] = set()
    retrieved: set[int] = set()
    for rnd in record.get("rounds") or ():
        shown |= turns.shown(rnd.get("knowledge") or {})
        for key in (rnd.get("result") or {}).get("clips") or ():
            clip = _clip_index(str(key), turns.source_id)
            if clip is not None:
                retrieved.add(clip)
    sessions = {turns.clip_of[i] for i in known}
    unanswerable = UNANSWERABLE in (record.get("tags") or ())
    answer = record.get("answer")
    return QuestionMiss(
        id=str(record["id"]), category=CATEGORIES[question.category], answerable=not unanswerable,
        evidence=known, unknown=tuple(i for i in ids if i not in turns.clip_of),
        shown=tuple(i for i in known if i in shown), sessions_found=len(sessions & retrieved), sessions=len(sessions),
        correct=answer_match(answer, record.get("gt") or "", unanswerable) == "yes",
        abstained=is_abstention(answer))


@dataclass
class Row:
    """One category's (or the total's) counts."""

    n: int = 0
    correct: int = 0
    with_evidence: int = 0
    all_shown: int = 0
    any_shown: int = 0
    turns: int = 0
    turns_shown: int = 0
    sessions: int = 0  # evidence sessions (clips), and those among the clips the rounds retrieved
    sessions_found: int = 0
    retrieval_misses: int = 0
    reading_misses: int = 0
    false_abstentions: int = 0  # answerable, abstained
    false_abstentions_shown: int = 0  # ... with all its evidence shown
    answered_unanswerable: int = 0
    oracle_n: int = 0
    oracle_correct: int = 0
    retrieval_misses_oracle_right: int = 0  # a retrieval miss the oracle answers right: retrieval would fix it
    reading_misses_oracle_right: int = 0  # a reading miss the oracle answers right: the other lines distracted

    def add(self, q: QuestionMiss) -> None:
        self.n += 1
        self.correct += q.correct
        if q.evidence:
            self.with_evidence += 1
            self.all_shown += q.all_shown
            self.any_shown += q.any_shown
            self.turns += len(q.evidence)
            self.turns_shown += len(q.shown)
            self.sessions += q.sessions
            self.sessions_found += q.sessions_found
        kind = q.kind
        self.retrieval_misses += kind == "retrieval miss"
        self.reading_misses += kind == "reading miss"
        self.answered_unanswerable += kind == "answered"
        if q.answerable and q.abstained:
            self.false_abstentions += 1
            self.false_abstentions_shown += q.all_shown

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = dict(self.__dict__)
        out["turn_recall"] = round(self.turns_shown / self.turns, 4) if self.turns else None
        return out


@dataclass
class MissReport:
    questions: list[QuestionMiss]
    rows: dict[str, Row] = field(default_factory=dict)  # category -> row, in benchmark order, then "total"
    not_in_data: list[str] = field(default_factory=list)  # record ids no conversation file holds
    oracle: bool = False  # an oracle results file was compared

    def to_dict(self) -> dict[str, Any]:
        return {"rows": {k: r.to_dict() for k, r in self.rows.items()}, "not_in_data": self.not_in_data,
                "questions": [q.to_dict() for q in self.questions]}

    def format(self) -> str:
        """The per-category table (compact enough for docs/evaluation.md)."""
        head = ["category", "n", "match", "all-ev", "any-ev", "turns", "retr.miss", "read.miss", "false-abst"]
        if self.oracle:
            head.append("oracle")
        rows = [head]
        for name, r in self.rows.items():
            ev = r.with_evidence
            line = [name, str(r.n), f"{r.correct}/{r.n}", f"{r.all_shown}/{ev}", f"{r.any_shown}/{ev}",
                    f"{r.turns_shown}/{r.turns}"]
            if name == CATEGORIES[5]:
                line += ["-", "-", f"answered {r.answered_unanswerable}"]
            else:
                line += [str(r.retrieval_misses), str(r.reading_misses),
                         f"{r.false_abstentions} ({r.false_abstentions_shown} shown)"]
            if self.oracle:
                line.append(f"{r.oracle_correct}/{r.oracle_n}" if r.oracle_n else "-")
            rows.append(line)
        widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
        text = ["  " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths,
                                                                                                     strict=True)))
                for row in rows]
        notes = ["all-ev/any-ev: every / some evidence turn was shown to the reader in some round (questions with "
                 "evidence); turns: evidence turns shown. A wrong answer is a retrieval miss unless all its evidence "
                 "was shown (then a reading miss); false-abst: answerable questions abstained on (of them, with all "
                 "evidence shown)."]
        if self.oracle:
            t = self.rows["total"]
            notes.append("oracle: answer match when the reader is given only the gold evidence lines "
                         f"(`m3graph eval chat-qa --oracle`); it answers {t.retrieval_misses_oracle_right} of the "
                         f"retrieval misses and {t.reading_misses_oracle_right} of the reading misses right.")
        if self.not_in_data:
            shown = ", ".join(self.not_in_data[:5]) + (" …" if len(self.not_in_data) > 5 else "")
            notes.append(f"{len(self.not_in_data)} records match no question of the data: {shown}")
        return "\n".join(text + notes)


def load_data(files: Sequence[Path]) -> tuple[dict[str, ChatQuestion], dict[str, ConversationTurns]]:
    """Questions by id and each conversation's turns by file stem (the records' `source`)."""
    questions: dict[str, ChatQuestion] = {}
    turns: dict[str, ConversationTurns] = {}
    for f in files:
        questions.update((q.id, q) for q in load_questions(f))
        turns[Path(f).stem] = ConversationTurns.load(Path(f))
    return questions, turns


def analyse(records: Iterable[Mapping[str, Any]], questions: Mapping[str, ChatQuestion],
            turns: Mapping[str, ConversationTurns],
            oracle: Mapping[str, Mapping[str, Any]] | None = None) -> MissReport:
    """The miss report over result records; `oracle` (oracle records by id) adds the oracle column."""
    report = MissReport(questions=[], oracle=oracle is not None)
    by_cat: dict[str, Row] = {name: Row() for name in CATEGORIES.values()}
    total = Row()
    for record in records:
        q = questions.get(str(record.get("id")))
        conv = turns.get(q.conversation) if q is not None else None
        if q is None or conv is None:
            report.not_in_data.append(str(record.get("id")))
            continue
        miss = classify(record, q, conv)
        report.questions.append(miss)
        for row in (by_cat[miss.category], total):
            row.add(miss)
            if oracle is not None and miss.id in oracle:
                o = oracle[miss.id]
                right = answer_match(o.get("answer"), o.get("gt") or "", UNANSWERABLE in (o.get("tags") or ())) == "yes"
                row.oracle_n += 1
                row.oracle_correct += right
                row.retrieval_misses_oracle_right += right and miss.kind == "retrieval miss"
                row.reading_misses_oracle_right += right and miss.kind == "reading miss"
    if not report.questions and report.not_in_data:
        raise InvalidInputError(f"none of the {len(report.not_in_data)} result records is a question of the "
                                "conversation files given (wrong --data?)")
    report.rows = {k: r for k, r in by_cat.items() if r.n} | {"total": total}
    return report


def write_misses(report: MissReport, out: Path | str) -> Path:
    """``<out>.misses.json`` beside the results."""
    path = Path(f"{out}.misses.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path
