"""The `m3graph` command line: one Settings object per invocation, passed down to everything."""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

import click

from m3graph import __version__
from m3graph.cli.browser import browser
from m3graph.cli.calibrate import calibrate
from m3graph.cli.chat import ingest_chat
from m3graph.cli.clips import clips
from m3graph.cli.cypher import cypher as cypher_command
from m3graph.cli.db import db
from m3graph.cli.deletes import delete
from m3graph.cli.evaluate import evaluate
from m3graph.cli.exit_codes import report
from m3graph.cli.explore import explore
from m3graph.cli.ingest import ingest
from m3graph.cli.lists import characters, sources
from m3graph.cli.mcp import mcp as mcp_command
from m3graph.cli.model import model
from m3graph.cli.reasoning import ask, memorize
from m3graph.cli.reembed import reembed
from m3graph.cli.session import make_service, open_graph
from m3graph.cli.tables import echo_json, json_option, step, table
from m3graph.reasoning.names import name_tags
from m3graph.service import MemoryService
from m3graph.service.lookup import shown
from m3graph.service.results import ClipHit
from m3graph.service.search import characters_in
from m3graph.settings import Settings, load_settings


def print_results(results: Sequence[ClipHit], names: dict[int, str] | None = None) -> None:
    """Memories grouped by clip, tags rendered as <character_K> with the person's name before the tag where one is
    known and the line does not say it ("Mia (<character_4>) …"; `names`: char id -> display name); clips best
    first, each with the relevance it was ranked by (and its best memory's cosine, which alone would not explain
    the order)."""
    if not results:
        click.echo("  (no memories found)")
    for clip in results:
        score = "" if clip.rank is None else f"  relevance {clip.rank:.3f}"
        score += "" if clip.score is None else f"  (best cosine {clip.score:.3f})"
        span = "" if clip.start_s is None else f" [{clip.start_s:.0f}-{clip.end_s:.0f}s]"
        when = "" if clip.started_at is None else f" {clip.started_at:%Y-%m-%d %H:%M}"
        click.echo(f"  {clip.source_id} {clip.label}{when}{span}{score}")
        for m in clip.memories:
            click.echo(f"    - ({m.kind}) {name_tags(m.marked_text, names or {})}")


def names_in(service: MemoryService, results: Sequence[ClipHit]) -> dict[int, str]:
    """Display names of the people the results' tags name."""
    return service.lookup.names(sorted({c for clip in results for m in clip.memories for c in characters_in(m.text)}))


@click.group()
@click.version_option(__version__, "--version", prog_name="m3graph", message="%(prog)s %(version)s")
@click.option("-v", "--verbose", is_flag=True, help="Log progress and queries (names only, never values).")
@click.pass_context
def main(ctx: click.Context, verbose: bool) -> None:
    """Long-term multimodal memory for agents, on Neo4j."""
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    if not isinstance(ctx.obj, Settings):  # tests and embedding programs pass their own
        ctx.obj = load_settings()


db.add_command(browser)
main.add_command(db)
main.add_command(ask)
main.add_command(memorize)
main.add_command(evaluate)
main.add_command(model)
main.add_command(explore)
main.add_command(reembed)
main.add_command(ingest_chat)
main.add_command(clips)
main.add_command(calibrate)
main.add_command(cypher_command)
main.add_command(mcp_command)
main.add_command(ingest)
main.add_command(sources)
main.add_command(characters)
main.add_command(delete)


@main.command()
@click.pass_obj
def migrate(settings: Settings) -> None:
    """Apply schema migrations (also done automatically on connect)."""
    from m3graph.localserver.server import ensure_server
    from m3graph.service.store import migrate as apply_migrations

    ensure_server(settings)
    ran = apply_migrations(settings)
    click.echo(f"applied migrations: {ran or 'none (schema up to date)'}")


@main.command()
@click.option("--video", "source_id", default=None,
              help="Counts of this source only: its clips, memories and evidence, and the people it shows.")
@json_option
@click.pass_obj
def stats(settings: Settings, source_id: str | None, as_json: bool) -> None:
    """Node and relationship counts, of the whole graph or of one source."""
    from m3graph.service import StatsRequest

    request = StatsRequest(video=source_id)
    with open_graph(settings) as graph:
        result = make_service(settings, graph).stats(request)
    if as_json:
        echo_json(result.to_json())
        return
    click.echo(f"counts of {'source ' + source_id if source_id else 'the whole graph'}:")
    table(["WHAT", "COUNT"], list(result.counts.items()))


@main.command()
@click.argument("query")
@click.option("--video", "videos", multiple=True, help="Restrict to these videos (repeatable).")
@click.option("--before-clip", type=int, default=None, help="Only memory up to this clip (no future leakage).")
@click.option("--mode", type=click.Choice(["clip", "node"]), default="clip", show_default=True)
@click.option("-k", "--top-k", type=int, default=None, help="How many clips (clip mode) or memories (node mode).")
@click.option("--threshold", type=float, default=None,
              help="Floor on the vector cosine (default: measured for the text model).")
