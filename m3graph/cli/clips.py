"""`m3graph clips VIDEO`: each clip's progress as the graph records it (`MemoryService.evidence.clip_states`)."""

from __future__ import annotations

import click

from m3graph.settings import Settings


@click.command("clips")
@click.argument("video_id")
@click.pass_obj
def clips(settings: Settings, video_id: str) -> None:
    """Show every clip of a video with its state (planned, perceived, resolved, memorized, *_failed) and why."""
    from m3graph.cli.session import open_graph
    from m3graph.errors import NotFoundError
    from m3graph.service import MemoryService

    with open_graph(settings) as graph:
        states = MemoryService(settings, graph).evidence.clip_states(video_id)
    if not states:
        raise NotFoundError(f"video {video_id} has no clips in the graph")
    for p in states:
        when = p.at.strftime("%Y-%m-%d %H:%M:%S") if p.at else "-"
        state = p.state.value if p.state else "-"
        click.echo(f"{p.clip_index:5d}  {state:16s} {when}  {p.reason or ''}".rstrip())
    failed = [p.clip_index for p in states if p.state is not None and p.state.value.endswith("_failed")]
    if failed:
        click.echo(f"{len(failed)} failed; `m3graph memorize {video_id} --failed` redoes memorize_failed clips")
