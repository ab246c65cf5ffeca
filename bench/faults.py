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
    (tests/graph/test_faults.py runs two short trials of the same code in the test suite)

The other trial kinds, each with its own flag (all on the campaign's own Neo4j and Redis, loopback only):

* `--kill-trials N`: kill -9 of a real `m3graph worker` inside a seeded step (cut, faces, voices, resolve,
  memorize), a fresh worker, resubmission (`kill_trial`);
* `--neo4j-kill-trials N`: kill -9 of the Neo4j launcher inside resolve and inside memorize (N each), restart,
  resubmission; the whole graph must equal a clean run's (`neo4j_kill_trial`);
* `--redis-restart-trials N`: Redis killed and restarted under a real worker mid-ingest (`redis_restart_trial`).
"""

from __future__ import annotations

import argparse
import contextlib
import http.server
import json
import logging
import os
import random
import re
import shutil
import signal
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from pydantic import TypeAdapter

from bench.smoke import add_smoke, apply_smoke
from m3graph.embedding import TextEmbedder, text_embedder
from m3graph.graphdb.clip_state import ClipState
from m3graph.graphdb.executor import Executor, Tx
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
from m3graph.localserver.server import LocalNeo4j
from m3graph.reasoning.llm.openai_http import OpenAIChatModel
from m3graph.reasoning.memorize import LLMMemorizer
from m3graph.reasoning.perception_memorizer import ClipPerception, Memorization
from m3graph.settings import LLMBackend, LLMEndpoint, Settings

log = logging.getLogger("bench.faults")
T = TypeVar("T")
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
        self.hook: Callable[[], None] | None = None  # mode "hook": runs before an "ok" answer (a kill mid-call)
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
                if mode == "hook" and server.hook is not None:
                    server.hook()  # e.g. kill -9 the graph database while this clip's model call is in flight
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


def stage_video(settings: Settings, source_id: str, clips: int, seed: int, people: int = 3) -> VideoPlan:
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
        work = ClipWork(settings, source_id, i)
        work.faces.parent.mkdir(parents=True, exist_ok=True)
        work.faces.write_bytes(_FACES.dump_json(fcs))
        work.voices.write_bytes(_VOICES.dump_json(vcs))
    return _plan(settings, source_id, clips)


def _plan(settings: Settings, source_id: str, clips: int) -> VideoPlan:
    """The plan the staged clips belong to, saved like a real one (`m3graph memorize` reads it)."""
    plan = VideoPlan(source_id, [Window(i, 30.0 * i, 30.0 * (i + 1), "/dev/null", 30.0 * i) for i in range(clips)])
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
        graph.mark_perceived(plan.source_id, i)
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


def video_memories(graph: MemoryGraph, source_id: str) -> list[tuple[int, str, str, int]]:
    """(clip, kind, text, support) of every memory of the video, as one comparable list. A semantic memory
    belongs to the whole video (deduplicated per video, owned by whichever clip wrote it first, which depends
    on the order clips were memorized in), so it is compared by text and support only (clip -1)."""
    return sorted((r["clip"] if r["kind"] == "episodic" else -1, r["kind"], r["text"], r["support"]) for r in _rows(
        graph, "MATCH (m:Memory {video_id: $v}) RETURN m.clip_index AS clip, m.kind AS kind, m.text AS text, "
               "size(m.support_clips) AS support", v=source_id))


def video_snapshot(graph: MemoryGraph, source_id: str) -> dict[str, Any]:
    """What must not change when a re-memorization fails: memories (ids, text, support), entities and votes."""
    return {
        "memories": _rows(graph, "MATCH (m:Memory {video_id: $v}) RETURN m.memory_id AS id, m.text AS text, "
                                 "m.support_clips AS support ORDER BY id", v=source_id),
        "entities": _rows(graph, "MATCH (e) WHERE e:Face OR e:Voice RETURN e.entity_id AS id, "
                                 "e.exemplar_obs AS obs ORDER BY id"),
        "votes": _rows(graph, "MATCH (f:Face)-[r:SAME_AS]->(v:Voice) RETURN f.entity_id AS f, v.entity_id AS v, "
                              "r.evidence AS ev ORDER BY f, v"),
        "clips": _rows(graph, "MATCH (c:Clip {video_id: $v}) RETURN c.clip_index AS i ORDER BY i", v=source_id),
    }


def duplicates(graph: MemoryGraph, source_id: str) -> int:
    """Memories of the video that repeat another's (clip, kind, text): what a double write would leave."""
    rows = _rows(graph, "MATCH (m:Memory {video_id: $v}) RETURN m.clip_index AS c, m.kind AS k, m.text AS t",
                 v=source_id)
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


# ---------------------------------------------------------------------------------------------- graph dumps

_DUMP_NODES = ("MATCH (x) WHERE NOT x:Migration AND NOT x:EmbeddingModel AND NOT x:M3GraphTestSuite "
               "RETURN elementId(x) AS id, labels(x) AS labels, properties(x) AS props")
_DUMP_RELS = ("MATCH (a)-[r]->(b) WHERE NOT a:M3GraphTestSuite AND NOT b:M3GraphTestSuite "
              "RETURN elementId(a) AS a, type(r) AS type, properties(r) AS props, elementId(b) AS b")
# The nodes that belong to one video: its Video, clips and memories, and the observations made in its clips.
_VIDEO_NODES = ("MATCH (x) WHERE ((x:Video OR x:Clip OR x:Memory) AND x.video_id = $v) "
                "OR ((x:FaceObs OR x:Utterance) AND EXISTS { (x)-[:IN_CLIP]->(:Clip {video_id: $v}) }) "
                "RETURN elementId(x) AS id, labels(x) AS labels, properties(x) AS props")
_VIDEO_RELS = ("MATCH (a)-[r]->(b) WHERE elementId(a) IN $ids OR elementId(b) IN $ids "
               "RETURN elementId(a) AS a, type(r) AS type, properties(r) AS props, elementId(b) AS b, "
               "labels(a) AS la, properties(a) AS pa, labels(b) AS lb, properties(b) AS pb")
_ORPHANS = {  # what a half-written step would leave behind (a subset of tests/helpers/graph.ORPHAN_CHECKS)
    "memory without one IN_CLIP": "MATCH (m:Memory) WHERE COUNT { (m)-[:IN_CLIP]->(:Clip) } <> 1 RETURN count(m) AS n",
    "memory supported by a missing clip": "MATCH (m:Memory) UNWIND m.support_clips AS k WITH m, k "
                                          "WHERE NOT EXISTS { MATCH (:Clip {clip_key: k}) } RETURN count(m) AS n",
    "observation without entity": "MATCH (o) WHERE (o:FaceObs OR o:Utterance) AND NOT (o)-[:OF]->() "
                                  "RETURN count(o) AS n",
    "observation without clip": "MATCH (o) WHERE (o:FaceObs OR o:Utterance) AND NOT (o)-[:IN_CLIP]->(:Clip) "
                                "RETURN count(o) AS n",
    "entity without evidence": "MATCH (e) WHERE (e:Face OR e:Voice) AND NOT (e)<-[:OF]-() RETURN count(e) AS n",
    "clip without video": "MATCH (c:Clip) WHERE NOT (c)-[:OF]->(:Video) RETURN count(c) AS n",
}


def _plain(props: dict[str, Any]) -> str:
    """Properties as canonical text without timestamps (`*_at`, temporal values): they differ between runs."""
    kept = {k: v for k, v in props.items() if not k.endswith("_at") and not hasattr(v, "iso_format")}
    return repr(sorted((k, repr(v)) for k, v in kept.items()))


def canonical_dump(graph: MemoryGraph) -> list[str]:
    """The whole graph as sorted text, by the rule of tests/helpers/graph.py canonical_dump (bench cannot import the
    tests): two runs on an emptied database are equal when their dumps are (node ids replaced by content)."""
    nodes = {r["id"]: f"{sorted(r['labels'])} {_plain(r['props'])}" for r in _rows(graph, _DUMP_NODES)}
    rels = [f"({nodes.get(r['a'], '?')})-[{r['type']} {_plain(r['props'])}]->({nodes.get(r['b'], '?')})"
            for r in _rows(graph, _DUMP_RELS)]
    return sorted(nodes.values()) + sorted(rels)


def _outside(labels: list[str], props: dict[str, Any]) -> str:
    """A node outside the video (an entity, a character), named by its own ids only: its other properties
    (exemplars, first/last video) also carry what other videos, the twin among them, added."""
    ids = sorted((k, v) for k, v in props.items() if k.endswith("_id") and not k.endswith("video_id"))
    return f"{sorted(labels)} {ids}"


def video_dump(graph: MemoryGraph, source_id: str) -> list[str]:
    """The canonical dump of one video's subgraph with its id replaced by `<V>`: a video ingested after its
    twin (the same perception under another id, on the same graph) must dump exactly as the twin does."""
    rows = _rows(graph, _VIDEO_NODES, v=source_id)
    nodes = {r["id"]: f"{sorted(r['labels'])} {_plain(r['props'])}" for r in rows}
    rels = []
    for r in _rows(graph, _VIDEO_RELS, ids=list(nodes)):
        a = nodes.get(r["a"]) or _outside(r["la"], r["pa"])
        b = nodes.get(r["b"]) or _outside(r["lb"], r["pb"])
        rels.append(f"({a})-[{r['type']} {_plain(r['props'])}]->({b})")
    return sorted(text.replace(source_id, "<V>") for text in [*nodes.values(), *rels])


def orphans(graph: MemoryGraph) -> dict[str, int]:
    """Structural violations a half-written step could leave (all zero on a sound graph)."""
    found = {name: int(_rows(graph, cypher)[0]["n"]) for name, cypher in _ORPHANS.items()}
    return {k: v for k, v in found.items() if v}


def wipe_campaign_graph(graph: MemoryGraph) -> None:
    """Empties the campaign's OWN database (started by this module under --work) but for its migrations, so
    a clean run and a faulted run of one video compare as whole graphs. Never call it on anyone else's."""
    with graph.ex.session() as session:
        session.run("MATCH (x) WHERE NOT x:Migration AND NOT x:M3GraphTestSuite DETACH DELETE x").consume()


def _entity_count(graph: MemoryGraph) -> int:
    return int(_rows(graph, "MATCH (e) WHERE e:Face OR e:Voice RETURN count(e) AS n")[0]["n"])


# ---------------------------------------------------------------------------------------------- Neo4j kills


class KillHook:
    """Fires `action` once inside the `nth` write transaction labelled `label` (1-based), just before its
    statement number `at` (0-based), or just before its commit when it has fewer statements: the kill lands
    inside the step's transaction, with part of its writes sent and none committed."""

    def __init__(self, label: str, nth: int, at: int, action: Callable[[], None]) -> None:
        self.label, self.nth, self.at, self.action = label, nth, at, action
        self.calls = 0
        self.fired_at: int | None = None  # the statement the kill preceded (== statements: before commit)
        self.statements = 0

    def fire(self, statement: int) -> None:
        if self.fired_at is None:
            self.fired_at = statement
            self.action()


class _HookTx(Tx):
    def __init__(self, tx: Tx, hook: KillHook) -> None:
        super().__init__(tx._tx, tx._timeout)
        self.hook, self.count = hook, 0

    def run(self, name: str, /, **params: Any) -> list[dict[str, Any]]:
        if self.count == self.hook.at:
            self.hook.fire(self.count)
        self.count += 1
        return super().run(name, **params)


class HookedExecutor(Executor):
    """The store's executor with a `KillHook` in one of its write transactions (the driver replays a failed
    transaction function: the hook fires only on the first attempt)."""

    def __init__(self, ex: Executor, hook: KillHook) -> None:
        super().__init__(ex.driver, ex.database, ex.timeout_s)
        self.hook = hook

    def write_tx(self, work: Callable[[Tx], T], label: str = "write_tx") -> T:
        hook = self.hook
        if label != hook.label:
            return super().write_tx(work, label)
        hook.calls += 1
        if hook.calls != hook.nth:
            return super().write_tx(work, label)

        def hooked(tx: Tx) -> T:
            counting = _HookTx(tx, hook)
            out = work(counting)
            hook.statements = max(hook.statements, counting.count)
            hook.fire(counting.count)  # fewer statements than `at`: before the commit
            return out

        return super().write_tx(hooked, label)


def kill_launcher(local: LocalNeo4j) -> int:
    """kill -9 of the server's launcher JVM (the whole database process), waiting until it is gone."""
    pid = local.status().pid
    if pid is None:
        raise RuntimeError(f"no Neo4j runs for {local.home}")
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)  # reap it when this process started it (a zombie still shows in /proc)
        time.sleep(0.02)
    return pid


