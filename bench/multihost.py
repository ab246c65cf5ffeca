"""Faults across simulated hosts: workers on separate network namespaces sharing only Redis, Neo4j and an
S3-compatible store, with links cut, hosts killed or added, the store partitioned and Redis restarted.

The hosts (m3graph.devkit.hosts): ``graph`` runs Redis and Neo4j (the project's launcher, bound to the host's
address), ``store`` runs moto's S3 server, ``w1``/``w2`` (and ``w3`` when one is added) each run one
``m3graph worker -c 1`` with its own data directory and the S3 store as media storage; this process enters the
``ctl`` host to submit, watch and check. Nothing is shared but the network (one bridge, one private /24).

Perception is staged (seeded face and voice caches put into the store, as bench.faults does, so a trial costs
seconds of CPU rather than minutes of models on 2 cores): workers really fetch the source from the store, cut it
with ffmpeg, read the caches from the store, resolve and memorize (the perception memorizer). Every trial:

1. resets the graph (but for migrations), the bucket and Redis, and starts fresh workers with empty data dirs;
2. submits the test videos one after another, each once the previous one's clips are resolved (entity and
   character ids come from counters in resolve order, so this keeps them equal to the single-host run's and the
   graphs comparable as they are; memorization of a video overlaps the next one's cut and resolve), and
   injects its fault while clips run, in a thread of its own;
3. waits until every clip is memorized; a video that makes no progress for `settle_s` is resubmitted (what an
   operator does after losing a worker: the workflow skips what is done);
4. checks: the graph's canonical dump (bench.faults.canonical_dump, the reliability campaigns' rule) equals the
   single-host run's (one worker, no fault, once per campaign); every clip is memorized, or failed with a
   reason, none stuck; no structural orphan (bench.faults.orphans); the store's keys and the graph's media
   references agree: no object missing, none orphaned (`media_check`).

Faults (`FAULTS`): ``cut`` (w1's link down mid-clip for a few seconds, then up), ``kill`` (every process on w2
SIGKILLed mid-clip; the host stays dead), ``add`` (w3 joins after the first clip resolved), ``store`` (the store
host partitioned for a while mid-ingest), ``redis`` (w1 cut off, Redis killed and restarted without
persistence, w1 restored).

    python -m bench.multihost --trials 5 --out .m3graph/bench-multihost.json   # the full campaign (as root)
    python -m bench.multihost --smoke        # = --faults store --trials 1: what tests/e2e/test_multihost.py runs

Needs root (network namespaces); everything it makes is removed on exit (python -m m3graph.devkit.hosts cleanup
removes what a SIGKILLed campaign left).
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import random
import shutil
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.smoke import add_smoke, apply_smoke
from m3graph.devkit.hosts import Hosts, Proc, enter
from m3graph.settings import Settings, StorageConfig

REPO = Path(__file__).resolve().parents[1]
log = logging.getLogger("bench.multihost")
FAULTS = ("cut", "kill", "add", "store", "redis")
BOLT, REDIS, S3 = 7687, 6379, 9000  # inside the hosts' own namespaces: no clash with anything on the machine
BUCKET, ACCESS, SECRET = "m3h-media", "m3h-key", "m3h-secret-not-a-real-one"
PASSWORD = "m3h-graph-password"
CLIP_SECONDS = 30.0
VIDEOS = (("mh-a", "tm-a", 11), ("mh-b", "tm-b", 22), ("mh-s", "tm-silent", 33))  # id, test video, perception seed


# ---------------------------------------------------------------------------------------------- the cluster


def _base_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("M3GRAPH_", "NEO4J_", "AWS_"))}
    env.update({"OMP_WAIT_POLICY": "PASSIVE", "PYTHONPATH": str(REPO), "M3GRAPH_CLIP_SECONDS": str(CLIP_SECONDS)})
    return env


@dataclass
class Cluster:
    """The services of one harness, and the settings this (ctl) process uses to reach them."""

    hosts: Hosts
    settings: Settings
    redis: Proc | None = None
    workers: dict[str, Proc] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def graph_addr(self) -> str:
        return self.hosts.address("graph")

    def worker_env(self, host: str) -> dict[str, str]:
        s = self.settings
        return _base_env() | {
            "NEO4J_URI": s.bolt_uri, "NEO4J_PASSWORD": PASSWORD, "M3GRAPH_TASKS__REDIS_URL": s.tasks.redis_url,
            "M3GRAPH_DATA_DIR": str(self.hosts.work / host / "data"), "M3GRAPH_LLM__MEMORIZE__BACKEND": "none",
            "M3GRAPH_STORAGE__URL": s.storage.url, "M3GRAPH_STORAGE__ENDPOINT_URL": str(s.storage.endpoint_url),
            "M3GRAPH_STORAGE__REGION": "us-east-1", "M3GRAPH_STORAGE__ACCESS_KEY_ID": ACCESS,
            "M3GRAPH_STORAGE__SECRET_ACCESS_KEY": SECRET, "M3GRAPH_STORAGE__CONNECT_TIMEOUT_S": "3",
            "M3GRAPH_STORAGE__READ_TIMEOUT_S": "20"}

    def start_redis(self) -> None:
        server = shutil.which("redis-server")
        if server is None:
            raise SystemExit("redis-server is not installed (scripts/setup.sh installs the Debian package)")
        (self.hosts.work / "redis").mkdir(exist_ok=True)
        # No persistence (a restart loses every message, the worst case) and bound to the graph host's private
        # address only; protected mode off because the harness's subnet is its clients' only way in.
        self.redis = self.hosts.spawn("graph", "redis", [
            server, "--port", str(REDIS), "--bind", self.graph_addr, "--save", "", "--appendonly", "no",
            "--protected-mode", "no", "--dir", str(self.hosts.work / "redis")])
        _wait_port(self.graph_addr, REDIS, 30, "redis")

    def kill_redis(self) -> None:
        if self.redis is not None:
            self.hosts.kill(self.redis)
            self.redis = None

    def start_worker(self, host: str) -> Proc:
        data = self.hosts.work / host / "data"
        shutil.rmtree(data, ignore_errors=True)
        data.mkdir(parents=True)
        proc = self.hosts.spawn(host, "worker", [sys.executable, "-m", "m3graph.cli", "worker", "-c", "1"],
                                env=self.worker_env(host), cwd=REPO)
        self.workers[host] = proc
        return proc

    def supervise(self) -> list[str]:
        """Restarts every worker whose process ended (what `restart: unless-stopped` or systemd's
        `Restart=always` does on a real host: a Redis restart can end a worker's main process, docs/reliability.md,
        "Redis restarted mid-ingest"). A host killed on purpose is out of `workers` and stays dead."""
        restarted = []
        for host, proc in list(self.workers.items()):
            if proc.popen.poll() is not None:
                self.hosts.procs = [p for p in self.hosts.procs if p is not proc]
                self.start_worker(host)
                restarted.append(host)
        return restarted

    def stop_workers(self) -> None:
        for host, proc in list(self.workers.items()):
            self.hosts.stop(proc, timeout_s=20)
            del self.workers[host]

    def wait_workers(self, hosts: list[str], timeout_s: float = 240.0) -> float:
        """Until every worker on `hosts` answers a ping; returns the seconds it took."""
        from m3graph.tasks.app import configure

        app = configure(self.settings)
        t0 = time.monotonic()
        want = {f"celery@{h}.m3h" for h in hosts}
        while time.monotonic() - t0 < timeout_s:
            for h in hosts:
                if self.workers[h].popen.poll() is not None:
                    raise RuntimeError(f"the worker on {h} exited; see {self.workers[h].log}")
            answered = {name for reply in app.control.ping(timeout=1.0) or [] for name in reply}
            if want <= answered:
                return time.monotonic() - t0
            time.sleep(0.5)
        raise RuntimeError(f"workers {sorted(want)} did not all answer a ping in {timeout_s} s")


def _wait_port(host: str, port: int, timeout_s: float, what: str) -> None:
    import socket

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            socket.create_connection((host, port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"{what} did not listen on {host}:{port} within {timeout_s} s")


def start_cluster(hosts: Hosts, workers: tuple[str, ...] = ("w1", "w2")) -> Cluster:
    """Namespaces, Neo4j + Redis on graph, moto on store, the bucket; enters ctl. Workers are started per trial."""
    t0 = time.monotonic()
    for host in ("ctl", "graph", "store", *workers):
        hosts.add_host(host)
    enter(hosts.ns("ctl"))  # from here on this process's sockets are the ctl host's
    graph, store = hosts.address("graph"), hosts.address("store")
    storage = StorageConfig(url=f"s3://{BUCKET}/media", endpoint_url=f"http://{store}:{S3}", region="us-east-1",
                            access_key_id=ACCESS, secret_access_key=SECRET, connect_timeout_s=3, read_timeout_s=20)
    settings = Settings(neo4j_uri=f"bolt://{graph}:{BOLT}", neo4j_password=PASSWORD,
                        data_dir=hosts.work / "ctl" / "data", clip_seconds=CLIP_SECONDS, storage=storage,
                        tasks={"redis_url": f"redis://{graph}:{REDIS}/0"},
                        llm={"memorize": {"backend": "none"}})
    cluster = Cluster(hosts, settings)
    neo4j_env = _base_env() | {
        "NEO4J_PASSWORD": PASSWORD, "M3GRAPH_LOCAL__HOME": str(hosts.work / "neo4j"),
        "M3GRAPH_LOCAL__HOST": graph, "M3GRAPH_LOCAL__PORT": str(BOLT), "M3GRAPH_LOCAL__ALLOW_REMOTE": "true",
        "M3GRAPH_LOCAL__HEAP_MB": "768", "M3GRAPH_LOCAL__PAGECACHE_MB": "256",
        "M3GRAPH_LOCAL__BUILD_DIR": str(REPO / ".m3graph" / "launcher-build")}
    started = hosts.run("graph", [sys.executable, "-m", "m3graph.cli", "db", "start"], env=neo4j_env, cwd=REPO,
                        timeout_s=300)
    (hosts.work / "logs").mkdir(exist_ok=True)
    (hosts.work / "logs" / "graph-neo4j-start.log").write_text(started.stdout + started.stderr)
    if started.returncode != 0:
        raise RuntimeError(f"Neo4j did not start on the graph host: {started.stderr.strip()[-500:]}")
    cluster.timings["neo4j_start_s"] = round(time.monotonic() - t0, 1)
    cluster.start_redis()
    hosts.spawn("store", "moto", [sys.executable, "-m", "moto.server", "-H", store, "-p", str(S3)], env=_base_env())
    _wait_port(store, S3, 60, "moto")
    _s3_client(settings).create_bucket(Bucket=BUCKET)
    from m3graph.graphdb.store import MemoryGraph

    with MemoryGraph.connect(settings):  # migrations, once, before any worker connects
        pass
    cluster.timings["cluster_start_s"] = round(time.monotonic() - t0, 1)
    return cluster


def _s3_client(settings: Settings) -> Any:
    import boto3

    s = settings.storage
    return boto3.session.Session().client("s3", endpoint_url=s.endpoint_url, region_name="us-east-1",
                                          aws_access_key_id=ACCESS, aws_secret_access_key=SECRET)


def store_keys(settings: Settings) -> list[str]:
    """Every key in the store under the media prefix (the prefix stripped: the keys the graph names)."""
    client, prefix = _s3_client(settings), settings.storage.prefix + "/"
    out: list[str] = []
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix):
        out.extend(o["Key"][len(prefix):] for o in page.get("Contents", []))
    return sorted(out)


# ---------------------------------------------------------------------------------------------- a run


def _media() -> Any:
    from m3graph.devkit.testmedia import build_test_media

    return build_test_media(REPO / ".m3graph" / "testmedia")


def reset(cluster: Cluster, workers: list[str]) -> None:
    """An empty graph (migrations kept), bucket and Redis, and fresh workers with empty data directories."""
    import redis

    from bench.faults import wipe_campaign_graph
    from m3graph.graphdb.store import MemoryGraph

    cluster.stop_workers()
    for host in [h for h in cluster.hosts.hosts if h.startswith("w") and h not in workers]:
        cluster.hosts.remove_host(host)  # a host an earlier trial added
    for host in [h for h in workers if h not in cluster.hosts.hosts]:
        cluster.hosts.add_host(host)  # a host the reference run left out
    with MemoryGraph.connect(cluster.settings) as g:
        wipe_campaign_graph(g)
    client = _s3_client(cluster.settings)
    keys = store_keys(cluster.settings)
    for i in range(0, len(keys), 1000):
        client.delete_objects(Bucket=BUCKET, Delete={"Objects": [{"Key": f"{cluster.settings.storage.prefix}/{k}"}
                                                                 for k in keys[i:i + 1000]]})
    r = redis.Redis.from_url(cluster.settings.tasks.redis_url)
    r.flushall()
    r.close()
    for host in workers:
        cluster.start_worker(host)
    cluster.timings["workers_ready_s"] = round(cluster.wait_workers(workers), 1)


def stage_all(cluster: Cluster) -> dict[str, int]:
    """Plans every video (source and plan into the store, clips planned in the graph) and puts its seeded
    perception caches into the store. Returns clips per video, in submission order."""
    from bench.faults import stage_video
    from m3graph.ingest.pipeline import ClipWork
    from m3graph.storage import media_store
    from m3graph.tasks.ingest import plan_source

    settings, media = cluster.settings, _media()
    store = media_store(settings)
    scratch = settings.model_copy(update={"storage": StorageConfig(), "data_dir": cluster.hosts.work / "stage"})
    counts: dict[str, int] = {}
    for video, name, seed in VIDEOS:
        _, total = plan_source(settings, media.path(name), video)
        stage_video(scratch, video, total, seed)  # seeded caches on scratch, then into the store
        for i in range(total):
            work = ClipWork(scratch, video, i)
            store.put_bytes(work.faces_key, work.faces.read_bytes())
            store.put_bytes(work.voices_key, work.voices.read_bytes())
        counts[video] = total
    return counts


def submit(cluster: Cluster, video: str, clips: int, fresh: bool = False) -> None:
    """Queues the workflow of every clip of `video` (a resubmission skips what is done). `fresh`: new broker
    connections first (the old ones may point at a Redis that was restarted)."""
    from bench.faults import _fresh_broker_connections
    from m3graph.tasks.app import configure
    from m3graph.tasks.ingest import submit_clips

    if fresh:
        _fresh_broker_connections(configure(cluster.settings))
    submit_clips(cluster.settings, video, list(range(clips)), clips)


def _count(cluster: Cluster, video: str, states: frozenset[Any]) -> int:
    return sum(p.state in states for p in _states(cluster, video))


def feed(cluster: Cluster, counts: dict[str, int], trial: Trial, settle_s: float, timeout_s: float,
         started: Any = None) -> None:
    """Submits the videos one after another, each once the previous one's clips are all resolved (entity ids
    come from one counter in resolve order: the same order as the single-host run keeps the graphs comparable
    as they are; memorization still overlaps the next video), then waits until every clip is memorized. A video
    that makes no progress for `settle_s` is resubmitted, as an operator would after losing a worker."""
    from m3graph.graphdb.clip_state import RESOLVED_STATES, ClipState

    deadline = time.monotonic() + timeout_s

    def drive(video: str, clips: int, states: frozenset[Any]) -> bool:
        last, since = -1, time.monotonic()
        while time.monotonic() < deadline:
            for host in cluster.supervise():
                trial.detail.setdefault("worker_restarts", []).append(host)
            done = _count(cluster, video, states)
            if done == clips:
                return True
            if done != last:
                last, since = done, time.monotonic()
            elif time.monotonic() - since > settle_s:
                trial.resubmitted.append(video)
                submit(cluster, video, clips, fresh=True)
                since = time.monotonic()
            time.sleep(0.5)
        return False

    for k, (video, clips) in enumerate(counts.items()):
        submit(cluster, video, clips, fresh=bool(trial.resubmitted))
        if k == 0 and started is not None:
            started.set()  # the fault may begin
        if not drive(video, clips, frozenset(RESOLVED_STATES)):
            return
    for video, clips in counts.items():
        if not drive(video, clips, frozenset({ClipState.MEMORIZED})):
            return


def _states(cluster: Cluster, video: str) -> list[Any]:
    from m3graph.graphdb.store import MemoryGraph

    with MemoryGraph.connect(cluster.settings) as g:
        return list(g.clip_states(video))


def _states_done(cluster: Cluster, video: str, clips: int, memorized_only: bool = False) -> bool:
    from m3graph.graphdb.clip_state import ClipState

    final = {ClipState.MEMORIZED} if memorized_only else {ClipState.MEMORIZED, ClipState.RESOLVE_FAILED,
                                                          ClipState.MEMORIZE_FAILED}
    states = _states(cluster, video)
    return len(states) == clips and all(p.state in final for p in states)


def _busy(cluster: Cluster, host: str) -> bool:
    from m3graph.tasks.app import configure

    replies = configure(cluster.settings).control.inspect(destination=[f"celery@{host}.m3h"], timeout=1.0).active()
    return bool(replies and any(replies.values()))


def wait_busy(cluster: Cluster, host: str, timeout_s: float = 120.0) -> bool:
    """Until `host`'s worker runs a task (mid-clip), or the time is up."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if _busy(cluster, host):
            return True
        time.sleep(0.2)
    return False


