"""The product wheel holds the product only: no development kit, no benchmarks, and it still runs.

Why: `pip install m3graph` used to install 5.7k lines of evaluation runners, test-media generators and their data.
The wheel is built from this checkout exactly as `pip install .` would build it, installed without dependencies
into a folder that shadows the editable checkout, and then used: its CLI starts, its named queries load, and
`m3graph eval` says in one line where the command lives instead of failing at import.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # No build isolation: the venv's setuptools builds it, so the test needs no registry.
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(REPO), "--no-deps", "--no-build-isolation", "-q",
                    "--disable-pip-version-check", "-w", str(out)], check=True, timeout=300)
    (found,) = out.glob("m3graph-*.whl")
    return found


def test_wheel_leaves_out_the_development_kit_and_benchmarks(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n == "m3graph/cli/__init__.py" for n in names)
    assert any(n.startswith("m3graph/cypher/search/") for n in names)
    assert [n for n in names if n.startswith(("m3graph/devkit/", "bench/", "tests/"))] == []


def test_installed_wheel_runs_without_the_development_kit(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--disable-pip-version-check",
                    "--target", str(target), str(wheel)], check=True, timeout=300)
    # -S: no site module, so the checkout's editable-install hook (a .pth file) cannot put the development kit
    # back; the dependencies still come from this environment's site-packages, after the installed wheel.
    site = sysconfig.get_paths()["purelib"]
    env = {"PYTHONPATH": f"{target}{os.pathsep}{site}", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    probe = ("import importlib.util, m3graph, m3graph.cli\n"
             "from m3graph.cypher import query\n"
             f"assert m3graph.__file__.startswith({str(target)!r}), m3graph.__file__\n"
             "assert importlib.util.find_spec('m3graph.devkit') is None\n"
             "print(query('search/all_videos').mode)\n")
    done = subprocess.run([sys.executable, "-S", "-c", probe], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "read"

    cli = subprocess.run([sys.executable, "-S", "-m", "m3graph.cli", "eval", "m3bench", "--stats-only"], env=env,
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert cli.returncode == 2, cli.stdout + cli.stderr
    assert "development kit" in cli.stderr and "pip install -e" in cli.stderr
