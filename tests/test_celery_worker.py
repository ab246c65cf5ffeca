# ruff: noqa: F811  (fixtures imported from graph_fixtures are requested by name)
"""A real Celery worker process on a real Redis ingests a generated video into the real Neo4j.

Not eager mode: the worker is `m3graph worker` in its own process, configured only through the environment
(as in production), and the test talks to it only through Redis and the graph.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from graph_fixtures import memory_graph, wipe  # noqa: F401
from test_ingest_e2e import media, perception_graph  # noqa: F401

from m3graph.graphdb.store import MemoryGraph
from m3graph.ingest.testmedia import Manifest
from m3graph.settings import Settings


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
    proc.terminate()
    proc.wait(10)


@pytest.fixture(scope="module")
def worker_settings(memory_graph: MemoryGraph, redis_url: str,
                    tmp_path_factory: pytest.TempPathFactory) -> Settings:
    graph = perception_graph(memory_graph, tmp_path_factory.mktemp("worker-data"))
    return graph.settings.model_copy(update={"tasks": graph.settings.tasks.model_copy(update={"redis_url": redis_url}),
                                             "neo4j_uri": memory_graph.settings.bolt_uri})


@pytest.fixture(scope="module")
def worker(worker_settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[subprocess.Popen[bytes]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("M3GRAPH_", "NEO4J_"))}
    env.update({"NEO4J_URI": worker_settings.bolt_uri, "M3GRAPH_TASKS__REDIS_URL": worker_settings.tasks.redis_url,
                "M3GRAPH_DATA_DIR": str(worker_settings.data_dir), "OMP_WAIT_POLICY": "PASSIVE"})
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
    result.get(timeout=600, propagate=True)
    assert worker.poll() is None, "the worker died"
    assert [r["status"] for r in graph.ex.read("graph/video_progress", video_id="tm-b")] == ["done"]
    counts = graph.counts()
    assert counts["Face"] == 1 and counts["Voice"] == 1 and counts["SAME_AS"] == 1  # a meta-clip
    with graph.ex.session() as session:
        texts = [r["t"] for r in session.run("MATCH (m:Memory {video_id: 'tm-b'}) RETURN m.text AS t")]
    assert any("mango" in t.lower() for t in texts)

    again, _ = submit_video(worker_settings, media.path("tm-b"), "tm-b")  # a redelivered/resubmitted job
    again.get(timeout=600, propagate=True)
    assert graph.counts() == counts
    assert Path(worker_settings.data_dir, "videos", "tm-b", "perception", "clip_0_faces.json").exists()