def wait_resolved(cluster: Cluster, n: int, timeout_s: float = 180.0) -> None:
    from m3graph.graphdb.clip_state import RESOLVED_STATES

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        done = sum(p.state in RESOLVED_STATES for v, _, _ in VIDEOS for p in _states(cluster, v))
        if done >= n:
            return
        time.sleep(0.3)


# ---------------------------------------------------------------------------------------------- checks

def graph_media(graph: Any) -> tuple[set[str], set[str]]:
    """(media keys the graph references, its video ids)."""
    from bench.faults import _rows

    refs = {str(v) for r in _rows(graph, "MATCH (x) WHERE x:Clip OR x:FaceObs OR x:Utterance OR x:Video "
                                         "RETURN properties(x) AS p") for k, v in r["p"].items()
            if (k.endswith("_uri") or k == "uri") and isinstance(v, str) and v}
    videos = {r["v"] for r in _rows(graph, "MATCH (v:Video) RETURN v.video_id AS v")}
    return refs, videos


def media_check(keys: list[str], refs: set[str], videos: set[str]) -> dict[str, list[str]]:
    """Missing: a key the graph references that the store lacks. Orphaned: an object of a video the graph does
    not hold, or a cut/crop/snippet (or a cut's audio) no graph node references. Plans, sources, perception
    caches and memorizer outputs are a held video's working files, not referenced node by node."""
    have = set(keys)
    missing = sorted(k for k in refs if k not in have)
    orphaned = []
    for key in keys:
        parts = key.split("/")
        if parts[0] != "videos" or len(parts) < 3 or parts[1] not in videos:
            orphaned.append(key)
            continue
        kind, cut_of_audio = parts[2], f"videos/{parts[1]}/clips/{Path(parts[-1]).stem}.mp4"
        unreferenced = kind in ("clips", "crops", "snippets") or (kind == "audio" and cut_of_audio not in refs)
        if unreferenced and key not in refs:
            orphaned.append(key)
    return {"missing": missing, "orphaned": orphaned}


