"""docs/architecture.md draws the house the code has: its layer table is checked against the real import graph.

Why: the page once put `service` above `reasoning` and `ingest` while both imported it. Now the table under
"## Layers" is data: each row names a layer and its packages, top row first. Every package of m3graph must be in
exactly one row, and no package may import a package drawn in a higher row (the import graph is the one
tests/unit/test_layers.py reads: every import outside `if TYPE_CHECKING:`, lazy ones included).
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.unit.test_layers import PKG, package_graph

DOC = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"
_ROW = re.compile(r"^\|\s*(\d+)\s*\|\s*([^|]+?)\s*\|\s*([^|]+?)\s*\|")


def drawn_layers(text: str) -> dict[str, int]:
    """package -> layer number, from the table between the `<!-- layers -->` markers of the page."""
    try:
        block = text.split("<!-- layers -->")[1]
    except IndexError:
        raise AssertionError("docs/architecture.md has no <!-- layers --> table") from None
    layers: dict[str, int] = {}
    for line in block.splitlines():
        match = _ROW.match(line)
        if not match:
            continue
        for name in match.group(3).replace("`", "").replace(",", " ").split():
            assert name not in layers, f"{name} is drawn in two layers"
            layers[name] = int(match.group(1))
    return layers


def packages(root: Path = PKG) -> set[str]:
    """Every package and top-level module of m3graph (the units the import graph is made of)."""
    names = {p.name for p in root.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    return names | {p.stem for p in root.glob("*.py") if p.stem != "__init__"}


def upward_imports(graph: dict[str, dict[str, set[str]]], layers: dict[str, int]) -> dict[str, list[str]]:
    return {f"{a} (layer {layers[a]}) -> {b} (layer {layers[b]})": sorted(files)
            for a, dsts in graph.items() for b, files in dsts.items()
            if a in layers and b in layers and layers[b] > layers[a]}


def test_every_package_is_drawn_once() -> None:
    layers = drawn_layers(DOC.read_text(encoding="utf-8"))
    assert sorted(packages() - set(layers)) == [], "packages missing from docs/architecture.md's layer table"
    assert sorted(set(layers) - packages()) == [], "the layer table names packages that do not exist"


def test_no_package_imports_a_higher_layer() -> None:
    layers = drawn_layers(DOC.read_text(encoding="utf-8"))
    bad = upward_imports(package_graph(), layers)
    assert not bad, f"imports that contradict docs/architecture.md's layers: {bad}"


def test_the_check_sees_an_upward_import() -> None:
    table = "<!-- layers -->\n| 2 | top | a |\n| 1 | bottom | b, c |\n<!-- layers -->\n"
    layers = drawn_layers(table)
    assert layers == {"a": 2, "b": 1, "c": 1}
    assert upward_imports({"b": {"a": {"b/x.py"}}, "a": {"c": {"a/y.py"}}}, layers) == {
        "b (layer 1) -> a (layer 2)": ["b/x.py"]}
