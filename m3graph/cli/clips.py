"""`m3graph clips VIDEO`: each clip's progress as the graph records it (`MemoryService.evidence.clip_states`)."""

from __future__ import annotations

import click

from m3graph.cli.tables import echo_json, json_option, table
from m3graph.errors import NotFoundError
from m3graph.settings import Settings


@click.command("clips")
@click.argument("source_id")
@json_option
@click.pass_obj
def clips(settings: Settings, source_id: str, as_json: bool) -> None:
    """Show every clip of a video with its state (planned, perceived, resolved, memorized, *_failed) and why."""
    from m3graph.cli.session import open_graph
    from m3graph.service import MemoryService, check_source_id

    check_source_id(source_id)
    with open_graph(settings) as graph:
        service = MemoryService(settings, graph)
        service.require_videos([source_id])  # an unknown source is refused with the closest known ids
        states = service.evidence.clip_states(source_id)
    if not states:
        raise NotFoundError(f"source {source_id} has no clips in the graph")
    if as_json:
        echo_json({"video": source_id, "clips": [
            {"clip": p.clip_index, "state": p.state.value if p.state else None,
             "at": p.at.isoformat() if p.at else None, "reason": p.reason} for p in states]})
        return
    table(["CLIP", "STATE", "SINCE (UTC)", "WHY"],
          [(p.clip_index, p.state.value if p.state else None,
            p.at.strftime("%Y-%m-%d %H:%M:%S") if p.at else None, p.reason or "") for p in states])
    failed = [p.clip_index for p in states if p.state is not None and p.state.value.endswith("_failed")]
    if failed:
        click.echo(f"{len(failed)} failed; `m3graph memorize {source_id} --failed` redoes memorize_failed clips")
