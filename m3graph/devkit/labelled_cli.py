"""`m3graph eval identity-video`: the labelled test video of real people, ingested and scored against its manifest
(development kit: m3graph/devkit/eval_cli.py registers it)."""

from __future__ import annotations

from pathlib import Path

import click

from m3graph.settings import Settings


@click.command("identity-video")
@click.option("--identity", "identity_dir", type=click.Path(exists=True, file_okay=False, path_type=Path),
              default=Path("../shared/data/identity"), show_default=True, help="The shared identity set.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=Path(".m3graph/labelled"),
              show_default=True, help="Where the video and its manifest are built.")
@click.option("--short", is_flag=True, help="The 90-s, 3-person version the tests use (default: 180 s, 5 people).")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--fresh", is_flag=True, help="Delete the video from the graph first and ingest it again.")
@click.option("--compare-votes", is_flag=True,
              help="Also score the video with on-screen votes switched the other way (memory.on_screen_votes): "
              "the clips' votes are rewritten, scored, then restored, in the same run.")
@click.pass_obj
def identity_video(settings: Settings, identity_dir: Path, out_dir: Path, short: bool, seed: int, fresh: bool,
                   compare_votes: bool) -> None:
    """Builds the labelled video, ingests it (perception memorizer) into the configured graph and scores faces,
    voices and face-voice characters against the truth. Entities already in the graph take part in matching:
    use an empty, throwaway graph for figures to compare."""
    from m3graph.devkit.labelled_media import (
        FULL_LAYOUT,
        SHORT_LAYOUT,
        build_labelled_video,
        evaluate_labelled,
        revote_labelled,
    )
    from m3graph.embedding import text_embedder
    from m3graph.graphdb.store import MemoryGraph
    from m3graph.ingest.pipeline import ingest_video_inprocess
    from m3graph.localserver.server import ensure_server

    video = build_labelled_video(identity_dir, out_dir, SHORT_LAYOUT if short else FULL_LAYOUT, seed,
                                 "labelled-short" if short else "labelled-real")
    click.echo(f"{video.source_id}: {video.path} ({video.duration_s:.0f} s, {len(video.segments)} segments); pairs: "
               + ", ".join(f"{k} = {v['face_identity']} + speaker {v['speaker']}" for k, v in video.pairs.items()))
    ensure_server(settings)
    with MemoryGraph.connect(settings) as graph:
        if fresh and graph.video_exists(video.source_id):
            graph.delete_video(video.source_id)
        others = {k: n for k, n in graph.counts().items() if k in ("Face", "Voice") and n}
        if others and not graph.video_exists(video.source_id):
            click.echo(f"note: the graph already holds {others}; they take part in identity matching")
        ingest_video_inprocess(graph, text_embedder(settings), Path(video.path), video.source_id,
                               progress=lambda v, i, n, stage: click.echo(f"  {v}: clip {i + 1}/{n} {stage}"))
        on = settings.memory.on_screen_votes
        click.echo(f"on-screen votes {'on' if on else 'off'}:\n" + evaluate_labelled(graph, video).format())
        if compare_votes:
            click.echo(f"on-screen votes {'off' if on else 'on'} (same perception, votes rewritten):\n"
                       + revote_labelled(graph, video, not on).format())
            revote_labelled(graph, video, on)


if __name__ == "__main__":
    from m3graph.settings import load_settings

    identity_video(obj=load_settings())
