"""A real Celery worker process on a real Redis ingests a generated video into the real Neo4j.

Not eager mode: the worker is `m3graph worker` in its own process, configured only through the environment
(as in production), and the test talks to it only through Redis and the graph. Besides the basic workflow:
commits stay in clip order across separate submissions of one video, the per-video lock survives a crashed
holder, and `m3graph ingest --celery` shows the workers' progress.
"""

from __future__ import annotations

import gc
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from click.testing import CliRunner

from m3graph.cli import main
from m3graph.devkit.testmedia import Manifest
from m3graph.graphdb.store import MemoryGraph
from m3graph.settings import Settings
from tests.helpers.graph import canonical_dump, perception_graph, rows, variant, wipe


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    server = shutil.which("redis-server")
    if server is None:
        pytest.fail("redis-server is not installed (scripts/setup.sh installs the Debian package)")
    port = _free_port()
    work = tmp_path_factory.mktemp("redis")
    proc = subprocess.Popen([server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", str(work)], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            time.sleep(0.1)
    else:
        proc.kill()
        pytest.fail("redis-server did not start")
    yield f"redis://127.0.0.1:{port}/0"
    gc.collect()  # Celery results unsubscribe when collected: let them do it while the server still runs
    proc.terminate()
    proc.wait(10)


@pytest.fixture(scope="module")
def worker_settings(memory_graph: MemoryGraph, redis_url: str,
                    tmp_path_factory: pytest.TempPathFactory) -> Settings:
    graph = perception_graph(memory_graph, tmp_path_factory.mktemp("worker-data"))
    settings = variant(graph.settings, tasks={"redis_url": redis_url})
    return variant(settings, llm={"memorize": {"backend": "none"}}).model_copy(
        update={"neo4j_uri": memory_graph.settings.bolt_uri})


@pytest.fixture(scope="module")
def worker(worker_settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[subprocess.Popen[bytes]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("M3GRAPH_", "NEO4J_"))}
    # The perception memorizer: these tests are about workers, ordering and progress, not the chat model.
    env.update({"NEO4J_URI": worker_settings.bolt_uri, "M3GRAPH_TASKS__REDIS_URL": worker_settings.tasks.redis_url,
                "M3GRAPH_DATA_DIR": str(worker_settings.data_dir), "OMP_WAIT_POLICY": "PASSIVE",
                "M3GRAPH_LLM__MEMORIZE__BACKEND": "none",
                # The worker's own password (the launcher may run with auth): it never travels in a message.
                "NEO4J_PASSWORD": worker_settings.neo4j_password.get_secret_value()})
    log = (tmp_path_factory.mktemp("worker") / "worker.log").open("wb")
    proc = subprocess.Popen([sys.executable, "-m", "m3graph.cli", "worker", "-c", "2"], env=env, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    yield proc
    proc.terminate()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


def test_workers_get_the_secrets_intact() -> None:
    """Regression (issue 9, Why 2): the app passed settings to its processes as `model_dump_json()`, which writes
    every SecretStr as "**********": workers logged in to Neo4j, and called the LLM, with asterisks."""
    import threading

    from pydantic import SecretStr

    from m3graph.tasks import ingest as tasks
    from m3graph.tasks.app import app, configure

    settings = Settings(neo4j_password=SecretStr("pw-\u00e9-not-default"),
                        llm={"memorize": {"backend": "openai", "api_key": "sk-test-key"}})
    configure(settings)
    seen: list[Settings] = []
    worker_thread = threading.Thread(target=lambda: seen.append(tasks._settings()))  # a fresh process-local cache
    worker_thread.start()
    worker_thread.join()
    (built,) = seen
    assert built.neo4j_password.get_secret_value() == "pw-\u00e9-not-default"
    assert built.llm.memorize.api_key.get_secret_value() == "sk-test-key"
    assert "pw-" not in repr(app.conf.table(with_defaults=False))  # no secret in the app's (printable) config


def test_worker_ingests_a_video_and_a_retry_changes_nothing(memory_graph: MemoryGraph, media: Manifest,
                                                            worker_settings: Settings,
                                                            worker: subprocess.Popen[bytes]) -> None:
    from m3graph.tasks.app import configure
    from m3graph.tasks.ingest import submit_video

    wipe(memory_graph)
    graph = MemoryGraph(memory_graph.ex, worker_settings)
    configure(worker_settings)
    result, total = submit_video(worker_settings, media.path("tm-b"), "tm-b")
    assert total == 1
    result.get(timeout=600, propagate=True)  # the chain ends with the last resolve; memorize runs beside it
    _wait_for(lambda: _states(graph, "tm-b") == ["memorized"], 600, "tm-b to be memorized")
    assert worker.poll() is None, "the worker died"
    counts = graph.counts()
    assert counts["Face"] == 1 and counts["Voice"] == 1 and counts["SAME_AS"] == 1  # a meta-clip
    with graph.ex.session() as session:
        texts = [r["t"] for r in session.run("MATCH (m:Memory {video_id: 'tm-b'}) RETURN m.text AS t")]
    assert any("mango" in t.lower() for t in texts)

    again, _ = submit_video(worker_settings, media.path("tm-b"), "tm-b")  # a redelivered/resubmitted job
    again.get(timeout=600, propagate=True)
    _wait_for(lambda: _states(graph, "tm-b") == ["memorized"], 600, "tm-b to be memorized again")
    assert graph.counts() == counts
    assert Path(worker_settings.data_dir, "videos", "tm-b", "perception", "clip_0_faces.json").exists()


def _states(graph: MemoryGraph, video: str) -> list[str | None]:
    return [p.state.value if p.state else None for p in graph.clip_states(video)]


def _wait_for(predicate, timeout_s: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.5)


def test_commits_follow_clip_order_across_submissions(memory_graph: MemoryGraph, media: Manifest,
                                                      worker_settings: Settings,
                                                      worker: subprocess.Popen[bytes]) -> None:
    """Clip 1 is submitted alone first (as a live stream's later file could be); its resolve must wait."""
    from m3graph.tasks.app import configure
    from m3graph.tasks.ingest import plan_source, redis_client, submit_clips
    from m3graph.tasks.progress import read_progress

    wipe(memory_graph)
    graph = MemoryGraph(memory_graph.ex, worker_settings)
    configure(worker_settings)
    client = redis_client(worker_settings)
    indexes, total = plan_source(worker_settings, media.path("tm-a"), "tm-a")
    assert indexes == [0, 1] and total == 2
    late = submit_clips(worker_settings, "tm-a", [1], total)

    def resolve_state() -> str | None:
        return read_progress(client, "tm-a")[1].get(1, {}).get("resolve", {}).get("state")

    _wait_for(lambda: resolve_state() == "waiting", 600, "clip 1's resolve to wait for clip 0")
    assert _states(graph, "tm-a")[1] in ("planned", "perceived")  # clip 1 was not resolved while it waited
    assert graph.counts("tm-a").get("FaceObs", 0) == 0
    early = submit_clips(worker_settings, "tm-a", [0], total)
    early.get(timeout=600, propagate=True)
    late.get(timeout=600, propagate=True)
    _wait_for(lambda: _states(graph, "tm-a") == ["memorized", "memorized"], 600, "tm-a to be memorized")
    assert worker.poll() is None, "the worker died"
    # Ids are allocated in clip order: Obama and voice A (clip 0) before Biden and voice B (first seen in clip 1).
    first_seen = rows(graph, "MATCH (e)<-[:OF]-(o) WHERE e:Face OR e:Voice "
                             "RETURN e.entity_id AS id, min(o.clip_index) AS clip ORDER BY id")
    assert [r["clip"] for r in first_seen] == sorted(r["clip"] for r in first_seen)
    assert {r["clip"] for r in first_seen} == {0, 1}
    assert client.get("m3graph:video:tm-a") is None  # the lock was released
    client.close()


def test_two_submissions_of_one_video_at_once_duplicate_nothing(memory_graph: MemoryGraph, media: Manifest,
                                                                 worker_settings: Settings,
                                                                 worker: subprocess.Popen[bytes]) -> None:
    """Two `ingest --celery` of the same video race on two worker processes: the graph ends exactly as after one
    submission (canonical dump), entity ids in clip order."""
    from m3graph.tasks.app import configure
    from m3graph.tasks.ingest import plan_source, submit_clips

    configure(worker_settings)
    graph = MemoryGraph(memory_graph.ex, worker_settings)
    dumps = []
    for submissions in (2, 1):
        wipe(memory_graph)
        indexes, total = plan_source(worker_settings, media.path("tm-a"), "tm-a")
        results = [submit_clips(worker_settings, "tm-a", indexes, total) for _ in range(submissions)]
        for result in results:
            result.get(timeout=600, propagate=True)
        _wait_for(lambda: _states(graph, "tm-a") == ["memorized", "memorized"], 600, "tm-a to be memorized")
        time.sleep(2)  # a second memorize of a clip may still be writing the same memories: let it finish
        _wait_for(lambda: _states(graph, "tm-a") == ["memorized", "memorized"], 600, "tm-a to settle")
        dumps.append(canonical_dump(graph))
        first_seen = rows(graph, "MATCH (e)<-[:OF]-(o) WHERE e:Face OR e:Voice "
                                 "RETURN e.entity_id AS id, min(o.clip_index) AS clip ORDER BY id")
        assert [r["clip"] for r in first_seen] == sorted(r["clip"] for r in first_seen)
    assert worker.poll() is None, "the worker died"
    changed = sorted(set(dumps[0]) ^ set(dumps[1]))
    assert not changed, [re.sub(r"\('embedding', '\[[^]]*\]'\)", "('embedding', ...)", line)[:600]
                         for line in changed]


def test_video_lock_excludes_and_expires_after_a_crash(worker_settings: Settings) -> None:
    from m3graph.tasks.ordering import video_lock
    from m3graph.tasks.runtime import redis_client

    client = redis_client(worker_settings)
    try:
        with video_lock(client, "lock-test", ttl_s=1.0, wait_s=0.1) as held:
            assert held
            time.sleep(1.5)  # longer than the TTL: the heartbeat keeps it
            with video_lock(client, "lock-test", ttl_s=1.0, wait_s=0.1) as other:
                assert not other
        with video_lock(client, "lock-test", ttl_s=1.0, wait_s=0.1) as again:
            assert again  # released on exit
        # A holder that dies without releasing: the key simply expires.
        crashed = client.lock("m3graph:video:lock-test", timeout=1.0)
        assert crashed.acquire(blocking=False)
        with video_lock(client, "lock-test", ttl_s=1.0, wait_s=0.1) as busy:
            assert not busy
        with video_lock(client, "lock-test", ttl_s=1.0, wait_s=2.0) as after_expiry:
            assert after_expiry
    finally:
        client.delete("m3graph:video:lock-test")
        client.close()


def test_cli_shows_worker_progress_and_summary(memory_graph: MemoryGraph, media: Manifest,
                                               worker_settings: Settings, worker: subprocess.Popen[bytes]) -> None:
    """tm-b's perception is cached from the first test, so this exercises the progress path, not the models."""
    wipe(memory_graph)
    result = CliRunner().invoke(main, ["ingest", "--celery", str(media.path("tm-b"))], obj=worker_settings)
    assert result.exit_code == 0, result.output
    out = result.output
    assert "tm-b: queued 1 clip of 1" in out
    assert "clip 1/1 done" in out
    assert "tm-b: 1 clip ingested: 1 face, 1 voice, 1 character" in out
    assert "\r" not in out and "\x1b" not in out  # not a terminal: plain lines only
    status = redis.Redis.from_url(worker_settings.tasks.redis_url).hget("m3graph:progress:tm-b", "0:memorize")
    assert status is not None and b'"done"' in status
