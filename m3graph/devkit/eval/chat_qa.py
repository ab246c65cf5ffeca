"""Question answering over ingested conversations: the LoCoMo dev set (../shared/data/conversations).

Each conversation is one source in the graph (its sessions are clips with their real start time, its turns
memories), and each of its questions is answered from that source alone. Categories follow the benchmark:
1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial. Category 5 questions ask about something
never said (often a fact of the other speaker), so the right reply is an abstention: they are tagged
``unanswerable`` and their ground truth is the abstention, with the benchmark's tempting wrong answer kept
beside it.

A full run is ~500 multi-round controller calls, hours on a 2-core CPU; `stratified_sample` picks the same
questions for every model (a fixed number per category, spread evenly over each conversation's question list,
no randomness), so models are compared on one set and a larger sample contains the smaller one's questions
per category. The sample comes back with its categories interleaved, so a run stopped early is still stratified.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from m3graph.devkit.eval.runner import UNANSWERABLE, EvalItem
from m3graph.errors import InvalidInputError, NotFoundError

CATEGORIES: dict[int, str] = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
NOT_MENTIONED = "Not mentioned in the conversation."
DEFAULT_DIR = Path("../shared/data/conversations")


@dataclass(frozen=True)
class ChatQuestion:
    id: str  # "<conversation>/q<index in the file>"
    conversation: str  # the file's stem, e.g. locomo-26
    question: str
    answer: str
    category: int
    evidence: tuple[str, ...]
    adversarial_answer: str | None = None

    def item(self, source_id: str) -> EvalItem:
        tags = (CATEGORIES[self.category],) + ((UNANSWERABLE,) if self.category == 5 else ())
        return EvalItem(id=self.id, question=self.question, ground_truth=self.answer,
                        types=(CATEGORIES[self.category],), videos=(source_id,), source=self.conversation,
                        tags=tags)


def conversation_files(data_dir: Path | None = None) -> list[Path]:
    directory = Path(data_dir) if data_dir is not None else DEFAULT_DIR
    files = sorted(directory.glob("*.json"))
    if not files:
        raise NotFoundError(f"no conversation files (*.json) in {directory}")
    return files


def load_questions(path: Path) -> list[ChatQuestion]:
    """The `qa` list of one LoCoMo-format file; a question without an answer outside category 5 is an error."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InvalidInputError(f"{path}: not a readable conversation file ({exc})") from exc
    qa = data.get("qa") if isinstance(data, dict) else None
    if not isinstance(qa, list):
        raise InvalidInputError(f"{path}: no 'qa' list of questions")
    out = []
    for i, q in enumerate(qa):
        category = q.get("category")
        if category not in CATEGORIES or not isinstance(q.get("question"), str):
            raise InvalidInputError(f"{path}: qa[{i}] has no question or an unknown category {category!r}")
        if category == 5:
            answer = NOT_MENTIONED
        elif "answer" in q:
            answer = str(q["answer"])
        else:
            raise InvalidInputError(f"{path}: qa[{i}] (category {category}) has no answer")
        adversarial = q.get("adversarial_answer")
        out.append(ChatQuestion(f"{Path(path).stem}/q{i}", Path(path).stem, " ".join(q["question"].split()), answer,
                                category, tuple(q.get("evidence") or ()),
                                str(adversarial) if adversarial is not None else None))
    return out


def stratified_sample(questions: Sequence[ChatQuestion], per_category: int | None) -> list[ChatQuestion]:
    """`per_category` questions of each category (all when None or fewer exist), spread evenly over the
    conversations and over each conversation's list; deterministic."""
    if per_category is None:
        return list(questions)
    out: list[ChatQuestion] = []
    for category in CATEGORIES:
        pool = [q for q in questions if q.category == category]
        if len(pool) <= per_category:
            out += pool
            continue
        by_conv: dict[str, list[ChatQuestion]] = {}
        for q in pool:
            by_conv.setdefault(q.conversation, []).append(q)
        # Interleave conversations (q0 of each, then q1 ...) after spreading within each; then take evenly.
        spread = [sorted(qs, key=lambda q: _spread_key(qs.index(q), len(qs))) for qs in by_conv.values()]
        interleaved = [qs[i] for i in range(max(len(qs) for qs in spread)) for qs in spread if i < len(qs)]
        out += interleaved[:per_category]
    return _round_robin(out)


def _round_robin(questions: Sequence[ChatQuestion]) -> list[ChatQuestion]:
    """Categories interleaved (then conversations within each): any prefix of a run is a stratified sample, so
    a run cut short by time still compares models on every category."""
    groups: dict[int, list[ChatQuestion]] = {}
    for q in questions:
        groups.setdefault(q.category, []).append(q)
    queues = [_interleave(qs) for _, qs in sorted(groups.items())]
    return [qs[i] for i in range(max((len(qs) for qs in queues), default=0)) for qs in queues if i < len(qs)]


def _interleave(questions: Sequence[ChatQuestion]) -> list[ChatQuestion]:
    by_conv: dict[str, list[ChatQuestion]] = {}
    for q in questions:
        by_conv.setdefault(q.conversation, []).append(q)
    lists = list(by_conv.values())
    return [qs[i] for i in range(max((len(qs) for qs in lists), default=0)) for qs in lists if i < len(qs)]


def _spread_key(index: int, n: int) -> float:
    """Van der Corput order: 0, 1/2, 1/4, 3/4 ... of the list, so any prefix is spread over the whole list."""
    value, denom, i = 0.0, 1.0, index
    while i:
        denom *= 2
        value += (i % 2) / denom
        i //= 2
    return value
