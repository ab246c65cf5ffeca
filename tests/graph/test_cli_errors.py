"""The `m3graph` command over bad inputs: one line on stderr, no traceback, the documented exit status.

Runs the installed entry point (`m3graph.cli:run`) in a subprocess, as a user would, against the session's server
(NEO4J_URI), with settings from the environment only. Exit statuses: README "Exit codes" and
`m3graph.cli.exit_codes`.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from m3graph.cli import exit_codes
from m3graph.graphdb.store import MemoryGraph
from tests.helpers.graph import canonical_dump

ENTRY = [sys.executable, "-c", "from m3graph.cli import run; run()"]


class _Evil:
    def __reduce__(self) -> tuple[object, tuple[str]]:
        return os.system, ("echo pwned > /dev/null",)


def _m3graph(graph: MemoryGraph, cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("M3GRAPH_", "NEO4J_"))}
    base |= {"NEO4J_URI": graph.settings.bolt_uri, "M3GRAPH_NEO4J_USER": graph.settings.neo4j_user,
             "M3GRAPH_NEO4J_PASSWORD": graph.settings.neo4j_password.get_secret_value(),
             "M3GRAPH_DATA_DIR": str(cwd / "data"), "OMP_WAIT_POLICY": "PASSIVE", **env}
    return subprocess.run([*ENTRY, *args], cwd=cwd, env=base, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cli-inputs")
    (root / "notes.mp4").write_text("a shopping list, not a video\n")
    (root / "evil.pkl").write_bytes(pickle.dumps(_Evil()))
    (root / "bad.toml").write_text("fps = [\n")
    return root


# (arguments, extra environment, exit status, what the one line must say)
CASES: dict[str, tuple[list[str], dict[str, str], int, str]] = {
    "video-id-with-slash": (["ingest", "--video-id", "a/b", "{in}/notes.mp4"], {}, exit_codes.DATA,
                            "invalid source id 'a/b'"),
    "missing-video": (["ingest", "{in}/absent.mp4"], {}, exit_codes.USAGE, "does not exist"),
    "malformed-toml": (["stats"], {"M3GRAPH_CONFIG": "{in}/bad.toml"}, exit_codes.CONFIG,
                       "bad.toml is not valid TOML"),
    "config-file-missing": (["stats"], {"M3GRAPH_CONFIG": "{in}/none.toml"}, exit_codes.CONFIG,
                            "none.toml, which is not a file"),
    "env-port-not-a-number": (["stats"], {"M3GRAPH_LOCAL__PORT": "abc"}, exit_codes.CONFIG, "local.port"),
    "malicious-pickle": (["import-m3", "{in}/evil.pkl", "--video", "cli-evil"], {}, exit_codes.DATA,
                         "forbidden global"),
    "pickle-bad-video-id": (["import-m3", "{in}/evil.pkl", "--video", "x' OR 1=1"], {}, exit_codes.DATA,
                            "invalid source id"),
    "delete-unknown-clip": (["delete", "clip", "no-such-video", "3"], {}, exit_codes.NOT_FOUND,
                            "clip no-such-video#3 does not exist"),
    # Numeric and text inputs of the service's requests (m3graph.service.requests): refused before any query.
    "search-k-zero": (["search", "coffee", "-k", "0"], {}, exit_codes.DATA,
                      "k: Input should be greater than or equal to 1 (got 0)"),
    "search-before-clip-negative": (["search", "coffee", "--before-clip", "-1"], {}, exit_codes.DATA,
                                    "before_clip: Input should be greater than or equal to 0 (got -1)"),
    "search-before-clip-huge": (["search", "coffee", "--before-clip", "99999999999999999999999"], {},
                                exit_codes.DATA, "before_clip: Input should be less than or equal to"),
    "search-empty-query": (["search", ""], {}, exit_codes.DATA, "invalid search request: query: is empty"),
    "search-threshold-nan": (["search", "coffee", "--threshold", "nan"], {}, exit_codes.DATA,
                             "threshold: must be a finite number"),
    "search-threshold-above-one": (["search", "coffee", "--threshold", "5"], {}, exit_codes.DATA,
                                   "threshold: Input should be less than or equal to 1"),
    "search-window-reversed": (["search", "coffee", "--since", "2024-02-01", "--until", "2024-01-01"], {},
                               exit_codes.DATA, "is after until"),
    "stats-unknown-video": (["stats", "--video", "nope"], {}, exit_codes.NOT_FOUND, "no source 'nope' in the graph"),
    "ask-negative-rounds": (["ask", "why", "--rounds", "-1", "--video", "nope"], {}, exit_codes.DATA,
                            "rounds: Input should be greater than or equal to 1 (got -1)"),
    "ask-unknown-video": (["ask", "why", "--video", "nope"], {}, exit_codes.NOT_FOUND,
                          "no source 'nope' in the graph"),
    "ingest-not-a-video": (["ingest", "{in}/notes.mp4"], {}, exit_codes.FAILED_ITEMS,
                           "notes: FAILED before its first clip: InvalidVideoError"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_cli_refuses_bad_input_in_one_line(case: str, graph: MemoryGraph, inputs: Path, tmp_path: Path) -> None:
    args, env, status, says = CASES[case]
    before = canonical_dump(graph)
    proc = _m3graph(graph, tmp_path, *[a.format(**{"in": inputs}) for a in args],
                    **{k: v.format(**{"in": inputs}) for k, v in env.items()})
    out = proc.stdout + proc.stderr
    assert "Traceback" not in out, out
    assert proc.returncode == status, (proc.returncode, out)
    errors = [line for line in proc.stderr.splitlines() if line.startswith(("error:", "Error:"))]
    assert len(errors) == 1, proc.stderr
    assert says in out, out
    assert canonical_dump(graph) == before


def test_exit_codes_are_distinct_and_documented() -> None:
    codes = {name: value for name, value in vars(exit_codes).items() if name.isupper() and isinstance(value, int)}
    assert len(set(codes.values())) == len(codes), codes
    page = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text(encoding="utf-8")
    section = page.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    for value in codes.values():
        assert f"| {value} |" in section, f"exit status {value} is not in docs/cli.md 'Exit codes'"
