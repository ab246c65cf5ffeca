"""Query variants written once: a template plus a table of slot texts yields exactly the statements it replaced.

`search/ranked` and `search/ranked_2026` (per server capability) and the face/voice identity statements (per
entity kind: labels and index names cannot be Cypher parameters) come from `*.cypher.tmpl` + `*.variants.toml`
(m3graph/cypher/__init__.py). These tests pin the rendering rules, that what the executor sends is the rendered
text, and that the server plans each variant against its own labels and index. (That the rendering equals the
eight files it replaced, byte for byte after stripping, was checked against git by a test in commit "tests: the
templates render to the eight files they replaced", removed afterwards since it read the history.)
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from m3graph.cypher import QUERIES, TEMPLATE_SUFFIX, VARIANTS_SUFFIX, query, render
from m3graph.graphdb.store import MemoryGraph

CYPHER = Path(__file__).resolve().parents[2] / "m3graph" / "cypher"
TEMPLATES = sorted(CYPHER.rglob("*" + TEMPLATE_SUFFIX))


def _variants() -> list[tuple[Path, str, dict[str, str]]]:
    out = []
    for template in TEMPLATES:
        table = template.with_name(template.name.removesuffix(TEMPLATE_SUFFIX) + VARIANTS_SUFFIX)
        folder = template.parent.relative_to(CYPHER).as_posix()
        for variant, slots in tomllib.loads(table.read_text(encoding="utf-8")).items():
            out.append((template, f"{folder}/{variant}", slots))
    return out


VARIANTS = _variants()


def test_the_templates_are_the_ones_expected() -> None:
    assert {name for _, name, _ in VARIANTS} == {
        "search/ranked", "search/ranked_2026",
        *(f"identity/{kind}_{stmt}" for kind in ("face", "voice") for stmt in ("match", "resolved", "write"))}


@pytest.mark.parametrize("name", [name for _, name, _ in VARIANTS])
def test_the_executor_sends_the_rendered_template(name: str) -> None:
    """Rendered here by plain substitution, independently of `render`: the loaded query is that text."""
    template, slots = next((t, s) for t, n, s in VARIANTS if n == name)
    text = template.read_text(encoding="utf-8")
    for slot, value in slots.items():
        placeholder = "{{" + slot + "}}"
        if f"\n{placeholder}\n" in text:  # alone on its line: a block of lines, or no line at all
            text = text.replace(f"{placeholder}\n", value.rstrip("\n") + "\n" if value else "")
        else:
            text = text.replace(placeholder, value)
    assert "{{" not in text
    assert query(name).text == text.strip()


def test_no_query_keeps_a_placeholder() -> None:
    assert [n for n, q in QUERIES.items() if re.search(r"\{\{[a-z_]+\}\}", q.text)] == []


def test_render_fills_blocks_and_inline_slots() -> None:
    template = "// params: a,{{extra}} b\n{{block}}\nRETURN 1\n"
    assert render(template, {"extra": " x,", "block": "MATCH (n)\nWITH n\n"}) == \
        "// params: a, x, b\nMATCH (n)\nWITH n\nRETURN 1\n"
    assert render(template, {"extra": "", "block": ""}) == "// params: a, b\nRETURN 1\n"


@pytest.mark.parametrize("slots", [{"extra": ""}, {"extra": "", "block": "", "other": ""}])
def test_render_refuses_missing_or_unknown_slots(slots: dict[str, str]) -> None:
    with pytest.raises(RuntimeError, match="do not match the template"):
        render("{{extra}}\n{{block}}\n", slots)


def test_render_refuses_a_block_in_an_inline_slot() -> None:
    with pytest.raises(RuntimeError, match="spans lines"):
        render("RETURN {{x}} AS y\n", {"x": "1\n2"})


def _plan_text(plan: object) -> str:
    return repr(plan)


@pytest.mark.parametrize(("name", "own", "other"), [
    ("identity/face_resolved", "FaceObs", "Utterance"), ("identity/voice_resolved", "Utterance", "FaceObs"),
    ("identity/face_match", "FaceObs", "Utterance"), ("identity/voice_match", "Utterance", "FaceObs"),
    ("identity/face_write", "FaceObs", "Utterance"), ("identity/voice_write", "Utterance", "FaceObs"),
])
def test_the_server_plans_each_variant_on_its_own_label_and_index(memory_graph: MemoryGraph, name: str, own: str,
                                                                   other: str) -> None:
    with memory_graph.ex.session() as session:
        plan = _plan_text(session.run("EXPLAIN " + query(name).text).consume().plan)
    assert own in plan and other not in plan


def test_the_2026_search_variant_filters_inside_the_index(memory_graph: MemoryGraph) -> None:
    """`ranked` calls the vector procedure; `ranked_2026` (2026.x only) plans a SEARCH on the memory index."""
    with memory_graph.ex.session() as session:
        plan = _plan_text(session.run("EXPLAIN " + query("search/ranked").text).consume().plan)
        assert "db.index.vector.queryNodes" in plan
        if not memory_graph.ex.capabilities.vector_filters:
            return  # 5.26 cannot parse the 2026 variant (search.py never sends it there)
        plan = _plan_text(session.run("EXPLAIN " + query("search/ranked_2026").text).consume().plan)
    assert "memory_embedding" in plan and "db.index.vector.queryNodes" not in plan
