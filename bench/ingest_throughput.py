"""Chat ingestion throughput by stage: the earlier path, the current path and the embedder alone, on the same texts.

Issue 40 ("ingestion that keeps up"): `m3graph ingest-chat` of a long user-assistant chat ran at about one message
a second. This measures, in one run and on one server, for each workload:

* (a) the earlier path: every vector first (`embed_ahead=False`), each text run alone on one thread in one loop,
  no text deduplicated (a copy of the embedder's loop before issue 40, `SerialEmbedder` below);
* (b) the current path: `ingest_conversation` as `m3graph ingest-chat` runs it (the configured embedder spreading
  a call over every core, one session embedded ahead of the one being written);
* the embedder alone on the very texts ingestion embedded: the earlier loop and the current embedder.

Stages: parse (the file read and validated, `load_conversation`), split (tags escaped, long turns cut:
`safe_conversation`), plan, embed (time inside the embedder; in (b) it overlaps the writes), wait (the writer
waiting for vectors), write (the session transactions), and within write the Cypher statements by family
(memories, slots = `facts/*`, characters, search text = `clip/refresh_search_text`, session bookkeeping) and what
is left (commit, with the server's index upkeep, and the client's rendering). The vectors of (b)'s embedder are
compared with each text embedded alone by the earlier loop, and the vectors (a) and (b) stored are compared.

Workloads: `beam`: the first `--messages` messages of a BEAM chat (../shared/data/beam, replies of thousands of
characters; one session per dated batch); `long`: BEAM messages of at least 3,000 characters, `--long-turns` of
them in sessions of 20; `chat`: the first `--chat-sessions` sessions of a LoCoMo dev conversation
(../shared/data/conversations, chat-length turns). Each is written as a LoCoMo-format file and ingested from it.

    python -m bench.ingest_throughput --out bench/results/ingest-throughput.json

It starts its own Neo4j (a home it creates and deletes) unless given `--uri` (a scratch database: the sources are
written there and left). The machine's load average is reported beside the figures: on a shared machine compare
the ratios of one run, not figures across runs. `--smoke`: a few messages of each workload.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from bench.scratch_home import SERVER_PID, run_on_scratch
from bench.smoke import (
    CONVERSATIONS,
    SHARED,
    add_smoke,
    add_uri,
    apply_smoke,
    conversation_slice,
    scratch,
)
from m3graph.embedding import text_embedder
from m3graph.embedding_onnx import DIM, BgeEmbedder
from m3graph.graphdb import executor as executor_module
from m3graph.graphdb.store import MemoryGraph
from m3graph.graphdb.tags import neutral_text
from m3graph.ingest.chat.formats import load_conversation
from m3graph.ingest.chat.ingest import ingest_conversation
from m3graph.settings import BGE_TEXT_MODEL

log = logging.getLogger("bench.ingest_throughput")
MARKER = ".m3graph-ingest-bench-home"
BEAM = SHARED / "beam"
LONG_CHARS = 3000
FAMILIES = (("slots", "facts/"), ("characters", "characters/"), ("search text", "clip/"), ("memories", "memory/"),
            ("session", ""))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--messages", type=int, default=194, help="beam: the chat's first N messages")
    p.add_argument("--long-turns", type=int, default=60, help=f"long: BEAM messages of ≥{LONG_CHARS} characters")
    p.add_argument("--chat-sessions", type=int, default=8, help="chat: the LoCoMo conversation's first N sessions")
    p.add_argument("--chat", default="500K-1", help="the BEAM chat of `beam` (a folder of ../shared/data/beam)")
    p.add_argument("--workloads", default="chat,beam,long", help="comma-separated: chat, beam, long")
    p.add_argument("--home", type=Path, default=Path("/tmp/m3graph-ingest-bench"), help="server home (deleted)")
    p.add_argument("--port", type=int, default=7699)
    p.add_argument("--heap-mb", type=int, default=2048)
    p.add_argument("--pagecache-mb", type=int, default=1024)
    p.add_argument("--out", type=Path, help="write the results here as JSON")
    add_uri(p)
    add_smoke(p, "6 BEAM messages, 4 long turns, one LoCoMo session")
    return apply_smoke(p.parse_args(argv), messages=6, long_turns=4, chat_sessions=1, heap_mb=1024,
                       pagecache_mb=256)


class SerialEmbedder:
    """The bge embedder's loop before issue 40: every text, repeats included, run alone on the calling thread."""

    dim = DIM

    def __init__(self, inner: BgeEmbedder) -> None:
        self.inner = inner

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        inner = self.inner
        inner.load()
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for i, enc in enumerate(inner._tokenizer.encode_batch([neutral_text(t) for t in texts])):
            feeds = {"input_ids": np.asarray([enc.ids], dtype=np.int64),
                     "attention_mask": np.asarray([enc.attention_mask], dtype=np.int64),
                     "token_type_ids": np.asarray([enc.type_ids], dtype=np.int64)}
            cls = inner._session.run(None, feeds)[0][0, 0, :]
            out[i] = cls / max(float(np.linalg.norm(cls)), 1e-12)
        return out


