"""Voice identity on real conversations: `python -m bench.perception_voices [--media DIR]`.

Runs VAD + speaker turns + within-clip clustering (no ASR) on the pyannote phone call and the 15 AMI clips
(`scripts/fetch_identity_media.sh`) for each method and threshold pair in ONE run, and scores pairwise and B-cubed
F1 on 0.1-s frames against the RTTM turns, within clips and across clips (per-clip speakers joined by their pooled
exemplars at the identity threshold). `m3graph calibrate voices --report` prints the same at the settings' values.

`--at-settings` replaces the threshold grid by the configured embedder's own thresholds (`--embedder`), `--split`
keeps one half of the recordings (thresholds are chosen on "choose", reported on "report"), and `--overlap both`
runs every row with overlap-aware turns off and on (`perception.overlap_detection`), printing what the
segmentation model alone costs (RTF over the same recordings) and how well its overlap frames match the RTTM.
`--smoke` (CI) scores one row at the settings on a two-speaker call built from the shared LibriSpeech utterances
(bench/smoke.py), since the fetched phone call and AMI clips are not part of the CI setup.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from bench.smoke import add_smoke, apply_smoke, scratch, two_speaker_call
from m3graph.perception.calibrate_media import SPLITS, recordings, score_pipeline, split_recordings, with_perception
from m3graph.settings import Settings

GRID = [("legacy", 0.80, 0.80), ("pooled", 0.80, 0.80), ("legacy", 0.75, 0.75), ("pooled", 0.75, 0.75),
        ("pooled", 0.75, 0.80)]
OVERLAP = {"off": (False,), "on": (True,), "both": (False, True)}


def segmentation_check(media: Path, settings: Settings, split: str) -> tuple[float, float, float, float]:
    """The segmentation model alone over the split's recordings (after one warm-up): seconds taken, seconds of
    audio, and the precision / recall of its >= 2-speaker frames against the RTTM's overlapped frames."""
    import numpy as np

    from m3graph.perception.overlap import FRAME_STEP_S, segmenter
    from m3graph.perception.vad import SAMPLE_RATE, load_audio

    cfg = settings.perception
    seg = segmenter(cfg.campplus_dir, cfg.threads)
    recs = [(load_audio(wav), turns) for _, wav, turns in split_recordings(recordings(media), split)]
    seg.activity(recs[0][0][:SAMPLE_RATE])
    seconds, hits, marked, true = 0.0, 0, 0, 0
    for audio, turns in recs:
        t0 = time.perf_counter()
        active = seg.activity(audio)
        seconds += time.perf_counter() - t0
        centres = (np.arange(len(active)) + 0.5) * FRAME_STEP_S
        talking = sum(((centres >= t.start_s) & (centres < t.end_s)).astype(int) for t in turns)
        pred, truth = active.sum(axis=1) >= 2, np.asarray(talking) >= 2
        hits, marked, true = hits + int((pred & truth).sum()), marked + int(pred.sum()), true + int(truth.sum())
    return seconds, sum(a.size for a, _ in recs) / SAMPLE_RATE, hits / max(marked, 1), hits / max(true, 1)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.perception_voices", description=__doc__.splitlines()[0])
    p.add_argument("--media", type=Path, default=Path(".m3graph/identity-media"))
    p.add_argument("--embedder", choices=["resemblyzer", "campplus"], default=None,
                   help="speaker embedder (default: the settings')")
    p.add_argument("--at-settings", action="store_true",
                   help="one row per method at the embedder's own thresholds instead of the Resemblyzer grid")
    p.add_argument("--split", choices=SPLITS, default="all")
    p.add_argument("--overlap", choices=sorted(OVERLAP), default="off",
                   help="overlap-aware turns off, on, or both side by side")
    p.add_argument("--datasets", default="phone,ami", help="comma-separated: phone, ami")
    add_smoke(p, "one row at the settings, a 4-turn call of two LibriSpeech speakers as the phone set")
    args = apply_smoke(p.parse_args(argv), at_settings=True, datasets="phone", overlap="off", split="all")
    if args.smoke:
        args.media = two_speaker_call(scratch("voices"))
    base = Settings(neo4j_uri=None)
    if args.embedder:
        base = with_perception(base, speaker_embedder=args.embedder)
    datasets = [d for d in args.datasets.split(",") if d in ("phone", "ami")]
    if args.at_settings:
        grid = [("pooled", base.perception.voice_cluster_threshold, base.voice_match_threshold)]
    else:
        grid = GRID
    print(f"load average at start: {os.getloadavg()[0]:.1f}; embedder {base.perception.speaker_embedder}; "
          f"split {args.split}; threads {base.perception.threads}")
    print("| method | overlap | cluster thr | identity thr | set | within pairwise P / R / F1 | within B3 F1 | "
          "across pairwise P / R / F1 | across B3 F1 | covered | speakers found / true | s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for method, cluster_thr, identity_thr in grid:
        for overlap in OVERLAP[args.overlap]:
            changes: dict[str, object] = {"voice_turns": method, "overlap_detection": overlap}
            if not args.at_settings:
                changes["voice_cluster_threshold"] = cluster_thr
            settings = with_perception(base, **changes)
            for dataset in datasets:
                t0 = time.perf_counter()
                s = score_pipeline(args.media, settings, dataset, identity_thr, args.split)
                print(f"| {method} | {'on' if overlap else 'off'} | {cluster_thr:.2f} | {identity_thr:.2f} | "
                      f"{dataset} | {s.within.precision:.3f} / {s.within.recall:.3f} / {s.within.f1:.3f} | "
                      f"{s.within_bcubed.f1:.3f} | {s.across.precision:.3f} / {s.across.recall:.3f} / "
                      f"{s.across.f1:.3f} | {s.across_bcubed.f1:.3f} | {s.coverage:.0%} | "
                      f"{s.speakers_found} / {s.speakers_true} | {time.perf_counter() - t0:.0f} |", flush=True)
    if args.overlap != "off":
        seconds, audio_s, precision, recall = segmentation_check(args.media, base, args.split)
        print(f"segmentation alone: {seconds:.1f} s for {audio_s:.0f} s of audio (RTF {seconds / audio_s:.3f}, "
              f"{base.perception.threads} thread(s)); its >= 2-speaker frames against the RTTM's overlap: "
              f"precision {precision:.3f}, recall {recall:.3f}")
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
