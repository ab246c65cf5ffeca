"""An analyst's corrections of facts, on the real server: a fact marked superseded by hand, restored by hand, and
the mark cleared, each recomputed with the slot's whole history (the rule: `m3graph.fact_versions`)."""

from __future__ import annotations

import json

import pytest

from m3graph.errors import InvalidInputError, NotFoundError
from m3graph.graphdb.store import MemoryGraph
from m3graph.service import CorrectFactRequest, HistoryRequest, MemoryService, SearchRequest
from m3graph.service.search import run_search
from tests.graph.test_fact_versions import APPLE, MANGO, PEAR, SCRIPT, VIDEO, Vectors, _clips, _current, _write
from tests.helpers.graph import canonical_dump, mem, rows, wipe


def _service(graph: MemoryGraph) -> MemoryService:
    return MemoryService(graph.settings, graph, embedder_factory=lambda: None)


def _id(graph: MemoryGraph, text: str) -> str:
    return str(rows(graph, "MATCH (m:Memory {text: $t}) RETURN m.memory_id AS id", t=text)[0]["id"])


def _dump_without_log(graph: MemoryGraph) -> list[str]:
    """The graph's dump once the corrections' audit trail (`manual_log`, timestamped) is taken out."""
    rows(graph, "MATCH (m:Memory) WHERE m.manual_log IS NOT NULL REMOVE m.manual_log RETURN count(m) AS n")
    return canonical_dump(graph)


def _scripted(graph: MemoryGraph) -> Vectors:
    _clips(graph)
    vec = Vectors(graph)
    for c, t in SCRIPT.items():
        _write(graph, vec, c, t)
    return vec


def _memory_count(graph: MemoryGraph) -> int:
    return int(rows(graph, "MATCH (m:Memory) RETURN count(m) AS n")[0]["n"])


def test_superseding_the_current_fact_by_hand_makes_the_previous_one_current(graph: MemoryGraph) -> None:
    vec = _scripted(graph)
    service = _service(graph)
    n = _memory_count(graph)
    out = service.correct_fact(CorrectFactRequest(memory_id=_id(graph, PEAR), state="superseded", note="misheard"))
    assert out["changed"] and not out["current"] and out["superseded"] == "superseded by hand"
    assert _current(graph) == {APPLE}
    (slot,) = service.history(HistoryRequest(video=VIDEO, subject="Mia"))["slots"]
    pear = next(v for v in slot["versions"] if v["value"] == "pear")
    assert pear["manual"]["state"] == "superseded" and pear["manual"]["note"] == "misheard"
    assert pear["manual"]["via"] == "manual" and not pear["current"]
    # as_of never shows it: after clip 3 the apple still holds; all_versions marks it
    def texts(**kw: object) -> list[str]:
        request = SearchRequest(query="favourite fruit", videos=(VIDEO,), mode="node", k=10, **kw)
        return sorted(m.marked_text for r in run_search(graph.search, lambda q: vec.base.tolist(), request)
                      for m in r.memories)
    assert texts() == [APPLE]
    assert texts(as_of=f"{VIDEO}#4") == [APPLE]
    assert f"{PEAR} (superseded by hand)" in texts(all_versions=True)
    # superseding an older version by hand: the one before it holds longer, as if it had never been said
    service.correct_fact(CorrectFactRequest(memory_id=_id(graph, APPLE), state="superseded"))
    assert _current(graph) == {MANGO}
    assert _memory_count(graph) == n  # nothing deleted


def test_clear_gives_back_exactly_the_computed_state_and_repeats_change_nothing(graph: MemoryGraph) -> None:
    _scripted(graph)
    service = _service(graph)
    before = canonical_dump(graph)
    pear = _id(graph, PEAR)
    first = service.correct_fact(CorrectFactRequest(memory_id=pear, state="superseded"))
    marked = canonical_dump(graph)
    again = service.correct_fact(CorrectFactRequest(memory_id=pear, state="superseded"))
    assert first["changed"] and not again["changed"] and canonical_dump(graph) == marked  # idempotent
    cleared = service.correct_fact(CorrectFactRequest(memory_id=pear, state="clear"))
    assert cleared["changed"] and cleared["previous"] == "superseded" and cleared["current"]
    assert _current(graph) == {PEAR}
    log = rows(graph, "MATCH (m:Memory {memory_id: $id}) RETURN m.manual_log AS log, m.manual_state AS s", id=pear)
    assert [json.loads(e)["state"] for e in log[0]["log"]] == ["superseded", "clear"] and log[0]["s"] is None
    # every version, edge and interval is what it was; only the audit trail remains
    assert canonical_dump(graph) != before
    assert _dump_without_log(graph) == before
    assert not service.correct_fact(CorrectFactRequest(memory_id=pear, state="clear"))["changed"]


def test_a_fact_restored_by_hand_survives_a_newer_value(graph: MemoryGraph) -> None:
    vec = _scripted(graph)
    service = _service(graph)
    service.correct_fact(CorrectFactRequest(memory_id=_id(graph, MANGO), state="current", note="both true"))
    assert _current(graph) == {MANGO, PEAR}  # the mango is current beside the newest value; the apple is not
    _write(graph, vec, 4, "Mia's favourite fruit is kiwi.")  # a newer value, written after the restore
    assert _current(graph) == {MANGO, "Mia's favourite fruit is kiwi."}
    sup = rows(graph, "MATCH (n:Memory)-[:SUPERSEDES]->(o:Memory {text: $t}) RETURN n.text AS t", t=MANGO)
    assert sup == []  # nothing supersedes a restored fact
    service.correct_fact(CorrectFactRequest(memory_id=_id(graph, MANGO), state="clear"))
    assert _current(graph) == {"Mia's favourite fruit is kiwi."}


def test_corrections_and_writes_in_any_order_give_the_same_graph(graph: MemoryGraph) -> None:
    service = _service(graph)
    vec = _scripted(graph)  # every clip first, then the corrections
    service.correct_fact(CorrectFactRequest(memory_id=_id(graph, APPLE), state="current"))
    service.correct_fact(CorrectFactRequest(memory_id=_id(graph, PEAR), state="superseded"))
    assert _current(graph) == {APPLE}
    one = _dump_without_log(graph)
    wipe(graph)
    _clips(graph)
    _write(graph, vec, 3, PEAR)  # the newest clip first, corrected before the older ones are written
    service.correct_fact(CorrectFactRequest(memory_id=_id(graph, PEAR), state="superseded"))
    _write(graph, vec, 2, APPLE)
    service.correct_fact(CorrectFactRequest(memory_id=_id(graph, APPLE), state="current"))
    _write(graph, vec, 0, MANGO)
    assert _dump_without_log(graph) == one


def test_a_memory_without_a_slot_or_unknown_is_refused(graph: MemoryGraph) -> None:
    _clips(graph, 1)
    vec = Vectors(graph)
    graph.write_memories(VIDEO, 0, [mem("episodic", "Mia walks in with a bag of mangoes.", vec("walk"))])
    service = _service(graph)
    before = canonical_dump(graph)
    with pytest.raises(InvalidInputError, match="no fact with a slot"):
        service.correct_fact(CorrectFactRequest(memory_id=_id(graph, "Mia walks in with a bag of mangoes."),
                                                state="superseded"))
    with pytest.raises(NotFoundError):
        service.correct_fact(CorrectFactRequest(memory_id="facts-v#0#snothing", state="current"))
    with pytest.raises(InvalidInputError, match="state"):
        CorrectFactRequest(memory_id="x", state="wrong")
    assert canonical_dump(graph) == before
