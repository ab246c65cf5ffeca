"""Chat session write paths: the earlier statements beside the current ones, on the same turns and vectors.

Issue 40: with the embedder spread over the cores, a chat turn's cost is its session write (server CPU 28-40 ms per
message at load 22). The statements of a session write do little database work (tens of db hits per turn under
PROFILE) but each is a round trip with a fixed server cost, so the current path runs fewer of them per session:

* `chat/open_session`: the source's lock, the stored-session check (one clip of the source, not every clip read
  back) and the speakers by key in one statement, where the earlier path ran `graph/lock`, `chat/source_sessions`
  and `chat/speakers_by_key`;
* `memory/votes` only when the clip has votes to write or had some (`memories.votes_may_change`): a chat session
  has none;
* `memory/prepare` reads the clip's earlier memories only for a clip that existed before the session (the earlier
  path scanned every memory of the source for it, each session) and counts the source's semantic memories only
  when the write has semantic memories to deduplicate.

This ingests one workload's file (bench/ingest_throughput.py `workload_files`) `--repeats` times through each path,
alternating, each time as a new source, with vectors embedded once beforehand (so the embedder's time and threads
do not mix into the write figures), and reports per path the median messages/s, the server's CPU per message
(Linux /proc of the local server) and statements per session, and the ratios, with the machine's load average.

    python -m bench.session_writes --workloads chat --chat-sessions 19 --repeats 5

`earlier_writes()` swaps the earlier path in (also used by tests/graph/test_chat_write_paths.py, which checks that
both paths write the same graph). `--smoke`: one LoCoMo session, one repeat.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from bench.ingest_throughput import TxTimer, server_cpu_s, workload_files
from bench.scratch_home import SERVER_PID, run_on_scratch
from bench.smoke import add_smoke, add_uri, apply_smoke, scratch
from m3graph.embedding import text_embedder
from m3graph.graphdb import chat_sessions, memories
from m3graph.graphdb import executor as executor_module
from m3graph.graphdb.characters import refresh_characters
from m3graph.graphdb.clip_state import ClipState, set_state_tx
from m3graph.graphdb.executor import Executor, Tx
from m3graph.graphdb.facts import face_names
from m3graph.graphdb.files import FileLinks
from m3graph.graphdb.identity import resolve
from m3graph.graphdb.store import MemoryGraph
from m3graph.graphdb.types import ClipInfo, clip_key
from m3graph.ingest.chat.formats import load_conversation
from m3graph.ingest.chat.ingest import ingest_conversation
from m3graph.observations import FaceCluster, VoiceCluster
from m3graph.settings import Settings

log = logging.getLogger("bench.session_writes")
MARKER = ".m3graph-session-writes-home"
PATHS = ("earlier", "current")


def earlier_write_session(ex: Executor, settings: Settings, source_id: str, session_key: str, clip: ClipInfo,
                          speaker_keys: Mapping[str, str], turns_by_speaker: Mapping[str, int], n_turns: int,
                          render: chat_sessions.RenderMemories, files: FileLinks | None = None,
                          faces: Sequence[FaceCluster] = (), voices: Sequence[VoiceCluster] = ()) -> int | None:
    """`chat_sessions.write_session` before issue 40's statement merge (a copy: the baseline)."""

    def work(tx: Tx) -> int | None:
        tx.run("graph/lock", name=f"chat:{source_id}")
        if any(r["session_key"] == session_key for r in tx.run("chat/source_sessions", source_id=source_id)):
            return None
        names = list(speaker_keys)
        by_key = {r["key"]: r["entity_id"]
                  for r in tx.run("chat/speakers_by_key", keys=sorted(set(speaker_keys.values())))}
        missing = sorted(set(speaker_keys.values()) - set(by_key))
        if missing:
            first = tx.one("graph/allocate_ids", counter="entity", n=len(missing))["first"]
            by_key.update({k: first + i for i, k in enumerate(missing)})
        ids = {n: by_key[speaker_keys[n]] for n in names}
        tx.run("graph/upsert_clip", clips=[clip.upsert_params(source_id)])
        face_ids: dict[int, int] = {}
        known: dict[int, str] = {}
        if faces:
            resolved, _ = resolve(tx, settings, "face", source_id, clip.clip_index, faces)
            face_ids = {r.label: r.entity_id for r in resolved}
            known = face_names(tx, face_ids.values())
        voice_ids: dict[int, int] = {}
        if voices:
            heard, _ = resolve(tx, settings, "voice", source_id, clip.clip_index, voices)
            voice_ids = {r.label: r.entity_id for r in heard}
        tx.run("chat/write_session", clip_key=clip_key(source_id, clip.clip_index), session_key=session_key,
               turns=n_turns,
               speakers=[{"key": speaker_keys[n], "source": speaker_keys[n].split("|", 1)[0],
                          "name": speaker_keys[n].split("|", 1)[1], "as_name": n, "entity_id": ids[n],
                          "turns": turns_by_speaker.get(n, 0)} for n in names])
        rendered = render(ids, face_ids, known, voice_ids)
        derived = chat_sessions.speech_memories(rendered, ids) if settings.chat.speech_facts else []
        memories.write_clip_memories(tx, settings, source_id, clip.clip_index, [*rendered, *derived])
        if files is not None:
            files.write(tx, clip_key(source_id, clip.clip_index))
        set_state_tx(tx, source_id, clip.clip_index, ClipState.MEMORIZED)
        refresh_characters(tx, settings, sorted({*ids.values(), *face_ids.values(), *voice_ids.values()}))
        return len(missing)

    return ex.write_tx(work, label="ingest_chat_session")