@dataclass
class Trial:
    fault: str
    seed: int
    detail: dict[str, Any] = field(default_factory=dict)
    resubmitted: list[str] = field(default_factory=list)
    clips: int = 0
    memorized: int = 0
    failed_with_reason: int = 0
    stuck: int = 0
    equal: bool = False
    diff: list[str] = field(default_factory=list)
    orphans: dict[str, int] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    orphaned: list[str] = field(default_factory=list)
    ingest_s: float = 0.0  # submission to every clip memorized (fault and resubmission included)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return ((self.equal or self.fault == "none") and self.stuck == 0 and self.memorized == self.clips
                and not self.orphans and not self.missing and not self.orphaned)


def judge(cluster: Cluster, counts: dict[str, int], reference: list[str] | None, trial: Trial) -> list[str]:
    from bench.faults import canonical_dump, orphans
    from m3graph.graphdb.clip_state import ClipState
    from m3graph.graphdb.store import MemoryGraph

    with MemoryGraph.connect(cluster.settings) as g:
        dump = canonical_dump(g)
        states = [p for v in counts for p in g.clip_states(v)]
        trial.orphans = orphans(g)
        refs, videos = graph_media(g)
    trial.clips = sum(counts.values())
    trial.memorized = sum(p.state == ClipState.MEMORIZED for p in states)
    trial.failed_with_reason = sum(p.state in (ClipState.RESOLVE_FAILED, ClipState.MEMORIZE_FAILED)
                                   and bool(p.reason) for p in states)
    trial.stuck = trial.clips - trial.memorized - trial.failed_with_reason
    checked = media_check(store_keys(cluster.settings), refs, videos)
    trial.missing, trial.orphaned = checked["missing"][:10], checked["orphaned"][:10]
    name = f"dump-{trial.fault}-{trial.seed}.txt"
    (cluster.hosts.work / "logs" / name).write_text("\n".join(dump) + "\n")
    if reference is not None:
        trial.equal = dump == reference
        if not trial.equal:
            trial.diff = ([f"- {x}"[:300] for x in sorted(set(reference) - set(dump))][:4]
                          + [f"+ {x}"[:300] for x in sorted(set(dump) - set(reference))][:4])
    return dump


