"""`m3graph ingest-chat`: conversations and transcripts into the memory graph."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, replace
from datetime import UTC, datetime
from pathlib import Path

import click

from m3graph.cli.tables import step
from m3graph.ingest.chat.formats import FORMATS
from m3graph.settings import Settings


@click.command("ingest-chat")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--source-id", help="Store every FILE under this source (default: each file's own id or stem).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="auto", show_default=True,
              help="File format; auto picks by extension and content. facts: a numbered facts list ('N. text' "
                   "lines, later lines newer), stored as one semantic memory per fact without a model.")
@click.option("--memorize/--no-llm", "use_model", default=False, show_default=True,
              help="Write each session's memories with the configured model (settings.llm.memorize); without "
                   "it every turn becomes one episodic memory.")
@click.option("--keep-turns", is_flag=True, help="With --memorize: also keep every turn as a memory.")
@click.option("--started-at", type=click.DateTime(["%Y-%m-%d", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M"]),
              help="Start time (UTC) for sessions whose file gives none (subtitles, plain transcripts).")
@click.option("--files-root", type=click.Path(path_type=Path, file_okay=False, exists=True),
              help="Files that turns share are read only under this directory (default: the directory holding "
                   "each conversation file, or the conversation folder itself).")
@click.option("--json", "as_json", is_flag=True, help="Print the summaries as JSON.")
@click.pass_obj
def ingest_chat(settings: Settings, files: tuple[Path, ...], source_id: str | None, fmt: str, use_model: bool,
                keep_turns: bool, started_at: datetime | None, files_root: Path | None, as_json: bool) -> None:
    """Ingest conversations and transcripts: LoCoMo or generic JSON, SRT/WebVTT, "Speaker: text", facts lists,
    or a folder of session folders with the files they share.

    Every file is parsed and validated before anything is written (a malformed file is reported with its
    line and nothing is stored). Each session becomes a clip, each turn an episodic memory (each fact of a
    facts list a semantic one); sessions already in the graph are skipped, so re-running appends only what is
    new. Files that turns share (PDF, text, DOCX, CSV/XLSX, SVG charts, images, audio) are stored with
    surrogate memories; a bad file is reported on its own and the rest is ingested.
    """
    from m3graph.cli.session import open_graph
    from m3graph.embedding import text_embedder
    from m3graph.ingest.chat.facts_list import FactsMemorizer
    from m3graph.ingest.chat.formats import detect_format, load_conversation
    from m3graph.ingest.chat.ingest import ingest_conversation
    from m3graph.ingest.chat.memorize_session import make_session_memorizer
    from m3graph.ingest.chat.parsing import ReadLimits
    from m3graph.service import check_source_id

    if source_id is not None:
        check_source_id(source_id)
    convs = []
    limits = ReadLimits.of(settings.chat)
    for path in files:
        facts = (detect_format(path, limits) if fmt == "auto" else fmt) == "facts"
        conv, _ = load_conversation(path, fmt, source_id, limits)
        check_source_id(conv.source_id)
        if started_at is not None:
            when = started_at.replace(tzinfo=UTC)
            conv = replace(conv, sessions=tuple(s if s.started_at else replace(s, started_at=when)
                                                for s in conv.sessions))
        convs.append((conv, facts))
    use_model = use_model and not all(facts for _, facts in convs)  # facts lists are never memorized by a model
    memorizer = make_session_memorizer(settings, keep_turns) if use_model else None
    if use_model and memorizer is None:
        click.echo("note: no chat model is configured (llm.memorize.backend = none): every turn becomes a memory",
                   err=True)
    with quiet_step(as_json, "loading the text model"):
        embedder = text_embedder(settings)
    summaries = []
    try:
        with open_graph(settings) as graph:
            for conv, facts in convs:  # a facts list needs no model: each fact is one semantic memory
                root = files_root or _default_root(Path(conv.path or "."))
                how = "memorizing each session with the chat model" if memorizer and not facts else "storing"
                with quiet_step(as_json, f"{conv.path}: {how} ({len(conv.sessions)} sessions)"):
                    summary = ingest_conversation(graph, conv, embedder, FactsMemorizer() if facts else memorizer,
                                                  files_root=root)
                for problem in summary.files_refused:
                    click.echo(f"error: {conv.path}: {problem}", err=True)
                summaries.append(summary)
                if not as_json:
                    click.echo(f"{conv.path}: source {summary.source_id}: {len(summary.sessions_written)} sessions "
                               f"written (clips {summary.sessions_written}), {summary.sessions_skipped} already "
                               f"stored; {summary.turns} turns, {summary.episodic} episodic + {summary.semantic} "
                               f"semantic memories, {summary.speakers_created} new speakers, {summary.files} files "
                               f"({len(summary.files_refused)} refused)")
    finally:
        if memorizer is not None:
            memorizer.model.close()
    if as_json:
        click.echo(json.dumps([asdict(s) for s in summaries], indent=2))


@contextmanager
def quiet_step(quiet: bool, what: str) -> Iterator[None]:
    """`tables.step` (progress on stderr), or nothing when the output is JSON."""
    if quiet:
        yield
        return
    with step(what):
        yield


def _default_root(path: Path) -> Path:
    """Where a conversation's files may be read from without --files-root: its folder (a folder conversation)
    or the directory holding the file."""
    return path if path.is_dir() else path.parent
