"""Choosing and checking when two stated values are "the same thing" (`reasoning/value_updates.py`), on labelled
pairs of BEAM user sentences.

Why: a changed value is found by comparing the attribute phrases around two values ("my error detection accuracy,
which is currently at 85%" / "how my error detection accuracy for flawed proofs increased to 95%"); the threshold
of that comparison decides which changes the reader is told of and which answers are replaced, so it is chosen on
one set of chats and reported on others. A *candidate pair* is two values the user stated in one chat, the later
after the earlier, of one unit family, different, whose phrases share at least `RELEVANT` stems (what a question
about either would need to share). `make` samples candidate pairs (seeded) for labelling by hand; `score` reports,
per threshold, the precision and recall of the embedding cosine and of the stem overlap on a labelled split.

    python -m m3graph.devkit.eval.value_pairs make --chat 500K-4 --chat 500K-7 --split dev --n 30 --seed 38
    python -m m3graph.devkit.eval.value_pairs score [--split dev|held]

Labels (`same`: the two values are of one attribute of the user, so the later one updates the earlier) were set
by reading the two sentences only, before any score of the split was seen.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from m3graph.devkit.eval.beam import Chat, default_data_dir, load_chat
from m3graph.reasoning.quantities import same
from m3graph.reasoning.value_updates import RELEVANT, Value, values

DATA = Path(__file__).parent / "data" / "value_pairs.jsonl"
THRESHOLDS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9)


def candidates(chat: Chat) -> list[tuple[Value, Value]]:
    """Every candidate pair of the chat's user messages (module docstring), in chat order."""
    shown, dates = [], {}
    for i, b in enumerate(chat.batches):
        dates[f"CLIP_{i}"] = f"{b.when.day} {b.when:%B %Y}"
        shown += [(f"CLIP_{i}", f"User <character_1>: {m.text}") for m in b.messages if m.role == "user"]
    found = values(shown, dates)
    return [(a, b) for a, b in itertools.combinations(found, 2)
            if a.order < b.order and a.quantity.family == b.quantity.family and not same(a.quantity, b.quantity)
            and len(a.phrase & b.phrase) >= RELEVANT]


def _side(v: Value) -> dict[str, Any]:
    return {"value": v.quantity.text, "phrase": v.words, "sentence": v.sentence[:400]}


def make(chats: Sequence[Chat], split: str, n: int, seed: int) -> list[dict[str, Any]]:
    """`n` candidate pairs drawn evenly over the chats, unlabelled (`same`: null)."""
    out = []
    for chat in chats:
        pairs = candidates(chat)
        random.Random(seed).shuffle(pairs)
        out += [{"split": split, "chat": chat.name, "a": _side(a), "b": _side(b), "same": None}
                for a, b in pairs[:max(1, n // len(chats))]]
    return out


def score(rows: Sequence[dict[str, Any]], embed: Any) -> list[str]:
    """Precision and recall per threshold, of the cosine of "User: phrase" embeddings and of the stem overlap."""
    from m3graph.reasoning.value_updates import stems

    labelled = [r for r in rows if r.get("same") is not None]
    if not labelled:
        return ["no labelled pairs"]
    texts = [f"User: {r[s]['phrase']}" for r in labelled for s in ("a", "b")]
    vectors = embed(texts)
    cos = [float(vectors[2 * i] @ vectors[2 * i + 1]) for i in range(len(labelled))]
    ovl = []
    for r in labelled:
        a, b = stems(r["a"]["phrase"]), stems(r["b"]["phrase"])
        ovl.append(len(a & b) / min(len(a), len(b)) if a and b else 0.0)
    gold = [bool(r["same"]) for r in labelled]
    out = [f"{len(labelled)} labelled pairs, {sum(gold)} of one thing",
           f"{'threshold':>9} {'cosine P':>9} {'R':>6} {'overlap P':>10} {'R':>6}"]
    for t in THRESHOLDS:
        cells = []
        for scores in (cos, ovl):
            said = [s >= t for s in scores]
            hit = sum(p and g for p, g in zip(said, gold, strict=True))
            cells += [f"{hit}/{sum(said)}", f"{hit}/{sum(gold)}"]
        out.append(f"{t:>9.2f} {cells[0]:>9} {cells[1]:>6} {cells[2]:>10} {cells[3]:>6}")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m m3graph.devkit.eval.value_pairs")
    sub = parser.add_subparsers(dest="command", required=True)
    mk = sub.add_parser("make", help="sample unlabelled candidate pairs (JSON lines on stdout)")
    mk.add_argument("--chat", action="append", required=True)
    mk.add_argument("--split", required=True)
    mk.add_argument("--n", type=int, default=30)
    mk.add_argument("--seed", type=int, default=38)
    mk.add_argument("--data", type=Path, default=None)
    sc = sub.add_parser("score", help="precision and recall per threshold on a labelled split")
    sc.add_argument("--split", default=None)
    sc.add_argument("--pairs", type=Path, default=DATA)
    args = parser.parse_args(argv)
    if args.command == "make":
        base = args.data or default_data_dir()
        for row in make([load_chat(base / c) for c in args.chat], args.split, args.n, args.seed):
            sys.stdout.write(json.dumps(row, ensure_ascii=False) + "\n")
        return 0
    from m3graph.embedding import text_embedder
    from m3graph.settings import load_settings

    rows = [json.loads(line) for line in args.pairs.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = [r for r in rows if args.split is None or r["split"] == args.split]
    print("\n".join(score(rows, text_embedder(load_settings()).embed)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
