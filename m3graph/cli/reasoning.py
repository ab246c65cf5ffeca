"""`m3graph ask` and `m3graph memorize`: the controller and (re-)memorization from the command line."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click

from m3graph.settings import Settings

if TYPE_CHECKING:
    from m3graph.ingest.pipeline import Memorizer
    from m3graph.reasoning.control import AnswerTrace


def print_trace(trace: AnswerTrace) -> None:
    """Rounds, queries and the evidence shown to the model, then the answer."""
    for r in trace.rounds:
        head = f"round {r.index + 1}: {r.action}"
        if r.content:
            head += f" {r.content!r}"
        click.echo(f"{head}  ({r.usage.prompt_tokens}+{r.usage.completion_tokens} tokens, {r.latency_s:.1f} s)")
        if r.result and r.result.get("fallback"):
            click.echo(f"    note: {r.result['fallback']}")
        if r.note:
            click.echo(f"    note: {r.note}")
        for label, lines in r.knowledge.items():
            click.echo(f"    {label}")
            for line in lines:
                click.echo(f"      - {line}")


@click.command()
@click.argument("question")
@click.option("--video", "videos", multiple=True, help="Answer from these videos' memory (repeatable; default all).")
@click.option("--before-clip", type=int, default=None, help="Only memory up to this clip (the question's time).")
@click.option("--mode", type=click.Choice(["auto", "m3", "tools"]), default=None,
              help="Controller dialect (default: settings.llm.control_mode).")
@click.option("--rounds", type=int, default=None, help="H, the most rounds (default: settings.control_rounds).")
@click.option("--trace", "show_trace", is_flag=True, help="Print every round and the evidence shown.")
@click.option("--json", "as_json", is_flag=True, help="Print the whole trace as JSON.")
@click.pass_obj
def ask(settings: Settings, question: str, videos: tuple[str, ...], before_clip: int | None, mode: str | None,
        rounds: int | None, show_trace: bool, as_json: bool) -> None:
    """Answer QUESTION from memory: at most H rounds of search, then an answer."""
    from m3graph.cli.session import make_service, open_graph
    from m3graph.cli.tables import step
    from m3graph.service import AskRequest

    request = AskRequest(question=question, videos=videos or None, before_clip=before_clip, rounds=rounds, mode=mode)
    with open_graph(settings) as graph:
        service = make_service(settings, graph)
        service.require_videos(request.videos)  # refused before any model loads
        if as_json:
            trace = service.answer(request)
        else:
            with step(f"answering: up to {rounds or settings.control_rounds} rounds of memory search, then an "
                      f"answer (a local chat model may take a minute)"):
                trace = service.answer(request)
    if as_json:
        click.echo(json.dumps(trace.to_dict(), ensure_ascii=False, indent=2))
        return
    if show_trace:
        print_trace(trace)
    else:
        for label, lines in trace.evidence.items():
            click.echo(f"  evidence {label}: " + " | ".join(lines[:3]) + (" ..." if len(lines) > 3 else ""))
    click.echo(f"answer ({trace.outcome}, {len(trace.rounds)} rounds, {trace.usage.total_tokens} tokens, "
               f"{trace.latency_s:.1f} s): {trace.answer if trace.answer is not None else '(none)'}")


@click.command()
@click.argument("source_id")
@click.option("--clip", "clips", multiple=True, type=int, help="Only these clips (default: every clip).")
@click.option("--replay", is_flag=True, help="Re-parse the stored raw model output instead of calling the model.")
@click.option("--failed", "only_failed", is_flag=True, help="Only the clips whose memorization failed.")
@click.pass_obj
def memorize(settings: Settings, source_id: str, clips: tuple[int, ...], replay: bool, only_failed: bool) -> None:
    """Re-memorize a video's clips (after a model or prompt change), or replay their stored model output.

    Each clip is one idempotent step: its previous memories and votes are replaced, nothing else changes; a
    clip whose memorization fails again keeps its memories and stays memorize_failed.
    """
    from m3graph.cli.session import open_graph
    from m3graph.embedding import text_embedder
    from m3graph.errors import NotFoundError
    from m3graph.ingest.pipeline import ClipWork, MemorizeFailedError, load_plan, memorize_clip
    from m3graph.reasoning.memorize import ReplayMemorizer, make_memorizer
    from m3graph.service import MemoryService
    from m3graph.storage import media_store

    plan = load_plan(settings, source_id)
    if not plan.windows:
        raise NotFoundError(f"no ingestion plan for video {source_id} under {settings.data_dir}")
    indexes = list(clips) or [w.index for w in plan.windows]
    if only_failed:
        with open_graph(settings) as graph:
            failed = {p.clip_index for p in MemoryService(settings, graph).evidence.clip_states(source_id)
                      if p.state is not None and p.state.value == "memorize_failed"}
        indexes = [i for i in indexes if i in failed]
        if not indexes:
            click.echo(f"{source_id}: no clip is memorize_failed")
            return
    store = media_store(settings)
    missing = [i for i in indexes if not store.exists(ClipWork(settings, source_id, i).faces_key)]
    if missing:
        raise NotFoundError(f"clips {missing} of {source_id} have no perception output; ingest them first")
    memorizer: Memorizer
    if replay:
        raw = {}
        for i in indexes:
            key = ClipWork(settings, source_id, i).memory_key
            if not store.exists(key):
                raise NotFoundError(f"clip {source_id}#{i} has no stored model output ({key})")
            raw[(source_id, i)] = json.loads(store.get_bytes(key)).get("raw", "")
        memorizer = ReplayMemorizer(raw, settings)
    else:
        memorizer = make_memorizer(settings)
    embedder = text_embedder(settings)
    with open_graph(settings) as graph:
        failures = []
        for i in indexes:
            try:
                report = memorize_clip(graph, embedder, memorizer, plan, i)
            except MemorizeFailedError as exc:  # recorded on the clip; the other clips still run
                failures.append(i)
                click.echo(f"  {source_id} clip {i}: FAILED: {exc.__cause__ or exc}", err=True)
                continue
            note = f" (memorize_failed: {report.memorize_error})" if report.memorize_error else ""
            click.echo(f"  {source_id} clip {i}: {report.memories} memories{note}")
        if failures:
            raise MemorizeFailedError(f"memorizing clip(s) {', '.join(map(str, failures))} of {source_id} failed; "
                                      "their previous memories were kept")
