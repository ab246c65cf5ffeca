"""Fault injection on memorization: the LLM endpoint down, timing out, dropping connections or answering garbage
mid-video, with seeded trials against the real graph and a scripted OpenAI-compatible server on loopback.

Each trial (seed s):

1. a *clean* video of N clips is ingested (resolve + memorize) with the endpoint healthy;
2. the same clips are re-memorized while the endpoint fails on a seeded random subset of clips (a resubmission
   while the LLM is down): the clean video's memories, entities and votes must not change at all;
3. a *faulty* video (the same perception under another id) is ingested with faults on another seeded subset:
   every faulted clip must end `memorize_failed` (with the perception memories, as configured), no clip,
   entity or memory may be lost or duplicated;
4. the endpoint heals and the failed clips are redone (what `m3graph memorize V --failed` does): the faulty
   video's memories must equal the clean video's, clip by clip, and every clip must be `memorized`.

The perception input is synthetic (seeded clusters written to the cache files) so a trial takes seconds; the
graph, text embedder, memorizer, HTTP client and retry logic are the real ones.

    python -m bench.faults --trials 20 --clips 6 --port 7790     # the full campaign, on its own Neo4j
    (tests/test_faults.py runs two short trials of the same code in the test suite)
"""

from __future__ import annotations

import argparse
import http.server
import json
import logging
import random
import re
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import TypeAdapter

from m3graph.embedding import TextEmbedder, text_embedder
from m3graph.graphdb.clip_state import ClipState
from m3graph.graphdb.store import MemoryGraph
from m3graph.graphdb.types import FaceCluster, FaceObservation, UtteranceObservation, VoiceCluster
from m3graph.ingest.pipeline import (
    ClipWork,
    MemorizeFailedError,
    VideoPlan,
    Window,
    clip_infos,
    memorize_clip,
    resolve_clip,
    save_plan,
)
from m3graph.reasoning.llm.openai_http import OpenAIChatModel
from m3graph.reasoning.memorize import LLMMemorizer
from m3graph.reasoning.perception_memorizer import ClipPerception, Memorization
from m3graph.settings import LLMBackend, LLMEndpoint, Settings

log = logging.getLogger("bench.faults")
# 503; connection closed unanswered; no answer in time; a reply whose text is no memory JSON; a body that is no JSON
FAULTS = ("down", "drop", "stall", "garbage", "broken")
_FACES = TypeAdapter(list[FaceCluster])
_VOICES = TypeAdapter(list[VoiceCluster])
_TAG = re.compile(r"<(face|voice)_(\d+)>")


# ---------------------------------------------------------------------------------------------- the endpoint


