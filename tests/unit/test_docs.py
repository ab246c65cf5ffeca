"""The docs stay reference pages: short, pointing at modules that exist, and quoting only figures they hold.

Why: benchmarks.md and evaluation.md once stacked every dated run, so the current figure for a question could
only be found by reading the history; history now goes to docs/changelog.md. Pure file checks, no server.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
MAX_LINES = 400

# A number with a unit of time, size or rate, as the README states performance ("9–10 s", "450 MB").
FIGURE = re.compile(r"(?<![\w.])\d[\d,.]*(?:[–-]\d[\d,.]*)?\s?(?:ms|s|seconds|minutes|MB|GB|memories/s|nodes/s)\b")
# Three-decimal scores (recall, F1) the README quotes ("recall@2 0.762").
SCORE = re.compile(r"(?<![\w.])0\.\d{3}\b")
# README numbers with a unit that are settings or facts of the machine, not measured performance.
NOT_MEASURED = {"30 s", "24 GB", "4 GB"}


def _prose(markdown: str) -> str:
    """The text outside code (fenced sample outputs and commands, inline names such as `[60-90s]`)."""
    return re.sub(r"`[^`\n]*`", "", re.sub(r"^```.*?^```", "", markdown, flags=re.S | re.M))


def readme_figures(readme: str) -> set[str]:
    prose = _prose(readme)
    found = {m.group(0) for m in FIGURE.finditer(prose)} | {m.group(0) for m in SCORE.finditer(prose)}
    return found - NOT_MEASURED


def test_reference_pages_are_short() -> None:
    for name in ("benchmarks.md", "evaluation.md"):
        lines = (DOCS / name).read_text(encoding="utf-8").count("\n")
        assert lines <= MAX_LINES, f"docs/{name}: {lines} lines (max {MAX_LINES}); move dated runs to changelog.md"


def test_changelog_is_dated_newest_first() -> None:
    days = re.findall(r"^## (\d{4}-\d{2}-\d{2})$", (DOCS / "changelog.md").read_text(encoding="utf-8"), flags=re.M)
    assert days, "docs/changelog.md has no dated section"
    assert days == sorted(days, reverse=True), f"changelog days not newest first: {days}"


def test_architecture_names_only_existing_paths() -> None:
    text = (DOCS / "architecture.md").read_text(encoding="utf-8")
    paths = set(re.findall(r"`((?:m3graph|bench|tests|scripts)/[^`\s]*)`", text))
    assert len(paths) >= 40, "architecture.md should map behaviours to modules"
    missing = sorted(p for p in paths if not (ROOT / p).exists())
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"


def test_readme_figures_are_reference_figures() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    reference = "".join((DOCS / n).read_text(encoding="utf-8") for n in ("benchmarks.md", "evaluation.md"))
    figures = readme_figures(readme)
    assert {"0.778", "0.661", "0.819", "9–10 s", "450 MB"} <= figures  # the rule still sees the README's figures
    missing = sorted(f for f in figures if f not in reference)
    assert not missing, f"README figures not in docs/benchmarks.md or docs/evaluation.md: {missing}"


def test_figure_rule_reads_units_and_skips_code() -> None:
    sample = "Cold start ≈ 9–10 s, RSS 450 MB, recall 0.762, `clip [60-90s]`.\n```text\nlatency 7.351 s, 0.504\n```\n"
    assert readme_figures(sample) == {"9–10 s", "450 MB", "0.762"}
