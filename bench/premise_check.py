"""How often the premise check (m3graph/reasoning/premise.py) withholds an answer on the LoCoMo dev set, no model.

Why: the check answers "Not in memory" before any model call when a question names something no memory in its
scope mentions. On adversarial questions (category 5, never mentioned) that is right; on answerable ones it is a
false abstention. This runs the product's check (`premise.unmentioned`, the same query and scope as the
controller) on every dev question against its own conversation, and counts per category how often it fires,
listing each firing with the names it found missing.

Run (a local Neo4j through the usual settings; conversations missing from the graph are ingested first):
``.venv/bin/python -m bench.premise_check [--data DIR]``. ``--smoke``: the first two sessions of one conversation
and the questions about them (CI).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from bench.smoke import CONVERSATIONS, add_smoke, conversation_slice, scratch
from m3graph.devkit.eval.chat_qa import CATEGORIES, conversation_files, load_questions
from m3graph.embedding import text_embedder
from m3graph.graphdb.store import MemoryGraph
from m3graph.ingest.chat.ingest import ingest_conversation
from m3graph.ingest.chat.locomo import load_locomo
from m3graph.localserver.server import ensure_server
from m3graph.reasoning.premise import unmentioned
from m3graph.settings import load_settings


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=None, help="LoCoMo-format conversations (default: the dev set)")
    add_smoke(parser, "two sessions of one conversation, 12 questions")
    args = parser.parse_args(argv)
    if args.smoke:
        args.data = conversation_slice(scratch("premise"), sessions=2, questions=12, files=1,
                                       source=args.data or CONVERSATIONS)
    settings = load_settings()
    ensure_server(settings)
    fired: Counter[str] = Counter()
    total: Counter[str] = Counter()
    with MemoryGraph.connect(settings) as graph:
        embedder = None
        for path in conversation_files(args.data):
            conv, _ = load_locomo(path)
            if not graph.ex.read("search/count_candidates", videos=[conv.source_id], before_clip=None)[0]["n"]:
                embedder = embedder or text_embedder(settings)
                ingest_conversation(graph, conv, embedder)
            for q in load_questions(path):
                category = CATEGORIES[q.category]
                total[category] += 1
                missing = unmentioned(graph.ex, q.question, [conv.source_id], None)
                if missing:
                    fired[category] += 1
                    print(f"{category:12} {conv.source_id}: {q.question} -> missing {missing}")
    print(f"\n{'category':12} {'fired':>5} {'of':>5}")
    for category in dict.fromkeys(CATEGORIES.values()):
        print(f"{category:12} {fired[category]:>5} {total[category]:>5}")
    answerable = sum(n for c, n in fired.items() if c != "adversarial")
    print(f"adversarial fired {fired['adversarial']} of {total['adversarial']}; answerable fired {answerable} of "
          f"{sum(n for c, n in total.items() if c != 'adversarial')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