@dataclass
class Neo4jKillResult:
    seed: int
    step: str  # "resolve" or "memorize"
    clip: int  # the clip whose step was hit
    point: str  # where: "tx@k/n" (before statement k of n; k == n: before the commit) or "llm" (model call)
    restart: str  # "immediate" (the ingester's driver still retrying) or "after-give-up"
    killed: bool = False
    first_run: str = ""  # how the interrupted ingestion ended: "completed" (driver retries) or its error
    recovered_on_start: bool | None = None  # Neo4j ran crash recovery when restarted
    restart_s: float = 0.0
    resubmit_s: float = 0.0
    all_memorized: bool = False
    equal: bool = False  # canonical dump equal to the clean run's
    diff: list[str] = field(default_factory=list)  # a few lines of the difference, when not equal
    entities_added: int = 0
    duplicate_memories: int = 0
    orphans: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0  # the whole trial (clean reference, faulted run, restart, resubmission, checks)

    @property
    def recovery_s(self) -> float:
        """Restart plus resubmission to every clip memorized."""
        return round(self.restart_s + self.resubmit_s, 1)

    @property
    def ok(self) -> bool:
        return (self.killed and self.all_memorized and self.equal and self.entities_added == 0
                and self.duplicate_memories == 0 and not self.orphans)


