"""Voice identity on real conversations: `python -m bench.perception_voices [--media DIR]`.

Runs VAD + speaker turns + within-clip clustering (no ASR) on the pyannote phone call and the 15 AMI clips
(`scripts/fetch_identity_media.sh`) for each method and threshold pair in ONE run, and scores pairwise and B-cubed
F1 on 0.1-s frames against the RTTM turns, within clips and across clips (per-clip speakers joined by their pooled
exemplars at the identity threshold). `m3graph calibrate voices --report` prints the same at the settings' values.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from m3graph.perception.calibrate_media import score_pipeline, with_perception
from m3graph.settings import Settings

GRID = [("legacy", 0.80, 0.80), ("pooled", 0.80, 0.80), ("legacy", 0.75, 0.75), ("pooled", 0.75, 0.75),
        ("pooled", 0.75, 0.80)]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.perception_voices", description=__doc__.splitlines()[0])
    p.add_argument("--media", type=Path, default=Path(".m3graph/identity-media"))
    args = p.parse_args(argv)
    base = Settings(neo4j_uri=None)
    print(f"load average at start: {os.getloadavg()[0]:.1f}")
    print("| method | cluster thr | identity thr | set | within pairwise P / R / F1 | within B3 F1 | across pairwise "
          "P / R / F1 | across B3 F1 | covered | speakers found / true | s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for method, cluster_thr, identity_thr in GRID:
        settings = with_perception(base, voice_turns=method, voice_cluster_threshold=cluster_thr)
        for dataset in ("phone", "ami"):
            t0 = time.perf_counter()
            s = score_pipeline(args.media, settings, dataset, identity_thr)
            print(f"| {method} | {cluster_thr:.2f} | {identity_thr:.2f} | {dataset} | {s.within.precision:.3f} / "
                  f"{s.within.recall:.3f} / {s.within.f1:.3f} | {s.within_bcubed.f1:.3f} | {s.across.precision:.3f}"
                  f" / {s.across.recall:.3f} / {s.across.f1:.3f} | {s.across_bcubed.f1:.3f} | {s.coverage:.0%} | "
                  f"{s.speakers_found} / {s.speakers_true} | {time.perf_counter() - t0:.0f} |", flush=True)
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
