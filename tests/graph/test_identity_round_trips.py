"""Identity resolution costs at most two statements per call and never sends a vector back (issue 12).

Statements are counted where every one of them passes: the executor's transaction object (`Tx.run`), wrapped so
that each call still runs against the real server. The server-side exemplar merge is checked against the Python
reference (`EntityState.merged`), and the characters it gives new entities against `refresh_characters`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from m3graph.graphdb.characters import refresh_characters
from m3graph.graphdb.executor import Tx
from m3graph.graphdb.identity import EntityState
from m3graph.graphdb.store import MemoryGraph
from tests.helpers.graph import (
    add_clip,
    entity,
    face_cluster,
    face_dim,
    near,
    rng,
    rows,
    unit,
    variant,
    voice_cluster,
    voice_dim,
    with_settings,
)

Call = tuple[str, list[dict[str, Any]]]


@pytest.fixture
def statements(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Call]]:
    """Every named statement run through a transaction, with the rows it returned to the client."""
    calls: list[Call] = []
    original = Tx.run

    def run(self: Tx, name: str, /, **params: Any) -> list[dict[str, Any]]:
        result = original(self, name, **params)
        calls.append((name, result))
        return result

    monkeypatch.setattr(Tx, "run", run)
    yield calls


def _float_lists(value: Any, path: str = "row") -> list[str]:
    """Paths of every list holding a float anywhere in a returned value."""
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _float_lists(v, f"{path}.{k}")]
    if isinstance(value, list | tuple):
        found = [path] if any(isinstance(x, float) for x in value) else []
        return found + [p for i, x in enumerate(value) for p in _float_lists(x, f"{path}[{i}]")]
    return []


def _take(calls: list[Call]) -> list[Call]:
    """The calls so far (then forgotten); no identity statement may have returned a float list."""
    out = list(calls)
    calls.clear()
    for name, result in out:
        if name.startswith("identity/"):
            assert _float_lists(result) == [], f"{name} returned float lists to the client"
    return out


def test_a_resolution_is_at_most_two_statements_and_returns_no_vector(graph: MemoryGraph,
                                                                      statements: list[Call]) -> None:
    g = rng(40)
    person, other = unit(face_dim(graph), g), unit(face_dim(graph), g)
    for clip in range(4):
        add_clip(graph, "v", clip)
    statements.clear()

    # A new person: the entity, its observations and its character in the second statement.
    (a,) = graph.resolve_faces("v", 0, [face_cluster(0, person, g)])
    assert a.created
    assert [name for name, _ in _take(statements)] == ["identity/face_match", "identity/face_write"]
    assert graph.characters_of([a.entity_id]) != {}

    # A returning person and two new look-alikes seen in the same frames (co-occurrence, two entities).
    res = graph.resolve_faces("v", 1, [face_cluster(0, person, g, times=[50.0, 51.0, 52.0]),
                                       face_cluster(1, other, g, times=[1.0, 2.0]),
                                       face_cluster(2, other, g, times=[2.0, 3.0])])
    calls = _take(statements)
    assert [name for name, _ in calls] == ["identity/face_match", "identity/face_write"]
    assert res[0].entity_id == a.entity_id and not res[0].created and res[0].score is not None
    assert res[1].created and res[2].created and res[1].entity_id != res[2].entity_id
    # What crossed to the client: the clip check, ids and scalar scores, and the first allocated id.
    (match_row,) = calls[0][1]
    assert match_row["clip_found"] is True and match_row["done"] == []
    assert {(s["label"], s["entity_id"]) for s in match_row["scores"]} >= {(0, a.entity_id)}
    assert all(set(s) == {"label", "entity_id", "score"} and isinstance(s["score"], float)
               for s in match_row["scores"])
    assert calls[1][1] == [{"first": min(res[1].entity_id, res[2].entity_id)}]
    assert graph.counts()["CO_OCCURS"] == 1

    # Voices: the same two statements.
    (v,) = graph.resolve_voices("v", 1, [voice_cluster(0, unit(voice_dim(graph), g), g)])
    assert v.created
    assert [name for name, _ in _take(statements)] == ["identity/voice_match", "identity/voice_write"]

    # A replay of a resolved clip and a clip without clusters: one statement each, nothing written.
    counts = graph.counts()
    again = graph.resolve_faces("v", 1, [face_cluster(0, person, g)])
    assert [(r.label, r.entity_id) for r in again] == [(r.label, r.entity_id) for r in res]
    assert graph.resolve_voices("v", 2, []) == []
    assert [name for name, _ in _take(statements)] == ["identity/face_match", "identity/voice_match"]
    assert graph.counts() == counts

    # register_clip resolves both kinds: two statements per kind, then the meta-clip vote's own statements.
    graph.register_clip(add_clip(graph, "v", 3), [face_cluster(0, person, g)],
                        [voice_cluster(0, unit(voice_dim(graph), g), g)])
    names = [name for name, _ in _take(statements)]
    assert [n for n in names if n.startswith("identity/")] == [
        "identity/face_match", "identity/face_write", "identity/voice_match", "identity/voice_write"]


def test_server_side_exemplar_merge_equals_the_python_reference(graph: MemoryGraph) -> None:
    """Cap, quality order, observation-key tie-break and the centroid: bit for bit as `EntityState.merged`."""
    g = rng(41)
    person = unit(face_dim(graph), g)
    cap = graph.settings.identity.max_face_exemplars
    eid, expected = None, None
    for clip in range(6):
        add_clip(graph, "v", clip)
        qualities = [float(x) for x in g.choice([20.0, 30.0, 40.0], size=4)]  # ties across clips
        cluster = face_cluster(0, person, g, n=4, cos=0.95, qualities=qualities)
        (res,) = graph.resolve_faces("v", clip, [cluster])
        assert eid is None or res.entity_id == eid
        eid = res.entity_id
        # The three best by (det, quality): det is equal, so by quality, then by index.
        top = sorted(range(4), key=lambda i: (-qualities[i], i))[:graph.settings.identity.exemplars_per_cluster]
        vecs = np.asarray([cluster.observations[i].embedding for i in top], dtype=np.float64)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        base = expected or EntityState(eid, np.empty((0, face_dim(graph))), [], [])
        expected = base.merged(vecs, [qualities[i] for i in top], [f"v#{clip}#f0#{i}" for i in top], cap)
        stored = entity(graph, eid)
        want = expected.row()
        assert stored["obs"] == want["obs"] and stored["quality"] == want["quality"]
        assert stored["exemplars"] == want["exemplars"] and stored["centroid"] == want["centroid"]
        assert stored["n"] == len(want["quality"]) and stored["dim"] == want["dim"]
        assert np.allclose(stored["unit"], want["unit"], rtol=0, atol=1e-15)
    assert expected is not None and len(expected.obs) == cap


def test_an_unchanged_exemplar_set_keeps_its_vectors(graph: MemoryGraph) -> None:
    g = rng(42)
    person = unit(face_dim(graph), g)
    for clip in range(5):
        add_clip(graph, "v", clip)
        (res,) = graph.resolve_faces("v", clip, [face_cluster(0, person, g, qualities=[90.0, 91.0, 92.0])])
    before = entity(graph, res.entity_id)
    assert before["n"] == graph.settings.identity.max_face_exemplars
    add_clip(graph, "v", 9)
    (low,) = graph.resolve_faces("v", 9, [face_cluster(0, person, g, qualities=[1.0, 2.0, 3.0])])
    assert low.entity_id == res.entity_id and not low.created
    after = entity(graph, res.entity_id)
    for key in ("exemplars", "quality", "obs", "centroid", "unit", "n"):
        assert after[key] == before[key], key
    (row,) = rows(graph, "MATCH (f:Face {entity_id: $id}) RETURN f.last_clip_index AS last, "
                         "COUNT { (:FaceObs)-[:OF]->(f) } AS obs", id=res.entity_id)
    assert row == {"last": 9, "obs": 18}


@pytest.mark.parametrize("mode", ["argmax", "components"])
def test_new_entities_get_the_characters_a_refresh_would_give(graph: MemoryGraph, mode: str) -> None:
    mg = with_settings(graph, variant(graph.settings, memory={"character_mode": mode}))
    g = rng(43)
    add_clip(mg, "v", 0)
    twins = unit(face_dim(mg), g)
    faces = mg.resolve_faces("v", 0, [face_cluster(0, twins, g, times=[1.0, 2.0]),
                                      face_cluster(1, near(twins, 0.9, g), g, times=[2.0, 3.0]),
                                      face_cluster(2, unit(face_dim(mg), g), g, times=[10.0])])
    voices = mg.resolve_voices("v", 0, [voice_cluster(0, unit(voice_dim(mg), g), g, start=0.0),
                                        voice_cluster(1, unit(voice_dim(mg), g), g, start=20.0)])
    ids = sorted(r.entity_id for r in faces + voices)
    assert all(r.created for r in faces + voices) and len(set(ids)) == 5
    chars = mg.characters_of(ids)
    assert len(set(chars.values())) == 5
    (state,) = rows(mg, "MATCH (c:Character) RETURN collect(c {.char_id, .name, .size, .aliases}) AS chars")
    assert sorted(state["chars"], key=lambda c: c["char_id"]) == [
        {"char_id": chars[e], "name": f"character_{chars[e]}", "size": 1, "aliases": []} for e in ids]
    # Character ids follow entity ids, as refresh_characters allocates them; a refresh now changes nothing.
    assert [chars[e] for e in ids] == sorted(chars.values())
    assert mg.ex.write_tx(lambda tx: refresh_characters(tx, mg.settings, ids)) == 0
    assert mg.characters_of(ids) == chars


@pytest.mark.parametrize("kind", ["face", "voice"])
def test_pruning_by_the_index_cosine_drops_no_candidate_that_could_pass(graph: MemoryGraph, kind: str) -> None:
    """`prune_below` skips the exact rerank of candidates whose index cosine is under the threshold; the scores
    returned must be exactly those of the unpruned statement, for people at every distance around the threshold."""
    g = rng(44)
    dim = face_dim(graph) if kind == "face" else voice_dim(graph)
    person = unit(dim, g)
    add_clip(graph, "p", 0)
    add_clip(graph, "p", 1)

    def make(label: int, base: np.ndarray, cos: float) -> Any:
        # Every cluster at the same moments: seen (or heard) together, so never one entity.
        if kind == "face":
            return face_cluster(label, base, g, cos=cos, times=[1.0, 2.0])
        return voice_cluster(label, base, g, cos=cos, start=0.0)

    # Sixteen people at cosines 0.50 to 0.80 from `person` (sixteen entities), their exemplars tight enough that the
    # exact scores of several fall within a few hundredths above the threshold (0.6) and below it.
    crowd = [make(i, near(person, float(c), g), 0.995) for i, c in enumerate(np.linspace(0.50, 0.80, 16))]
    assert len({r.entity_id for r in getattr(graph, f"resolve_{kind}s")("p", 0, crowd)}) == 16
    query = make(0, person, 0.995)
    mean = np.mean([np.asarray(o.embedding) for o in (query.observations if kind == "face" else query.utterances)],
                   axis=0)
    params = {"source_id": "p", "clip_index": 1, "k": 50, "threshold": 0.6,
              "queries": [{"label": 0, "mean": mean.tolist(), "unit": (mean / np.linalg.norm(mean)).tolist()}]}

    def scores(prune_below: float | None) -> list[tuple[int, float]]:
        row = graph.ex.write_tx(lambda tx: tx.single(f"identity/{kind}_match", prune_below=prune_below, **params))
        return sorted((s["entity_id"], s["score"]) for s in row["scores"])

    full = scores(None)
    assert 0 < len(full) < 16 and min(score for _, score in full) < 0.63  # some pass 0.6, one only just
    assert scores(0.6 - 1e-6) == full
