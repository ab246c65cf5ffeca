# ruff: noqa: F811  (fixtures imported from graph_fixtures and test_front_ends_agree are requested by name)
"""The explorer's search (its HTTP page) finds the same clips as the CLI, MCP, controller and demo.

The explorer leg of tests/test_front_ends_agree.py, kept in its own file: the same `world` and `Case`s, the
other front ends' answer from that file's `front_end_keys`, and the explorer's page read over HTTP (the ASGI app
with its guard, token cookie and Host check). One deliberate difference, asked for by analysts (issue 18): the
page lists the clips best first, where the service keeps the tools' clip order; so the explorer must show the
same clips, each with its score, in non-increasing score order.
"""

from __future__ import annotations

import re
from datetime import datetime

import pytest
from fastapi.testclient import TestClient
from graph_fixtures import memory_graph  # noqa: F401
from test_front_ends_agree import VIDEO, Case, World, _day, front_end_keys, world  # noqa: F401

from m3graph.explore.app import create_app
from m3graph.service import MemoryService

TOKEN = "explorer-agrees-token"
_RESULT = re.compile(r'<div class="result" data-clip="([^"]+)">\s*<h3>.*?score (-?[0-9.]+)', re.S)


def _local(when: datetime | None) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%S") if when else ""  # the form's datetime-local value (UTC)


def explorer_results(w: World, case: Case) -> list[tuple[str, float]]:
    """(clip key, shown score) in the order the explorer's search page lists them."""
    service = MemoryService(w.graph.settings, w.graph, embedder_factory=lambda: w.embedder)
    app = create_app(service, TOKEN, hosts=["testserver"])
    query = case.query + "".join(f" <character_{c}>" for c in case.characters)
    with TestClient(app) as client:
        client.cookies.set("m3graph_explore", TOKEN)
        page = client.get("/search", params={"q": query, "video": VIDEO, "mode": case.mode,
                                             "since": _local(case.since), "until": _local(case.until)})
    assert page.status_code == 200, page.text
    return [(key, float(score)) for key, score in _RESULT.findall(page.text)]


def _cases(w: World) -> list[Case]:
    mia = w.people["mia"]
    return [Case("What fruit does Mia like to eat?"), Case("Where did Jack put the newspaper?"),
            Case("What are the drinks for the three people?"),
            Case("What is the name of the woman with the coffee beans?", mode="node"),
            Case(f"what does <character_{mia}> like to eat", mode="node"),
            Case("coffee", since=_day(2), until=_day(5))]


@pytest.mark.parametrize("which", range(6))
def test_the_explorer_shows_the_same_clips_best_first(world: World, which: int) -> None:
    case = _cases(world)[which]
    others = front_end_keys(world, case)
    assert len(others) >= 2, others
    agreed = next(iter(others.values()))
    assert all(keys == agreed for keys in others.values()), others
    assert agreed, f"{case}: no front end found anything; the case tests nothing"
    shown = explorer_results(world, case)
    keys, scores = [k for k, _ in shown], [s for _, s in shown]
    assert sorted(keys) == sorted(agreed), (keys, agreed)  # the same clips, none twice
    assert scores == sorted(scores, reverse=True), shown  # best first
