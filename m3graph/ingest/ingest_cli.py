"""What `m3graph ingest` does: run or queue the per-video workflow and show progress per clip and stage."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import click

from m3graph.settings import Settings


def _video_id(path: Path) -> str:
    stem = "".join(ch if ch.isalnum() or ch in "._-" else "-" for ch in path.stem)
    return stem.strip("-.") or "video"


def _summary(graph, video_id: str) -> str:  # type: ignore[no-untyped-def]
    counts = graph.counts(video_id)
    return (f"{video_id}: {counts.get('Clip', 0)} clips, {counts.get('Memory', 0)} memories; graph has "
            f"{counts.get('Face', 0)} faces, {counts.get('Voice', 0)} voices, "
            f"{counts.get('Character', 0)} characters")


class _Progress:
    def __init__(self) -> None:
        self.started = time.monotonic()

    def __call__(self, video: str, index: int, total: int, stage: str) -> None:
        click.echo(f"  {video}: clip {index + 1}/{total} {stage:<9} {time.monotonic() - self.started:6.1f} s")


def _inprocess(settings: Settings, sources: list[tuple[Path, str]], append: bool = False) -> None:
    from m3graph.embedding import text_embedder
    from m3graph.graphdb.store import MemoryGraph
    from m3graph.ingest.pipeline import ingest_video_inprocess

    embedder = text_embedder(settings)
    with MemoryGraph.connect(settings) as graph:
        for source, vid in sources:
            reports = ingest_video_inprocess(graph, embedder, source, vid, progress=_Progress(), append=append)
            created = sum(r.new_entities for r in reports)
            click.echo(f"{_summary(graph, vid)} ({created} new entities)")


def _celery(settings: Settings, sources: list[tuple[Path, str]], append: bool = False) -> None:
    from m3graph.graphdb.store import MemoryGraph
    from m3graph.tasks.app import configure
    from m3graph.tasks.ingest import submit_video

    configure(settings)
    jobs = [(vid, *submit_video(settings, source, vid, append)) for source, vid in sources]
    with MemoryGraph.connect(settings) as graph:
        shown: dict[str, int] = {}
        while True:
            for vid, _, total in jobs:
                done = sum(1 for r in graph.ex.read("graph/video_progress", video_id=vid) if r["status"] == "done")
                if shown.get(vid) != done:
                    click.echo(f"  {vid}: {done}/{total} clips done")
                    shown[vid] = done
            if all(result.ready() for _, result, _ in jobs):
                break
            time.sleep(1.0)
        for vid, result, _ in jobs:
            if result.failed():
                click.echo(f"{vid}: FAILED: {result.result}", err=True)
            click.echo(_summary(graph, vid))


def run_ingest(settings: Settings, videos: list[Path], live_dir: Path | None, use_celery: bool,
               video_id: str | None) -> None:
    from m3graph.graphdb.server import ensure_server

    ensure_server(settings)
    run = _celery if use_celery else _inprocess
    sources = [(p, video_id or _video_id(p)) for p in videos]
    if sources:
        run(settings, sources)
    if live_dir is not None:
        from m3graph.ingest.live import watch_clips

        live_id = video_id or _video_id(live_dir)
        stop = threading.Event()
        click.echo(f"watching {live_dir}: each new file continues video {live_id} (Ctrl-C to stop)")
        try:
            for path in watch_clips(live_dir, poll_s=1.0, stop_event=stop, settle_s=2.0):
                run(settings, [(path, live_id)], append=True)
        except KeyboardInterrupt:
            stop.set()
