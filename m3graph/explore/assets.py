"""Builds the explorer's static assets (the graph view bundled with cytoscape.js) with npm and esbuild.

The graph library comes from the npm registry at the versions pinned in web/package-lock.json and is bundled by
the project's own build step; nothing third-party is committed. Setup runs this once; the bundle is rebuilt
only when the sources or the lock file are newer than it.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from m3graph.errors import ConfigError

WEB = Path(__file__).resolve().parent / "web"
BUNDLE = Path(__file__).resolve().parent / "static" / "build" / "graph.js"


def up_to_date() -> bool:
    if not BUNDLE.is_file():
        return False
    inputs = [WEB / "package.json", WEB / "package-lock.json", *(WEB / "src").rglob("*.js")]
    return all(p.stat().st_mtime <= BUNDLE.stat().st_mtime for p in inputs)


def build(force: bool = False) -> Path:
    """Installs the pinned packages (`npm ci`) and bundles the graph view; returns the bundle's path."""
    if not force and up_to_date():
        return BUNDLE
    npm = shutil.which("npm")
    if npm is None:
        raise ConfigError("building the explorer's graph view needs npm (Debian package `npm`)")
    for args in ([npm, "ci", "--no-audit", "--no-fund"], [npm, "run", "build"]):
        done = subprocess.run(args, cwd=WEB, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise ConfigError(f"`{' '.join(args[1:])}` failed in {WEB}: {done.stderr.strip()[-800:]}")
    return BUNDLE
