"""Small builders and checks for the memory-graph tests; always against the real Neo4j of the session.

The fixtures (`memory_graph`, `graph`) are in tests/conftest.py; import the helpers here by name
(``from tests.helpers.graph import add_clip, rows``).
Vectors are built with an exact cosine to a base vector (`near`), so every threshold test knows on which side
of the threshold it is, independent of the random seed.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from neo4j import Driver

from m3graph.errors import M3GraphError
from m3graph.graphdb.store import MemoryGraph
from m3graph.graphdb.types import (
    ClipInfo,
    FaceCluster,
    FaceObservation,
    MemoryIn,
    UtteranceObservation,
    VoiceCluster,
)
from m3graph.settings import Settings

# ---------------------------------------------------------------------------------------------- database ownership
# The tests empty the graph before most tests. They must never do that to a user's memory (NEO4J_URI pointing at
# a real server): the suite writes a marker node on a database that is empty at session start, and every wipe
# deletes only on a database that carries that marker, checked inside the deleting statement itself.

MARKER_LABEL = "M3GraphTestSuite"
SUITE = "m3graph-tests"
_CENSUS = (f"OPTIONAL MATCH (mark:{MARKER_LABEL} {{suite: $suite}}) WITH count(mark) AS marks "
           f"OPTIONAL MATCH (x) WHERE NOT x:Migration AND NOT x:{MARKER_LABEL} "
           "RETURN marks, count(x) AS foreign, collect(DISTINCT labels(x))[..5] AS labels")
_MARK = f"MERGE (mark:{MARKER_LABEL} {{suite: $suite}}) ON CREATE SET mark.created_at = datetime()"
# One statement: without the marker the first MATCH yields no row and nothing is deleted.
_WIPE_MARKED = (f"MATCH (mark:{MARKER_LABEL} {{suite: $suite}}) WITH count(mark) AS marks WHERE marks = 1 "
                f"MATCH (x) WHERE NOT x:Migration AND NOT x:{MARKER_LABEL} DETACH DELETE x")


class ForeignDatabaseError(M3GraphError):
    """The database holds data this test suite did not create; the suite refuses to write to it."""


def ownership_check(driver: Driver, database: str | None = None) -> None:
    """Raises `ForeignDatabaseError` unless the database is the suite's: marked, or empty but for migrations."""
    with driver.session(database=database) as session:
        row = session.run(_CENSUS, suite=SUITE).single()
    assert row is not None
    if row["marks"] == 0 and row["foreign"] > 0:
        where = driver.get_server_info().address
        raise ForeignDatabaseError(
            f"refusing to run the tests against the Neo4j at {where} (database {database or 'default'}): it holds "
            f"{row['foreign']} nodes (labels {row['labels']}) that this test suite did not create (no "
            f":{MARKER_LABEL} marker). The tests delete everything they find: unset NEO4J_URI to let them start "
            "their own server, or point it at an empty, throwaway database.")


def claim_database(driver: Driver, database: str | None = None) -> None:
    """Checks ownership, then writes the marker (a no-op when it is already there)."""
    ownership_check(driver, database)
    with driver.session(database=database) as session:
        session.run(_MARK, suite=SUITE).consume()


def wipe_owned(driver: Driver, database: str | None = None) -> None:
    """Deletes everything but migrations and the marker, only on a database this suite marked."""
    ownership_check(driver, database)
    with driver.session(database=database) as session:
        marked = session.run(f"MATCH (mark:{MARKER_LABEL} {{suite: $suite}}) RETURN count(mark) AS n",
                             suite=SUITE).single()
        if marked is None or marked["n"] != 1:
            raise ForeignDatabaseError(f"refusing to wipe a database without the :{MARKER_LABEL} marker")
        session.run(_WIPE_MARKED, suite=SUITE).consume()


def wipe(mg: MemoryGraph) -> None:
    wipe_owned(mg.ex.driver, mg.ex.database)


# ---------------------------------------------------------------------------------------------- settings


def variant(settings: Settings, **sections: dict[str, Any]) -> Settings:
    """A copy of `settings` with some fields of nested sections changed (validated, so enums are parsed)."""
    update = {}
    for name, changes in sections.items():
        current = getattr(settings, name)
        update[name] = type(current).model_validate({**current.model_dump(), **changes})
    return settings.model_copy(update=update)


