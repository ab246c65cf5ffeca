"""People by name on the real Neo4j (issue 36): `Character.name` follows the name facts through every write
(a rename, a correction and its undo, a deleted clip, a vote and its undo, a chat speaker), chat speakers get
their name as a fact with provenance (once, idempotent), a name lookup finds video people and speakers by their
current and former names and lists every candidate, and a graph written without names is named by the
backfill. The lookups and the name queries seek indexes (no label scan)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from m3graph.cypher import query
from m3graph.embedding import TextEmbedder
from m3graph.graphdb import facts
from m3graph.graphdb.names import people_named
from m3graph.graphdb.store import MemoryGraph
from m3graph.ingest.chat import speaker_names
from m3graph.ingest.chat.ingest import ingest_conversation
from m3graph.ingest.chat.model import Conversation, Session, Turn
from m3graph.schema.character_names import backfill_character_names
from m3graph.service import notes
from tests.helpers.graph import add_clip, face_cluster, face_dim, mem, rng, rows, set_next_entity_id, text_dim, unit


def _name(graph: MemoryGraph, char_id: int) -> str:
    (row,) = rows(graph, "MATCH (c:Character {char_id: $id}) RETURN c.name AS name", id=char_id)
    return str(row["name"])


def _char_of(graph: MemoryGraph, entity_id: int) -> int:
    return graph.characters_of([entity_id])[entity_id]


def _fact(graph: MemoryGraph, video: str, clip: int, text: str) -> str:
    """Writes one semantic memory in its own clip (added); returns its memory id."""
    add_clip(graph, video, clip)
    graph.write_memories(video, clip, [mem("semantic", text, unit(text_dim(graph), rng(clip)))])
    (row,) = rows(graph, "MATCH (m:Memory {video_id: $v, clip_index: $c}) RETURN m.memory_id AS id", v=video, c=clip)
    return str(row["id"])


def _faces(graph: MemoryGraph, video: str = "v") -> tuple[int, int]:
    """Faces 1 and 12 of `video`, each its own character."""
    g = rng(5)
    add_clip(graph, video, 0)
    set_next_entity_id(graph, 1)
    (a,) = graph.resolve_faces(video, 0, [face_cluster(0, unit(face_dim(graph), g), g)])
    set_next_entity_id(graph, 12)
    add_clip(graph, video, 99)  # a clip resolves once: the second face is seen in another one
    (b,) = graph.resolve_faces(video, 99, [face_cluster(0, unit(face_dim(graph), g), g)])
    return a.entity_id, b.entity_id


def _chat(source: str, sessions: list[list[tuple[str, str, str]]]) -> Conversation:
    out = tuple(Session(index=i, started_at=datetime(2024, 5, 1 + 7 * i, 9, tzinfo=UTC),
                        turns=tuple(Turn(turn_id=t, speaker=who, text=text) for t, who, text in turns), key=f"s{i}")
                for i, turns in enumerate(sessions))
    speakers = tuple(dict.fromkeys(t.speaker for s in out for t in s.turns))
    return Conversation(source_id=source, sessions=out, speakers=speakers)


NORA_S1 = [("D1:1", "Nora", "Hi Bob, the garden looks great."), ("D1:2", "Bob", "Thanks Nora!"),
           ("D1:3", "Nora", "See you next week.")]
NORA_S2 = [("D2:1", "Bob", "How was the trip?"), ("D2:2", "Nora", "Lovely, thanks.")]


def _speaker(graph: MemoryGraph, source: str, name: str) -> int:
    (row,) = rows(graph, "MATCH (s:Speaker {speaker_key: $k}) RETURN s.entity_id AS id", k=f"{source}|{name}")
    return int(row["id"])


def _name_facts(graph: MemoryGraph, source: str) -> list[dict[str, Any]]:
    return rows(graph, "MATCH (m:Memory {video_id: $v}) WHERE m.slot_key ENDS WITH ' · name' "
                       "OPTIONAL MATCH (m)-[:IN_CLIP]->(c:Clip) "
                       "RETURN m.text AS text, m.slot_key AS slot, m.current AS current, m.source_ids AS turns, "
                       "m.kind AS kind, m.support_clips AS support, c.clip_key AS clip, m.start_s AS start_s "
                       "ORDER BY m.created_at", v=source)


# ------------------------------------------------------------------------------------------ video people


def test_a_rename_a_correction_and_a_deleted_clip_keep_character_name_current(graph: MemoryGraph) -> None:
    face, _ = _faces(graph)
    char = _char_of(graph, face)
    assert _name(graph, char) == f"character_{char}"  # no name known yet
    _fact(graph, "v", 1, f"<face_{face}>'s name is Lily.")
    assert _name(graph, char) == "Lily"
    renamed = _fact(graph, "v", 2, f"<face_{face}>'s name is Lilian.")
    assert _name(graph, char) == "Lilian" and facts.character_names(graph.ex, [char]) == {char: "Lilian"}
    facts.correct_fact(graph.ex, renamed, "superseded", note="misheard")
    assert _name(graph, char) == "Lily"  # the correction follows
    facts.correct_fact(graph.ex, renamed, "clear")
    assert _name(graph, char) == "Lilian"  # undone
    graph.delete_clip("v", 2)
    assert _name(graph, char) == "Lily"  # the older fact holds again
    graph.delete_clip("v", 1)
    assert _name(graph, char) == f"character_{char}"


def test_a_merge_takes_the_members_name_and_its_undo_gives_it_back(graph: MemoryGraph) -> None:
    face, other = _faces(graph)
    _fact(graph, "v", 1, f"<face_{face}>'s name is Lily.")
    lily, unnamed = _char_of(graph, face), _char_of(graph, other)
    vote = graph.vote_identity(face, other, "same")
    merged = _char_of(graph, other)
    assert merged == _char_of(graph, face) and _name(graph, merged) == "Lily"
    graph.undo_vote(vote.vote_id)
    assert (_char_of(graph, face), _char_of(graph, other)) == (lily, unnamed)
    assert (_name(graph, lily), _name(graph, unnamed)) == ("Lily", f"character_{unnamed}")


# ------------------------------------------------------------------------------------------ chat speakers


def test_a_speakers_name_is_a_fact_written_once(graph: MemoryGraph, embedder: TextEmbedder) -> None:
    first = ingest_conversation(graph, _chat("chat-n", [NORA_S1]), embedder)
    assert first.speaker_names == 2 and first.semantic == 0  # name facts are counted apart
    nora, bob = _speaker(graph, "chat-n", "Nora"), _speaker(graph, "chat-n", "Bob")
    found = {r["slot"]: r for r in _name_facts(graph, "chat-n")}
    assert found["nora · name"]["text"] == f"Nora <speaker_{nora}>'s name is Nora."
    assert found["bob · name"]["text"] == f"Bob <speaker_{bob}>'s name is Bob."
    # provenance: the session that introduced the speaker, at its start; no turn says it, so none is cited
    assert (found["nora · name"]["turns"], found["nora · name"]["clip"]) == ([], "chat-n#0")
    assert found["nora · name"]["start_s"] == 0.0 and found["bob · name"]["turns"] == []
    assert all(r["kind"] == "semantic" and r["current"] for r in found.values())
    assert _name(graph, _char_of(graph, nora)) == "Nora"
    before = rows(graph, "MATCH (m:Memory) RETURN count(m) AS n")[0]["n"]
    again = ingest_conversation(graph, _chat("chat-n", [NORA_S1]), embedder)  # re-ingest: nothing new
    grown = ingest_conversation(graph, _chat("chat-n", [NORA_S1, NORA_S2]), embedder)  # a grown file
    assert again.sessions_written == [] and grown.speaker_names == 0
    assert rows(graph, "MATCH (m:Memory) RETURN count(m) AS n")[0]["n"] == before + len(NORA_S2)
    assert [r["support"] for r in _name_facts(graph, "chat-n")] == [["chat-n#0"], ["chat-n#0"]]  # said once


def test_a_speakers_rename_and_its_correction_follow_and_history_shows_them(graph: MemoryGraph,
                                                                              embedder: TextEmbedder) -> None:
    ingest_conversation(graph, _chat("chat-n", [NORA_S1, NORA_S2]), embedder)
    nora = _speaker(graph, "chat-n", "Nora")
    char = _char_of(graph, nora)
    mia = _fact(graph, "chat-n", 5, f"Nora <speaker_{nora}> is called Mia now.")
    assert _name(graph, char) == "Mia" and facts.character_names(graph.ex, [char]) == {char: "Mia"}
    versions = facts.history(graph.ex, "chat-n", "nora", "name", k=10)
    assert [(v["slot_value"], v["current"]) for v in versions] == [("Nora", False), ("Mia", True)]
    (old,) = [c for c in people_named(graph.ex, "nora") if c.char_id == char]
    assert (old.match, old.name, old.label) == ("former", "Mia", f"Mia (character_{char})")
    assert [(c.char_id, c.match) for c in people_named(graph.ex, "MIA")] == [(char, "name")]
    facts.correct_fact(graph.ex, mia, "superseded", note="a nickname")
    assert _name(graph, char) == "Nora"
    assert people_named(graph.ex, "Nora")[0].char_id == char and people_named(graph.ex, "Nora")[0].match == "name"


def test_no_name_fact_for_a_facts_list_or_an_agent(graph: MemoryGraph) -> None:
    assert (speaker_names.AGENT_SPEAKER, speaker_names.AGENT_MARK) == (notes.AGENT, notes.AGENT_MARK)
    assert speaker_names.name_fact("Ann Lee") == "Ann Lee's name is Ann Lee."
    assert [speaker_names.name_fact(n) for n in ("Facts", "agent", "Lily (agent)")] == [None, None, None]


# ------------------------------------------------------------------------------------------ lookups


def test_an_ambiguous_name_lists_every_person_it_may_mean(graph: MemoryGraph, embedder: TextEmbedder) -> None:
    face, _ = _faces(graph)
    _fact(graph, "v", 1, f"<face_{face}>'s name is Mia.")
    _fact(graph, "v", 2, f"<face_{face}> waves at Tom.")
    ingest_conversation(graph, _chat("chat-m", [[("D1:1", "Mia", "Hello Tom."), ("D1:2", "Tom", "Hi Mia.")]]),
                        embedder)
    video_mia, chat_mia = _char_of(graph, face), _char_of(graph, _speaker(graph, "chat-m", "Mia"))
    found = people_named(graph.ex, "mia")
    assert {(c.char_id, c.match, c.name) for c in found} == {(video_mia, "name", "Mia"), (chat_mia, "name", "Mia")}
    assert sorted(c.label for c in found) == sorted([f"Mia (character_{video_mia})", f"Mia (character_{chat_mia})"])
    assert [c.char_id for c in people_named(graph.ex, "Mia", videos=["chat-m"])] == [chat_mia]
    tom = people_named(graph.ex, "Tom")  # the speaker Tom first; the face only mentioned beside the name
    assert tom[0].match == "name" and tom[0].char_id == _char_of(graph, _speaker(graph, "chat-m", "Tom"))
    assert (tom[-1].char_id, tom[-1].match) == (video_mia, "mention")
    assert graph.search.characters_named("Mia", ["v"]) == [(video_mia, 1)]
    assert people_named(graph.ex, "Nobody") == [] and people_named(graph.ex, "  ") == []


# ------------------------------------------------------------------------------------------ backfill


def test_the_backfill_names_a_graph_written_without_names(graph: MemoryGraph, embedder: TextEmbedder) -> None:
    face, other = _faces(graph)
    _fact(graph, "v", 1, f"<face_{face}>'s name is Lily.")
    ingest_conversation(graph, _chat("chat-n", [NORA_S1]), embedder)
    chars = {_char_of(graph, face): "Lily", _char_of(graph, other): None,
             _char_of(graph, _speaker(graph, "chat-n", "Nora")): "Nora",
             _char_of(graph, _speaker(graph, "chat-n", "Bob")): "Bob"}
    rows(graph, "MATCH (c:Character) SET c.name = 'character_' + toString(c.char_id)")  # as written before
    assert backfill_character_names(graph.ex, batch=2) == 3  # pages of two
    assert {c: _name(graph, c) for c in chars} == {c: n or f"character_{c}" for c, n in chars.items()}
    assert backfill_character_names(graph.ex) == 0  # idempotent


# ------------------------------------------------------------------------------------------ plans

PLAN_CASES: dict[str, dict[str, Any]] = {
    "search/characters_named": {"text": '"mia"', "name_keys": ["mia"], "name_lower": "mia", "videos": None,
                                "before_clip": None, "limit": 1000},
    "facts/character_names": {"char_ids": [1, 2]},
    "facts/name_slot_characters": {"source_id": "v", "entity_ids": [1], "speakers": True},
    "characters/name_page": {"after": -1, "n": 500},
    "characters/set_names": {"rows": [{"char_id": 1, "name": "Mia"}]},
}


@pytest.mark.parametrize("name", sorted(PLAN_CASES))
def test_name_queries_scan_no_label(graph: MemoryGraph, name: str) -> None:
    with graph.ex.session() as session:  # some data, so the plan is costed on statistics
        session.run("UNWIND range(1, 200) AS i CREATE (:Character {char_id: i, name: 'character_' + toString(i)}) "
                    "CREATE (:Speaker {entity_id: 1000 + i, speaker_key: 'v|s' + toString(i)})").consume()
        session.run("CALL db.resampleOutdatedIndexes()").consume()
        session.run("CALL db.prepareForReplanning()").consume()
        plan = session.run("CYPHER replan=force EXPLAIN " + query(name).text, PLAN_CASES[name]).consume().plan
    assert plan is not None

    def ops(p: dict[str, Any]) -> list[str]:
        return [p["operatorType"].split("@")[0]] + [o for c in p.get("children", []) for o in ops(c)]

    assert not {"AllNodesScan", "NodeByLabelScan", "NodeIndexScan"} & set(ops(plan)), (name, ops(plan))
