"""What the controller's first round shows for list questions, with and without widening (no model).

Why: a multi-hop LoCoMo question's evidence sits in several sessions; the reader can only answer from the lines a
round shows it. This runs the controller's automatic first search (`control.py`, `gathering.py`) on the dev set
with a scripted reader that answers at once, so only round 0 is measured, and counts per category the questions
whose every evidence turn was shown (`chat_misses.classify`, the same rule as `m3graph eval chat-qa`), for each
`LIST_CAP_FACTOR` asked for (1 = no widening).

Run (a local Neo4j through the usual settings; the conversations are ingested first if missing):
``.venv/bin/python -m bench.gathering_recall [--factor 1 3] [--per-category N]`` (default: every question).
``--smoke``: the first two sessions of one conversation and the questions about them (CI).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from bench.smoke import add_smoke, conversation_slice, scratch
from m3graph.devkit.eval.chat_misses import classify, load_data
from m3graph.devkit.eval.chat_qa import CATEGORIES, conversation_files, load_questions, stratified_sample
from m3graph.embedding import text_embedder
from m3graph.graphdb.store import MemoryGraph
from m3graph.ingest.chat.ingest import ingest_conversation
from m3graph.ingest.chat.locomo import load_locomo
from m3graph.localserver.server import ensure_server
from m3graph.reasoning import control
from m3graph.reasoning.llm.base import ChatResult, Message, Usage
from m3graph.settings import load_settings

DEV = Path(__file__).resolve().parents[2] / "shared" / "data" / "conversations"


class AnswersAtOnce:
    """A reader that answers in its first step with a word no line holds (so the attribution rule stays out)."""

    name = "answers-at-once"
    supports_images = supports_video = supports_tools = False
    supports_json_schema = True

    def chat(self, messages: Sequence[Message], **_: object) -> ChatResult:
        return ChatResult('{"answer": "zzqx", "next_query": null}', Usage(), 0.0, "stop", self.name)

    def close(self) -> None:
        pass


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--factor", type=int, nargs="+", default=[1, control.LIST_CAP_FACTOR])
    parser.add_argument("--per-category", type=int, default=0, help="the chat-qa sample (0: every question)")
    parser.add_argument("--data", type=Path, default=DEV)
    add_smoke(parser, "two sessions of one conversation, 8 questions")
    args = parser.parse_args(argv)
    if args.smoke:
        args.data = conversation_slice(scratch("gathering"), sessions=2, questions=8, files=1, source=args.data)
    settings = load_settings()
    ensure_server(settings)
    files = conversation_files(args.data)
    _, turns = load_data(files)
    questions = [q for q in stratified_sample([q for f in files for q in load_questions(f)], args.per_category or None)
                 if q.category != 5]
    print("| factor | category | questions with evidence | all evidence shown | evidence turns shown | chars shown/q |")
    print("| --- | --- | --- | --- | --- | --- |")
    with MemoryGraph.connect(settings) as graph:
        embedder = text_embedder(settings)
        source = {}
        for f in files:
            conv, _ = load_locomo(f)
            ingest_conversation(graph, conv, embedder)
            source[f.stem] = conv.source_id
        for factor in args.factor:
            control.LIST_CAP_FACTOR = factor  # the widening asked for (1: none)
            ctl = control.Controller(AnswersAtOnce(), graph, embedder, settings, mode="tools", prefetch=True)
            n: Counter[str] = Counter()
            counts: Counter[tuple[str, str]] = Counter()
            for q in questions:
                trace = ctl.answer(q.question, [source[q.conversation]])
                record = {"id": q.id, "rounds": [r.to_dict() for r in trace.rounds], "answer": trace.answer,
                          "gt": q.answer, "tags": []}
                miss = classify(record, q, turns[q.conversation])
                cat = CATEGORIES[q.category]
                counts[cat, "chars"] += sum(len(x) for lines in trace.rounds[0].knowledge.values() for x in lines)
                if miss.evidence:
                    n[cat] += 1
                    counts[cat, "all"] += miss.all_shown
                    counts[cat, "shown"] += len(miss.shown)
                    counts[cat, "turns"] += len(miss.evidence)
            for cat in CATEGORIES.values():
                if n[cat]:
                    print(f"| {factor} | {cat} | {n[cat]} | {counts[cat, 'all']} | {counts[cat, 'shown']}/"
                          f"{counts[cat, 'turns']} | {counts[cat, 'chars'] // n[cat]} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
