"""Fixtures of the end-to-end tier: the generated test media (real faces, espeak voices), built once per checkout."""

from __future__ import annotations

from pathlib import Path

import pytest

from m3graph.devkit.testmedia import Manifest, build_test_media

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def media() -> Manifest:
    """The three generated videos (tm-a, tm-b, tm-silent); modules with other media define their own `media`."""
    return build_test_media(REPO / ".m3graph" / "testmedia")