def _short_retry_graph(graph: MemoryGraph, retry_s: float) -> MemoryGraph:
    """A second connection whose driver gives up on a dead server after `retry_s` (default driver: 30 s)."""
    import neo4j

    s = graph.settings
    driver = neo4j.GraphDatabase.driver(s.bolt_uri, auth=(s.neo4j_user, s.neo4j_password.get_secret_value()),
                                        max_transaction_retry_time=retry_s, connection_timeout=2.0,
                                        notifications_min_severity="OFF")
    return MemoryGraph(Executor(driver, s.neo4j_database, s.query_timeout_s), s)


def _kill_point(rng: random.Random, step: str, clips: int) -> tuple[int, str]:
    """(clip, where): the seeded clip whose step is hit, and whether in the step's transaction ("tx") or, for
    memorize, in its model call ("llm")."""
    clip = rng.randrange(clips)
    return clip, "llm" if step == "memorize" and rng.random() < 0.4 else "tx"


def _clean_reference(graph: MemoryGraph, reset: Callable[[], None], memorizer: Any, embedder: TextEmbedder,
                     plan: VideoPlan, census: KillHook) -> tuple[list[str], int]:
    """A clean ingestion and a clean resubmission of the video on an emptied graph: the dump a faulted run of
    the same video must end at, and its entity count. `census` (a hook that does nothing) counts the
    statements of the transaction the kill will aim at, so the kill can be placed anywhere in it."""
    reset()
    counted = MemoryGraph(HookedExecutor(graph.ex, census), graph.settings)
    assert ingest(counted, embedder, memorizer, plan) == []
    assert ingest(graph, embedder, memorizer, plan) == []
    return canonical_dump(graph), _entity_count(graph)