# ---------------------------------------------------------------------------------------------- faults


def _outage(cluster: Cluster, host: str, down_s: float, trial: Trial) -> None:
    """`host`'s link down for `down_s` seconds, then up again (recorded in the trial)."""
    cluster.hosts.cut(host)
    time.sleep(down_s)
    cluster.hosts.restore(host)
    trial.detail["down_s"] = down_s


def _fault_cut(cluster: Cluster, rng: random.Random, trial: Trial) -> None:
    trial.detail["hit_busy"] = wait_busy(cluster, "w1")
    _outage(cluster, "w1", round(rng.uniform(3.0, 12.0), 1), trial)


def _fault_kill(cluster: Cluster, rng: random.Random, trial: Trial) -> None:
    trial.detail["hit_busy"] = wait_busy(cluster, "w2")
    time.sleep(round(rng.uniform(0.0, 1.0), 2))
    trial.detail["killed_processes"] = cluster.hosts.kill_host("w2")
    cluster.workers.pop("w2", None)


def _fault_add(cluster: Cluster, rng: random.Random, trial: Trial) -> None:
    wait_resolved(cluster, 1)
    t0 = time.monotonic()
    cluster.hosts.add_host("w3")
    cluster.start_worker("w3")
    cluster.wait_workers(["w3"])
    trial.detail["w3_ready_s"] = round(time.monotonic() - t0, 1)


