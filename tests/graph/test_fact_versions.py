"""Facts that change, on the real server: supersession by event time, whatever order clips are written in."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest

from m3graph.fact_versions import VersionView
from m3graph.graphdb.search_plan import SearchSpec
from m3graph.graphdb.store import MemoryGraph
from m3graph.service.requests import SearchRequest
from m3graph.service.search import run_search
from tests.helpers.graph import add_clip, canonical_dump, mem, near, rng, rows, text_dim, unit

VIDEO = "facts-v"
MANGO, APPLE, PEAR = ("Mia's favourite fruit is mango.", "Mia's favourite fruit is apple.",
                      "Mia's favourite fruit is pear.")
# clip -> its one semantic statement; the fruit changes twice
SCRIPT = {0: MANGO, 2: APPLE, 3: PEAR}


class Vectors:
    """Near-duplicate vectors (cos ~0.95 to one base) so the old cosine-only dedup would merge them all."""

    def __init__(self, mg: MemoryGraph) -> None:
        self.gen = rng(7)
        self.base = unit(text_dim(mg), self.gen)
        self.cache: dict[str, np.ndarray] = {}

    def __call__(self, text: str) -> np.ndarray:
        if text not in self.cache:
            self.cache[text] = near(self.base, 0.95, self.gen)
        return self.cache[text]


def _clips(mg: MemoryGraph, n: int = 5) -> None:
    for i in range(n):
        add_clip(mg, VIDEO, i)


def _write(mg: MemoryGraph, vec: Vectors, clip: int, *texts: str) -> None:
    mg.write_memories(VIDEO, clip, [mem("semantic", t, vec(t)) for t in texts])


def _versions(mg: MemoryGraph) -> dict[str, dict[str, Any]]:
    out = rows(mg, "MATCH (m:Memory {video_id: $v}) WHERE m.slot_key IS NOT NULL "
                   "RETURN m.text AS text, m.current AS current, m.slot_key AS slot, "
                   "[(m)-[:SUPERSEDES]->(o) | o.text] AS supersedes, [(m)-[:CONTRADICTS]->(o) | o.text] AS contradicts",
               v=VIDEO)
    return {r["text"]: r for r in out}


def _current(mg: MemoryGraph) -> set[str]:
    return {t for t, r in _versions(mg).items() if r["current"]}


@pytest.mark.parametrize("order", ["forward", "reverse", "parallel"])
def test_the_newest_fact_by_event_time_holds_whatever_the_write_order(graph: MemoryGraph, order: str) -> None:
    _clips(graph)
    vec = Vectors(graph)
    clips = sorted(SCRIPT)
    if order == "parallel":
        with ThreadPoolExecutor(3) as pool:
            list(pool.map(lambda c: _write(graph, vec, c, SCRIPT[c]), clips))
    else:
        for c in (clips if order == "forward" else clips[::-1]):
            _write(graph, vec, c, SCRIPT[c])
    v = _versions(graph)
    assert set(v) == {MANGO, APPLE, PEAR}  # three memories: nothing merged, nothing deleted
    assert _current(graph) == {PEAR}
    assert v[PEAR]["supersedes"] == [APPLE] and v[APPLE]["supersedes"] == [MANGO] and v[MANGO]["supersedes"] == []


def test_a_fact_said_again_later_is_current_again(graph: MemoryGraph) -> None:
    _clips(graph)
    vec = Vectors(graph)
    _write(graph, vec, 4, MANGO)  # written first, said last
    for c, t in SCRIPT.items():
        _write(graph, vec, c, t)
    assert _current(graph) == {MANGO}
    assert rows(graph, "MATCH (m:Memory {video_id: $v}) RETURN count(m) AS n", v=VIDEO)[0]["n"] == 3


def test_facts_in_other_slots_never_retire_each_other(graph: MemoryGraph) -> None:
    vec = Vectors(graph)
    texts = ["Mia's favourite fruit is mango.", "Tom's favourite fruit is apple.", "Mia lives in Berlin.",
             "Mia works in Paris.", "Mia likes mangoes.", "Mia likes apples."]
    _clips(graph, len(texts))
    for i, t in enumerate(texts):
        _write(graph, vec, i, t)
    v = _versions(graph)
    assert set(v) == set(texts) and all(r["current"] for r in v.values())
    assert not any(r["supersedes"] or r["contradicts"] for r in v.values())


def test_deleting_the_newer_clip_makes_the_older_fact_current_again(graph: MemoryGraph) -> None:
    _clips(graph)
    vec = Vectors(graph)
    for c, t in SCRIPT.items():
        _write(graph, vec, c, t)
    graph.delete_clip(VIDEO, 3)
    assert _current(graph) == {APPLE}
    graph.delete_clip(VIDEO, 2)
    assert _current(graph) == {MANGO}
    assert rows(graph, "MATCH ()-[r:SUPERSEDES]->() RETURN count(r) AS n")[0]["n"] == 0


def test_re_memorizing_a_clip_supersedes_nothing_twice(graph: MemoryGraph) -> None:
    _clips(graph)
    vec = Vectors(graph)
    for c, t in SCRIPT.items():
        _write(graph, vec, c, t)
    before = canonical_dump(graph)
    _write(graph, vec, 2, APPLE)
    _write(graph, vec, 0, MANGO)
    assert canonical_dump(graph) == before


def test_a_polarity_flip_without_a_change_word_is_a_contradiction_with_one_it_is_an_update(graph: MemoryGraph
                                                                                             ) -> None:
    _clips(graph)
    vec = Vectors(graph)
    _write(graph, vec, 0, "Ann does not use Rust.")
    _write(graph, vec, 1, "Ann uses Rust.")
    v = _versions(graph)
    assert _current(graph) == {"Ann does not use Rust.", "Ann uses Rust."}  # both surfaced
    assert v["Ann uses Rust."]["contradicts"] == ["Ann does not use Rust."]
    _write(graph, vec, 2, "Ann no longer uses Rust.")  # says it changed: an update, not one more contradiction
    assert _current(graph) == {"Ann does not use Rust.", "Ann no longer uses Rust."}  # the two agree
    assert _versions(graph)["Ann no longer uses Rust."]["supersedes"] == ["Ann uses Rust."]


def test_search_shows_the_version_valid_as_of_a_clip_and_marks_superseded_ones(graph: MemoryGraph) -> None:
    _clips(graph)
    vec = Vectors(graph)
    for c, t in SCRIPT.items():
        _write(graph, vec, c, t)

    def texts(**kw: Any) -> list[str]:
        request = SearchRequest(query="favourite fruit", videos=(VIDEO,), mode="node", k=10, **kw)
        return sorted(m.text for r in run_search(graph.search, lambda q: vec.base.tolist(), request)
                      for m in r.memories)

    assert texts() == [PEAR]
    assert texts(as_of=f"{VIDEO}#0") == [MANGO]
    assert texts(as_of=f"{VIDEO}#1") == [MANGO]
    assert texts(as_of=f"{VIDEO}#2") == [APPLE]
    assert texts(all_versions=True) == sorted(SCRIPT.values())
    marks = {m.text: m.marked_text for r in graph.search.search(SearchSpec(vec.base, mode="node", videos=[VIDEO], k=10,
                                                                           view=VersionView(all_versions=True)))
             for m in r.memories}
    assert marks[PEAR] == PEAR and marks[MANGO] == f"{MANGO} (superseded on CLIP_2)"


def test_history_lists_every_version_and_facts_about_follows_a_value(graph: MemoryGraph) -> None:
    from m3graph.service import FactsAboutRequest, HistoryRequest, MemoryService

    _clips(graph)
    vec = Vectors(graph)
    for c, t in SCRIPT.items():
        _write(graph, vec, c, t)
    _write(graph, vec, 4, "Pear's colour is green.")
    service = MemoryService(graph.settings, graph, embedder_factory=lambda: None)
    out = service.history(HistoryRequest(video=VIDEO, subject="Mia", attribute="favorite fruit"))
    (slot,) = out["slots"]
    assert [(v["value"], v["current"], v["said_in"]) for v in slot["versions"]] == [
        ("mango", False, ["CLIP_0"]), ("apple", False, ["CLIP_2"]), ("pear", True, ["CLIP_3"])]
    assert slot["versions"][0]["superseded"] == "superseded on CLIP_2"
    hop = service.facts_about_results(FactsAboutRequest(video=VIDEO, subjects=("pear",)))
    assert [m.text for m in hop] == ["Pear's colour is green."] and hop[0].value == "green"
    assert service.history(HistoryRequest(video=VIDEO, subject="Nobody"))["slots"] == []


def test_a_characters_name_is_its_current_name_fact(graph: MemoryGraph) -> None:
    from m3graph.service import CharacterRequest, HistoryRequest, MemoryService
    from tests.helpers.graph import face_cluster, face_dim

    _clips(graph)
    vec = Vectors(graph)
    g = rng(3)
    (face,) = graph.resolve_faces(VIDEO, 0, [face_cluster(0, unit(face_dim(graph), g), g)])
    tag = f"<face_{face.entity_id}>"
    service = MemoryService(graph.settings, graph, embedder_factory=lambda: None)
    char_id = graph.characters_of([face.entity_id])[face.entity_id]
    assert service.character(CharacterRequest(char_id=char_id))["name"] == f"character_{char_id}"
    _write(graph, vec, 0, f"{tag}'s name is Mia.")
    assert service.character(CharacterRequest(char_id=char_id))["name"] == "Mia"
    _write(graph, vec, 3, f"{tag}'s name is Mia Rossi.")  # a rename is a newer name fact; the old one is kept
    assert service.character(CharacterRequest(char_id=char_id))["name"] == "Mia Rossi"
    (slot,) = service.history(HistoryRequest(video=VIDEO, subject=f"<character_{char_id}>"))["slots"]
    assert [(v["value"], v["current"]) for v in slot["versions"]] == [("Mia", False), ("Mia Rossi", True)]


def test_the_cli_corrects_a_fact_and_shows_its_history(graph: MemoryGraph) -> None:
    from click.testing import CliRunner

    from m3graph.cli import main

    _clips(graph)
    vec = Vectors(graph)
    for c, t in SCRIPT.items():
        _write(graph, vec, c, t)
    (pear,) = rows(graph, "MATCH (m:Memory {text: $t}) RETURN m.memory_id AS id", t=PEAR)
    runner = CliRunner()
    out = runner.invoke(main, ["correct-fact", pear["id"], "superseded", "--note", "misheard"], obj=graph.settings,
                        catch_exceptions=False)
    assert out.exit_code == 0, out.output
    assert _current(graph) == {APPLE}  # the version it displaced holds again
    out = runner.invoke(main, ["history", VIDEO, "Mia"], obj=graph.settings, catch_exceptions=False)
    assert out.exit_code == 0 and "apple  (said in CLIP_2; now)" in out.output, out.output
    bad = runner.invoke(main, ["correct-fact", pear["id"], "maybe"], obj=graph.settings)
    assert bad.exit_code == 2  # click refuses the state before anything is read
    runner.invoke(main, ["correct-fact", pear["id"], "clear"], obj=graph.settings, catch_exceptions=False)
    assert _current(graph) == {PEAR}