def _start_run(graph: MemoryGraph, embedder: TextEmbedder, memorizer: Any, plan: VideoPlan,
               outcome: list[str]) -> threading.Thread:
    """The ingestion the kill interrupts, in a thread of its own (the kill happens inside it, from a hook);
    `outcome` receives how it ended: "completed" (the driver's retries reached the restarted server) or the
    error it gave up with."""

    def run() -> None:
        try:
            failed = ingest(graph, embedder, memorizer, plan)
            outcome.append(f"completed (failed clips {failed})" if failed else "completed")
        except Exception as exc:  # noqa: BLE001 - whatever the dead server made of the run is the finding
            outcome.append(f"{type(exc).__name__}: {str(exc)[:160]}")

    runner = threading.Thread(target=run, daemon=True)
    runner.start()
    return runner


def _judge_whole(graph: MemoryGraph, video: str, clean: list[str], entities: int, result: Neo4jKillResult) -> None:
    """The checks of a Neo4j kill trial: the whole graph against the clean run's dump, states, duplicates,
    orphans."""
    result.all_memorized = _all_memorized(graph, video)
    dump = canonical_dump(graph)
    result.equal = dump == clean
    if not result.equal:
        result.diff = ([f"- {x}" for x in sorted(set(clean) - set(dump))][:4]
                       + [f"+ {x}" for x in sorted(set(dump) - set(clean))][:4])
    result.entities_added = _entity_count(graph) - entities
    result.duplicate_memories = duplicates(graph, video)
    result.orphans = orphans(graph)


def neo4j_kill_trial(graph: MemoryGraph, seed: int, step: str, clips: int = 3,
                     reset: Callable[[], None] | None = None) -> Neo4jKillResult:
    """kill -9 of the campaign's Neo4j inside the resolve or memorize step of a seeded clip, restart, resubmit.

    `graph` must be connected to a LocalNeo4j this caller owns (it is killed and restarted) and `reset` must
    empty it (default `wipe_campaign_graph`). Ingestion is in-process (staged perception, the LLM memorizer on
    a scripted endpoint) so the kill can be aimed: a hook in the step's write transaction, or, for memorize, in
    the model call. The restart is immediate (the interrupted ingestion's driver may finish on the new server)
    or waits until that ingestion gave up; then the video is resubmitted, and the whole graph must equal a
    clean run (plus a clean resubmission) of the same video, with every clip memorized and nothing orphaned.
    """
    began = time.monotonic()
    reset = reset or (lambda: wipe_campaign_graph(graph))
    rng = random.Random(seed)
    settings = graph.settings
    embedder = text_embedder(settings)
    clip, where = _kill_point(rng, step, clips)
    result = Neo4jKillResult(seed, step, clip, where, rng.choice(["immediate", "after-give-up"]))
    label = "resolve_clip" if step == "resolve" else "write_memorization"
    census = KillHook(label, clip + 1, 10**6, lambda: None)
    killed = threading.Event()

    def kill() -> None:
        if not killed.is_set():
            kill_launcher(LocalNeo4j(settings))
            killed.set()

    with ScriptedChatServer() as server:
        memorizer = LLMMemorizer(OpenAIChatModel(server.endpoint(timeout_s=5.0)), settings)
        plan = stage_video(settings, f"nk-{seed}", clips, seed)
        clean, entities = _clean_reference(graph, reset, FaultSwitch(memorizer, server, {}), embedder, plan, census)
        at = rng.randrange(census.statements + 1)  # == statements: after the last statement, before the commit
        reset()
        hook = KillHook(label, clip + 1, at, kill) if where == "tx" else KillHook(label, 0, 0, lambda: None)
        server.hook = kill if where == "llm" else None
        first = _short_retry_graph(graph, 30.0 if result.restart == "immediate" else 2.0)
        outcome: list[str] = []
        runner = _start_run(MemoryGraph(HookedExecutor(first.ex, hook), settings), embedder,
                            FaultSwitch(memorizer, server, {clip: "hook"}), plan, outcome)
        result.killed = killed.wait(120)
        if result.restart == "after-give-up":
            runner.join(120)
        t0 = time.monotonic()
        result.recovered_on_start = LocalNeo4j(settings).start().recovered
        result.restart_s = round(time.monotonic() - t0, 1)
        runner.join(120)
        first.close()
        if where == "tx":
            result.point = f"tx@{hook.fired_at}/{census.statements}"
        result.first_run = outcome[0] if outcome else "still running"
        t1 = time.monotonic()
        ingest(graph, embedder, FaultSwitch(memorizer, server, {}), plan)  # the resubmission
        result.resubmit_s = round(time.monotonic() - t1, 1)
    _judge_whole(graph, plan.source_id, clean, entities, result)
    result.seconds = round(time.monotonic() - began, 1)
    return result