def _fault_store(cluster: Cluster, rng: random.Random, trial: Trial) -> None:
    trial.detail["hit_busy"] = wait_busy(cluster, "w1") or wait_busy(cluster, "w2", 5)
    _outage(cluster, "store", round(rng.uniform(5.0, 20.0), 1), trial)


def _fault_redis(cluster: Cluster, rng: random.Random, trial: Trial) -> None:
    from bench.faults import _fresh_broker_connections
    from m3graph.tasks.app import configure

    trial.detail["hit_busy"] = wait_busy(cluster, "w1")
    cluster.hosts.cut("w1")
    cluster.kill_redis()
    down = round(rng.uniform(1.0, 5.0), 1)
    time.sleep(down)
    cluster.start_redis()
    _fresh_broker_connections(configure(cluster.settings))
    time.sleep(round(rng.uniform(2.0, 8.0), 1))
    cluster.hosts.restore("w1")
    trial.detail["redis_down_s"] = down


FAULT_FNS: dict[str, Callable[[Cluster, random.Random, Trial], None]] = {
    "cut": _fault_cut, "kill": _fault_kill, "add": _fault_add, "store": _fault_store, "redis": _fault_redis}


def run_trial(cluster: Cluster, fault: str | None, seed: int, reference: list[str] | None,
              settle_s: float = 45.0, timeout_s: float = 420.0) -> tuple[Trial, list[str]]:
    """One trial (fault None: the single-host reference run, on w1 alone); returns it and its dump. The fault
    runs in a thread of its own (started with this process in the ctl host: it inherits the namespace) while
    `feed` submits and watches."""
    began = time.monotonic()
    trial = Trial(fault or "none", seed)
    workers = ["w1"] if fault is None else ["w1", "w2"]
    reset(cluster, workers)
    trial.detail["workers_ready_s"] = cluster.timings["workers_ready_s"]
    counts = stage_all(cluster)
    logs = cluster.hosts.work / "logs"
    offsets = {f.name: f.stat().st_size for f in logs.glob("w*-worker.log")}
    t0 = time.monotonic()
    started, errors = threading.Event(), []
    injector = None
    if fault is not None:
        def inject() -> None:
            started.wait(60)
            try:
                FAULT_FNS[fault](cluster, random.Random(seed), trial)
            except Exception as exc:  # noqa: BLE001 - reported with the trial
                errors.append(f"{type(exc).__name__}: {exc}")

        injector = threading.Thread(target=inject, daemon=True)
        injector.start()
    feed(cluster, counts, trial, settle_s, timeout_s, started)
    if injector is not None:
        injector.join(120)
        if errors:
            trial.detail["fault_error"] = errors[0]
    if fault is not None and not _all_memorized(cluster, counts):
        feed(cluster, counts, trial, settle_s, timeout_s)  # the fault ended after the feed gave up on it
    trial.ingest_s = round(time.monotonic() - t0, 1)
    trial.detail["tasks_per_host"] = _tasks_since(logs, offsets)
    gc.collect()  # submitted results unsubscribe from Redis when collected: now, while it is reachable
    time.sleep(2.0)  # a straggling memorize of the first submission may still write: let it land
    dump = judge(cluster, counts, reference, trial)
    trial.seconds = round(time.monotonic() - began, 1)
    return trial, dump