def with_settings(mg: MemoryGraph, settings: Settings) -> MemoryGraph:
    """Another store over the same driver with different settings (do not close it)."""
    return MemoryGraph(mg.ex, settings)


def perception_graph(memory_graph: MemoryGraph, data_dir: Path) -> MemoryGraph:
    """The session store with the thresholds measured for the offline embedders (not the reference's)."""
    settings = variant(memory_graph.settings, identity={"face_threshold": None, "voice_threshold": None})
    return with_settings(memory_graph, settings.model_copy(update={"data_dir": data_dir}))


# ---------------------------------------------------------------------------------------------- vectors


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def unit(dim: int, gen: np.random.Generator) -> np.ndarray:
    v = gen.standard_normal(dim)
    return v / np.linalg.norm(v)


def near(base: np.ndarray, cos: float, gen: np.random.Generator) -> np.ndarray:
    """A unit vector whose cosine to the unit vector `base` is exactly `cos`."""
    base = base / np.linalg.norm(base)
    noise = gen.standard_normal(base.shape[0])
    orth = noise - (noise @ base) * base
    orth /= np.linalg.norm(orth)
    return cos * base + np.sqrt(max(0.0, 1.0 - cos * cos)) * orth


class PlacedVectors:
    """A text embedder that places each text at a chosen cosine to `query`: the cosine of the first key of
    `cosines` the text contains, else 0 (no model: the ranking is under test)."""

    def __init__(self, query: np.ndarray, cosines: dict[str, float]) -> None:
        self.query, self.cosines, self.dim, self.g = query, cosines, query.shape[0], rng(4)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([near(self.query, next((c for k, c in self.cosines.items() if k in t), 0.0), self.g)
                         for t in texts])


def face_dim(mg: MemoryGraph) -> int:
    return mg.settings.identity.face_dim


def voice_dim(mg: MemoryGraph) -> int:
    return mg.settings.identity.voice_dim


def text_dim(mg: MemoryGraph) -> int:
    return mg.settings.memory.text_dim


# ---------------------------------------------------------------------------------------------- builders


def add_clip(mg: MemoryGraph, source_id: str, clip_index: int, seconds: float = 30.0) -> ClipInfo:
    clip = ClipInfo(source_id=source_id, clip_index=clip_index, start_s=clip_index * seconds,
                    end_s=(clip_index + 1) * seconds)
    mg.upsert_clip(clip)
    return clip


def face_cluster(label: int, base: np.ndarray, gen: np.random.Generator, n: int = 3, cos: float = 0.98,
                 times: Sequence[float] | None = None, qualities: Sequence[float] | None = None,
                 det: float = 0.99) -> FaceCluster:
    """`n` observations of one person, each at cosine `cos` to `base`."""
    n = len(times) if times is not None else n
    times = list(times) if times is not None else [float(label * 100 + i) for i in range(n)]
    qualities = list(qualities) if qualities is not None else [25.0 + i for i in range(n)]
    obs = [FaceObservation(frame_time_s=times[i], bbox=(0, 0, 10, 10), det_score=det, quality=qualities[i],
                           embedding=near(base, cos, gen).tolist()) for i in range(n)]
    return FaceCluster(label=label, observations=obs)


def voice_cluster(label: int, base: np.ndarray, gen: np.random.Generator, n: int = 2, cos: float = 0.98,
                  start: float | None = None) -> VoiceCluster:
    t0 = float(label * 100) if start is None else start
    utts = [UtteranceObservation(start_s=t0 + 3 * i, end_s=t0 + 3 * i + 2, text=f"words {label}/{i}",
                                 embedding=near(base, cos, gen).tolist()) for i in range(n)]
    return VoiceCluster(label=label, utterances=utts)


def new_face(mg: MemoryGraph, source_id: str, clip_index: int, base: np.ndarray, gen: np.random.Generator,
             **kw: Any) -> int:
    """Resolves one face cluster in a (registered) clip; returns the entity id."""
    (res,) = mg.resolve_faces(source_id, clip_index, [face_cluster(0, base, gen, **kw)])
    return res.entity_id


