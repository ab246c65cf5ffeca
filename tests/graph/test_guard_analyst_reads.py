"""No false refusals for plain analyst reads (issue 37, item 10): pattern predicates the server rewrites to
`getDegree(...)`, and names that merely contain a vector key's name, run through the guard."""

from __future__ import annotations

import pytest

from m3graph.graphdb.guarded import GuardedCypherError
from m3graph.graphdb.store import MemoryGraph
from tests.graph.test_guarded_cypher import _run, _seed
from tests.helpers.graph import rows

DEGREE_FORMS = [
    ("MATCH (o:FaceObs) WHERE NOT (o)-[:OF]->() RETURN count(o) AS n", {"n": 1}),
    ("MATCH (o:FaceObs) WHERE (o)-[:OF]->() RETURN count(o) AS n", {"n": 1}),
    ("MATCH (o:FaceObs) WHERE EXISTS { (o)-[:OF]->() } RETURN count(o) AS n", {"n": 1}),
    ("MATCH (o:FaceObs) WHERE COUNT { (o)-[:OF]->() } > 0 RETURN count(o) AS n", {"n": 1}),
    ("MATCH (o:FaceObs {obs_key: 'guard-o'}) RETURN COUNT { (o)--() } AS n", {"n": 1}),
]


@pytest.mark.parametrize(("query", "expected"), DEGREE_FORMS, ids=[q for q, _ in DEGREE_FORMS])
def test_pattern_predicates_the_server_rewrites_run(graph: MemoryGraph, query: str, expected: dict[str, int]) -> None:
    _seed(graph)
    rows(graph, "CREATE (:FaceObs {obs_key: 'guard-lonely', video_id: 'gv'})")  # one without an OF edge
    out = _run(graph, query)
    assert out.rows == [expected], out.rows


def test_the_rewrite_really_is_getdegree(graph: MemoryGraph) -> None:
    """The case is meaningful only while the server plans it as getDegree (what the guard used to refuse)."""
    with graph.ex.driver.session(database=graph.ex.database) as session:
        plan = session.run("EXPLAIN " + DEGREE_FORMS[0][0]).consume().plan
    assert "getDegree(" in str(plan)


def test_names_that_merely_contain_embedding_are_not_vectors(graph: MemoryGraph) -> None:
    _seed(graph)
    out = _run(graph, "MATCH (m:Memory {memory_id: 'guard-m'}) RETURN m.embedding_model AS model, "
                      "m.text AS text_for_embedding_check")
    assert out.rows == [{"model": "mini", "text_for_embedding_check": "the kettle boils"}]
    node = _run(graph, "MATCH (m:Memory {memory_id: 'guard-m'}) RETURN m").rows[0]["m"]
    assert node["embedding_model"] == "mini" and "embedding" not in node
    for query in ("MATCH (m:Memory) RETURN m.embedding", "MATCH (m:Memory) RETURN m.text AS embedding",
                  "MATCH (m:Memory) RETURN m.text AS clip_embedding"):
        with pytest.raises(GuardedCypherError) as info:
            _run(graph, query)
        assert info.value.reason == "vector", query