def _tasks_since(logs: Path, offsets: dict[str, int]) -> dict[str, int]:
    """Tasks each worker host finished since `offsets` (its log's size then), from its worker's log lines."""
    from bench.perception_celery import TASK_LINE

    out = {}
    for f in sorted(logs.glob("w*-worker.log")):
        text = f.read_bytes()[offsets.get(f.name, 0):].decode("utf-8", "replace")
        out[f.name.split("-")[0]] = len(TASK_LINE.findall(text))
    return out


def _all_memorized(cluster: Cluster, counts: dict[str, int]) -> bool:
    return all(_states_done(cluster, v, n, memorized_only=True) for v, n in counts.items())


def campaign(faults: list[str], trials: int, seed: int, keep_logs: Path | None,
             report: Callable[[Trial], None]) -> dict[str, Any]:
    with Hosts(keep_logs=keep_logs) as hosts:
        cluster = start_cluster(hosts)
        ref, reference = run_trial(cluster, None, seed, None)
        report(ref)
        if ref.stuck or ref.memorized != ref.clips or ref.missing or ref.orphaned or ref.orphans:
            raise RuntimeError(f"the single-host reference run is not sound: {ref}")
        results = []
        for k in range(trials):
            for fault in faults:
                trial, _ = run_trial(cluster, fault, seed + k, reference)
                results.append(trial)
                report(trial)
        return {"tag": hosts.tag, "work": str(hosts.work), "timings": cluster.timings, "reference": ref.__dict__,
                "trials": [t.__dict__ | {"ok": t.ok} for t in results],
                "summary": {f: {"trials": sum(t.fault == f for t in results),
                                "passed": sum(t.ok for t in results if t.fault == f)} for f in faults}}


