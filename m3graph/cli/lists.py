"""`m3graph sources` and `m3graph characters`: what the graph holds, by the names a user then types."""

from __future__ import annotations

import click

from m3graph.cli.tables import echo_json, json_option, table
from m3graph.settings import Settings


@click.command("sources")
@json_option
@click.pass_obj
def sources(settings: Settings, as_json: bool) -> None:
    """List every source (video or conversation) with its clips, memories and start."""
    from m3graph.cli.session import make_service, open_graph

    with open_graph(settings) as graph:
        found = make_service(settings, graph).list_videos()
    if as_json:
        echo_json(found.to_json())
        return
    rows = [(v.source_id, v.name if v.name and v.name != v.source_id else None, v.clips, v.memories,
             str(v.started_at)[:16].replace("T", " ") if v.started_at else None,
             None if v.duration_s is None else f"{v.duration_s:.0f} s") for v in found.videos]
    table(["SOURCE", "NAME", "CLIPS", "MEMORIES", "STARTED (UTC)", "DURATION"], rows,
          empty="(no sources yet: `m3graph demo`, `m3graph ingest VIDEO` or `m3graph ingest-chat FILE` adds one)")


@click.command("characters")
@click.option("--video", "source_id", default=None, help="Only the people this source's memories mention.")
@json_option
@click.pass_obj
def characters(settings: Settings, source_id: str | None, as_json: bool) -> None:
    """List the people in memory as "Mia (character_4)", with the faces, voices and speakers that are them.

    The id or the name is what `--character`, `m3graph history` and `m3graph delete character` take.
    """
    from m3graph.cli.session import make_service, open_graph
    from m3graph.service import check_source_id

    if source_id is not None:
        check_source_id(source_id)
    with open_graph(settings) as graph:
        people = make_service(settings, graph).lookup.people(source_id)
    if as_json:
        echo_json(people.to_json())
        return
    header = ["ID", "PERSON", "SIZE", *(["MEMORIES"] if source_id else []), "FACES, VOICES, SPEAKERS"]
    rows = [(p.char_id, p.shown, p.size, *([p.memories] if source_id else []), ", ".join(p.members))
            for p in people.characters]
    table(header, rows, empty=f"(no people{' in ' + source_id if source_id else ''} yet)")