@contextmanager
def earlier_writes() -> Iterator[None]:
    """Within the block, chat sessions are written by the earlier path: its session statements, memory/votes run
    for every clip, and memory/prepare reading the clip's earlier memories and counting the source's semantic
    ones every time (as its earlier text did)."""
    session, votes, run = chat_sessions.write_session, memories.votes_may_change, executor_module.Tx.run

    def earlier_run(tx: Tx, name: str, /, **params: Any) -> Any:
        if name == "memory/prepare":
            params |= {"new_clip": False, "count_semantic": True}
        return run(tx, name, **params)

    chat_sessions.write_session = earlier_write_session
    memories.votes_may_change = lambda ready, v: True  # type: ignore[assignment]
    executor_module.Tx.run = earlier_run  # type: ignore[method-assign]
    try:
        yield
    finally:
        chat_sessions.write_session, memories.votes_may_change = session, votes
        executor_module.Tx.run = run  # type: ignore[method-assign]


class Precomputed:
    """Vectors embedded once, by text: every run writes the same vectors and spends no time embedding."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.dim = inner, inner.dim
        self.vectors: dict[str, np.ndarray] = {}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self.vectors]
        if missing:
            self.vectors.update(zip(missing, np.asarray(self.inner.embed(missing)), strict=True))
        return np.asarray([self.vectors[t] for t in texts], dtype=np.float32)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workloads", default="chat", help="comma-separated: chat, beam, long (bench.ingest_throughput)")
    p.add_argument("--chat-sessions", type=int, default=19, help="chat: the LoCoMo conversation's first N sessions")
    p.add_argument("--messages", type=int, default=194, help="beam: the chat's first N messages")
    p.add_argument("--long-turns", type=int, default=60, help="long: BEAM messages of ≥3,000 characters")
    p.add_argument("--chat", default="500K-1", help="the BEAM chat of `beam`")
    p.add_argument("--repeats", type=int, default=5, help="ingestions per path, alternating")
    p.add_argument("--home", type=Path, default=Path("/tmp/m3graph-session-writes"), help="server home (deleted)")
    p.add_argument("--port", type=int, default=7699)
    p.add_argument("--heap-mb", type=int, default=2048)
    p.add_argument("--pagecache-mb", type=int, default=1024)
    p.add_argument("--out", type=Path, help="write the results here as JSON")
    add_uri(p)
    add_smoke(p, "one LoCoMo session, one repeat")
    return apply_smoke(p.parse_args(argv), chat_sessions=1, repeats=1, heap_mb=1024, pagecache_mb=256)


def ingest_with(graph: MemoryGraph, path: Path, source: str, embedder: Any, which: str) -> dict[str, Any]:
    """One ingestion of `path` as `source` through path `which`: seconds, server CPU, statements."""
    conv, _ = load_conversation(path, "locomo", source)
    s0 = server_cpu_s(SERVER_PID[0])
    t0 = time.perf_counter()
    with TxTimer() as statements:
        if which == "earlier":
            with earlier_writes():
                summary = ingest_conversation(graph, conv, embedder, embed_ahead=False)
        else:
            summary = ingest_conversation(graph, conv, embedder, embed_ahead=False)
    seconds = time.perf_counter() - t0
    s1 = server_cpu_s(SERVER_PID[0])
    if not summary.sessions_written:
        raise RuntimeError(f"{source}: nothing was written (the source exists: use a scratch database)")
    n, sessions = summary.turns, len(summary.sessions_written)
    return {"messages": n, "sessions": sessions, "seconds": seconds, "messages_per_s": n / seconds,
            "server_cpu_ms_per_message": None if s0 is None or s1 is None else 1000 * (s1 - s0) / n,
            "statements_per_session": sum(len(v) for v in statements.samples.values()) / sessions}


def measure(graph: MemoryGraph, name: str, path: Path, tag: str, repeats: int) -> dict[str, Any]:
    """Both paths on one workload, `repeats` times each, alternating (earlier first, then current first)."""
    embedder = Precomputed(text_embedder(graph.settings))
    for which in PATHS:  # untimed: vectors embedded, the model loaded, every statement of both paths planned
        ingest_with(graph, path, f"writes-warm-{name}-{which}-{tag}", embedder, which)
    runs: dict[str, list[dict[str, Any]]] = {p: [] for p in PATHS}
    for i in range(repeats):
        for which in PATHS if i % 2 == 0 else PATHS[::-1]:
            runs[which].append(ingest_with(graph, path, f"writes-{name}-{which}-{i}-{tag}", embedder, which))
    med = {p: {k: statistics.median(r[k] for r in runs[p])
               for k in ("messages_per_s", "server_cpu_ms_per_message", "statements_per_session")
               if all(r[k] is not None for r in runs[p])} for p in PATHS}
    cpu = [med[p].get("server_cpu_ms_per_message") for p in PATHS]
    return {"workload": name, "messages": runs["current"][0]["messages"], "sessions": runs["current"][0]["sessions"],
            "runs": runs, "median": med,
            "throughput_ratio": med["current"]["messages_per_s"] / med["earlier"]["messages_per_s"],
            "server_cpu_ratio": None if None in cpu else cpu[1] / cpu[0]}  # type: ignore[operator]


def report_lines(results: list[dict[str, Any]], start: Sequence[float], end: Sequence[float]) -> list[str]:
    lines = [f"load average (1, 5, 15 min) at start {start[0]:.2f} {start[1]:.2f} {start[2]:.2f}, at end "
             f"{end[0]:.2f} {end[1]:.2f} {end[2]:.2f}, on {os.cpu_count()} CPUs; medians of the runs", "",
             "| workload | messages (sessions) | path | msg/s | server CPU ms/msg | statements/session |",
             "|---|---|---|---|---|---|"]
    for r in results:
        for p in PATHS:
            m = r["median"][p]
            cpu = m.get("server_cpu_ms_per_message")
            lines.append(f"| {r['workload']} | {r['messages']} ({r['sessions']}) | {p} | {m['messages_per_s']:.1f} | "
                         f"{'n/a' if cpu is None else f'{cpu:.1f}'} | {m['statements_per_session']:.1f} |")
    lines.append("")
    for r in results:
        ratio = r["server_cpu_ratio"]
        lines.append(f"{r['workload']}: current/earlier msg/s {r['throughput_ratio']:.2f}, server CPU per message "
                     f"{'n/a' if ratio is None else f'{ratio:.2f}'}; msg/s per run: "
                     + "; ".join(f"{p} " + ", ".join(f"{x['messages_per_s']:.1f}" for x in r["runs"][p])
                                 for p in PATHS))
    return lines


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    files = workload_files(args, scratch("session-writes"))

    def repeated(graph: MemoryGraph, name: str, path: Path, tag: str) -> dict[str, Any]:
        return measure(graph, name, path, tag, args.repeats)

    result = run_on_scratch(args, MARKER, "bench.session_writes", files, repeated)
    meta = result["meta"]
    print("\n".join(report_lines(result["results"], meta["loadavg_start"], meta["loadavg_end"])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