def host_figures(logs: Path) -> dict[str, dict[str, Any]]:
    """Per worker host, from its worker's own log lines (bench.perception_celery.TASK_LINE): tasks it ran, and
    the median seconds of each step there."""
    import statistics

    from bench.perception_celery import TASK_LINE

    out: dict[str, dict[str, Any]] = {}
    for log_file in sorted(logs.glob("w*-worker.log")):
        steps: dict[str, list[float]] = {}
        for m in TASK_LINE.finditer(log_file.read_text(errors="replace")):
            steps.setdefault(m.group(1).rsplit(".", 1)[-1], []).append(float(m.group(2)))
        out[log_file.name.split("-")[0]] = {
            "tasks": sum(len(v) for v in steps.values()),
            "median_s": {k: round(statistics.median(v), 2) for k, v in sorted(steps.items())}}
    return out


def markdown(result: dict[str, Any]) -> str:
    """The campaign's table for docs/reliability.md: one row per fault, from the JSON `--out` wrote."""
    import statistics

    rows = ["| fault | trials | passed | graph equal | clips memorized | stuck | missing / orphaned objects "
            "| resubmitted | worker restarts | median ingest s |", "|---|---|---|---|---|---|---|---|---|---|"]
    trials = result.get("trials") or result.get("partial") or []
    for fault in FAULTS:
        ts = [t for t in trials if t["fault"] == fault]
        if not ts:
            continue
        rows.append(
            f"| {fault} | {len(ts)} | {sum(t['ok'] for t in ts)} | {sum(t['equal'] for t in ts)} "
            f"| {sum(t['memorized'] for t in ts)}/{sum(t['clips'] for t in ts)} | {sum(t['stuck'] for t in ts)} "
            f"| {sum(len(t['missing']) for t in ts)} / {sum(len(t['orphaned']) for t in ts)} "
            f"| {sum(bool(t['resubmitted']) for t in ts)} "
            f"| {sum(len(t['detail'].get('worker_restarts', [])) for t in ts)} "
            f"| {statistics.median(t['ingest_s'] for t in ts):.1f} |")
    return "\n".join(rows)


