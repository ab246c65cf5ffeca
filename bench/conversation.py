"""One conversation of up to 10^7 tokens: `python -m bench.conversation --tokens 100000,1000000,10000000`.

The conversation is generated from the BEAM development chats (bench/conversation_gen.py, under `--data`, never
committed) and ingested through the product's chat ingestion (`ingest_conversation`, what `m3graph ingest-chat`
runs) as ONE source, a few sessions per call, in order. The sizes are prefixes of it: the run ingests up to the
first size, measures, goes on to the next, measures again. Ingestion is resumable: sessions already stored are
skipped (the product recognises them by id), so a run that stopped, or a later run with a larger size, continues
where the store stands; only sessions written by this run count towards its ingestion rate. A size the store
has already passed (an earlier run went further) is not measured: its figures would be of the larger store.

At every size, beside the load average:
- search p50/p95 through `MemoryService.search` (what every front end runs: query embedding, hybrid ranking,
  the clips' memories), clip and node mode, each plain, within a time window (the dates of the middle tenth of the
  turns ingested so far), for one speaker ("User"), and both; the same queries over BM25 of the same turns (the
  evaluation's `BM25`, built in process) as the baseline;
- `ask` latency (`MemoryService.ask`, the controller with the configured reader: the 1.5B offline model on the CPU
  unless configured otherwise), `--asks` questions of the BEAM set;
- the server: RSS, heap used and, after a full GC, live (`jcmd`), the configured heap and page cache; the store on
  disk and each index's folder (own server only: with `--uri` the files are not ours to read).

`--prefixes` asks on a store that already holds the conversation past the largest size (a finished 10^7 run):
nothing is ingested, and at each size the questions are scoped to that prefix (`before_clip` = its last session),
so they see exactly the turns a store of that size would hold; the ranking's index statistics are those of the
whole store. Only the ask and quality figures are taken.

`--quality` scores the asked questions (knowledge update and temporal reasoning by default: the deterministic
checks of `m3graph.devkit.eval.beam_score`) beside the BM25 reader baseline of `m3graph eval beam` (same model,
BM25's top messages of the ingested turns). The questions are those of the chats whose cited messages are all
ingested at the *smallest* size measured and among the first `--unique-chats` of the order (at most `--asks`),
asked again at every size: the chat alone, then the same chat with the later chats after it as unrelated history
(so the chat's facts are never the newest talk). Those first chats are never copied: past the set, the renamed
copies are of the other chats only (bench/conversation_gen.py, "Why some chats are never copied"), so set
`--unique-chats` to the number of chats the smallest size holds. A chat after the first is re-dated by whole
years, its named years with it (bench/conversation_gen.py); its questions are asked and scored as re-dated the same way
(`shifted_chats`: question, gold answer, rubric and stale value), so a date-valued gold names the day the
ingested chat names. The bar: the answer rate may not fall by more than 10 points from the
smallest size to the largest. `--smoke` (CI): sizes of 1,500 and 3,000 tokens, 2 queries, one question (the
earliest-cited one, as `m3graph eval beam --smoke`), scored.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from bench.conversation_gen import Manifest, Spec, chat_names, generate, shift_question, tokens
from bench.measure import summary
from bench.run import dir_gb, git_state
from bench.smoke import add_smoke, add_uri, apply_smoke, scratch, server_settings
from bench.write_profile import profile_text
from m3graph.devkit.eval import beam
from m3graph.devkit.eval.beam_score import score
from m3graph.ingest.chat.model import Conversation, Session
from m3graph.settings import LocalServer, Settings

REPO = Path(__file__).resolve().parents[1]
QUALITY_BAR = 10.0  # points the answer rate may fall from the smallest size to the largest
log = logging.getLogger("bench.conversation")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.conversation", description=__doc__.splitlines()[0])
    p.add_argument("--tokens", default="100000,1000000,10000000", help="comma-separated sizes (estimated tokens)")
    p.add_argument("--data", type=Path, default=REPO / ".m3graph" / "conversation",
                   help="where the generated conversation is written (and reused)")
    p.add_argument("--beam", type=Path, default=None, help="BEAM chat folders (default ../shared/data/beam)")
    p.add_argument("--chats", default=None, help="chat order, comma-separated (default 500K-1 ... 500K-10)")
    p.add_argument("--session-messages", type=int, default=20, help="messages per session at most")
    p.add_argument("--unique-chats", type=int, default=1,
                   help="the first N chats of the order are never copied, and only their questions are scored "
                        "(0: every chat copied)")
    p.add_argument("--chunk", type=int, default=2, help="sessions per ingestion call (embedded, then written)")
    p.add_argument("--queries", type=int, default=30, help="search queries per variant and size")
    p.add_argument("--asks", type=int, default=3, help="questions asked per size (0: no ask)")
    p.add_argument("--quality", action="store_true", help="score the asked questions beside the BM25 reader")
    p.add_argument("--categories", default="knowledge_update,temporal_reasoning", help="question categories")
    p.add_argument("--out", type=Path, default=None, help="JSON results (default bench/results/conversation-<t>.json)")
    p.add_argument("--home", type=Path, default=REPO / ".m3graph" / "bench-conversation" / "neo4j",
                   help="the benchmark's own server home, kept between runs (ingestion resumes)")
    p.add_argument("--port", type=int, default=7697)
    p.add_argument("--heap-mb", type=int, default=4096)
    p.add_argument("--pagecache-mb", type=int, default=4096)
    p.add_argument("--neo4j-version", choices=["auto", "2026", "5.26"], default="auto")
    p.add_argument("--keep", action="store_true", help="leave the server running at the end")
    p.add_argument("--prefixes", action="store_true",
                   help="the store already holds the conversation past the largest size: ingest nothing and ask "
                        "at each size with the question scoped to that prefix (before_clip); no search figures")
    p.add_argument("--generate-only", action="store_true", help="write the conversation and stop")
    add_uri(p)
    add_smoke(p, "1,500 and 3,000 tokens, 2 queries per variant, one scored question")
    args = apply_smoke(p.parse_args(argv), tokens="1500,3000", queries=2, asks=1, quality=True, chunk=1,
                       session_messages=2, heap_mb=1024, pagecache_mb=512)
    if args.smoke:
        args.data = scratch("conversation")
    return args


@dataclass
class Stored:
    """What the run has ingested so far (this run's and earlier runs' sessions alike)."""

    tokens: int = 0
    sessions: int = 0
    turns: list[tuple[datetime, str, str]] = field(default_factory=list)  # (session date, turn id, text)
    written: int = 0  # turns written by this run
    written_s: float = 0.0
    prefix: dict[str, int] = field(default_factory=dict)  # chat -> BEAM messages of its copy 0 ingested
    complete: set[str] = field(default_factory=set)  # chats whose copy 0 is wholly ingested

    def batches(self) -> list[beam.Batch]:
        """The ingested turns as BEAM batches (one per session date), for the BM25 reader baseline."""
        out: list[beam.Batch] = []
        for i, (when, _, text) in enumerate(self.turns):
            role = "user" if text.startswith("User: ") else "assistant"
            msg = beam.Message(i, role, text.split(": ", 1)[1])
            if out and out[-1].when == when:
                out[-1] = beam.Batch(out[-1].number, when, (*out[-1].messages, msg))
            else:
                out.append(beam.Batch(len(out) + 1, when, (msg,)))
        return out


def sessions(data: Path, manifest: Manifest) -> Iterator[tuple[Conversation, Session, str, int]]:
    """(part, session, chat, copy) in order, each part read with the product's loader."""
    from m3graph.ingest.chat.formats import load_conversation

    for part in manifest.parts:
        conv, _ = load_conversation(data / part.file, "json", manifest.spec.source_id)
        for s in conv.sessions:
            yield conv, s, part.chat, part.copy


