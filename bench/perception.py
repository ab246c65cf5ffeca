"""Perception benchmark: `python -m bench.perception [--repeats 3] [--variant fps2:fps=2] [--workers 1,2]`.

Measures, on the generated test media (`python -m m3graph.devkit.testmedia`), how fast perception runs against
the media's own duration: the real-time factor RTF = processing seconds / media seconds (below 1.0 keeps up
with a live stream). Three measurements, each repeated `--repeats` times (median reported):

1. **Stages**, one clip at a time, sequentially: cut and audio extraction (ffmpeg), frame sampling, and inside
   `perceive_faces` / `perceive_voices` detection, face quality, face embedding, clustering, crops, VAD,
   speaker embedding, ASR. The product functions run unchanged; the stage functions they call are wrapped
   with timers (module attributes patched for the duration of the call, model objects passed in wrapped),
   so the breakdown adds up to the real call and nothing is re-implemented here.
2. **Whole perception per clip** as the pipeline runs it: `faces_stage` ∥ `voices_stage` in two threads,
   unpatched, with a fresh data directory so no cached output is reused.
3. **End-to-end clip throughput** through real Celery workers (`bench/perception_celery.py`): one worker
   process with `--concurrency 1` and then `2`, on a Redis and a Neo4j of its own (port `--port`, home in a
   temporary directory), every repeat under new video ids so nothing is skipped as already done.

Every `--variant NAME:key=value,...` (settings fields, nested with dots: `fps=2`,
`perception.max_frame_side_px=480`) is measured side by side with the defaults in the same repeats, so load
from other processes hits them alike. Results go to `bench/results/perception-<time>.json` after every step;
`--report FILE` prints the tables of a saved run. `--smoke` is the CI size: the first clip of tm-a once, cut to
10 s, stages and faces ∥ voices, without the cold start and the Celery workers (bench/perception_celery.py is not
run).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np

from bench.report import machine
from bench.smoke import add_smoke, apply_smoke
from m3graph.devkit.testmedia import DEFAULT_OUT, build_test_media
from m3graph.settings import Settings

REPO = Path(__file__).resolve().parents[1]
log = logging.getLogger("bench.perception")

# Stage keys in the order of the pipeline; `faces_other` / `voices_other` are what the wrapped calls leave
# (input checks, box clamping, frame bookkeeping, audio loading is its own key).
FACE_STAGES = ["detect", "face_quality", "face_embed", "face_cluster", "crops", "faces_other"]
VOICE_STAGES = ["audio_load", "vad", "speaker_embed", "asr", "voice_cluster", "snippets", "voices_other"]
MEDIA_STAGES = ["cut", "audio_extract", "frames"]
STAGES = MEDIA_STAGES + FACE_STAGES + VOICE_STAGES
LABELS = {
    "cut": "cut clip (ffmpeg re-encode)", "audio_extract": "audio extraction (ffmpeg)",
    "frames": "frame sampling (ffmpeg → RGB)", "detect": "face detection (MTCNN)",
    "face_quality": "face quality gate", "face_embed": "face embedding (dlib)",
    "face_cluster": "face clustering", "crops": "face crops (JPEG)", "faces_other": "faces: rest",
    "audio_load": "audio load/resample", "vad": "VAD (silero)", "speaker_embed": "speaker embedding (Resemblyzer)",
    "asr": "ASR (faster-whisper)", "voice_cluster": "voice clustering", "snippets": "audio snippets",
    "voices_other": "voices: rest",
}


# ---------------------------------------------------------------------------------------------- timing


def cpu_now() -> float:
    """CPU seconds of this process (all threads) and its finished children (ffmpeg).

    Wall time on a shared machine depends on everyone else's load; CPU seconds are what the stage itself
    costs, so CPU seconds / 2 is the best wall time 2 idle cores could give for work that uses both.
    """
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


class StageClock:
    """Wall and CPU seconds per stage name; timers must not nest (nothing is subtracted)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.cpu: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        t0, c0 = time.perf_counter(), cpu_now()
        try:
            yield
        finally:
            self.seconds[name] += time.perf_counter() - t0
            self.cpu[name] += cpu_now() - c0
            self.calls[name] += 1

    def rest(self, outer: str, stages: list[str], into: str) -> None:
        """Books what the `outer` call spent outside its timed `stages` as `into` (removing `outer`)."""
        for table in (self.seconds, self.cpu):
            table[into] += table.pop(outer) - sum(table.get(s, 0.0) for s in stages if s != into)

    def wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            with self.stage(name):
                return fn(*args, **kwargs)
        return timed