@click.option("--character", "characters", multiple=True, metavar="NAME|ID",
              help="Scope to memories of this person: an id (4, character_4) or a name only they go by (repeatable).")
@click.option("--speaker", "speakers", multiple=True,
              help="Only lines said by this conversation speaker (a full or first name; repeatable).")
@click.option("--since", type=click.DateTime(), default=None, help="Only clips that started at or after (UTC).")
@click.option("--until", type=click.DateTime(), default=None, help="Only clips that started before (UTC).")
@click.option("--as-of", "as_of", default=None,
              help="Facts as they held then: a date (2023-05-08), a time or a clip (VIDEO#N); default: now.")
@click.option("--all-versions", is_flag=True, help="Also show facts a newer fact superseded (each says when).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON (the MCP tool search_memory's).")
@click.pass_obj
def search(settings: Settings, query: str, videos: tuple[str, ...], before_clip: int | None, mode: str,
           top_k: int | None, threshold: float | None, characters: tuple[str, ...], speakers: tuple[str, ...],
           since: datetime | None, until: datetime | None, as_of: str | None, all_versions: bool,
           as_json: bool) -> None:
    """Search memory like the controller does (search_clip or search_node).

    A <character_K> tag in QUERY scopes the search to that character, like --character K. An unknown source or
    person is refused with the closest known names; a name more than one person goes by lists them with their ids.
    """
    from m3graph.service import SearchRequest, check_source_id

    for video in videos:
        check_source_id(video)
    with open_graph(settings) as graph:
        service = make_service(settings, graph)
        service.require_videos(videos)
        char_ids = tuple(service.lookup.resolve(ref, videos or None) for ref in characters)
        request = SearchRequest(query=query, videos=videos or None, before_clip=before_clip, mode=mode, k=top_k,
                                threshold=threshold, characters=char_ids, speakers=speakers, since=since,
                                until=until, as_of=as_of, all_versions=all_versions)
        result = service.search(request)
        names = names_in(service, result.clips)
    if as_json:
        click.echo(json.dumps(result.to_json(), ensure_ascii=False, indent=2))
        return
    print_results(result.clips, names)


@main.command()
@click.argument("video")
@click.argument("subject")
@click.option("--attribute", default=None, help="Only this attribute (e.g. 'favourite fruit').")
@click.option("-k", "k", type=int, default=100, show_default=True, help="The most versions shown.")
@json_option
@click.pass_obj
def history(settings: Settings, video: str, subject: str, attribute: str | None, k: int, as_json: bool) -> None:
    """How SUBJECT's facts changed in source VIDEO: every version, oldest first, and which holds now.

    With no facts it says why (a conversation ingested without --memorize holds none).
    """
    from m3graph.service import HistoryRequest

    request = HistoryRequest(video=video, subject=subject, attribute=attribute, k=k)
    with open_graph(settings) as graph:
        service = make_service(settings, graph)
        out = service.history(request)
    why = out.note
    if as_json:
        echo_json(out.to_json())
        return
    for slot in out.slots:
        click.echo(f"{slot.subject} · {slot.attribute}")
        for v in slot.versions:
            state = "now" if v.current else (v.superseded or "superseded")
            said = ", ".join(v.said_in)
            not_ = "not " if v.negated else ""
            extra = f"; contradicts {', '.join(v.contradicts)}" if v.contradicts else ""
            click.echo(f"  - {not_}{v.value}  (said in {said}; {state}{extra})")
    if why:
        click.echo(why)


@main.command("correct-fact")
@click.argument("memory_id")
@click.argument("state", type=click.Choice(["superseded", "current", "clear"]))
@click.option("--note", default=None, help="Why (kept in the memory's manual_log).")
@click.pass_obj
def correct_fact(settings: Settings, memory_id: str, state: str, note: str | None) -> None:
    """Mark one version of a fact superseded, restore it (current), or clear the mark (docs/facts.md)."""
    from m3graph.service import CorrectFactRequest

    request = CorrectFactRequest(memory_id=memory_id, state=state, note=note)
    with open_graph(settings) as graph:
        click.echo(json.dumps(make_service(settings, graph).correct_fact(request, via="cli").to_json(),
                              ensure_ascii=False, indent=2, default=str))