class Recording:
    """An embedder that records the texts it is asked for (the texts ingestion embeds)."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.dim = inner, inner.dim
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts += texts
        return np.asarray(self.inner.embed(texts))


def _when(date: datetime) -> str:
    """A date as LoCoMo writes it ("1:56 pm on 8 May, 2023")."""
    return f"{date.hour % 12 or 12}:{date.minute:02d} {'am' if date.hour < 12 else 'pm'} on {date.day} " \
           f"{date:%B}, {date.year}"


def _locomo_file(path: Path, sessions: list[tuple[datetime, list[tuple[str, str, str]]]]) -> Path:
    """(date, [(turn id, speaker, text)]) sessions as a LoCoMo file (the format `ingest-chat` reads)."""
    data: dict[str, Any] = {"speaker_a": "User", "speaker_b": "Assistant"}
    for n, (when, turns) in enumerate(sessions, start=1):
        data[f"session_{n}_date_time"] = _when(when)
        data[f"session_{n}"] = [{"speaker": who, "dia_id": tid, "text": text} for tid, who, text in turns]
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def workload_files(args: argparse.Namespace, out_dir: Path) -> dict[str, Path]:
    """The workloads' files, written under `out_dir`."""
    from m3graph.devkit.eval import beam

    files: dict[str, Path] = {}
    wanted = set(args.workloads.split(","))
    if "chat" in wanted:
        conversation_slice(out_dir / "chat", sessions=args.chat_sessions, questions=0, files=1, source=CONVERSATIONS)
        files["chat"] = next((out_dir / "chat").glob("*.json"))
    if "beam" in wanted:
        chat = beam.load_chat(BEAM / args.chat)
        files["beam"] = _locomo_file(out_dir / "beam.json", [
            (b.when, [(f"m{m.id}", beam.SPEAKERS[m.role], m.text) for m in b.messages])
            for b in chat.sliced(args.messages)])
    if "long" in wanted:
        picked: list[tuple[datetime, tuple[str, str, str]]] = []
        for folder in sorted(p for p in BEAM.iterdir() if (p / "chat.json").is_file()):
            chat = beam.load_chat(folder)
            picked += [(b.when, (f"{folder.name}-m{m.id}", beam.SPEAKERS[m.role], m.text))
                       for b in chat.batches for m in b.messages if len(m.text) >= LONG_CHARS]
            if len(picked) >= args.long_turns:
                break
        picked = picked[:args.long_turns]
        files["long"] = _locomo_file(out_dir / "long.json", [
            (picked[i][0], [t for _, t in picked[i:i + 20]]) for i in range(0, len(picked), 20)])
    return files