# ---------------------------------------------------------------------------------------------- worker kills

KILL_STEPS = ("cut", "faces", "voices", "resolve", "memorize")


@dataclass
class KillResult:
    seed: int
    kill_after_s: float  # extra delay after the aimed step was seen running
    target: str = ""  # "<clip>:<step>" the kill was aimed at
    hit: list[str] = field(default_factory=list)  # "<clip>:<step>" running (per the progress hash) at the kill
    killed: bool = False  # the worker was still busy when killed (else the trial measured nothing)
    equal: bool = False  # after resubmission: the video's memories equal the clean in-process run's
    dump_equal: bool = False  # and the video's whole subgraph (canonical dump, video id replaced) equals its twin's
    all_memorized: bool = False
    entities_added: int = 0  # entities beyond the clean run's (a duplicate person)
    duplicate_memories: int = 0
    orphans: dict[str, int] = field(default_factory=dict)
    recovery_s: float = 0.0  # resubmission to every clip memorized

    @property
    def ok(self) -> bool:
        return (self.equal and self.dump_equal and self.all_memorized and self.entities_added == 0
                and self.duplicate_memories == 0 and not self.orphans)


def _worker_settings(graph: MemoryGraph, redis_url: str) -> Settings:
    return graph.settings.model_copy(update={"tasks": graph.settings.tasks.model_copy(
        update={"redis_url": redis_url})})


def _worker_env(settings: Settings) -> dict[str, str]:
    return {"M3GRAPH_LLM__MEMORIZE__BACKEND": "none", "NEO4J_PASSWORD": settings.neo4j_password.get_secret_value()}


def _stage_twins(graph: MemoryGraph, settings: Settings, source: Path, seed: int, prefix: str) -> tuple[str, str, int]:
    """The clean twin (staged perception, real cuts, ingested in-process) and the video the faulted run will
    ingest with the same perception; returns (twin id, video id, clip count)."""
    from m3graph.ingest.pipeline import cut_stage, plan_video
    from m3graph.reasoning.perception_memorizer import PerceptionMemorizer

    clean, video = f"{prefix}-{seed}-clean", f"{prefix}-{seed}-faulted"
    clips = len(plan_video(settings, source, video).windows)
    stage_video(settings, clean, clips, seed)
    copy_perception(settings, clean, video, clips)
    plan_video(settings, source, video)  # the real plans (the clips are real cuts); the staged caches stay
    clean_plan = plan_video(settings, source, clean)
    for i in range(clips):
        cut_stage(settings, clean_plan, i)  # the twin's clips are cut too: memories describe the clip's scene
    assert ingest(graph, text_embedder(settings), PerceptionMemorizer(), clean_plan) == []
    return clean, video, clips


def _submit(settings: Settings, source: Path, video: str) -> None:
    from m3graph.tasks.ingest import plan_source, submit_clips

    indexes, total = plan_source(settings, source, video)
    submit_clips(settings, video, indexes, total)


def _all_memorized(graph: MemoryGraph, video: str) -> bool:
    states = graph.clip_states(video)
    return bool(states) and all(p.state == ClipState.MEMORIZED for p in states)