class ScriptedChatServer:
    """An OpenAI-compatible chat server on 127.0.0.1 whose behaviour is set per request by `mode`.

    "ok" answers a valid memory JSON naming the entities in the prompt (deterministic for one prompt); the
    fault modes answer HTTP 503, close the connection unanswered, stall past the client's timeout, or answer
    text that is no JSON at all.
    """

    def __init__(self, stall_s: float = 2.0) -> None:
        self.mode = "ok"
        self.stall_s = stall_s
        self.requests: Counter[str] = Counter()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
                mode = server.mode
                server.requests[mode] += 1
                if mode == "drop":
                    self.close_connection = True
                    self.connection.close()
                    return
                if mode == "stall":
                    time.sleep(server.stall_s)
                    self.close_connection = True
                    return
                if mode == "down":
                    self._send(503, {"error": {"message": "model is loading"}})
                    return
                if mode == "broken":
                    self._send(200, None)
                    return
                text = "I cannot help with that <<<" if mode == "garbage" else _memory_reply(body)
                self._send(200, {"id": "x", "object": "chat.completion", "model": body.get("model", "m"),
                                 "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                              "finish_reason": "stop"}],
                                 "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})

            def _send(self, status: int, payload: dict[str, Any] | None) -> None:
                data = json.dumps(payload).encode() if payload is not None else b"<html>502 Bad Gateway</html>"
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> ScriptedChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def endpoint(self, timeout_s: float = 1.0) -> LLMEndpoint:
        return LLMEndpoint(backend=LLMBackend.OPENAI, model="scripted", base_url=self.base_url, timeout_s=timeout_s,
                           max_retries=1, retry_backoff_s=0.01, max_tokens=128)


def _memory_reply(body: dict[str, Any]) -> str:
    text = " ".join(str(part.get("text", "")) if isinstance(part, dict) else str(part)
                    for m in body.get("messages", []) for part in (m["content"] if isinstance(m["content"], list)
                                                                    else [m["content"]]))
    tags = sorted({f"<{k}_{n}>" for k, n in _TAG.findall(text)})
    faces = [t for t in tags if t.startswith("<face")]
    episodic = [f"{t} is in the scene." for t in faces] or ["Nobody is visible."]
    semantic = [f"{faces[0]} seems to enjoy the conversation."] if faces else []
    return json.dumps({"episodic": episodic, "semantic": semantic})


class FaultSwitch:
    """The memorizer as deployed (LLM over HTTP), with the endpoint's mode set per clip for the trial."""

    def __init__(self, inner: LLMMemorizer, server: ScriptedChatServer, modes: dict[int, str]) -> None:
        self.inner, self.server, self.modes = inner, server, modes
        self.name = inner.name

    def memorize(self, clip: ClipPerception) -> Memorization:
        self.server.mode = self.modes.get(clip.clip_index, "ok")
        try:
            return self.inner.memorize(clip)
        finally:
            self.server.mode = "ok"


# ---------------------------------------------------------------------------------------------- synthetic clips


def _unit(dim: int, gen: np.random.Generator) -> np.ndarray:
    v = gen.standard_normal(dim)
    return v / np.linalg.norm(v)


def _near(base: np.ndarray, gen: np.random.Generator, cos: float = 0.98) -> list[float]:
    noise = _unit(len(base), gen)
    noise -= (noise @ base) * base
    noise /= np.linalg.norm(noise)
    return (cos * base + np.sqrt(1 - cos**2) * noise).tolist()


def stage_video(settings: Settings, video_id: str, clips: int, seed: int, people: int = 3) -> VideoPlan:
    """Seeded perception caches for `clips` clips: each clip shows one or two of `people` (and hears them)."""
    gen = np.random.default_rng(seed)
    faces = [_unit(settings.identity.face_dim, gen) for _ in range(people)]
    voices = [_unit(settings.identity.voice_dim, gen) for _ in range(people)]
    for i in range(clips):
        cast = sorted(gen.choice(people, size=int(gen.integers(1, 3)), replace=False).tolist())
        t0 = 30.0 * i
        fcs = [FaceCluster(label=k, observations=[
            FaceObservation(frame_time_s=t0 + 1 + 10 * k + j, bbox=(0, 0, 10, 10), det_score=0.99, quality=25.0 + j,
                            embedding=_near(faces[p], gen)) for j in range(2)]) for k, p in enumerate(cast)]
        vcs = [VoiceCluster(label=k, utterances=[UtteranceObservation(
            start_s=t0 + 2 + 10 * k, end_s=t0 + 4 + 10 * k, text=f"person {p} says line {i}",
            embedding=_near(voices[p], gen))]) for k, p in enumerate(cast)]
        work = ClipWork(settings, video_id, i)
        work.faces.parent.mkdir(parents=True, exist_ok=True)
        work.faces.write_bytes(_FACES.dump_json(fcs))
        work.voices.write_bytes(_VOICES.dump_json(vcs))
    return _plan(settings, video_id, clips)


def _plan(settings: Settings, video_id: str, clips: int) -> VideoPlan:
    """The plan the staged clips belong to, saved like a real one (`m3graph memorize` reads it)."""
    plan = VideoPlan(video_id, [Window(i, 30.0 * i, 30.0 * (i + 1), "/dev/null", 30.0 * i) for i in range(clips)])
    save_plan(settings, plan)
    return plan


def copy_perception(settings: Settings, src: str, dst: str, clips: int) -> VideoPlan:
    for i in range(clips):
        a, b = ClipWork(settings, src, i), ClipWork(settings, dst, i)
        b.faces.parent.mkdir(parents=True, exist_ok=True)
        b.faces.write_bytes(a.faces.read_bytes())
        b.voices.write_bytes(a.voices.read_bytes())
    return _plan(settings, dst, clips)


def ingest(graph: MemoryGraph, embedder: TextEmbedder, memorizer: Any, plan: VideoPlan) -> list[int]:
    """In-process ingestion of staged clips: plan, resolve in order, memorize; returns clips whose model call
    failed (they are memorize_failed; the next clips still go on)."""
    indexes = [w.index for w in plan.windows]
    graph.plan_clips(clip_infos(graph.settings, plan, indexes))
    failed = []
    for i in indexes:
        graph.mark_perceived(plan.video_id, i)
        done = resolve_clip(graph, plan, i)
        try:
            report = memorize_clip(graph, embedder, memorizer, plan, i, done)
        except MemorizeFailedError:
            failed.append(i)
            continue
        if report.memorize_error:
            failed.append(i)
    return failed


# ---------------------------------------------------------------------------------------------- checks


def _rows(graph: MemoryGraph, cypher: str, **params: Any) -> list[dict[str, Any]]:
    with graph.ex.session() as session:
        return [r.data() for r in session.run(cypher, params)]


def video_memories(graph: MemoryGraph, video_id: str) -> list[tuple[int, str, str, int]]:
    """(clip, kind, text, support) of every memory of the video, as one comparable list. A semantic memory
    belongs to the whole video (deduplicated per video, owned by whichever clip wrote it first, which depends
    on the order clips were memorized in), so it is compared by text and support only (clip -1)."""
    return sorted((r["clip"] if r["kind"] == "episodic" else -1, r["kind"], r["text"], r["support"]) for r in _rows(
        graph, "MATCH (m:Memory {video_id: $v}) RETURN m.clip_index AS clip, m.kind AS kind, m.text AS text, "
               "size(m.support_clips) AS support", v=video_id))


def video_snapshot(graph: MemoryGraph, video_id: str) -> dict[str, Any]:
    """What must not change when a re-memorization fails: memories (ids, text, support), entities and votes."""
    return {
        "memories": _rows(graph, "MATCH (m:Memory {video_id: $v}) RETURN m.memory_id AS id, m.text AS text, "
                                 "m.support_clips AS support ORDER BY id", v=video_id),
        "entities": _rows(graph, "MATCH (e) WHERE e:Face OR e:Voice RETURN e.entity_id AS id, "
                                 "e.exemplar_obs AS obs ORDER BY id"),
        "votes": _rows(graph, "MATCH (f:Face)-[r:SAME_AS]->(v:Voice) RETURN f.entity_id AS f, v.entity_id AS v, "
                              "r.evidence AS ev ORDER BY f, v"),
        "clips": _rows(graph, "MATCH (c:Clip {video_id: $v}) RETURN c.clip_index AS i ORDER BY i", v=video_id),
    }


def duplicates(graph: MemoryGraph, video_id: str) -> int:
    """Memories of the video that repeat another's (clip, kind, text): what a double write would leave."""
    rows = _rows(graph, "MATCH (m:Memory {video_id: $v}) RETURN m.clip_index AS c, m.kind AS k, m.text AS t",
                 v=video_id)
    return len(rows) - len({(r["c"], r["k"], r["t"]) for r in rows})


@dataclass
class TrialResult:
    seed: int
    clips: int
    faults: dict[str, int] = field(default_factory=dict)  # fault kind -> clips hit (both phases)
    rememorize_unchanged: bool = False  # phase 2: a memorized video survived a failing re-memorization intact
    failed_marked: bool = False  # phase 3: exactly the faulted clips ended memorize_failed
    clips_lost: int = 0
    duplicate_memories: int = 0
    redo_equal: bool = False  # phase 4: after `--failed`, the faulty video's memories equal the clean run's
    all_memorized: bool = False
    requests: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return (self.rememorize_unchanged and self.failed_marked and self.clips_lost == 0
                and self.duplicate_memories == 0 and self.redo_equal and self.all_memorized)


def _modes(rng: random.Random, clips: int, rate: float) -> dict[int, str]:
    return {i: rng.choice(FAULTS) for i in range(clips) if rng.random() < rate}


def llm_fault_trial(graph: MemoryGraph, seed: int, clips: int = 4, rate: float = 0.5,
                    prefix: str = "fault") -> TrialResult:
    """One seeded trial of the four phases above on videos `<prefix>-<seed>-clean` / `-faulty`."""
    t0 = time.monotonic()
    settings = graph.settings
    embedder = text_embedder(settings)
    rng = random.Random(seed)
    result = TrialResult(seed=seed, clips=clips)
    clean, faulty = f"{prefix}-{seed}-clean", f"{prefix}-{seed}-faulty"
    with ScriptedChatServer(stall_s=1.5) as server:
        memorizer = LLMMemorizer(OpenAIChatModel(server.endpoint(timeout_s=0.5)), settings)
        plan = stage_video(settings, clean, clips, seed)
        assert ingest(graph, embedder, FaultSwitch(memorizer, server, {}), plan) == []
        before = video_snapshot(graph, clean)

        # 2. a resubmission while the endpoint fails on some clips: nothing of the clean video changes
        modes = _modes(rng, clips, rate) or {0: rng.choice(FAULTS)}
        ingest(graph, embedder, FaultSwitch(memorizer, server, modes), plan)
        result.rememorize_unchanged = video_snapshot(graph, clean) == before
        for m in modes.values():
            result.faults[m] = result.faults.get(m, 0) + 1

        # 3. a new video with faults mid-video
        modes = _modes(rng, clips, rate) or {clips - 1: rng.choice(FAULTS)}
        fplan = copy_perception(settings, clean, faulty, clips)
        failed = ingest(graph, embedder, FaultSwitch(memorizer, server, modes), fplan)
        for m in modes.values():
            result.faults[m] = result.faults.get(m, 0) + 1
        states = {p.clip_index: p.state for p in graph.clip_states(faulty)}
        result.failed_marked = (sorted(failed) == sorted(modes)
                                and {i for i, s in states.items() if s == ClipState.MEMORIZE_FAILED} == set(modes))
        result.clips_lost = clips - len(states)
        result.duplicate_memories = duplicates(graph, faulty) + duplicates(graph, clean)

        # 4. the endpoint is back: redo the failed clips, as `m3graph memorize V --failed` does
        for p in graph.clip_states(faulty):
            if p.state == ClipState.MEMORIZE_FAILED:
                memorize_clip(graph, embedder, FaultSwitch(memorizer, server, {}), fplan, p.clip_index)
        result.redo_equal = video_memories(graph, faulty) == video_memories(graph, clean)
        result.all_memorized = all(p.state == ClipState.MEMORIZED for p in graph.clip_states(faulty))
        result.requests = dict(server.requests)
    result.seconds = time.monotonic() - t0
    return result


# ---------------------------------------------------------------------------------------------- worker kills


@dataclass
class KillResult:
    seed: int
    kill_after_s: float
    killed: bool = False  # the worker was still busy when killed (else the trial measured nothing)
    equal: bool = False  # after resubmission: the video's memories equal the clean in-process run's
    all_memorized: bool = False
    entities_added: int = 0  # entities beyond the clean run's (a duplicate person)
    duplicate_memories: int = 0
    recovery_s: float = 0.0  # resubmission to every clip memorized

    @property
    def ok(self) -> bool:
        return self.equal and self.all_memorized and self.entities_added == 0 and self.duplicate_memories == 0


def _entity_count(graph: MemoryGraph) -> int:
    return int(_rows(graph, "MATCH (e) WHERE e:Face OR e:Voice RETURN count(e) AS n")[0]["n"])


def kill_trial(graph: MemoryGraph, source: Path, seed: int, redis_url: str, work: Path, timeout_s: float = 600.0,
               max_kill_s: float = 15.0) -> KillResult:
    """kill -9 of a Celery worker (its whole process group) at a seeded random moment of ingesting `source`,
    a fresh worker, resubmission: the video must end as the clean in-process run of the same perception left
    its twin (memories clip by clip, no new entity, no duplicate). Perception is staged (seeded caches), so the
    worker cuts, resolves and memorizes for real but detects nothing."""
    import os
    import signal

    from bench.perception_celery import _wait_ready, worker
    from m3graph.ingest.pipeline import cut_stage, plan_video
    from m3graph.reasoning.perception_memorizer import PerceptionMemorizer
    from m3graph.tasks.app import configure
    from m3graph.tasks.ingest import plan_source, submit_clips

    rng = random.Random(seed)
    settings = graph.settings.model_copy(update={"tasks": graph.settings.tasks.model_copy(
        update={"redis_url": redis_url})})
    clean, killed = f"kill-{seed}-clean", f"kill-{seed}-killed"
    clips = len(plan_video(settings, source, killed).windows)
    stage_video(settings, clean, clips, seed)
    copy_perception(settings, clean, killed, clips)
    plan_video(settings, source, killed)  # the real plans (the clips are real cuts); the staged caches stay
    clean_plan = plan_video(settings, source, clean)
    for i in range(clips):
        cut_stage(settings, clean_plan, i)  # the twin's clips are cut too: memories describe the clip's scene
    embedder = text_embedder(settings)
    assert ingest(graph, embedder, PerceptionMemorizer(), clean_plan) == []
    entities = _entity_count(graph)
    result = KillResult(seed=seed, kill_after_s=round(rng.uniform(0.5, max_kill_s), 2))
    app = configure(settings)
    env = {"M3GRAPH_LLM__MEMORIZE__BACKEND": "none", "NEO4J_PASSWORD": settings.neo4j_password.get_secret_value()}
    with worker(settings, 2, work / f"worker-{seed}-a.log", env) as proc:
        _wait_ready(app, proc)  # the kill must land in the work, not in the worker's start
        indexes, total = plan_source(settings, source, killed)
        submit_clips(settings, killed, indexes, total)
        time.sleep(result.kill_after_s)
        states = [p.state for p in graph.clip_states(killed)]
        result.killed = proc.poll() is None and any(s != ClipState.MEMORIZED for s in states)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
    t0 = time.monotonic()
    with worker(settings, 2, work / f"worker-{seed}-b.log", env):
        indexes, total = plan_source(settings, source, killed)
        submit_clips(settings, killed, indexes, total)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if all(p.state == ClipState.MEMORIZED for p in graph.clip_states(killed)):
                break
            time.sleep(1.0)
        result.recovery_s = round(time.monotonic() - t0, 1)
        time.sleep(2.0)  # a memorize of the first submission that survived may still write: let it land
    result.all_memorized = all(p.state == ClipState.MEMORIZED for p in graph.clip_states(killed))
    result.equal = video_memories(graph, killed) == video_memories(graph, clean)
    result.entities_added = _entity_count(graph) - entities
    result.duplicate_memories = duplicates(graph, killed)
    return result


# ---------------------------------------------------------------------------------------------- campaign


@contextmanager
def _graph(port: int, work: Path) -> Iterator[MemoryGraph]:
    from bench.perception_celery import neo4j_server

    with neo4j_server(work / "neo4j", port) as settings:
        settings = settings.model_copy(update={"data_dir": work / "data"})
        with MemoryGraph.connect(settings) as graph:
            yield graph


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--clips", type=int, default=6)
    parser.add_argument("--rate", type=float, default=0.5, help="chance that a clip's model call fails")
    parser.add_argument("--seed", type=int, default=0, help="first seed; trial k uses seed + k")
    parser.add_argument("--port", type=int, default=7790, help="bolt port of the campaign's own Neo4j")
    parser.add_argument("--work", type=Path, default=Path(".m3graph/bench-faults"))
    parser.add_argument("--out", type=Path, default=None, help="write the per-trial results as JSON")
    parser.add_argument("--kill-trials", type=int, default=0, help="also kill -9 a Celery worker this many times")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    results = []
    with _graph(args.port, args.work) as graph:
        for k in range(args.trials):
            r = llm_fault_trial(graph, args.seed + k, args.clips, args.rate)
            results.append(r)
            print(f"trial {k + 1}/{args.trials} seed {r.seed}: {'ok' if r.ok else 'FAILED'} faults {r.faults} "
                  f"({r.seconds:.1f} s)", flush=True)
    kills = []
    if args.kill_trials:
        from bench.perception_celery import redis_server
        from m3graph.ingest.testmedia import build_test_media

        source = build_test_media(Path(".m3graph/testmedia")).path("tm-a")
        with _graph(args.port, args.work) as graph, redis_server(args.work / "redis") as redis_url:
            for k in range(args.kill_trials):
                kr = kill_trial(graph, source, args.seed + k, redis_url, args.work)
                kills.append(kr)
                print(f"kill {k + 1}/{args.kill_trials} seed {kr.seed} after {kr.kill_after_s} s: "
                      f"{'ok' if kr.ok else 'FAILED'} (killed mid-work: {kr.killed}, recovery {kr.recovery_s} s)",
                      flush=True)
    faults = Counter[str]()
    for r in results:
        faults.update(r.faults)
    summary = {"trials": len(results), "passed": sum(r.ok for r in results), "clips_per_video": args.clips,
               "faulted_clips": dict(faults), "clips_lost": sum(r.clips_lost for r in results),
               "duplicate_memories": sum(r.duplicate_memories for r in results),
               "median_trial_s": float(np.median([r.seconds for r in results])) if results else 0.0,
               "kill_trials": len(kills), "kill_passed": sum(k.ok for k in kills),
               "killed_mid_work": sum(k.killed for k in kills),
               "median_recovery_s": float(np.median([k.recovery_s for k in kills])) if kills else None}
    print(json.dumps(summary, indent=2))
    if args.out is not None:
        args.out.write_text(json.dumps({"summary": summary, "trials": [r.__dict__ for r in results],
                                        "kills": [k.__dict__ for k in kills]}, indent=2))
    ok = summary["passed"] == summary["trials"] and summary["kill_passed"] == summary["kill_trials"]
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