class Ingest:
    """Feeds the conversation's sessions to the product's chat ingestion up to a size, resumably."""

    def __init__(self, graph: Any, embedder: Any, data: Path, manifest: Manifest, chunk: int,
                 lengths: dict[str, int]) -> None:
        self.graph, self.embedder, self.chunk = graph, embedder, chunk
        self.stream = sessions(data, manifest)
        self.stored = Stored()
        self.lengths = lengths  # chat -> its BEAM messages (whole: every one of copy 0 ingested)
        self._seen: dict[str, int] = {}

    def until(self, size: int) -> None:
        from m3graph.ingest.chat.ingest import ingest_conversation

        pending: list[tuple[Conversation, Session, str, int]] = []
        while self.stored.tokens < size:
            item = next(self.stream, None)
            if item is None:
                break
            pending.append(item)
            self._account(item)
            if len(pending) >= self.chunk or self.stored.tokens >= size:
                conv = replace(pending[0][0], sessions=tuple(s for _, s, _, _ in pending))
                t0 = time.perf_counter()
                done = ingest_conversation(self.graph, conv, self.embedder)
                if done.sessions_written:
                    self.stored.written += done.turns
                    self.stored.written_s += time.perf_counter() - t0
                    log.info("%d tokens, %d turns stored (%d by this run, %.2f s each); load %.1f",
                             self.stored.tokens, len(self.stored.turns), self.stored.written,
                             self.stored.written_s / max(self.stored.written, 1), os.getloadavg()[0])
                pending = []

    def count_until(self, size: int) -> None:
        """Advance the account to `size` without ingesting: what a store that already holds more holds up to
        there (`--prefixes`)."""
        while self.stored.tokens < size:
            item = next(self.stream, None)
            if item is None:
                break
            self._account(item)

    def _account(self, item: tuple[Conversation, Session, str, int]) -> None:
        _, s, chat, copy = item
        st = self.stored
        st.sessions += 1
        for t in s.turns:
            st.tokens += tokens(t.text)
            st.turns.append((s.started_at or datetime.min, t.turn_id, f"{t.speaker}: {t.text}"))
            if copy == 0:
                st.prefix[chat] = int(t.turn_id.rsplit("/m", 1)[1]) + 1
                self._seen[chat] = self._seen.get(chat, 0) + 1
        if copy == 0 and self._seen.get(chat, 0) >= self.lengths.get(chat, 1 << 30):
            st.complete.add(chat)