def _wait_memorized(graph: MemoryGraph, video: str, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if _all_memorized(graph, video):
            return True
        time.sleep(0.5)
    return False


def _running(client: Any, video: str) -> list[str]:
    """The "<clip>:<step>" entries the progress hash shows running (or a resolve waiting for its turn)."""
    from m3graph.tasks.progress import read_progress

    _, clips = read_progress(client, video)
    return sorted(f"{i}:{step}" for i, steps in clips.items() for step, v in steps.items()
                  if v.get("state") in ("running", "waiting"))


def _await_step(client: Any, video: str, clip: int, step: str, timeout_s: float = 180.0) -> bool:
    """Polls the progress hash every few ms until `clip`'s `step` is running; False when it finished (or the
    time ran out) without being seen running (a cached step can take only milliseconds)."""
    from m3graph.tasks.progress import read_progress

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        _, clips = read_progress(client, video)
        state = clips.get(clip, {}).get(step, {}).get("state")
        if state in ("running", "waiting"):
            return True
        if state in ("done", "failed"):
            return False
        time.sleep(0.002)
    return False


def _judge_twin(graph: MemoryGraph, clean: str, video: str, entities: int, result: Any) -> None:
    """The checks every worker-side trial shares: memories and subgraph equal to the twin's, no new entity,
    no duplicate memory, nothing orphaned."""
    result.all_memorized = _all_memorized(graph, video)
    result.equal = video_memories(graph, video) == video_memories(graph, clean)
    result.dump_equal = video_dump(graph, video) == video_dump(graph, clean)
    result.entities_added = _entity_count(graph) - entities
    result.duplicate_memories = duplicates(graph, video)
    result.orphans = orphans(graph)


def kill_trial(graph: MemoryGraph, source: Path, seed: int, redis_url: str, work: Path,
               timeout_s: float = 600.0) -> KillResult:
    """kill -9 of a Celery worker (its whole process group) inside a seeded step of ingesting `source`, then a
    fresh worker and a resubmission: the video must end as the clean in-process run of the same perception
    left its twin (memories clip by clip, the subgraph's canonical dump, no new entity, no duplicate).

    The step cycles with the seed through cut, faces, voices, resolve, memorize (so any run of five seeds
    covers all), the clip is seeded; the bench polls the worker's progress hash and kills as soon as the step
    shows running, after a seeded extra delay for the long steps. Perception is staged (seeded caches), so the
    worker cuts, resolves and memorizes for real; faces and voices only read their caches (milliseconds), so a
    kill aimed at them can land just after them; `hit` records what was running at the kill.
    """
    import redis

    from bench.perception_celery import _wait_ready, worker
    from m3graph.tasks.app import configure

    rng = random.Random(seed)
    settings = _worker_settings(graph, redis_url)
    clean, video, clips = _stage_twins(graph, settings, source, seed, "kill")
    entities = _entity_count(graph)
    step = KILL_STEPS[seed % len(KILL_STEPS)]
    clip = rng.randrange(clips)
    delay = round(rng.uniform(0.0, 1.5), 2) if step in ("cut", "memorize") else 0.0
    result = KillResult(seed=seed, kill_after_s=delay, target=f"{clip}:{step}")
    app = configure(settings)
    env = _worker_env(settings)
    client = redis.Redis.from_url(redis_url)
    with worker(settings, 2, work / f"worker-{seed}-a.log", env) as proc:
        _wait_ready(app, proc)  # the kill must land in the work, not in the worker's start
        _submit(settings, source, video)
        _await_step(client, video, clip, step)
        time.sleep(delay)
        alive = proc.poll() is None
        os.killpg(proc.pid, signal.SIGKILL)
        result.hit = _running(client, video)
        result.killed = alive and not _all_memorized(graph, video)
        proc.wait(30)
    client.close()
    t0 = time.monotonic()
    with worker(settings, 2, work / f"worker-{seed}-b.log", env):
        _submit(settings, source, video)
        _wait_memorized(graph, video, timeout_s)
        result.recovery_s = round(time.monotonic() - t0, 1)
        time.sleep(2.0)  # a memorize of the first submission that survived may still write: let it land
    _judge_twin(graph, clean, video, entities, result)
    return result


# ---------------------------------------------------------------------------------------------- Redis restarts


class RedisProcess:
    """A redis-server of the campaign's own on a fixed port (a restarted one must come back where the
    worker's broker URL points), without persistence: a restart loses every queued message, result and
    lock, the worst case for the workflow."""

    def __init__(self, port: int, work: Path) -> None:
        self.port, self.work = port, work
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        from bench.perception_celery import _port_open

        server = shutil.which("redis-server")
        if server is None:
            raise SystemExit("redis-server is not installed (scripts/setup.sh installs the Debian package)")
        if _port_open(self.port):
            raise SystemExit(f"port {self.port} is in use; pass another --redis-port")
        self.work.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen([server, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                                      "--appendonly", "no", "--dir", str(self.work)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 20
        while not _port_open(self.port):
            if time.monotonic() > deadline:
                raise SystemExit("redis-server did not start")
            time.sleep(0.05)

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(10)
            self.proc = None

    def __enter__(self) -> RedisProcess:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()


@dataclass
class RedisRestartResult:
    seed: int
    target: str  # "<clip>:<step>" the restart was aimed at
    down_s: float  # how long Redis was away
    hit: list[str] = field(default_factory=list)  # what was running when Redis died
    worker_survived: bool = False  # the worker process was still alive afterwards
    finished_alone: bool = False  # every clip memorized without a resubmission
    resubmitted: bool = False
    equal: bool = False
    dump_equal: bool = False
    all_memorized: bool = False
    entities_added: int = 0
    duplicate_memories: int = 0
    orphans: dict[str, int] = field(default_factory=dict)
    recovery_s: float = 0.0  # Redis back to every clip memorized (resubmission included when needed)

    @property
    def ok(self) -> bool:
        return (self.equal and self.dump_equal and self.all_memorized and self.entities_added == 0
                and self.duplicate_memories == 0 and not self.orphans)


def _fresh_broker_connections(app: Any) -> None:
    """Drops this process's broker connection and producer pools (rebuilt on the next use), as a forked child
    does: kombu's pooled connections to a Redis that was killed fail a ping without retrying."""
    from kombu import pools

    pools.reset()  # closes and forgets kombu's process-wide pools (keyed by URL: the next trial's URL is the same)
    app._after_fork()  # noqa: SLF001 - Celery's own reset of the app's pool references; no public equivalent


def redis_restart_trial(graph: MemoryGraph, source: Path, seed: int, redis: RedisProcess, work: Path,
                        settle_s: float = 30.0, timeout_s: float = 600.0) -> RedisRestartResult:
    """kill -9 and restart of the broker (Redis, no persistence) while a real `m3graph worker -c 2` ingests
    `source`, aimed at a seeded step of a seeded clip. The worker stays; if the video has not finished
    `settle_s` after Redis is back (its queued messages are gone), it is resubmitted (to a fresh worker if the
    old one died). Then the twin checks of `kill_trial` apply."""
    import redis as redis_lib

    from bench.perception_celery import _wait_ready, worker
    from m3graph.tasks.app import configure

    rng = random.Random(seed)
    settings = _worker_settings(graph, redis.url)
    clean, video, clips = _stage_twins(graph, settings, source, seed, "redis")
    entities = _entity_count(graph)
    step = rng.choice(["cut", "resolve", "memorize"])
    result = RedisRestartResult(seed, f"{rng.randrange(clips)}:{step}", round(rng.uniform(0.5, 4.0), 2))
    app = configure(settings)
    _fresh_broker_connections(app)  # no connection to an earlier trial's Redis survives into this one
    env = _worker_env(settings)
    client = redis_lib.Redis.from_url(redis.url)
    with worker(settings, 2, work / f"worker-redis-{seed}-a.log", env) as proc:
        _wait_ready(app, proc)
        _submit(settings, source, video)
        clip_s, _, step_s = result.target.partition(":")
        _await_step(client, video, int(clip_s), step_s)
        result.hit = _running(client, video)
        redis.kill()
        time.sleep(result.down_s)
        redis.start()
        _fresh_broker_connections(app)  # this process's own broker connections died with Redis
        t0 = time.monotonic()
        result.finished_alone = _wait_memorized(graph, video, settle_s)
        result.worker_survived = proc.poll() is None
        if not result.finished_alone and result.worker_survived:
            result.resubmitted = True
            _submit(settings, source, video)
            _wait_memorized(graph, video, timeout_s)
    if not result.finished_alone and not result.worker_survived:
        result.resubmitted = True
        with worker(settings, 2, work / f"worker-redis-{seed}-b.log", env):
            _submit(settings, source, video)
            _wait_memorized(graph, video, timeout_s)
    result.recovery_s = round(time.monotonic() - t0, 1)
    client.close()
    time.sleep(2.0)  # a straggling memorize of the first submission may still write: let it land
    _judge_twin(graph, clean, video, entities, result)
    return result


# ---------------------------------------------------------------------------------------------- campaign


@contextmanager
def _graph(port: int, work: Path, uri: str | None = None) -> Iterator[MemoryGraph]:
    """The campaign's own Neo4j, or (`uri`, LLM trials only) a running one whose database takes the trials' videos."""
    from bench.perception_celery import neo4j_server

    if uri:
        with MemoryGraph.connect(Settings(neo4j_uri=uri, data_dir=work / "data")) as graph:
            yield graph
        return
    with neo4j_server(work / "neo4j", port) as settings:
        settings = settings.model_copy(update={"data_dir": work / "data"})
        with MemoryGraph.connect(settings) as graph:
            yield graph


def _llm_campaign(args: argparse.Namespace) -> list[TrialResult]:
    results = []
    if not args.trials:
        return results
    with _graph(args.port, args.work, args.uri) as graph:
        for k in range(args.trials):
            r = llm_fault_trial(graph, args.seed + k, args.clips, args.rate)
            results.append(r)
            print(f"trial {k + 1}/{args.trials} seed {r.seed}: {'ok' if r.ok else 'FAILED'} faults {r.faults} "
                  f"({r.seconds:.1f} s)", flush=True)
    return results


def _test_media() -> Path:
    from m3graph.devkit.testmedia import build_test_media

    return build_test_media(Path(".m3graph/testmedia")).path("tm-a")


def _kill_campaign(args: argparse.Namespace) -> list[KillResult]:
    from bench.perception_celery import redis_server

    kills: list[KillResult] = []
    if not args.kill_trials:
        return kills
    with _graph(args.port, args.work) as graph, redis_server(args.work / "redis") as redis_url:
        for k in range(args.kill_trials):
            kr = kill_trial(graph, _test_media(), args.seed + k, redis_url, args.work)
            kills.append(kr)
            print(f"kill {k + 1}/{args.kill_trials} seed {kr.seed} aimed at {kr.target} (+{kr.kill_after_s} s), "
                  f"running at the kill {kr.hit}: {'ok' if kr.ok else 'FAILED'} (killed mid-work: {kr.killed}, "
                  f"recovery {kr.recovery_s} s)", flush=True)
    return kills


def _neo4j_campaign(args: argparse.Namespace) -> list[Neo4jKillResult]:
    out: list[Neo4jKillResult] = []
    if not args.neo4j_kill_trials:
        return out
    with _graph(args.port, args.work) as graph:
        for k in range(args.neo4j_kill_trials):
            for step in ("resolve", "memorize"):
                r = neo4j_kill_trial(graph, args.seed + k, step, args.neo4j_clips)
                out.append(r)
                print(f"neo4j kill {step} seed {r.seed} clip {r.clip} at {r.point}, restart {r.restart}: "
                      f"{'ok' if r.ok else 'FAILED'} (first run: {r.first_run}; restart {r.restart_s} s, "
                      f"recovery {r.recovery_s} s, crash recovery {r.recovered_on_start}, trial {r.seconds} s) "
                      f"{r.diff or ''}", flush=True)
    return out


def _redis_campaign(args: argparse.Namespace) -> list[RedisRestartResult]:
    out: list[RedisRestartResult] = []
    if not args.redis_restart_trials:
        return out
    with _graph(args.port, args.work) as graph, RedisProcess(args.redis_port, args.work / "redis-restart") as redis:
        for k in range(args.redis_restart_trials):
            r = redis_restart_trial(graph, _test_media(), args.seed + k, redis, args.work)
            out.append(r)
            print(f"redis restart seed {r.seed} aimed at {r.target}, running {r.hit}, down {r.down_s} s: "
                  f"{'ok' if r.ok else 'FAILED'} (worker survived {r.worker_survived}, finished alone "
                  f"{r.finished_alone}, recovery {r.recovery_s} s)", flush=True)
    return out


def _median(values: list[float]) -> float | None:
    return float(np.median(values)) if values else None


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
    parser.add_argument("--neo4j-kill-trials", type=int, default=0,
                        help="also kill -9 the campaign's Neo4j this many times mid-resolve AND mid-memorize each")
    parser.add_argument("--neo4j-clips", type=int, default=3, help="clips per video in the Neo4j kill trials")
    parser.add_argument("--redis-restart-trials", type=int, default=0,
                        help="also restart Redis under a real worker this many times")
    parser.add_argument("--redis-port", type=int, default=6391, help="port of the Redis the restart trials kill")
    parser.add_argument("--uri", default=None,
                        help="run the LLM trials on this running Neo4j (NEO4J_USER / NEO4J_PASSWORD from the "
                             "environment; it takes the trials' videos: a scratch database) instead of the "
                             "campaign's own; the kill and restart trials always start their own")
    add_smoke(parser, "one LLM fault trial of 2 clips, no kill or restart trials")
    args = apply_smoke(parser.parse_args(argv), trials=1, clips=2, kill_trials=0, neo4j_kill_trials=0,
                       redis_restart_trials=0)
    logging.basicConfig(level=logging.WARNING)
    results = _llm_campaign(args)
    neo = _neo4j_campaign(args)
    kills = _kill_campaign(args)
    redis = _redis_campaign(args)
    faults = Counter[str]()
    for r in results:
        faults.update(r.faults)
    summary = {"trials": len(results), "passed": sum(r.ok for r in results), "clips_per_video": args.clips,
               "faulted_clips": dict(faults), "clips_lost": sum(r.clips_lost for r in results),
               "duplicate_memories": sum(r.duplicate_memories for r in results),
               "median_trial_s": _median([r.seconds for r in results]),
               "kill_trials": len(kills), "kill_passed": sum(k.ok for k in kills),
               "killed_mid_work": sum(k.killed for k in kills),
               "median_recovery_s": _median([k.recovery_s for k in kills]),
               "neo4j_kill_trials": len(neo), "neo4j_kill_passed": sum(r.ok for r in neo),
               "neo4j_median_recovery_s": {s: _median([r.recovery_s for r in neo if r.step == s])
                                           for s in ("resolve", "memorize")},
               "neo4j_median_restart_s": _median([r.restart_s for r in neo]),
               "redis_restart_trials": len(redis), "redis_restart_passed": sum(r.ok for r in redis),
               "redis_median_recovery_s": _median([r.recovery_s for r in redis])}
    print(json.dumps(summary, indent=2))
    if args.out is not None:
        trials = {"trials": [r.__dict__ for r in results], "kills": [k.__dict__ for k in kills],
                  "neo4j_kills": [r.__dict__ | {"recovery_s": r.recovery_s, "ok": r.ok} for r in neo],
                  "redis_restarts": [r.__dict__ | {"ok": r.ok} for r in redis]}
        args.out.write_text(json.dumps({"summary": summary, **trials}, indent=2, default=str))
    ok = all(summary[a] == summary[b] for a, b in (("passed", "trials"), ("kill_passed", "kill_trials"),
                                                   ("neo4j_kill_passed", "neo4j_kill_trials"),
                                                   ("redis_restart_passed", "redis_restart_trials")))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
