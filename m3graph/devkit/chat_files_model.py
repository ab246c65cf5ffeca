"""The chat-with-files dev set's records: turns, questions, and the conversation being drafted.

Split from `devkit.chat_files` (the generator) so the generator stays one readable module; the evaluation reads
`Question` and the generator's helpers all write through `Draft`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from m3graph.devkit import chat_files_words as w


@dataclass
class Turn:
    id: str
    speaker: str
    text: str
    files: list[dict[str, str]] = field(default_factory=list)


@dataclass
class Question:
    id: str
    conversation: str
    question: str
    answer: str
    evidence: list[str]
    category: str
    file_scoped: bool
    files: list[str] = field(default_factory=list)


@dataclass
class Draft:
    """One conversation being built: its turns per session and the questions its facts give."""

    cid: str
    user: str
    friend: str
    out: Path
    rng: random.Random
    dates: list[datetime]
    sessions: list[list[Turn]] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)
    shared: list[dict[str, Any]] = field(default_factory=list)  # every file: name, kind, ext, session, turn
    ocr_truth: dict[str, list[str]] = field(default_factory=dict)  # image path -> the lines drawn in it

    def say(self, session: int, speaker: str, text: str, *files: tuple[str, str, str]) -> str:
        """Appends a turn (files as (relative path, name, kind)); returns its id."""
        turns = self.sessions[session]
        tid = f"S{session + 1}:{len(turns) + 1}"
        entries = [{"path": p, "name": n, "kind": k} for p, n, k in files]
        turns.append(Turn(tid, speaker, text, entries))
        for p, n, k in files:
            self.shared.append({"name": n, "kind": k, "ext": Path(n).suffix.lower(), "session": session,
                                "turn": tid, "path": p})
        return tid

    def reply(self, session: int) -> None:
        self.say(session, self.friend, self.rng.choice(("Got it, thanks!", "Nice, saved.", "Thanks for sharing.",
                                                        "Great, I'll keep that.", "Oh, lovely!")))

    def path(self, name: str) -> tuple[Path, str]:
        rel = f"files/{self.cid}/{name}"
        target = self.out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        return target, rel

    def ask(self, question: str, answer: str, evidence: list[str], category: str, file_scoped: bool,
            files: list[str] | None = None) -> None:
        qid = f"{self.cid}/q{len(self.questions)}"
        self.questions.append(Question(qid, self.cid, question, answer, evidence, category, file_scoped,
                                       files or []))

    def day(self, session: int) -> str:
        d = self.dates[session]
        return f"{d.day} {w.MONTHS[d.month - 1]} {d.year}"
