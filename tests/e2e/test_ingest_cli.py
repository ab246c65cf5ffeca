"""`m3graph ingest` in-process: progress per clip and stage, the per-video summary, failures with their clip.

The real command (click's CliRunner, so stdout is not a terminal) on the real 30 s tm-b video against the
session's Neo4j; the renderer's terminal mode is checked on a fake terminal stream.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from m3graph.cli import main
from m3graph.cli.ingest import ProgressView
from m3graph.devkit.testmedia import Manifest
from m3graph.graphdb.clip_state import ClipState
from m3graph.graphdb.store import MemoryGraph
from m3graph.reasoning.perception_memorizer import ClipPerception, Memorization
from m3graph.settings import Settings
from m3graph.tasks.follow import WorkerJob, clip_stage, poll_job
from tests.helpers.graph import perception_graph, variant, wipe


@pytest.fixture(scope="module")
def cli_settings(memory_graph: MemoryGraph, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """Perception settings at 2 fps with the perception memorizer: the CLI is under test here, not detection or
    the chat model, so a clip costs less and its memories are deterministic."""
    graph = perception_graph(memory_graph, tmp_path_factory.mktemp("cli-data"))
    settings = variant(graph.settings, llm={"memorize": {"backend": "none"}})
    return settings.model_copy(update={"neo4j_uri": memory_graph.settings.bolt_uri, "fps": 2.0})


@pytest.fixture(scope="module")
def ingested(memory_graph: MemoryGraph, media: Manifest, cli_settings: Settings) -> str:
    wipe(memory_graph)
    result = CliRunner().invoke(main, ["ingest", str(media.path("tm-b")), "--video-id", "tm-b-cli"],
                                obj=cli_settings)
    assert result.exit_code == 0, result.output
    return result.output


def test_progress_names_video_clip_count_and_stages(ingested: str) -> None:
    lines = ingested.splitlines()
    progress = [line for line in lines if line.lstrip().startswith("tm-b-cli [")]
    stages = [line.split("clip 1/1 ", 1)[1].split("  ")[0] for line in progress]
    assert stages == ["cut", "faces+voices", "resolve", "memorize", "done"], ingested
    assert progress[-1].lstrip().startswith("tm-b-cli [####################] clip 1/1 done")
    assert "\r" not in ingested and "\x1b" not in ingested  # CI logs get plain lines


def test_summary_counts_entities(ingested: str, memory_graph: MemoryGraph) -> None:
    # tm-b is a meta-clip: one face and one voice, voted the same person, so one character.
    assert "tm-b-cli: 1 clip ingested: 1 face, 1 voice, 1 character, " in ingested
    assert ", 2 new entities" in ingested
    memories = memory_graph.counts("tm-b-cli")["Memory"]
    assert memories > 0 and f"{memories} memories" in ingested
    assert "graph: 1 face, 1 voice, 1 character, " in ingested


class _Broken:
    name = "broken"

    def memorize(self, clip: ClipPerception) -> Memorization:
        raise RuntimeError("model server went away")


def test_failure_shows_clip_stage_and_error(ingested: str, media: Manifest, cli_settings: Settings,
                                            memory_graph: MemoryGraph, monkeypatch: pytest.MonkeyPatch) -> None:
    """Same video id, so cut and perception come from the cache and only the memorizer runs (and fails).

    The clip was ingested before: its memories and entities stay, and it is marked memorize_failed."""
    graph = MemoryGraph(memory_graph.ex, cli_settings)
    before = graph.counts("tm-b-cli")
    assert before["Memory"] > 0
    monkeypatch.setattr("m3graph.reasoning.memorize.make_memorizer", lambda settings: _Broken())
    result = CliRunner().invoke(main, ["ingest", str(media.path("tm-b")), "--video-id", "tm-b-cli"],
                                obj=cli_settings)
    assert result.exit_code == 1
    assert "tm-b-cli: clip 1/1 FAILED at memorize: MemorizeFailedError: " in result.output
    assert "RuntimeError: model server went away" in result.output
    assert "`m3graph memorize tm-b-cli --failed` redoes them" in result.output
    assert "1 video failed: tm-b-cli" in result.output
    assert graph.counts("tm-b-cli") == before  # nothing deleted: the earlier memories and entities stay
    [state] = graph.clip_states("tm-b-cli")
    assert state.state == ClipState.MEMORIZE_FAILED and "model server went away" in (state.reason or "")
    assert "previous memories kept" in (state.reason or "")

    monkeypatch.undo()  # the model is back: `memorize --failed` redoes the clip
    redo = CliRunner().invoke(main, ["memorize", "tm-b-cli", "--failed"], obj=cli_settings)
    assert redo.exit_code == 0, redo.output
    assert "tm-b-cli clip 0: " in redo.output
    assert [s.state for s in graph.clip_states("tm-b-cli")] == [ClipState.MEMORIZED]
    assert graph.counts("tm-b-cli") == before
    again = CliRunner().invoke(main, ["memorize", "tm-b-cli", "--failed"], obj=cli_settings)
    assert again.exit_code == 0 and "no clip is memorize_failed" in again.output


def test_bad_input_fails_before_the_first_clip(cli_settings: Settings, tmp_path: Path) -> None:
    bogus = tmp_path / "notes.mp4"
    bogus.write_text("not a video")
    result = CliRunner().invoke(main, ["ingest", str(bogus)], obj=cli_settings)
    assert result.exit_code == 1
    assert "notes: FAILED before its first clip: InvalidVideoError" in result.output


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_terminal_mode_redraws_one_status_line() -> None:
    out = _Terminal()
    view = ProgressView(out)
    for stage in ("cut", "perceive", "memorize"):
        view.update("v", 0, 2, stage)
    view.update("v", 0, 2, "done")
    view.update("v", 1, 2, "cut")
    text = out.getvalue()
    assert "\r" in text and "\x1b" not in text
    assert "v [" in text and "clip 1/2 faces+voices" in text
    assert text.count("\n") == 1  # only finished clips stay on screen, as lines of their own
    assert "clip 1/2 done" in text.split("\n")[0].split("\r")[-1]


def test_plain_mode_prints_each_change_once() -> None:
    out = io.StringIO()
    view = ProgressView(out)
    view.update("v", 0, 1, "cut")
    view.update("v", 0, 1, "cut")
    view.update("v", 0, 1, "done")
    assert len(out.getvalue().splitlines()) == 2 and "\r" not in out.getvalue()


def test_worker_steps_become_one_stage() -> None:
    assert clip_stage({}) == ("queued", None)
    assert clip_stage({"cut": {"state": "running"}}) == ("cut", None)
    assert clip_stage({"cut": {"state": "done"}, "faces": {"state": "running"},
                       "voices": {"state": "running"}}) == ("faces+voices", None)
    assert clip_stage({"faces": {"state": "done"}, "voices": {"state": "running"}}) == ("voices", None)
    assert clip_stage({"faces": {"state": "done"}, "voices": {"state": "done"},
                       "resolve": {"state": "waiting", "detail": "waiting for clip 0"}}) == (
        "waiting", "waiting for clip 0")
    assert clip_stage({"resolve": {"state": "running"}}) == ("resolve", None)
    assert clip_stage({"resolve": {"state": "done"}, "memorize": {"state": "running"}}) == ("memorize", None)
    assert clip_stage({"voices": {"state": "failed", "error": "X: y"}}) == ("failed", "voices: X: y")
    assert clip_stage({"memorize": {"state": "failed", "error": "X: y"}}) == ("failed", "memorize: X: y")
    assert clip_stage({"resolve": {"state": "done"}, "memorize": {"state": "done", "report": {}}}) == ("done", None)


class _ProgressHash:
    """Just the `hgetall` that reading the workers' progress needs, over a dict of field -> state."""

    def __init__(self) -> None:
        self.fields: dict[str, Any] = {"clip_count": 2}

    def hgetall(self, key: str) -> dict[bytes, bytes]:
        assert key == "m3graph:progress:v"
        return {k.encode(): (json.dumps(v) if isinstance(v, dict) else str(v)).encode() for k, v in self.fields.items()}