class _TimedFaceEmbedder:
    """The configured face embedder with its `embed` calls timed (perceive_faces accepts any embedder)."""

    def __init__(self, inner: Any, clock: StageClock) -> None:
        self.inner, self.clock, self.name = inner, clock, inner.name

    @property
    def dim(self) -> int:
        return int(self.inner.dim)

    def embed(self, image_rgb: np.ndarray, detections: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
        with self.clock.stage("face_embed"):
            return self.inner.embed(image_rgb, detections)  # type: ignore[no-any-return]


class _TimedSpeaker:
    def __init__(self, inner: Any, clock: StageClock) -> None:
        self.inner, self.clock = inner, clock
        self.dim, self.window_s = inner.dim, inner.window_s

    def embed(self, wave: np.ndarray, sr: int) -> np.ndarray:
        with self.clock.stage("speaker_embed"):
            return self.inner.embed(wave, sr)  # type: ignore[no-any-return]

    def embed_windows(self, wave: np.ndarray, sr: int, hop_s: float) -> tuple[np.ndarray, np.ndarray]:
        with self.clock.stage("speaker_embed"):
            return self.inner.embed_windows(wave, sr, hop_s)  # type: ignore[no-any-return]


class _TimedASR:
    def __init__(self, inner: Any, clock: StageClock) -> None:
        self.inner, self.clock = inner, clock

    def transcribe(self, audio: np.ndarray, sr: int) -> str:
        with self.clock.stage("asr"):
            return self.inner.transcribe(audio, sr)  # type: ignore[no-any-return]


def faces_breakdown(frames: list[tuple[float, np.ndarray]], settings: Settings, crop_dir: Path, start_s: float,
                    clock: StageClock) -> int:
    """`perceive_faces` with its stage functions timed; returns the number of clusters found."""
    import m3graph.perception.faces as faces
    from m3graph.perception.face_embed import get_face_embedder

    cfg = settings.perception
    embedder = _TimedFaceEmbedder(get_face_embedder(cfg.face_embedder, cfg.threads), clock)
    with ExitStack() as stack:
        for attr, name in (("detect_faces", "detect"), ("face_quality", "face_quality"),
                           ("cluster_faces", "face_cluster"), ("_write_crop", "crops")):
            stack.enter_context(mock.patch.object(faces, attr, clock.wrap(name, getattr(faces, attr))))
        with clock.stage("faces_call"):
            clusters = faces.perceive_faces(frames, settings, crop_dir, start_s, embedder=embedder)
    clock.rest("faces_call", FACE_STAGES, "faces_other")
    return len(clusters)


def voices_breakdown(wav: Path, settings: Settings, snippet_dir: Path, start_s: float, clock: StageClock) -> int:
    """`perceive_voices` with its stage functions timed; returns the number of clusters found."""
    import m3graph.perception.voices as voices
    from m3graph.perception.asr import asr_model
    from m3graph.perception.speaker import speaker_embedder

    cfg = settings.perception
    embedder = _TimedSpeaker(speaker_embedder(cfg.speaker_embedder, cfg.threads, cfg.campplus_dir), clock)
    asr = _TimedASR(asr_model(cfg.asr_model, cfg.asr_language, cfg.threads), clock)
    with ExitStack() as stack:
        for attr, name in (("load_audio", "audio_load"), ("detect_speech", "vad"), ("cluster_voices", "voice_cluster"),
                           ("_write_snippet", "snippets")):
            stack.enter_context(mock.patch.object(voices, attr, clock.wrap(name, getattr(voices, attr))))
        with clock.stage("voices_call"):
            clusters = voices.perceive_voices(wav, settings, start_s, snippet_dir, embedder=embedder, asr=asr)
    clock.rest("voices_call", VOICE_STAGES, "voices_other")
    return len(clusters)


# ---------------------------------------------------------------------------------------------- variants


def parse_variant(spec: str) -> tuple[str, dict[str, Any]]:
    """`name:key=value,key=value` → (name, {dotted key: value}); values are parsed as JSON when they can be."""
    name, _, body = spec.partition(":")
    if not name or not body:
        raise argparse.ArgumentTypeError(f"variant {spec!r}: expected NAME:key=value[,key=value...]")
    changes: dict[str, Any] = {}
    for item in body.split(","):
        key, sep, raw = item.partition("=")
        if not sep:
            raise argparse.ArgumentTypeError(f"variant {spec!r}: {item!r} is not key=value")
        try:
            changes[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            changes[key.strip()] = raw
    return name, changes


def apply_changes(settings: Settings, changes: dict[str, Any]) -> Settings:
    """A validated copy of `settings` with dotted-key changes (validation catches a misspelt field)."""
    data = settings.model_dump()
    for key, value in changes.items():
        cur = data
        *path, last = key.split(".")
        for part in path:
            cur = cur[part]
        if last not in cur:
            raise SystemExit(f"unknown setting {key!r}")
        cur[last] = value
    return Settings.model_validate(data)


# ---------------------------------------------------------------------------------------------- one pass


def clip_pass(settings: Settings, plan: Any, index: int, scratch: Path) -> dict[str, Any]:
    """Cut one clip, time its stages sequentially, then run faces ∥ voices as the pipeline does.

    `settings.data_dir` must be fresh: the pipeline's stage functions skip work whose output file exists.
    """
    from m3graph.ingest.pipeline import ClipWork, faces_stage, voices_stage
    from m3graph.ingest.video import ClipWindow, cut_clip, extract_audio, sample_frames

    clock = StageClock()
    work = ClipWork(settings, plan.source_id, index)
    w = plan.window(index)
    with clock.stage("cut"):
        cut_clip(Path(w.source), ClipWindow(index, w.source_start_s, w.source_start_s + (w.end_s - w.start_s)),
                 work.clip)
    with clock.stage("audio_extract"):
        has_audio = extract_audio(work.clip, work.audio) is not None
    with clock.stage("frames"):
        frames = sample_frames(work.clip, settings.fps, settings)
    n_frames = len(frames)
    faces_n = faces_breakdown(frames, settings, scratch / "crops", w.start_s, clock)
    del frames
    voices_n = voices_breakdown(work.audio, settings, scratch / "snippets", w.start_s, clock) if has_audio else 0

    t0, c0 = time.perf_counter(), cpu_now()
    with ThreadPoolExecutor(max_workers=2) as pool:  # exactly as ingest_video_inprocess runs a clip
        f = pool.submit(faces_stage, settings, plan, index)
        v = pool.submit(voices_stage, settings, plan, index)
        f.result(), v.result()
    parallel, parallel_cpu = time.perf_counter() - t0, cpu_now() - c0
    seconds, cpu = dict(clock.seconds), dict(clock.cpu)
    faces_seq = seconds.get("frames", 0.0) + sum(seconds.get(s, 0.0) for s in FACE_STAGES)
    voices_seq = sum(seconds.get(s, 0.0) for s in VOICE_STAGES)
    return {"video": plan.source_id, "clip": index, "media_s": w.end_s - w.start_s, "frames": n_frames,
            "stages_s": seconds, "stages_cpu_s": cpu, "calls": dict(clock.calls), "faces_seq_s": faces_seq,
            "voices_seq_s": voices_seq, "perceive_parallel_s": parallel, "perceive_parallel_cpu_s": parallel_cpu,
            "clip_total_s": seconds.get("cut", 0.0) + seconds.get("audio_extract", 0.0) + parallel,
            "clip_total_cpu_s": cpu.get("cut", 0.0) + cpu.get("audio_extract", 0.0) + parallel_cpu,
            "face_clusters": faces_n, "voice_clusters": voices_n}


def variant_pass(settings: Settings, media: Any, videos: list[str], root: Path, limit: int | None = None
                 ) -> dict[str, Any]:
    """Every clip of `videos` once (the first `limit` of each), in a fresh data directory under `root`."""
    from m3graph.ingest.pipeline import plan_video

    data = root / "data"
    settings = settings.model_copy(update={"data_dir": data})
    clips = []
    for vid in videos:
        plan = plan_video(settings, media.path(vid), vid)
        for w in plan.windows[:limit]:
            clips.append(clip_pass(settings, plan, w.index, root / "scratch" / vid / str(w.index)))
    shutil.rmtree(root, ignore_errors=True)
    return aggregate(clips)


def aggregate(clips: list[dict[str, Any]]) -> dict[str, Any]:
    """Seconds and RTF per stage over all clips of one pass (RTF = total seconds / total media seconds)."""
    media_s = sum(c["media_s"] for c in clips)
    stages = {s: sum(c["stages_s"].get(s, 0.0) for c in clips) for s in STAGES}
    cpu = {s: sum(c["stages_cpu_s"].get(s, 0.0) for c in clips) for s in STAGES}
    keys = ["faces_seq_s", "voices_seq_s", "perceive_parallel_s", "clip_total_s", "perceive_parallel_cpu_s",
            "clip_total_cpu_s"]
    totals = {k: sum(c[k] for c in clips) for k in keys}
    totals["perceive_serial_s"] = totals["faces_seq_s"] + totals["voices_seq_s"]
    return {"media_s": media_s, "clips": clips, "stages_s": stages, "stages_cpu_s": cpu,
            "stages_rtf": {s: v / media_s for s, v in stages.items()},
            "stages_cpu_rtf": {s: v / media_s for s, v in cpu.items()},
            **totals, **{k.removesuffix("_s") + "_rtf": v / media_s for k, v in totals.items()}}


def median_of(passes: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians over repeats of every RTF and second figure of `aggregate` (stage by stage)."""
    out: dict[str, Any] = {"repeats": len(passes), "media_s": passes[0]["media_s"]}
    out["stages_rtf"] = {s: statistics.median(p["stages_rtf"][s] for p in passes) for s in STAGES}
    out["stages_cpu_rtf"] = {s: statistics.median(p["stages_cpu_rtf"][s] for p in passes) for s in STAGES}
    for key in ("faces_seq_rtf", "voices_seq_rtf", "perceive_serial_rtf", "perceive_parallel_rtf", "clip_total_rtf",
                "perceive_parallel_cpu_rtf", "clip_total_cpu_rtf"):
        vals = [p[key] for p in passes]
        out[key] = statistics.median(vals)
        out[key.removesuffix("_rtf") + "_range"] = [min(vals), max(vals)]
    per_clip: dict[str, list[float]] = defaultdict(list)
    for p in passes:
        for c in p["clips"]:
            per_clip[f"{c['video']}#{c['clip']}"].append(c["perceive_parallel_s"] / c["media_s"])
    out["perceive_parallel_rtf_per_clip"] = {k: statistics.median(v) for k, v in per_clip.items()}
    return out


# ---------------------------------------------------------------------------------------------- run


def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def cold_start(settings: Settings, media: Any, video: str, root: Path) -> dict[str, float]:
    """Loads every model once (first calls), so the measured repeats see warm models, and times that."""
    from m3graph.ingest.pipeline import plan_video

    t0 = time.perf_counter()
    settings = settings.model_copy(update={"data_dir": root / "data"})
    plan = plan_video(settings, media.path(video), video)
    rec = clip_pass(settings, plan, plan.windows[0].index, root / "scratch")
    shutil.rmtree(root, ignore_errors=True)
    return {"first_clip_s": time.perf_counter() - t0, "perceive_parallel_s": rec["perceive_parallel_s"]}


class Results:
    def __init__(self, path: Path, meta: dict[str, Any]) -> None:
        self.path = path
        self.data: dict[str, Any] = {"meta": meta}

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=2, default=str))
        tmp.replace(self.path)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.perception", description=__doc__.splitlines()[0])
    p.add_argument("--videos", default="tm-a,tm-b", help="test-media video ids (comma-separated)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--variant", action="append", type=parse_variant, default=[],
                   help="NAME:key=value,... measured beside the defaults (repeatable), e.g. fps2:fps=2")
    p.add_argument("--workers", default="1,2", help="Celery worker concurrencies to compare ('' skips Celery)")
    p.add_argument("--celery-repeats", type=int, default=None, help="default: --repeats")
    p.add_argument("--memorizer", choices=["perception", "configured"], default="perception",
                   help="memorizer in the Celery workers: the perception one (default), or the settings' choice")
    p.add_argument("--port", type=int, default=7695, help="Bolt port of the benchmark's own Neo4j")
    p.add_argument("--media", type=Path, default=REPO / DEFAULT_OUT, help="test-media directory (built if needed)")
    p.add_argument("--work", type=Path, default=None, help="scratch directory (default: a temp dir, deleted)")
    p.add_argument("--out", type=Path, default=None, help="JSON result file (default bench/results/perception-…)")
    p.add_argument("--report", type=Path, default=None, help="print the tables of a saved result file and exit")
    p.add_argument("--clips", type=int, default=None, help="only the first N clips of each video")
    p.add_argument("--no-cold-start", dest="cold_start", action="store_false",
                   help="skip the untimed first clip that loads the models (the first repeat then includes loading)")
    add_smoke(p, "the first 10-s clip of tm-a once, no cold start, no Celery")
    return apply_smoke(p.parse_args(argv), videos="tm-a", repeats=1, workers="", clips=1, cold_start=False)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    for noisy in ("neo4j", "m3graph", "faster_whisper", "numba"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    if args.report:
        from bench.perception_report import print_report

        print_report(json.loads(args.report.read_text()))
        return 0
    videos = [v.strip() for v in args.videos.split(",") if v.strip()]
    out = args.out or REPO / "bench" / "results" / f"perception-{time.strftime('%Y%m%d-%H%M%S')}.json"
    base = Settings(neo4j_uri=None)  # an exported NEO4J_URI must not matter: the stages do not touch a graph
    if args.smoke:  # a 10-s clip: every model and stage still runs, on a third of the media
        base = apply_changes(base, {"clip_seconds": 10.0})
    variants = [("default", {}), *args.variant]
    settings_of = {name: apply_changes(base, changes) for name, changes in variants}
    meta = {"command": " ".join(["python -m bench.perception", *(argv if argv is not None else sys.argv[1:])]),
            "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "machine": machine(), "nproc": _nproc(),
            "loadavg_start": loadavg(), "videos": videos, "repeats": args.repeats,
            "variants": {name: changes for name, changes in variants},
            "perception": {name: s.perception.model_dump(mode="json") | {"fps": s.fps}
                           for name, s in settings_of.items()},
            "git": _git_head()}
    results = Results(out, meta)
    results.save()
    media = build_test_media(args.media)
    work = Path(tempfile.mkdtemp(prefix="m3graph-bench-perception-", dir=args.work))
    try:
        if args.repeats and args.cold_start:
            log.info("cold start (model loading) on %s", videos[-1])
            results.data["cold_start"] = cold_start(settings_of["default"], media, videos[-1], work / "cold")
            results.save()
        passes: dict[str, list[dict[str, Any]]] = {name: [] for name, _ in variants}
        loads: list[list[float]] = []
        for r in range(args.repeats):
            for name, _ in variants:
                loads.append(loadavg())
                t0 = time.perf_counter()
                passes[name].append(variant_pass(settings_of[name], media, videos, work / f"{name}-{r}",
                                                 args.clips))
                log.info("repeat %d %s: %.1f s, perceive RTF %.2f, clip total RTF %.2f (load %s)", r, name,
                         time.perf_counter() - t0, passes[name][-1]["perceive_parallel_rtf"],
                         passes[name][-1]["clip_total_rtf"], loadavg())
                results.data["passes"] = passes
                results.data["stages"] = {n: median_of(p) for n, p in passes.items() if p}
                results.save()
        results.data["loadavg_during_stages"] = loads
        concurrencies = [int(c) for c in args.workers.split(",") if c.strip()]
        if concurrencies:
            from bench.perception_celery import bench_workers

            results.data["celery"] = bench_workers(media, videos, concurrencies,
                                                   args.celery_repeats or args.repeats, args.port, work / "celery",
                                                   lambda: results.save(), results.data, args.memorizer)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        results.data["meta"]["loadavg_end"] = loadavg()
        results.data["meta"]["finished"] = time.strftime("%Y-%m-%d %H:%M:%S %Z")
        results.save()
    from bench.perception_report import print_report

    print_report(results.data)
    print(f"\nresults: {out}")
    return 0


def _nproc() -> int | None:
    try:
        return int(subprocess.run(["nproc"], capture_output=True, text=True, check=True).stdout.strip())
    except (OSError, ValueError, subprocess.CalledProcessError):
        return os.cpu_count()


def _git_head() -> dict[str, Any]:
    def git(*cmd: str) -> str:
        try:
            return subprocess.run(["git", *cmd], cwd=REPO, capture_output=True, text=True, check=True).stdout
        except (OSError, subprocess.CalledProcessError):
            return ""
    return {"head": git("rev-parse", "HEAD").strip() or None,
            "dirty": [line[3:] for line in git("status", "--porcelain", "m3graph").splitlines()]}


if __name__ == "__main__":
    sys.exit(main())