def server_record(settings: Settings, ex: Any) -> dict[str, Any]:
    """RSS, heap (used; live after a full GC) and the store's and indexes' bytes on disk, where the server is ours."""
    out: dict[str, Any] = {"heap_mb": settings.local.heap_mb, "pagecache_mb": settings.local.pagecache_mb}
    if not settings.uses_local_server:
        return out | {"note": "--uri: the server's process and files are not ours to read"}
    from m3graph.localserver.server import LocalNeo4j

    status = LocalNeo4j(settings).status()
    out["rss_mb"] = status.rss_mb
    if status.pid:
        jcmd = Path(os.readlink(f"/proc/{status.pid}/exe")).with_name("jcmd")
        out["heap_used_mb"], out["heap_committed_mb"] = heap(jcmd, status.pid)
        subprocess.run([str(jcmd), str(status.pid), "GC.run"], capture_output=True, check=False, timeout=120)
        out["heap_live_mb"], _ = heap(jcmd, status.pid)
    db = settings.local.home.resolve() / "data" / "databases" / settings.neo4j_database
    out["store_mb"] = (dir_gb(db) or 0.0) * 1024
    ids = {int(r["id"]): f"{r['name']} ({r['type'].lower()})" for r in ex.read("bench/index_ids")}
    out["indexes_mb"] = {ids.get(int(d.name), d.name): round((dir_gb(d) or 0.0) * 1024, 2)
                         for d in sorted((db / "schema" / "index").glob("*/*")) if d.name.isdigit()}
    return out


