"""People without faces, counted against the truth: `python -m bench.perception_people [--fps F] [--side PX]...`.

Builds the generated street clip (`m3graph.devkit.people_media`: 4 walkers cut from OpenCV's vtest.avi on its
empty walkway, known paths) and runs `m3graph.perception.people.detect_people` on it for each (fps, side) pair in
ONE run, printing the count error per sample and per clip, enter/leave timing errors, the motion phrases, and the
wall and CPU time per 30-s clip, with the load average.
"""

from __future__ import annotations

import argparse
import os
import time

from m3graph.devkit.people_media import DEFAULT_OUT, build_people_video, score
from m3graph.perception.people import detect_people


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.perception_people", description=__doc__.splitlines()[0])
    p.add_argument("--fps", type=float, nargs="+", default=[2.0])
    p.add_argument("--side", type=int, nargs="+", default=[640])
    args = p.parse_args(argv)
    video = build_people_video(DEFAULT_OUT)
    print(f"load average at start: {os.getloadavg()[0]:.1f}; video {video}")
    print("| fps | side px | samples | count MAE / sample | exact share | people found / true | enter err s | "
          "leave err s | motions right | wall s / clip | CPU s / clip |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for fps in args.fps:
        for side in args.side:
            cpu = time.process_time()
            s = score(detect_people(video, fps, side))
            cpu = time.process_time() - cpu
            right = sum(t == f for t, f in s.motions)
            print(f"| {fps:g} | {side} | {s.samples} | {s.count_mae:.3f} | {s.exact_share:.2f} | "
                  f"{s.people_found} / {s.people_true} | {s.enter_errors_s} | {s.leave_errors_s} | "
                  f"{right} / {len(s.motions)} | {s.seconds:.1f} | {cpu:.1f} |")
            wrong = [(t, f) for t, f in s.motions if t != f]
            if wrong:
                print(f"  wrong motions (true, found): {wrong}")
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