@main.command()
@click.option("--video", "source_id", default=None, help="Video id for the generated memory.")
@click.pass_obj
def demo(settings: Settings, source_id: str | None) -> None:
    """Main job on the embedded default: start Neo4j, load a generated memory, run searches."""
    from m3graph.embedding import text_embedder
    from m3graph.ingest.demo import BEFORE_THE_CHANGE, CHANGING_FACT, DEMO_VIDEO, QUESTIONS, demo_request, load_demo
    from m3graph.localserver.server import ensure_server
    from m3graph.service import SearchRequest, StatsRequest
    from m3graph.service.store import connect

    source_id = source_id or DEMO_VIDEO
    with step("starting Neo4j (the first start takes a minute)"):
        status = ensure_server(settings)
    if status is None:
        click.echo(f"using the Neo4j server at {settings.bolt_uri}")
    else:
        how = "reused" if status.reused else f"started in {status.startup_s or 0:.1f} s"
        click.echo(f"local Neo4j at {status.bolt_uri} ({how}, pid {status.pid})")
    with step("loading the text model"):
        embedder = text_embedder(settings)
    with connect(settings) as graph, step(f"writing the generated memory of {source_id} (embedding every memory)"):
        result = load_demo(graph, embedder, source_id,
                           progress=lambda done, total: click.echo(f"  clip {done}/{total}", err=True))
    with connect(settings) as graph:
        service = make_service(settings, graph, embedder)
        chars = service.evidence.characters_of([*result.faces.values(), *result.voices.values()])
        people = service.lookup.names(list(chars.values()))
        click.echo(f"loaded {result.clips} clips of {source_id}")
        for name in result.faces:
            face, voice = result.faces[name], result.voices.get(name)
            voice_txt = f", <voice_{voice}> -> <character_{chars[voice]}>" if voice is not None else ""
            who = f" ({people[chars[face]]})" if chars[face] in people else ""
            click.echo(f"  {name}: <face_{face}> -> <character_{chars[face]}>{who}{voice_txt}")
        for question in QUESTIONS:
            click.echo(f"\nQ: {question}")
            hits = service.search(demo_request(question, source_id)).clips
            print_results(hits, names_in(service, hits))
        click.echo(f"\nA fact that changed. Q: {CHANGING_FACT}")
        for label, as_of in (("now", None), (f"as of CLIP_{BEFORE_THE_CHANGE}", f"{source_id}#{BEFORE_THE_CHANGE}")):
            request = SearchRequest(query=CHANGING_FACT, videos=(source_id,), mode="node", k=1, as_of=as_of)
            clips = service.search(request).clips
            facts = [m for r in clips for m in r.memories]
            named = names_in(service, clips)
            click.echo(f"  {label}: " + ("; ".join(name_tags(m.marked_text, named) for m in facts) or "(nothing)"))
        click.echo("\nname -> character lookups:")
        for name in ("Lily", "Jack", "Mia"):
            found = service.evidence.characters_named(name, [source_id])
            named = service.lookup.names([c.char_id for c in found])
            click.echo(f"  {name}: " + (", ".join(f"{shown(c.char_id, named.get(c.char_id))} ({c.mentions} memories)"
                                                  for c in found) or "none"))
        click.echo("\ncounts: " + json.dumps(service.stats(StatsRequest(video=source_id)).counts))
        click.echo(f"Browse it: `m3graph explore` (the analysts' web app), `m3graph db browser` (Neo4j Browser) or "
                   f"Bloom at {settings.bolt_uri} (user {settings.neo4j_user}, the password in NEO4J_PASSWORD).")


@main.command()
@click.option("-c", "--concurrency", type=int, default=2, show_default=True)
@click.option("--loglevel", default="info", show_default=True)
@click.pass_obj
def worker(settings: Settings, concurrency: int, loglevel: str) -> None:
    """Start a Celery worker on the configured Redis (prefork, one Neo4j driver per process)."""
    from m3graph.localserver.server import ensure_server
    from m3graph.tasks.app import QUEUE, configure

    ensure_server(settings)
    configure(settings).worker_main(["worker", f"--loglevel={loglevel}", f"--concurrency={concurrency}",
                                     "-Q", QUEUE, "--pool=prefork"])


@main.command("import-m3")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--video", "source_id", required=True, help="Video id to import the memory graph as.")
@click.option("--replace", is_flag=True, help="Replace an existing video of that id.")
@click.pass_obj
def import_m3(settings: Settings, path: Path, source_id: str, replace: bool) -> None:
    """Import a research-code M3-Agent memory graph (.pkl) safely (no code in the file is ever run)."""
    from m3graph.embedding import text_embedder
    from m3graph.ingest.m3_import import import_pickle

    with open_graph(settings) as graph:
        summary = import_pickle(graph, path, source_id, text_embedder(settings), replace=replace)
    click.echo(str(summary))


def run() -> None:
    # torch's OpenMP threads spin-wait by default; on a shared 2-core machine that made face detection 6x
    # slower. Must be set before torch loads, so it lives in the entry point.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # noqa: TID251
    try:
        main(standalone_mode=True)
    except Exception as exc:  # noqa: BLE001 - the one place that turns any error into one line + exit status
        sys.exit(report(exc, verbose=bool({"-v", "--verbose"} & set(sys.argv[1:]))))


if __name__ == "__main__":
    run()