def heap(jcmd: Path, pid: int) -> tuple[float | None, float | None]:
    """(used, committed) MiB of the server's Java heap, from `jcmd PID GC.heap_info`."""
    try:
        text = subprocess.run([str(jcmd), str(pid), "GC.heap_info"], capture_output=True, text=True, check=True,
                              timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None, None
    m = re.search(r"committed (\d+)K, used (\d+)K", text)
    return (int(m.group(2)) / 1024, int(m.group(1)) / 1024) if m else (None, None)


def search_record(settings: Settings, service: Any, source: str, stored: Stored, queries: list[str]
                  ) -> dict[str, Any]:
    """Search latency per mode and filter, beside BM25 over the same turns."""
    from m3graph.devkit.eval.retrieval import BM25
    from m3graph.service.requests import SearchRequest

    dates = sorted(when for when, _, _ in stored.turns)  # a window of the middle tenth of the turns: never empty
    window = {"since": dates[int(0.45 * len(dates))], "until": dates[int(0.55 * len(dates))] + timedelta(minutes=1)}
    filters: dict[str, dict[str, Any]] = {"plain": {}, "window": window, "speaker": {"speakers": ("User",)},
                                          "window+speaker": window | {"speakers": ("User",)}}
    out: dict[str, Any] = {"window": [w.isoformat() for w in window.values()], "queries": len(queries)}
    samples = []
    for q in queries:  # also warms the model and the server's caches before anything is timed
        t0 = time.perf_counter()
        service.embed(q)
        samples.append(time.perf_counter() - t0)
    out["embed"] = summary(samples)  # the query embedding inside every search below
    samples = []
    for _ in queries:  # what a plan pays, once per scope every few seconds, to size its fusion pool
        t0 = time.perf_counter()
        service.graph.ex.read("search/count_candidates", videos=[source], before_clip=None)
        samples.append(time.perf_counter() - t0)
    out["scope_count"] = summary(samples)
    out["ranked_memory_mb"] = ranked_memory(settings, service, source, queries[0])
    for mode in ("clip", "node"):
        for name, extra in filters.items():
            def one(q: str, mode: str = mode, extra: dict[str, Any] = extra) -> int:
                return len(service.search(SearchRequest(query=q, videos=(source,), mode=mode, **extra)).clips)
            one(queries[-1])  # warm: the first call of a variant plans its statement
            samples, hits = [], 0
            for q in queries:
                t0 = time.perf_counter()
                hits += one(q)
                samples.append(time.perf_counter() - t0)
            out[f"{mode} {name}"] = summary(samples) | {"clips_per_query": hits / len(queries)}
    t0 = time.perf_counter()
    index = BM25([text for _, _, text in stored.turns], k1=1.2, b=0.75)
    out["bm25_build_s"] = time.perf_counter() - t0
    samples = []
    for q in queries:
        t0 = time.perf_counter()
        index.top(q, 10)
        samples.append(time.perf_counter() - t0)
    out["bm25"] = summary(samples)
    return out


def ranked_memory(settings: Settings, service: Any, source: str, query_text: str) -> dict[str, float | None]:
    """The ranked search's transaction memory (PROFILE's GlobalMemory, MB) for one query over the whole source, node
    and clip mode, at the fixed pool and at the pool the scope now gets: what the pool's growth costs the server (a
    statement over `db.memory.transaction.max` fails)."""
    from m3graph.cypher import query
    from m3graph.graphdb.search_plan import SearchSpec, build_plan, fusion_pool

    search = service.graph.search
    scope = search.scope([source])
    pools = sorted({settings.search.fusion_pool, fusion_pool(settings.search, scope, search)})
    vector = service.embed(query_text)
    out: dict[str, float | None] = {}
    for pool in pools:
        fixed = settings.model_copy(update={"search": settings.search.model_copy(
            update={"fusion_pool": pool, "fusion_share": 0.0})})
        for mode in ("node", "clip"):
            plan = build_plan(SearchSpec(vector, mode=mode, text=query_text, videos=[source]), scope, fixed,
                              search.ex.capabilities, search)
            with search.ex.driver.session(database=search.ex.database) as session:
                done = session.run(profile_text(query(plan.statement).text), plan.params()).consume()
            used = (done.profile or {}).get("args", {}).get("GlobalMemory")
            out[f"{mode} pool {pool}"] = round(used / 2**20, 1) if isinstance(used, int | float) else None
    return out


def ask_record(settings: Settings, service: Any, source: str, stored: Stored, questions: list[beam.Question],
               quality: bool, out: Any, before_clip: int | None = None) -> dict[str, Any]:
    """Asks each question through the product (and, with `quality`, the BM25 reader); latency and scores.
    `before_clip`: the question sees the conversation up to that session only (`--prefixes`)."""
    from m3graph.graphdb.search_plan import Scope, fusion_pool
    from m3graph.reasoning.llm import make_chat_model
    from m3graph.service.requests import AskRequest

    model = make_chat_model(settings.llm.control, settings.llm.models_dir) if quality else None
    batches = stored.batches() if quality else []
    # The candidates each ranking gives the questions' searches: the pool grows with the scope (search.fusion_share).
    pool = fusion_pool(settings.search, Scope(videos=[source], before_clip=before_clip), service.graph.search)
    rec: dict[str, Any] = {"questions": len(questions), "fusion_pool": pool}
    latency: dict[str, list[float]] = {"m3graph": [], "baseline": []}
    correct: dict[str, int] = {"m3graph": 0, "baseline": 0}
    try:
        for q in questions:
            t0 = time.perf_counter()
            asked = service.ask(AskRequest(question=q.question, videos=[source], before_clip=before_clip))
            answers = {"m3graph": asked.answer or ""}
            latency["m3graph"].append(time.perf_counter() - t0)
            if model is not None:
                t0 = time.perf_counter()
                answers["baseline"] = beam.baseline_answer(model, q.question, beam.baseline_lines(batches, q.question))
                latency["baseline"].append(time.perf_counter() - t0)
            for system, answer in answers.items():
                s = score(q.category, q.question, q.rubric, answer, q.gold, q.confusion) if quality else None
                correct[system] += bool(s and s.correct)
                out.write(json.dumps({"tokens": stored.tokens, "before_clip": before_clip, "id": q.id,
                                      "system": system, "answer": answer, "gold": q.gold,
                                      "outcome": asked.outcome if system == "m3graph" else None,
                                      "correct": s.correct if s else None, "why": s.detail if s else None,
                                      "latency_s": round(latency[system][-1], 2)}, ensure_ascii=False) + "\n")
                out.flush()
    finally:
        if model is not None:
            model.close()
    for system, samples in latency.items():
        if samples:
            rec[system] = summary(samples) | ({"correct": correct[system]} if quality else {})
    return rec


def shifted_chats(chats: list[beam.Chat], manifest: Manifest) -> list[beam.Chat]:
    """The chats with their questions moved by the years their first pass (copy 0) was moved in the conversation:
    what is asked and the gold it is scored against name the days the ingested turns name (module docstring)."""
    years = {p.chat: p.shift_years for p in manifest.parts if p.copy == 0}
    return [replace(c, questions=tuple(shift_question(q, years.get(c.name, 0)) for q in c.questions))
            for c in chats]


def pick_questions(chats: list[beam.Chat], stored: Stored, categories: list[str], n: int, quality: bool,
                   smoke: bool, unique: int = 1) -> list[beam.Question]:
    """The questions asked at every size (module docstring): with `quality` those answerable at the smallest, of
    the first `unique` chats (the ones never copied)."""
    present = [c for c in (chats[:unique] if quality else chats) if c.name in stored.prefix]
    wanted = [q for c in present for q in c.questions if q.category in categories]
    if smoke:
        return beam.select(present[0], categories, None, n) if present else []
    if quality:
        wanted = [q for q in wanted if q.in_slice(None if q.id.split("/")[0] in stored.complete
                                                 else stored.prefix[q.id.split("/")[0]])]
    return wanted[:n]


def query_texts(chats: list[beam.Chat], n: int) -> list[str]:
    """Search queries: the BEAM questions of every category, one chat at a time, the same at every size."""
    by_chat = [[q.question for q in c.questions] for c in chats]
    out: list[str] = []
    for i in range(max((len(b) for b in by_chat), default=0)):
        out += [b[i] for b in by_chat if i < len(b)]
    return out[:n]


def bench_settings(args: argparse.Namespace) -> Settings:
    local = LocalServer(home=args.home, port=args.port, heap_mb=args.heap_mb, pagecache_mb=args.pagecache_mb,
                        build_dir=REPO / ".m3graph" / "launcher-build", startup_timeout_s=600,
                        neo4j_version=args.neo4j_version)
    return server_settings(args.uri, local)


def measure(args: argparse.Namespace, manifest: Manifest, sizes: list[int], results: dict[str, Any],
            save: Any) -> None:
    """Ingest to each size in turn and measure there (module docstring)."""
    from m3graph.embedding import text_embedder
    from m3graph.graphdb.store import MemoryGraph
    from m3graph.localserver.server import LocalNeo4j, ensure_server
    from m3graph.reasoning.control import controller_factory
    from m3graph.service.memory import MemoryService

    settings = bench_settings(args)
    if settings.uses_local_server:
        args.home.mkdir(parents=True, exist_ok=True)
    ensure_server(settings)
    source = manifest.spec.source_id
    chats = shifted_chats([beam.load_chat((args.beam or beam.default_data_dir()) / name)
                           for name in manifest.spec.chats
                           if any(p.chat == name and p.copy == 0 for p in manifest.parts)], manifest)
    categories = [c.strip() for c in args.categories.split(",") if c.strip()]
    queries = query_texts(chats, args.queries)
    questions: list[beam.Question] | None = None
    try:
        with MemoryGraph.connect(settings) as graph:
            embedder = text_embedder(settings)
            service = MemoryService(settings, graph, embedder_factory=lambda: embedder,
                                    controller_factory=controller_factory(settings, graph))
            ingest = Ingest(graph, embedder, args.data, manifest, args.chunk,
                            {c.name: sum(len(b.messages) for b in c.batches) for c in chats})
            answers = (results["path"].with_suffix(".answers.jsonl")).open("a", encoding="utf-8")
            with answers:
                held = len(graph.ex.read("chat/source_sessions", source_id=source))  # stored by earlier runs
                for size in sizes:
                    rec: dict[str, Any] = results["sizes"].setdefault(str(size), {"size": size})
                    if args.prefixes:
                        ingest.count_until(size)
                        st = ingest.stored
                        if st.sessions > held:
                            log.info("size %d: the store holds %d sessions, fewer than its %d: not asked", size,
                                     held, st.sessions)
                            del results["sizes"][str(size)]
                            continue
                        rec["ingest"] = {"tokens": st.tokens, "sessions": st.sessions, "turns": len(st.turns),
                                         "written_by_this_run": 0, "s_per_written_turn": None,
                                         "before_clip": st.sessions - 1}
                        if questions is None:
                            questions = pick_questions(chats, st, categories, args.asks, args.quality, args.smoke,
                                               manifest.spec.unique)
                            results["questions"] = [q.id for q in questions]
                        if questions:
                            rec["ask"] = ask_record(settings, service, source, st, questions, args.quality, answers,
                                                    before_clip=st.sessions - 1)
                            rec["ask"]["loadavg"] = os.getloadavg()
                        save()
                        continue
                    t0 = time.perf_counter()
                    ingest.until(size)
                    st = ingest.stored
                    if st.sessions < held:  # the store already holds more: what it measures is not this size
                        log.info("size %d: the store holds %d sessions, more than its %d: not measured", size,
                                 held, st.sessions)
                        del results["sizes"][str(size)]
                        continue
                    rec["ingest"] = {"tokens": st.tokens, "sessions": st.sessions, "turns": len(st.turns),
                                     "written_by_this_run": st.written, "written_s": st.written_s,
                                     "s_per_written_turn": st.written_s / st.written if st.written else None,
                                     "wall_s": time.perf_counter() - t0, "loadavg": os.getloadavg()}
                    rec["counts"] = graph.counts(source)
                    save()
                    rec["search"] = search_record(settings, service, source, st, queries)
                    rec["search"]["loadavg"] = os.getloadavg()
                    save()
                    if questions is None:
                        questions = pick_questions(chats, st, categories, args.asks, args.quality, args.smoke,
                                               manifest.spec.unique)
                        results["questions"] = [q.id for q in questions]
                    if questions:
                        rec["ask"] = ask_record(settings, service, source, st, questions, args.quality, answers)
                        rec["ask"]["loadavg"] = os.getloadavg()
                    rec["server"] = server_record(settings, graph.ex)
                    save()
    finally:
        if settings.uses_local_server and not args.keep:
            LocalNeo4j(settings).stop()


def ms(rec: dict[str, Any], *path: str) -> str:
    for key in path:
        rec = rec.get(key, {}) if isinstance(rec, dict) else {}
    return f"{rec:.0f}" if isinstance(rec, int | float) else "-"


def report(results: dict[str, Any]) -> str:
    """The run as a table, a column per size, and the quality verdict."""
    recs = [results["sizes"][k] for k in sorted(results["sizes"], key=int)]
    rows: list[tuple[str, Callable[[dict[str, Any]], str]]] = [
            ("tokens", lambda r: f"{r['ingest']['tokens']:,}"), ("turns", lambda r: f"{r['ingest']['turns']:,}"),
            ("memories", lambda r: f"{r.get('counts', {}).get('Memory', 0):,}"),
            ("turns ingested by this run, s each", lambda r: f"{r['ingest']['written_by_this_run']:,}, "
                                                            f"{r['ingest']['s_per_written_turn'] or 0:.2f}"),
            ("load average (1 min) at search", lambda r: f"{r['search']['loadavg'][0]:.1f}")]
    rows.append(("query embedding p50/p95 ms", _latency("search", "embed")))
    rows.append(("scope count (sizes the fusion pool) p50/p95 ms", _latency("search", "scope_count")))
    rows.append(("ranked search transaction memory MB", lambda r: ", ".join(
        f"{k} {v}" for k, v in r.get("search", {}).get("ranked_memory_mb", {}).items()) or "-"))
    for variant in ("clip plain", "clip window", "clip speaker", "clip window+speaker", "node plain",
                    "node window", "node speaker", "node window+speaker", "bm25"):
        rows.append((f"search {variant} p50/p95 ms", _latency("search", variant)))
    rows += [("ask p50 / p95 ms", _latency("ask", "m3graph")),
             ("server RSS MB", lambda r: ms(r, "server", "rss_mb")),
             ("heap used / live after GC MB", lambda r: f"{ms(r, 'server', 'heap_used_mb')} / "
                                                        f"{ms(r, 'server', 'heap_live_mb')}"),
             ("store MB", lambda r: ms(r, "server", "store_mb"))]
    lines = ["| size | " + " | ".join(f"{r['size']:,}" for r in recs) + " |",
             "|---|" + "---|" * len(recs)]
    for label, cell in rows:
        lines.append(f"| {label} | " + " | ".join(_safe(cell, r) for r in recs) + " |")
    sized = [r.get("server", {}).get("indexes_mb", {}) for r in recs]
    largest = sorted(sized[-1], key=lambda n: -sized[-1][n])[:5]
    for name in largest:
        lines.append(f"| index {name} MB | " + " | ".join(f"{s.get(name, 0):.1f}" for s in sized) + " |")
    if sized[-1]:  # with --uri nothing is sized
        lines.append(f"| the other {len(sized[-1]) - len(largest)} indexes MB | " + " | ".join(
            f"{sum(v for n, v in s.items() if n not in largest):.1f}" for s in sized) + " |")
    quality = [(r["size"], r["ask"]) for r in recs if "correct" in r.get("ask", {}).get("m3graph", {})]
    for size, a in quality:
        n = a["questions"]
        lines.append(f"quality at {size:,} tokens: m3graph {a['m3graph']['correct']}/{n}, "
                     f"baseline {a.get('baseline', {}).get('correct', 0)}/{n} (fusion pool {a.get('fusion_pool')})")
    if quality and quality[0][1]["questions"]:
        first, last = (100 * a["m3graph"]["correct"] / a["questions"] for _, a in (quality[0], quality[-1]))
        verdict = "within" if first - last <= QUALITY_BAR else "BEYOND"
        lines.append(f"answer rate {first:.0f}% -> {last:.0f}% ({first - last:+.0f} points fall; {verdict} the "
                     f"{QUALITY_BAR:.0f}-point bar)")
    return "\n".join(lines)


def _latency(*path: str) -> Callable[[dict[str, Any]], str]:
    return lambda r: f"{ms(r, *path, 'p50_ms')} / {ms(r, *path, 'p95_ms')}"


def _safe(cell: Any, rec: dict[str, Any]) -> str:
    try:
        return str(cell(rec))
    except (KeyError, TypeError):
        return "-"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    logging.getLogger("neo4j").setLevel(logging.WARNING)
    sizes = sorted(int(s) for s in args.tokens.split(",") if s.strip())
    root = args.beam or beam.default_data_dir()
    spec = Spec(tuple(c.strip() for c in args.chats.split(",")) if args.chats else tuple(chat_names(root)),
                args.session_messages, unique=max(args.unique_chats, 0))
    t0 = time.perf_counter()
    manifest = generate(root, args.data, max(sizes), spec)
    log.info("conversation %s: %d tokens in %d parts under %s (%.1f s)", spec.source_id, manifest.tokens,
             len(manifest.parts), args.data, time.perf_counter() - t0)
    if args.generate_only:
        print(f"source {spec.source_id}: {manifest.tokens:,} tokens, {len(manifest.parts)} parts in {args.data}")
        return 0
    out = args.out or REPO / "bench" / "results" / f"conversation-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"path": out, "meta": {
        "command": " ".join(["python -m bench.conversation", *(argv if argv is not None else sys.argv[1:])]),
        "git": git_state(), "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "source": spec.source_id,
        "loadavg_at_start": os.getloadavg(), "cores": os.cpu_count()}, "sizes": {}}

    def save() -> None:
        body = {k: v for k, v in results.items() if k != "path"}
        out.write_text(json.dumps(body, indent=2, default=str), encoding="utf-8")

    try:
        measure(args, manifest, sizes, results, save)
    finally:
        results["meta"]["finished"] = time.strftime("%Y-%m-%d %H:%M:%S %Z")
        save()
    print(report(results))
    print(f"\nresults: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
