"""Text embedders compared on the dev conversations: vector floor and fusion weight for each, held out by conversation.

Why: a new text model changes the cosine scale (so the vector floor) and how much the vector ranking should weigh
against BM25 (so `search.vector_weight`). This reuses bench/retrieval_methods.py's numpy re-implementation of the
product's ranking (its `RECOMMENDED` config is the product's) and its leave-one-conversation-out choice: the
weight is chosen on two conversations and scored on the third. The floor is measured as `TEXT_MODEL_FLOORS` says:
the 5th percentile of question -> evidence-turn cosines, rounded down to 0.05. Memories are embedded by `embed`,
questions by the model's query side (`embed_query`: bge's instruction prefix), or by `embed` for "no instruction".

    .venv/bin/python -m bench.text_models [--data DIR] [--out bench/results/text_models.json]

`--smoke` (CI): the first session of the three conversations, a few questions each, bge with and without its
query instruction (MiniLM's torch load would triple the time; the loop is the same), vectors in a scratch directory.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from bench.retrieval_methods import (
    DEFAULT_DATA,
    RECOMMENDED,
    RESULTS,
    Cache,
    Ranker,
    embed_cached,
    grid,
    load_convs,
    loco,
    session_bm25_baseline,
    summarize,
)
from bench.smoke import add_smoke, conversation_slice, scratch
from m3graph.embedding import query_embed, text_embedder
from m3graph.settings import Settings

# (label, text_model.model, query instruction)
MODELS = (("minilm", "packaged", False), ("bge", "bge-small-en-v1.5-q", True),
          ("bge-noinstr", "bge-small-en-v1.5-q", False))
WEIGHTS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)


def floor_of(convs: list[Any]) -> tuple[float, float]:
    """(5th percentile of question -> evidence cosines, that rounded down to 0.05)."""
    sims = [float(c.vec["turn"][i] @ c.qvec["raw"][qi]) for c in convs for qi, q in enumerate(c.questions)
            for i in q["evidence"]]
    p5 = float(np.percentile(sims, 5))
    return p5, math.floor(p5 / 0.05) * 0.05


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--out", type=Path, default=RESULTS / "text_models.json")
    add_smoke(ap, "the first session of each conversation, 6 questions each, bge with and without instruction")
    args = ap.parse_args(argv)
    vectors = RESULTS
    if args.smoke:
        args.data, vectors = conversation_slice(scratch("models"), sessions=1, questions=6, source=args.data), \
            scratch("models-vectors")
    report: dict[str, Any] = {}
    convs = load_convs(args.data)
    report["session BM25"] = summarize([session_bm25_baseline(c) for c in convs])
    bm25 = report["session BM25"]
    print(f"session BM25: clip@2 {bm25['clip@2']:.3f} turn@10 {bm25['turn@10']:.3f}")
    # The smoke leaves MiniLM out: the same loop body, but torch's import and model load would triple its CPU time.
    for label, model, instruction in MODELS[1:] if args.smoke else MODELS:
        t0 = time.time()
        settings = Settings(text_model={"model": model, "query_instruction": instruction})
        embedder = text_embedder(settings)
        for c in convs:
            c.vec["turn"] = embed_cached(c.embed_text, f"{model}_{c.name}_turn", lambda e=embedder: e, vectors)
            qs = [q["question"] for q in c.questions]
            c.qvec["raw"] = np.asarray(query_embed(embedder)(qs), dtype=np.float32)
        p5, floor = floor_of(convs)
        cache = Cache([Ranker(c, [t for d in convs for t in d.tokens], convs) for c in convs])
        n = len(convs)
        base = replace(RECOMMENDED, floor=floor)
        row: dict[str, Any] = {"model": model, "instruction": instruction, "evidence_cos_p5": round(p5, 3),
                               "floor": floor}
        for w in WEIGHTS:
            row[f"w={w}"] = summarize([cache.get(replace(base, w=w), i) for i in range(n)])
        vector_only = replace(base, w=1.0, sess=0.0, beta=0.0, clip_prior=0.0)
        row["vector only"] = summarize([cache.get(vector_only, i) for i in range(n)])
        row["loco w (clip+turn)"] = loco(cache, grid(base, w=list(WEIGHTS)), "both")
        report[label] = row
        held = row["loco w (clip+turn)"]
        print(f"{label}: floor {floor:.2f} (p5 {p5:.3f}); vector only {row['vector only']['clip@2']:.3f} "
              f"{row['vector only']['turn@10']:.3f}; " + "; ".join(
                  f"w={w} {row[f'w={w}']['clip@2']:.3f}/{row[f'w={w}']['turn@10']:.3f}" for w in WEIGHTS)
              + f"; held out {held['held_out']['clip@2']:.3f}/{held['held_out']['turn@10']:.3f} "
              f"(folds {held['chosen_per_fold']}; on all three {held['chosen_on_all']}) [{time.time() - t0:.0f} s]",
              flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