def new_voice(mg: MemoryGraph, source_id: str, clip_index: int, base: np.ndarray, gen: np.random.Generator,
              **kw: Any) -> int:
    (res,) = mg.resolve_voices(source_id, clip_index, [voice_cluster(0, base, gen, **kw)])
    return res.entity_id


def mem(kind: str, text: str, vec: np.ndarray) -> MemoryIn:
    return MemoryIn(kind=kind, text=text, embedding=np.asarray(vec, dtype=float).tolist())  # type: ignore[arg-type]


def set_next_entity_id(mg: MemoryGraph, next_id: int) -> None:
    """Makes the next allocated entity id `next_id` (to reproduce tag collisions such as face_1 / face_12)."""
    with mg.ex.session() as session:
        session.run("MERGE (c:Counter {name: 'entity'}) SET c.value = $v", v=next_id - 1).consume()


# ---------------------------------------------------------------------------------------------- inspection


def rows(mg: MemoryGraph, cypher: str, **params: Any) -> list[dict[str, Any]]:
    """Raw read for assertions (the store's own API is what is under test)."""
    with mg.ex.session() as session:
        return [r.data() for r in session.run(cypher, params)]


def memories(mg: MemoryGraph) -> dict[str, dict[str, Any]]:
    out = rows(mg, "MATCH (m:Memory) OPTIONAL MATCH (m)-[:IN_CLIP]->(c:Clip) "
                   "RETURN m.memory_id AS id, m.kind AS kind, m.text AS text, m.support AS support, "
                   "m.support_clips AS support_clips, m.clip_index AS clip_index, m.first_clip AS first_clip, "
                   "collect(c.clip_key) AS in_clip, [(m)-[:MENTIONS]->(e) | e.entity_id] AS mentions")
    return {r["id"]: r for r in out}


def by_text(mg: MemoryGraph) -> dict[str, dict[str, Any]]:
    return {m["text"]: m for m in memories(mg).values()}


def entity(mg: MemoryGraph, entity_id: int) -> dict[str, Any]:
    (row,) = rows(mg, "MATCH (e {entity_id: $id}) WHERE e:Face OR e:Voice "
                      "RETURN e.exemplars AS exemplars, e.exemplar_quality AS quality, e.exemplar_obs AS obs, "
                      "e.dim AS dim, e.centroid AS centroid, e.centroid_unit AS unit, e.n_exemplars AS n",
                  id=entity_id)
    row["vectors"] = np.asarray(row["exemplars"], dtype=np.float64).reshape(len(row["quality"]), row["dim"])
    return row