class _Pending:
    def ready(self) -> bool:
        return False


def test_worker_progress_shows_each_clip_change_once_and_the_failure() -> None:
    progress, out = _ProgressHash(), io.StringIO()
    view, job = ProgressView(out), WorkerJob("v", [0, 1], 2, _Pending())
    progress.fields["0:cut"] = {"state": "running"}
    poll_job(progress, job, view)
    report = {"faces": [1], "voices": [2], "new_entities": 2, "memories": 3}
    progress.fields.update({"0:cut": {"state": "done"}, "0:faces": {"state": "done"}, "0:voices": {"state": "done"},
                            "0:resolve": {"state": "done"}, "0:memorize": {"state": "done", "report": report},
                            "1:cut": {"state": "running"}})
    poll_job(progress, job, view)
    poll_job(progress, job, view)  # nothing changed: nothing printed
    assert not job.finished and job.reports == {0: report}
    progress.fields["1:faces"] = {"state": "failed", "error": "RuntimeError: boom"}
    poll_job(progress, job, view)
    assert job.finished and job.errors == ["v: clip 2/2 FAILED at faces: RuntimeError: boom"]
    shown = [line.split("] ", 1)[1].rsplit("  ", 1)[0] for line in out.getvalue().splitlines()]
    assert shown == ["clip 1/2 cut", "clip 1/2 done", "clip 2/2 cut", "clip 2/2 failed (faces: RuntimeError: boom)"]
