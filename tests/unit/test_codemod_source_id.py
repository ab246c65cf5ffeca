"""scripts/codemod_source_id.py (issue 35): renames the `video_id` identifier, never a comment, a compound name or
(without --properties) graph data, and lists the scopes where two names would become one."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "codemod_source_id.py"


def _codemod() -> ModuleType:
    spec = importlib.util.spec_from_file_location("codemod_source_id", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_check_counts_and_dry_run_changes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cm = _codemod()
    (tmp_path / "m3graph" / "cypher").mkdir(parents=True)
    py = tmp_path / "m3graph" / "a.py"
    py.write_text("def f(video_id: str) -> dict:\n    # the video_id of a clip\n"
                  "    return {'video_id': check_video_id(video_id), \"n\": row['video_id']}\n\n\n"
                  "def g(video_id, source_id):\n    return video_id, source_id\n")
    cy = tmp_path / "m3graph" / "cypher" / "q.cypher"
    cy.write_text("// params: video_id\nMATCH (c:Clip {video_id: $video_id}) RETURN c.video_id AS video_id\n")
    before = py.read_text(), cy.read_text()

    assert cm.main(["--check", "--root", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "python-name: 4" in out and "python-key: 2" in out
    assert "cypher-param: 1" in out and "cypher-column: 1" in out and "cypher-property: 2 (not changed" in out
    assert "m3graph/a.py:6: g names both video_id and source_id" in out
    assert cm.main(["--dry-run", "--root", str(tmp_path)]) == 1
    assert "+    return {'source_id': check_video_id(source_id)" in capsys.readouterr().out
    assert (py.read_text(), cy.read_text()) == before  # check and dry run write nothing

    assert cm.main(["--apply", "--root", str(tmp_path)]) == 0
    assert "# the video_id of a clip" in py.read_text() and "check_video_id(source_id)" in py.read_text()
    assert cy.read_text().endswith("MATCH (c:Clip {video_id: $source_id}) RETURN c.video_id AS source_id\n")
    capsys.readouterr()
    assert cm.main(["--check", "--root", str(tmp_path)]) == 0  # applied: nothing left but graph data
    assert "cypher-property: 2 (not changed" in capsys.readouterr().out