ORPHAN_CHECKS = {
    "FaceObs without OF": "MATCH (o:FaceObs) WHERE NOT (o)-[:OF]->(:Face) RETURN count(o) AS n",
    "FaceObs without IN_CLIP": "MATCH (o:FaceObs) WHERE NOT (o)-[:IN_CLIP]->(:Clip) RETURN count(o) AS n",
    "Utterance without OF": "MATCH (o:Utterance) WHERE NOT (o)-[:OF]->(:Voice) RETURN count(o) AS n",
    "Utterance without IN_CLIP": "MATCH (o:Utterance) WHERE NOT (o)-[:IN_CLIP]->(:Clip) RETURN count(o) AS n",
    "Memory without exactly one IN_CLIP":
        "MATCH (m:Memory) WHERE COUNT { (m)-[:IN_CLIP]->(:Clip) } <> 1 RETURN count(m) AS n",
    "Memory IN_CLIP disagrees with clip_index":
        "MATCH (m:Memory)-[:IN_CLIP]->(c:Clip) WHERE c.clip_index <> m.clip_index OR c.video_id <> m.video_id "
        "OR c.clip_key <> m.first_clip RETURN count(m) AS n",
    "Memory without support": "MATCH (m:Memory) WHERE coalesce(m.support, 0) < 1 "
                              "OR m.support <> size(m.support_clips) RETURN count(m) AS n",
    "Memory supported by a missing clip":
        "MATCH (m:Memory) UNWIND m.support_clips AS k WITH m, k "
        "WHERE NOT EXISTS { MATCH (:Clip {clip_key: k}) } RETURN count(m) AS n",
    "Character without IS": "MATCH (c:Character) WHERE NOT (c)<-[:IS]-() RETURN count(c) AS n",
    "Character size wrong": "MATCH (c:Character) WHERE c.size <> COUNT { (c)<-[:IS]-() } RETURN count(c) AS n",
    "entity without one IS": "MATCH (e) WHERE (e:Face OR e:Voice) AND COUNT { (e)-[:IS]->(:Character) } <> 1 "
                             "RETURN count(e) AS n",
    "entity without evidence": "MATCH (e) WHERE (e:Face OR e:Voice) AND NOT (e)<-[:OF]-() RETURN count(e) AS n",
    "entity exemplar without observation":
        "MATCH (e) WHERE e:Face OR e:Voice UNWIND e.exemplar_obs AS k WITH e, k "
        "WHERE NOT EXISTS { MATCH (:FaceObs {obs_key: k}) } AND NOT EXISTS { MATCH (:Utterance {utt_key: k}) } "
        "RETURN count(k) AS n",
    "Clip without Video": "MATCH (c:Clip) WHERE NOT (c)-[:OF]->(:Video) RETURN count(c) AS n",
    "SAME_AS without votes": "MATCH ()-[r:SAME_AS]->() WHERE r.votes < 1 OR r.votes <> size(r.evidence) "
                             "RETURN count(r) AS n",
    "SAME_AS evidence from a missing clip":
        "MATCH ()-[r:SAME_AS]->() UNWIND r.evidence AS ev WITH r, split(ev, '|')[0] AS k "
        "WHERE NOT EXISTS { MATCH (:Clip {clip_key: k}) } RETURN count(r) AS n",
    "CO_OCCURS from a missing clip":
        "MATCH ()-[r:CO_OCCURS]->() WHERE size(r.clips) = 0 OR any(k IN r.clips WHERE NOT EXISTS "
        "{ MATCH (:Clip {clip_key: k}) }) RETURN count(r) AS n",
}


# Schema bookkeeping is not data: connecting records migrations and claims an unmarked graph for the configured
# text model (`EmbeddingModel`, m3graph/schema/migrations.py), so a command that connects to an emptied graph and
# then fails has still changed nothing a user stored.
_DUMP_NODES = ("MATCH (x) WHERE NOT x:Migration AND NOT x:EmbeddingModel AND NOT x:" + MARKER_LABEL +
               " RETURN elementId(x) AS id, labels(x) AS labels, properties(x) AS props")
_DUMP_RELS = "MATCH (a)-[r]->(b) RETURN elementId(a) AS a, type(r) AS type, properties(r) AS props, elementId(b) AS b"


def _plain(props: dict[str, Any]) -> str:
    """Properties as canonical text, without timestamps (`*_at`, temporal values): they differ between runs."""
    kept = {k: v for k, v in props.items() if not k.endswith("_at") and not hasattr(v, "iso_format")}
    return repr(sorted((k, repr(v)) for k, v in kept.items()))


def canonical_dump(mg: MemoryGraph) -> list[str]:
    """Every node and relationship with its properties, minus timestamps, as sorted text: equal dumps mean the
    graph did not change (node ids are replaced by each node's content, so two runs compare equal)."""
    nodes = {r["id"]: f"{sorted(r['labels'])} {_plain(r['props'])}" for r in rows(mg, _DUMP_NODES)}
    rels = [f"({nodes.get(r['a'], '?')})-[{r['type']} {_plain(r['props'])}]->({nodes.get(r['b'], '?')})"
            for r in rows(mg, _DUMP_RELS)]
    return sorted(nodes.values()) + sorted(rels)


def orphan_report(mg: MemoryGraph) -> dict[str, int]:
    """Every structural invariant that deletion must preserve, as violation counts (all zero when clean)."""
    return {name: rows(mg, cypher)[0]["n"] for name, cypher in ORPHAN_CHECKS.items()}


def assert_no_orphans(mg: MemoryGraph) -> None:
    violated = {k: v for k, v in orphan_report(mg).items() if v}
    assert not violated, f"graph invariants violated: {violated}"
