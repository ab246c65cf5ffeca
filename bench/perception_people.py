"""People without faces, counted against the truth: `python -m bench.perception_people [--fps F] [--side PX]...`.

Builds the generated street clip (`m3graph.devkit.people_media`: 4 walkers cut from OpenCV's vtest.avi on its
empty walkway, known paths) and runs `m3graph.perception.people.detect_people` for each (fps, side) pair in ONE
run, on the generated file and on the clip the pipeline cuts from it (`cut_clip`: a second H.264 generation, what
the memorizer really reads). It prints the count error per sample and per clip, enter/leave timing errors, the
motion phrases, and the wall and CPU time per 30-s clip, with the load average. `--smoke` (CI): one pair, 0.5 fps
at 640 px.
"""

from __future__ import annotations

import argparse
import os
import time

from bench.smoke import add_smoke, apply_smoke
from m3graph.devkit.people_media import DEFAULT_OUT, DURATION_S, build_people_video, score, where_it_fails
from m3graph.ingest.video import ClipWindow, cut_clip
from m3graph.perception.people import detect_people


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.perception_people", description=__doc__.splitlines()[0])
    p.add_argument("--fps", type=float, nargs="+", default=[1.0])
    p.add_argument("--side", type=int, nargs="+", default=[640])
    p.add_argument("--limits", action="store_true", help="only the detection rate by person height, tilt and "
                                                             "occlusion (single frames)")
    add_smoke(p, "0.5 fps at 640 px, on the generated file and its cut")
    args = apply_smoke(p.parse_args(argv), fps=[0.5], side=[640], limits=False)
    if args.limits:
        print("| condition | detected / shown |\n|---|---|")
        for condition, found, shown in where_it_fails(DEFAULT_OUT):
            print(f"| {condition} | {found} / {shown} |")
        return 0
    video = build_people_video(DEFAULT_OUT)
    clip = cut_clip(video, ClipWindow(0, 0.0, DURATION_S), video.with_name(video.stem + "-clip0.mp4"))
    print(f"load average at start: {os.getloadavg()[0]:.1f}; video {video}")
    print("| video | fps | side px | samples | count MAE / sample | exact share | people found / true | enter err s | "
          "leave err s | motions right | wall s / clip | CPU s / clip |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    runs = [(name, path, fps, side) for name, path in (("generated", video), ("pipeline cut", clip))
            for fps in args.fps for side in args.side]
    for name, path, fps, side in runs:
        cpu = time.process_time()
        got = score(detect_people(path, fps, side))
        cpu = time.process_time() - cpu
        right = sum(t == f for t, f in got.motions)
        print(f"| {name} | {fps:g} | {side} | {got.samples} | {got.count_mae:.3f} | {got.exact_share:.2f} | "
              f"{got.people_found} / {got.people_true} | {got.enter_errors_s} | {got.leave_errors_s} | "
              f"{right} / {len(got.motions)} | {got.seconds:.1f} | {cpu:.1f} |")
        wrong = [(t, f) for t, f in got.motions if t != f]
        if wrong:
            print(f"  wrong motions (true, found): {wrong}")
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
