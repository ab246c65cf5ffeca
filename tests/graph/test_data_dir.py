"""The data directory is absolute, fixed when the settings are built, and deletion follows it: a delete run from
any working directory removes every stored copy (cuts, crops, snippets, shared files' copies), and a copy the graph
names but the store lacks is reported with a non-zero exit, never passed over (issue 37, item 8). The deletes run
through the real `m3graph` command against the suite's server."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from m3graph.cli import exit_codes
from m3graph.graphdb.store import MemoryGraph
from m3graph.settings import load_settings
from tests.graph.test_storage import _local_files, _stage_in_store
from tests.helpers.graph import rows, with_settings

ENTRY = [sys.executable, "-c", "from m3graph.cli import run; run()"]
PHOTO = "files/ab/abcdef.png"  # a shared photo's stored copy, held by session 0 of the staged video


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("M3GRAPH_", "NEO4J_"))}


def test_a_relative_data_dir_becomes_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """From the config file: its own folder anchors it; from anywhere else: the working directory at start."""
    for key in [k for k in os.environ if k.startswith("M3GRAPH_")]:
        monkeypatch.delenv(key)
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    home.mkdir()
    elsewhere.mkdir()
    (home / "m3graph.toml").write_text('data_dir = "media/../data"\n')
    monkeypatch.chdir(elsewhere)
    assert load_settings().data_dir == elsewhere / ".m3graph" / "data"  # the default, from the working directory
    assert load_settings(data_dir="rel").data_dir == elsewhere / "rel"
    monkeypatch.setenv("M3GRAPH_CONFIG", str(home / "m3graph.toml"))
    settings = load_settings()
    assert settings.data_dir == home / "data" and settings.data_dir.is_absolute()
    monkeypatch.chdir(tmp_path)  # fixed once: a later change of directory moves nothing
    assert settings.data_dir == home / "data"
    monkeypatch.setenv("M3GRAPH_DATA_DIR", "from-env")  # not from the file: the working directory anchors it
    assert load_settings().data_dir == tmp_path / "from-env"
    monkeypatch.setenv("M3GRAPH_DATA_DIR", str(elsewhere / "abs"))
    assert load_settings().data_dir == elsewhere / "abs"


@pytest.fixture
def staged(graph: MemoryGraph, tmp_path: Path) -> tuple[MemoryGraph, Path]:
    """A video staged as a worker leaves it, in the data directory `home/data` that `home/m3graph.toml` names
    relatively, with a shared photo held by its first session."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "m3graph.toml").write_text('data_dir = "data"\n')
    g = with_settings(graph, graph.settings.model_copy(update={"data_dir": home / "data"}))
    _stage_in_store(g, "dv", 2)
    (home / "data" / PHOTO).parent.mkdir(parents=True)
    (home / "data" / PHOTO).write_bytes(b"png")
    with g.ex.session() as session:
        session.run("MATCH (c:Clip {clip_key: 'dv#0'}) "
                    "CREATE (c)-[:HAS_FILE]->(:File {sha256: 'abcdef', stored: $stored, kind: 'image'})",
                    stored=PHOTO).consume()
    return g, home


def _m3graph(g: MemoryGraph, home: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The command as a user runs it from `cwd`, with the config file in `home` (which names the data dir)."""
    cwd.mkdir(exist_ok=True)
    env = _clean_env() | {"NEO4J_URI": g.settings.bolt_uri, "M3GRAPH_NEO4J_USER": g.settings.neo4j_user,
                          "M3GRAPH_NEO4J_PASSWORD": g.settings.neo4j_password.get_secret_value(),
                          "M3GRAPH_CONFIG": str(home / "m3graph.toml"), "OMP_WAIT_POLICY": "PASSIVE"}
    return subprocess.run([*ENTRY, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_delete_from_another_directory_removes_every_stored_copy(staged: tuple[MemoryGraph, Path],
                                                                 tmp_path: Path) -> None:
    g, home = staged
    data = home / "data"
    assert [f for f in _local_files(data) if f.startswith("videos/dv/crops/")] and (data / PHOTO).is_file()
    done = _m3graph(g, home, tmp_path / "elsewhere", "delete", "video", "dv", "--yes")
    assert done.returncode == exit_codes.OK, done.stderr
    assert "deleted video dv (2 clips)" in done.stdout
    assert _local_files(data / "videos") == [] and not (data / PHOTO).exists()
    assert _local_files(tmp_path / "elsewhere") == []  # nothing was looked for, or made, where it ran
    assert rows(g, "MATCH (n) WHERE n.video_id = 'dv' OR n:File RETURN n") == []


def test_a_missing_copy_is_reported_after_the_rest_is_deleted(staged: tuple[MemoryGraph, Path],
                                                              tmp_path: Path) -> None:
    g, home = staged
    data = home / "data"
    lost = sorted(f for f in _local_files(data) if f.startswith("videos/dv/crops/00001/"))[0]
    (data / lost).unlink()
    failed = _m3graph(g, home, tmp_path / "elsewhere", "delete", "clip", "dv", "1", "--yes")
    assert failed.returncode == exit_codes.FAILED_ITEMS, failed.stderr
    assert lost in failed.stderr and str(data) in failed.stderr and "clip dv#1 was deleted" in failed.stderr
    # The graph part is complete and consistent, and every copy that was there is gone.
    assert g.clip("dv", 1) is None and g.clip("dv", 0) is not None
    assert rows(g, "MATCH (o) WHERE (o:FaceObs OR o:Utterance) AND o.clip_index = 1 RETURN o") == []
    assert not [f for f in _local_files(data) if "00001" in f or "clip_1_" in f]
    # A clean delete of the rest still says nothing but what it did.
    done = _m3graph(g, home, tmp_path / "elsewhere", "delete", "video", "dv", "--yes")
    assert done.returncode == exit_codes.OK and done.stderr == "", done.stderr
    assert _local_files(data / "videos") == []


def test_a_character_delete_reports_a_missing_crop(staged: tuple[MemoryGraph, Path], tmp_path: Path) -> None:
    g, home = staged
    data = home / "data"
    (face,) = [r["id"] for r in rows(g, "MATCH (o:FaceObs {cluster_label: 0})-[:OF]->(f:Face) "
                                        "RETURN DISTINCT f.entity_id AS id")]
    (crop,) = [r["k"] for r in rows(g, "MATCH (o:FaceObs {cluster_label: 0, clip_index: 0}) "
                                       "RETURN o.crop_uri AS k ORDER BY k LIMIT 1")]
    (data / crop).unlink()
    char = g.characters_of([face])[face]
    failed = _m3graph(g, home, tmp_path / "elsewhere", "delete", "character", str(char), "--yes")
    assert failed.returncode == exit_codes.FAILED_ITEMS and crop in failed.stderr, failed.stderr
    assert g.characters_of([face]) == {}
    assert not [f for f in _local_files(data) if "/crops/" in f and "/p0_" in f]
    assert [f for f in _local_files(data) if "/crops/" in f and "/p1_" in f]  # the other person's stay