def _print(trial: Trial) -> None:
    print(f"{trial.fault} seed {trial.seed}: {'ok' if trial.ok else 'FAILED'} clips {trial.memorized}/{trial.clips} "
          f"memorized, stuck {trial.stuck}, equal {trial.equal}, resubmitted {trial.resubmitted}, "
          f"missing {len(trial.missing)}, orphaned {len(trial.orphaned)}, ingest {trial.ingest_s} s, "
          f"trial {trial.seconds} s {trial.detail} {trial.diff or ''}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--faults", default=",".join(FAULTS), help=f"comma-separated, of {', '.join(FAULTS)}")
    parser.add_argument("--trials", type=int, default=5, help="trials of each fault")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None, help="write the results as JSON")
    parser.add_argument("--logs", type=Path, default=None, help="keep the hosts' logs here")
    parser.add_argument("--table", type=Path, default=None, help="print the table of an --out file")
    add_smoke(parser, "the reference run and one store-partition trial (a minute or more: a whole cluster starts)")
    args = apply_smoke(parser.parse_args(argv), faults="store", trials=1)
    if args.table is not None:
        print(markdown(json.loads(args.table.read_text())))
        return 0
    faults = [f for f in args.faults.split(",") if f]
    if unknown := [f for f in faults if f not in FAULTS]:
        parser.error(f"unknown fault(s) {unknown}")
    logging.basicConfig(level=logging.WARNING)

    def report(trial: Trial) -> None:
        _print(trial)
        if args.out is not None:
            done.append(trial.__dict__ | {"ok": trial.ok})
            args.out.write_text(json.dumps({"partial": done}, indent=2, default=str))

    done: list[dict[str, Any]] = []
    result = campaign(faults, args.trials, args.seed, args.logs, report)
    if args.logs is not None:
        result["hosts"] = host_figures(args.logs)
    print(json.dumps(result["summary"] | {"timings": result["timings"], "hosts": result.get("hosts")}, indent=2))
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=2, default=str))
    return 0 if all(t["ok"] for t in result["trials"]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
