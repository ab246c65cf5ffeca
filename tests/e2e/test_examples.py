"""The Python library as a newcomer meets it: the README's quick start and the three examples, run as written.

Each runs in its own process from the repository root, against the session's real Neo4j (NEO4J_URI set, so
`Memory.open()` starts nothing), with the offline models; the assertions read what they print, as a person would.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from m3graph.devkit.testmedia import Manifest
from m3graph.graphdb.store import MemoryGraph
from m3graph.settings import Settings
from tests.unit.test_docs import readme_quickstart

REPO = Path(__file__).resolve().parents[2]


def _run(settings: Settings, args: list[str], timeout: float = 600) -> str:
    env = {**os.environ, "NEO4J_URI": settings.bolt_uri, "NEO4J_USER": settings.neo4j_user,
           "NEO4J_PASSWORD": settings.neo4j_password.get_secret_value(), "NEO4J_DATABASE": settings.neo4j_database,
           "OMP_WAIT_POLICY": "PASSIVE"}
    done = subprocess.run([sys.executable, *args], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_the_readme_quick_start_runs_and_answers(graph: MemoryGraph) -> None:
    out = _run(graph.settings, ["-c", readme_quickstart((REPO / "README.md").read_text(encoding="utf-8"))])
    lines = out.strip().splitlines()
    # Each hit: the speaker's name, the line, and the memory id that cites it; then the answer.
    assert any(line.startswith("Nora ") and "Porto" in line and "team-chat#0#" in line for line in lines[:-1]), out
    assert "Porto" in lines[-1], out
    assert graph.video_exists("team-chat")


def test_the_chat_memory_example(graph: MemoryGraph) -> None:
    out = _run(graph.settings, ["examples/chat_memory.py"])
    hits, answer = out.strip().splitlines()[:-1], out.strip().splitlines()[-1]
    assert hits and hits[0].startswith("example-chat#0  Sam: Four times a week"), out
    assert answer.startswith("answer:") and "Lisbon" in answer, out
    assert not graph.video_exists("example-chat")  # the example cleans up after itself


def test_the_facts_that_change_example(graph: MemoryGraph) -> None:
    out = _run(graph.settings, ["examples/facts_that_change.py"])
    assert "lives in: Lisbon (no longer) -> Porto" in out, out
    assert "manager: Ana" in out
    assert out.splitlines()[2].startswith("now: Nora moved to Porto."), out


@pytest.mark.usefixtures("graph")
def test_the_video_people_example(memory_graph: MemoryGraph, media: Manifest) -> None:
    out = _run(memory_graph.settings, ["examples/video_people.py", media.video("tm-a").path], timeout=900)
    head, *people = out.strip().splitlines()[-3:]
    assert head.endswith("2 clips, 2 people"), out
    assert all("1 faces, 1 voices" in p for p in people), out