class TxTimer:
    """Times each statement run inside a transaction (`Tx.run`: the session writes), by statement name."""

    def __init__(self) -> None:
        self.samples: dict[str, list[float]] = {}
        self._orig: Any = None

    def __enter__(self) -> TxTimer:
        self._orig = orig = executor_module.Tx.run
        samples = self.samples

        def run(tx: Any, name: str, /, **params: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return orig(tx, name, **params)
            finally:
                samples.setdefault(name, []).append(time.perf_counter() - t0)

        executor_module.Tx.run = run  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        executor_module.Tx.run = self._orig  # type: ignore[method-assign]


def _families(samples: dict[str, list[float]]) -> dict[str, float]:
    out = dict.fromkeys([name for name, _ in FAMILIES], 0.0)
    for statement, seconds in samples.items():
        family = next(name for name, prefix in FAMILIES if statement.startswith(prefix))
        out[family] += sum(seconds)
    return out


def server_cpu_s(pid: int | None) -> float | None:
    """CPU seconds the local server's process has used (Linux /proc), or None (a `--uri` server, no /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def ingest_once(graph: MemoryGraph, path: Path, source: str, embedder: Any, ahead: bool) -> dict[str, Any]:
    """One timed ingestion of `path` under `source`, by stage."""
    times: dict[str, float] = {}
    s0 = server_cpu_s(SERVER_PID[0])
    t0, c0 = time.perf_counter(), time.process_time()
    conv, _ = load_conversation(path, "locomo", source)
    times["parse"] = time.perf_counter() - t0
    with TxTimer() as statements:
        summary = ingest_conversation(graph, conv, embedder, embed_ahead=ahead, times=times)
    total, cpu = time.perf_counter() - t0, time.process_time() - c0
    s1 = server_cpu_s(SERVER_PID[0])
    if not summary.sessions_written:
        raise RuntimeError(f"{source}: nothing was written (the source exists: use a scratch database)")
    families = _families(statements.samples)
    write_statements = sum(families.values())
    families["commit and rendering"] = max(0.0, times.get("write", 0.0) - write_statements)
    return {"messages": summary.turns, "seconds": total, "messages_per_s": summary.turns / total, "client_cpu_s": cpu,
            "server_cpu_s": None if s0 is None or s1 is None else s1 - s0,
            "stages_s": {k: round(v, 3) for k, v in times.items()},
            "write_s": {k: round(v, 3) for k, v in families.items()}}


def embed_alone(embedder: Any, texts: list[str]) -> tuple[np.ndarray, float, float]:
    """The vectors, wall seconds and CPU seconds (every thread of this process) of one call."""
    t0, c0 = time.perf_counter(), time.process_time()
    vectors = np.asarray(embedder.embed(texts))
    return vectors, time.perf_counter() - t0, time.process_time() - c0


def unpadded_batch(embedder: BgeEmbedder, texts: list[str], alone: np.ndarray) -> dict[str, Any] | None:
    """Why texts are not batched: the largest group (at most 32) of texts of one token count, run as ONE batch
    without padding, against each embedded alone (`alone`, rows of `texts`); None when no two texts share a length."""
    embedder.load()
    groups: dict[int, list[int]] = {}
    for i, enc in enumerate(embedder._tokenizer.encode_batch([neutral_text(t) for t in texts])):
        if texts[i] not in {texts[j] for j in groups.get(len(enc.ids), [])}:
            groups.setdefault(len(enc.ids), []).append(i)
    group = max(groups.values(), key=len, default=[])[:32]
    if len(group) < 2:
        return None
    encs = embedder._tokenizer.encode_batch([neutral_text(texts[i]) for i in group])
    feeds = {name: np.asarray([getattr(e, attr) for e in encs], dtype=np.int64) for name, attr in
             (("input_ids", "ids"), ("attention_mask", "attention_mask"), ("token_type_ids", "type_ids"))}
    cls = embedder._session.run(None, feeds)[0][:, 0, :]
    cls /= np.linalg.norm(cls, axis=1, keepdims=True)
    return {"texts": len(group), "tokens": len(encs[0].ids),
            "min_cosine": float(np.min(np.sum(cls * alone[group], axis=1))),
            "max_abs_diff": float(np.max(np.abs(cls - alone[group])))}


def stored_vectors(graph: MemoryGraph, source: str) -> dict[str, np.ndarray]:
    with graph.ex.session() as session:
        rows = session.run("MATCH (m:Memory {video_id: $v}) WHERE m.kind = 'episodic' "
                           "RETURN m.source_ids[0] AS turn, m.embedding AS e", v=source).data()
    return {r["turn"]: np.asarray(r["e"], dtype=np.float32) for r in rows}


def measure(graph: MemoryGraph, name: str, path: Path, tag: str) -> dict[str, Any]:
    """(a), (b) and the embedder alone on one workload (see the module docstring)."""
    current = text_embedder(graph.settings)
    if not isinstance(current, BgeEmbedder):
        raise SystemExit(f"this benchmark measures {BGE_TEXT_MODEL}, not {graph.settings.text_model.model}")
    serial = SerialEmbedder(BgeEmbedder(graph.settings.text_model, workers=1))
    recording = Recording(serial)
    before = ingest_once(graph, path, f"ingest-bench-{name}-a-{tag}", recording, ahead=False)
    now = ingest_once(graph, path, f"ingest-bench-{name}-b-{tag}", current, ahead=True)
    texts = recording.texts
    old_vectors, old_s, old_cpu = embed_alone(serial, texts)
    new_vectors, new_s, new_cpu = embed_alone(current, texts)
    cosine = np.sum(old_vectors * new_vectors, axis=1)
    stored_a = stored_vectors(graph, f"ingest-bench-{name}-a-{tag}")
    stored_b = stored_vectors(graph, f"ingest-bench-{name}-b-{tag}")
    n = before["messages"]
    return {
        "workload": name, "messages": n, "texts_embedded": len(texts), "distinct_texts": len(set(texts)),
        "chars_mean": round(float(np.mean([len(t) for t in texts])), 1) if texts else 0.0,
        "a_earlier_path": before, "b_current_path": now,
        "embedder_alone": {"earlier_s": old_s, "earlier_messages_per_s": n / old_s, "current_s": new_s,
                           "current_messages_per_s": n / new_s, "earlier_cpu_ms_per_message": 1000 * old_cpu / n,
                           "current_cpu_ms_per_message": 1000 * new_cpu / n, "workers": current.workers},
        "ratio_b_over_a": before["seconds"] / now["seconds"],
        "embedder_ratio": old_s / new_s,
        "b_over_embedder_alone": now["seconds"] / new_s,
        "vectors": {"bit_equal": bool(np.array_equal(old_vectors, new_vectors)),
                    "max_abs_diff": float(np.max(np.abs(old_vectors - new_vectors))) if texts else 0.0,
                    "min_cosine": float(np.min(cosine)) if texts else 1.0,
                    "stored_equal": stored_a.keys() == stored_b.keys() and all(
                        np.array_equal(stored_a[k], stored_b[k]) for k in stored_a),
                    "unpadded_batch": unpadded_batch(current, texts, old_vectors)},
    }


def warm_up(graph: MemoryGraph, path: Path, source: str, turns: int = 4) -> None:
    """The workload's first `turns` turns in two sessions, through both paths, untimed: the model is loaded and
    every statement the workload runs (slots, characters...) has its plan, so neither timed path pays for that."""
    conv, _ = load_conversation(path, "locomo", source)
    first = conv.sessions[0]
    half = max(1, min(turns, len(first.turns)) // 2)
    sessions = (replace(first, turns=first.turns[:half]), replace(first, index=1, key="warm-2",
                                                                  turns=first.turns[half:2 * half]))
    embedder = text_embedder(graph.settings)
    for ahead in (False, True):
        cut = replace(conv, source_id=f"{source}-{ahead}", sessions=tuple(s for s in sessions if s.turns))
        ingest_conversation(graph, cut, embedder, embed_ahead=ahead)


def _seconds(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f} s"


def report_lines(results: list[dict[str, Any]], start: Sequence[float], end: Sequence[float]) -> list[str]:
    lines = [f"load average (1, 5, 15 min) at start {start[0]:.2f} {start[1]:.2f} {start[2]:.2f}, at end "
             f"{end[0]:.2f} {end[1]:.2f} {end[2]:.2f}, on {os.cpu_count()} CPUs", ""]
    lines.append("| workload | messages | chars/msg | (a) msg/s | (b) msg/s | b/a | embedder alone earlier / current "
                 "msg/s | (b) / embedder alone | vectors equal |")
    lines.append("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        a, b, e = r["a_earlier_path"], r["b_current_path"], r["embedder_alone"]
        lines.append(f"| {r['workload']} | {r['messages']} | {r['chars_mean']:.0f} | {a['messages_per_s']:.2f} | "
                     f"{b['messages_per_s']:.2f} | {r['ratio_b_over_a']:.2f} | {e['earlier_messages_per_s']:.2f} / "
                     f"{e['current_messages_per_s']:.2f} | {r['b_over_embedder_alone']:.2f} | "
                     f"{r['vectors']['bit_equal']} (max diff {r['vectors']['max_abs_diff']:.1e}, stored "
                     f"{r['vectors']['stored_equal']}) |")
    lines.append("")
    for r in results:
        e = r["embedder_alone"]
        lines.append(f"{r['workload']}: embedder CPU per message earlier {e['earlier_cpu_ms_per_message']:.0f} ms, "
                     f"current {e['current_cpu_ms_per_message']:.0f} ms over {e['workers']} threads; ingestion "
                     f"client CPU (a) {r['a_earlier_path']['client_cpu_s']:.1f} s, (b) "
                     f"{r['b_current_path']['client_cpu_s']:.1f} s, server CPU (a) "
                     f"{_seconds(r['a_earlier_path']['server_cpu_s'])}, (b) "
                     f"{_seconds(r['b_current_path']['server_cpu_s'])}")
        if batch := r["vectors"]["unpadded_batch"]:
            lines.append(f"{r['workload']}: {batch['texts']} texts of {batch['tokens']} tokens as one batch without "
                         f"padding: min cosine {batch['min_cosine']:.4f} to each alone (max diff "
                         f"{batch['max_abs_diff']:.1e}): not used")
    for r in results:
        for label in ("a_earlier_path", "b_current_path"):
            p = r[label]
            stages = ", ".join(f"{k} {v:.2f}" for k, v in p["stages_s"].items())
            write = ", ".join(f"{k} {v:.2f}" for k, v in p["write_s"].items())
            lines.append(f"{r['workload']} {label[0]}: stages s: {stages}; write s: {write}")
    return lines


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    files = workload_files(args, scratch("ingest"))

    def warmed(graph: MemoryGraph, name: str, path: Path, tag: str) -> dict[str, Any]:
        warm_up(graph, path, f"ingest-bench-warm-{name}-{tag}")
        return measure(graph, name, path, tag)

    result = run_on_scratch(args, MARKER, "bench.ingest_throughput", files, warmed)
    meta = result["meta"]
    print("\n".join(report_lines(result["results"], meta["loadavg_start"], meta["loadavg_end"])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
