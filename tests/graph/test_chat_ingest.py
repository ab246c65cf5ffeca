"""Conversation and transcript ingestion against the real Neo4j: every format, malformed files (the error
names the line, the graph is unchanged), incremental append, speakers and characters, deletion, search, the
CLI and session memorization through a scripted chat model."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from m3graph.cli import main
from m3graph.embedding import TextEmbedder
from m3graph.errors import InvalidInputError
from m3graph.graphdb.search_plan import SearchSpec
from m3graph.graphdb.store import MemoryGraph
from m3graph.ingest.chat.formats import load_conversation
from m3graph.ingest.chat.ingest import SessionMemory, ingest_conversation
from m3graph.ingest.chat.locomo import load_locomo
from m3graph.ingest.chat.memorize_session import LLMSessionMemorizer
from m3graph.ingest.chat.model import ChatFormatError, Conversation, Session
from tests.helpers.chat_doubles import ScriptedModel
from tests.helpers.graph import variant, with_settings

DEV = Path(__file__).resolve().parents[3] / "shared" / "data" / "conversations" / "locomo-26.json"


# ---------------------------------------------------------------------------------------------- helpers


def _locomo(sessions: dict[int, list[dict[str, Any]]]) -> dict[str, Any]:
    data: dict[str, Any] = {"speaker_a": "Ann", "speaker_b": "Bob"}
    for n, turns in sessions.items():
        data[f"session_{n}_date_time"] = f"{n}:05 pm on {n} May, 2023"
        data[f"session_{n}"] = turns
        data[f"session_{n}_summary"] = "SECRET SUMMARY that must never be ingested"
        data[f"session_{n}_observation"] = {"Ann": [["SECRET OBSERVATION", "D1:1"]]}
        data[f"events_session_{n}"] = {"Ann": ["SECRET EVENT"]}
    data["qa"] = [{"question": "Where was the notebook?", "answer": "in the blue drawer", "evidence": ["D1:3"],
                   "category": 4},
                  {"question": "What breed is Bob's cat?", "evidence": ["D2:1"], "category": 5,
                   "adversarial_answer": "a tabby"}]
    return data


def _write(path: Path, data: Any) -> Path:
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=2), encoding="utf-8")
    return path


S1 = [{"speaker": "Ann", "dia_id": "D1:1", "text": "Hi Bob, I finally finished painting the kitchen."},
      {"speaker": "Bob", "dia_id": "D1:2", "text": "Nice! Did you ever find the notebook?",
       "blip_caption": "a photo of a freshly painted yellow kitchen", "img_url": ["http://unreachable"]},
      {"speaker": "Ann", "dia_id": "D1:3", "text": "Yes, it was in the blue drawer all along."}]
S2 = [{"speaker": "Bob", "dia_id": "D2:1", "text": "I adopted a puppy called Pixel yesterday."},
      {"speaker": "Ann", "dia_id": "D2:2", "text": "Congratulations! What breed is Pixel?"}]

SRT = """1
00:00:01,000 --> 00:00:03,500
Ann: Where did you leave the blue notebook?

2
00:00:04,000 --> 00:00:06,000
Bob: On the kitchen shelf,
next to the radio.

3
00:00:06,500 --> 00:00:08,000
- Ann: Thanks!
- Bob: No problem.
"""
VTT = """WEBVTT

NOTE recorded at the standup

intro
00:01.000 --> 00:03.000 align:start
<v Ann>Where is the <i>blue</i> notebook?</v>

00:00:04.000 --> 00:00:06.000
<v.loud Bob>On the shelf, next to the radio.</v>
"""
TEXT = """# standup notes
--- 2024-05-01T09:00:00Z
Ann: Morning all.
Bob: Morning Ann, the build is green
again.
--- 2024-05-02 09:00
Ann: We release the mobile app today.
"""
GENERIC = {"source_id": "chat-generic", "speakers": ["Ann", "Bob", "Cy"],
           "sessions": [{"id": "s1", "started_at": "2024-05-01T09:00:00Z",
                         "turns": [{"id": "t1", "speaker": "Ann", "text": "The spare key is under the flower pot."},
                                   {"speaker": "Cy", "text": "", "image_caption": "a photo of a red bicycle",
                                    "start_s": 2.0, "end_s": 4.0}]},
                        {"turns": [{"speaker": "Bob", "text": "I moved the key to the garage."}]}]}


def _rows(graph: MemoryGraph, query: str, **params: Any) -> list[dict[str, Any]]:
    with graph.ex.session() as session:
        return [r.data() for r in session.run(query, **params)]


def _snapshot(graph: MemoryGraph) -> list[Any]:
    """Every node's labels and key properties and every relationship: equal snapshots mean an unchanged graph."""
    skip = {"embedding", "created_at", "updated_at", "touched_at", "state_at"}
    nodes = sorted(repr((sorted(r["l"]), sorted((k, repr(v)) for k, v in r["p"].items() if k not in skip)))
                   for r in _rows(graph, "MATCH (n) WHERE NOT n:Migration RETURN labels(n) AS l, properties(n) AS p"))
    rels = _rows(graph, "MATCH (a)-[r]->(b) RETURN type(r) AS t, elementId(a) AS a, elementId(b) AS b, "
                        "properties(r) AS p ORDER BY t, a, b")
    return [nodes, [repr(r) for r in rels]]


def _memories(graph: MemoryGraph, source: str) -> list[dict[str, Any]]:
    """The source's memories but the speakers' name facts ("Ann <speaker_1>'s name is Ann.", tests/graph/
    test_character_names.py), in clip order."""
    return _rows(graph, "MATCH (m:Memory {video_id: $v}) "
                        "WHERE NOT coalesce(m.slot_key ENDS WITH ' · name' AND m.slot_value = m.slot_subject, false) "
                        "OPTIONAL MATCH (m)-[:MENTIONS]->(s:Speaker) "
                        "RETURN m.text AS text, m.kind AS kind, m.clip_index AS clip, m.source_ids AS ids, "
                        "m.start_s AS start_s, m.end_s AS end_s, m.order_in_clip AS o, "
                        "collect(s.speaker_name) AS speakers ORDER BY clip, o", v=source)


def _speakers(graph: MemoryGraph, source: str) -> dict[str, tuple[int, int | None]]:
    rows = _rows(graph, "MATCH (s:Speaker {source_id: $v}) OPTIONAL MATCH (s)-[:IS]->(c:Character) "
                        "RETURN s.speaker_name AS name, s.entity_id AS id, c.char_id AS char", v=source)
    return {r["name"]: (r["id"], r["char"]) for r in rows}


# ---------------------------------------------------------------------------------------------- LoCoMo


def test_locomo_dev_file_loads_and_a_few_sessions_ingest(graph: MemoryGraph, embedder: TextEmbedder) -> None:
    conv, questions = load_locomo(DEV)
    assert conv.source_id == "locomo-26" and conv.speakers == ("Caroline", "Melanie")
    assert len(conv.sessions) == 19 and sum(len(s.turns) for s in conv.sessions) == 419 and len(questions) == 199
    assert str(conv.sessions[0].started_at) == "2023-05-08 13:56:00+00:00"
    small = replace(conv, source_id="chat-dev-26", sessions=conv.sessions[:2])
    summary = ingest_conversation(graph, small, embedder)
    assert summary.sessions_written == [0, 1] and summary.turns == sum(len(s.turns) for s in small.sessions)
    assert summary.speaker_names == 2 and graph.counts("chat-dev-26")["Memory"] == summary.turns + 2  # + names
    assert set(_speakers(graph, "chat-dev-26")) == {"Caroline", "Melanie"}


def test_locomo_sessions_become_clips_and_turns_memories(graph: MemoryGraph, embedder: TextEmbedder,
                                                         tmp_path: Path) -> None:
    conv, questions = load_locomo(_write(tmp_path / "chat-a.json", _locomo({1: S1, 2: S2})))
    assert questions[0] == questions[0].__class__("Where was the notebook?", "in the blue drawer", ("D1:3",), 4)
    assert questions[1].answer == "" and questions[1].adversarial_answer == "a tabby"
    summary = ingest_conversation(graph, conv, embedder)
    assert (summary.sessions_written, summary.episodic, summary.speakers_created) == ([0, 1], 5, 2)

    clips = _rows(graph, "MATCH (c:Clip {video_id: 'chat-a'}) RETURN c.clip_index AS i, c.start_s AS s, "
                         "c.end_s AS e, toString(c.started_at) AS at, c.session_key AS key, c.state AS state "
                         "ORDER BY i")
    assert clips == [{"i": 0, "s": 0.0, "e": 30.0, "at": "2023-05-01T13:05:00Z", "key": "session_1",
                      "state": "memorized"},
                     {"i": 1, "s": 30.0, "e": 50.0, "at": "2023-05-02T14:05:00Z", "key": "session_2",
                      "state": "memorized"}]
    speakers = _speakers(graph, "chat-a")
    ann, bob = speakers["Ann"][0], speakers["Bob"][0]
    mems = _memories(graph, "chat-a")
    assert [m["text"] for m in mems] == [
        f"Ann <speaker_{ann}>: Hi Bob, I finally finished painting the kitchen.",
        f"Bob <speaker_{bob}>: Nice! Did you ever find the notebook? [shares an image: a photo of a freshly painted "
        "yellow kitchen]",
        f"Ann <speaker_{ann}>: Yes, it was in the blue drawer all along.",
        f"Bob <speaker_{bob}>: I adopted a puppy called Pixel yesterday.",
        f"Ann <speaker_{ann}>: Congratulations! What breed is Pixel?"]
    assert [m["ids"] for m in mems] == [["D1:1"], ["D1:2"], ["D1:3"], ["D2:1"], ["D2:2"]]
    assert [m["speakers"] for m in mems] == [["Ann"], ["Bob"], ["Ann"], ["Bob"], ["Ann"]]
    assert [(m["start_s"], m["end_s"]) for m in mems][:2] == [(0.0, 10.0), (10.0, 20.0)]
    assert "SECRET" in json.dumps(_locomo({1: S1})) and "SECRET" not in repr(_snapshot(graph))


def test_speakers_are_entities_with_their_own_characters(graph: MemoryGraph, embedder: TextEmbedder,
                                                         tmp_path: Path) -> None:
    conv, _ = load_locomo(_write(tmp_path / "chat-a.json", _locomo({1: S1})))
    ingest_conversation(graph, conv, embedder)
    ingest_conversation(graph, replace(conv, source_id="chat-b"), embedder)
    a, b = _speakers(graph, "chat-a"), _speakers(graph, "chat-b")
    ids = [a["Ann"][0], a["Bob"][0], b["Ann"][0], b["Bob"][0]]
    chars = [a["Ann"][1], a["Bob"][1], b["Ann"][1], b["Bob"][1]]
    assert len(set(ids)) == 4 and len(set(chars)) == 4 and None not in chars  # a name is an identity per source
    # Speaker ids come from the entity counter shared with faces and voices.
    counter = _rows(graph, "MATCH (c:Counter {name: 'entity'}) RETURN c.value AS v")
    assert counter == [{"v": max(ids)}]
    assert graph.characters_of([a["Ann"][0]]) == {a["Ann"][0]: a["Ann"][1]}
    # Search renders a speaker tag as its character and keeps the name.
    hits = graph.search.search(SearchSpec(embedder.embed(["where was the notebook"])[0].tolist(), mode="node",
                                          videos=["chat-a"], k=3))
    texts = [m.text for clip in hits for m in clip.memories]
    assert f"Ann <character_{a['Ann'][1]}>: Yes, it was in the blue drawer all along." in texts
    facts = graph.search.search(SearchSpec(embedder.embed(["painting"])[0].tolist(), mode="node", videos=["chat-a"],
                                           characters=[a["Ann"][1]], k=5))
    assert {m.raw_text.split(" ")[0] for clip in facts for m in clip.memories} == {"Ann"}


def test_configuration_joins_speakers_across_sources(graph: MemoryGraph, embedder: TextEmbedder,
                                                     tmp_path: Path) -> None:
    joined = with_settings(graph, variant(graph.settings, chat={"same_speakers": {"chat-b|Ann": "chat-a|Ann"}}))
    conv, _ = load_locomo(_write(tmp_path / "chat-a.json", _locomo({1: S1})))
    ingest_conversation(joined, conv, embedder)
    ingest_conversation(joined, replace(conv, source_id="chat-b"), embedder)
    a, b = _speakers(graph, "chat-a"), _speakers(graph, "chat-b")
    assert set(a) == {"Ann", "Bob"} and set(b) == {"Bob"}  # chat-b's Ann IS chat-a's Ann: one entity
    ann_b = _rows(graph, "MATCH (m:Memory {video_id: 'chat-b'})-[:MENTIONS]->(s:Speaker) "
                         "WHERE m.text STARTS WITH 'Ann' RETURN DISTINCT s.entity_id AS id")
    assert ann_b == [{"id": a["Ann"][0]}]
    graph.delete_video("chat-a")  # Ann still speaks in chat-b, so she stays; chat-a's Bob goes
    assert _rows(graph, "MATCH (s:Speaker) RETURN s.speaker_key AS k ORDER BY k") == [{"k": "chat-a|Ann"},
                                                                                       {"k": "chat-b|Bob"}]
    bad = with_settings(graph, variant(graph.settings, chat={"same_speakers": {"chat-c|Ann": "Ann"}}))
    before = _snapshot(graph)
    with pytest.raises(InvalidInputError, match="source\\|name"):
        ingest_conversation(bad, replace(conv, source_id="chat-c"), embedder)
    assert _snapshot(graph) == before


def test_search_finds_the_evidence_turn(graph: MemoryGraph, embedder: TextEmbedder, tmp_path: Path) -> None:
    conv, questions = load_locomo(_write(tmp_path / "chat-a.json", _locomo({1: S1, 2: S2})))
    ingest_conversation(graph, conv, embedder)
    q = questions[0]
    vector = embedder.embed([q.question])[0].tolist()
    for text in (None, q.question):
        hits = graph.search.search(SearchSpec(vector, mode="node", videos=["chat-a"], k=2, text=text))
        found = {i for clip in hits for m in clip.memories for i in m.source_ids}
        assert "D1:3" in found
    clips = graph.search.search(SearchSpec(vector, videos=["chat-a"], k=1, text=q.question))
    assert [c.clip_index for c in clips] == [0] and str(clips[0].started_at) == "2023-05-01 13:05:00+00:00"


def test_incremental_append_skips_stored_sessions(graph: MemoryGraph, embedder: TextEmbedder,
                                                  tmp_path: Path) -> None:
    path = tmp_path / "chat-a.json"
    conv, _ = load_locomo(_write(path, _locomo({1: S1})))
    first = ingest_conversation(graph, conv, embedder)
    assert first.sessions_written == [0]
    before = _snapshot(graph)
    again = ingest_conversation(graph, conv, embedder)
    assert again.sessions_written == [] and again.sessions_skipped == 1 and _snapshot(graph) == before

    conv, _ = load_locomo(_write(path, _locomo({1: S1, 2: S2})))  # the file grew by one session
    grown = ingest_conversation(graph, conv, embedder)
    assert grown.sessions_written == [1] and grown.sessions_skipped == 1 and grown.speakers_created == 0
    assert graph.counts("chat-a")["Clip"] == 2 and graph.counts("chat-a")["Memory"] == 5 + 2  # + Ann's, Bob's name
    nxt = _rows(graph, "MATCH (:Clip {clip_key: 'chat-a#0'})-[:NEXT]->(c:Clip) RETURN c.start_s AS s")
    assert nxt == [{"s": 30.0}]  # appended after the stored session, on the same timeline

    # A transcript appended to the same source becomes the next session; its speakers are the source's.
    srt, _ = load_conversation(_write(tmp_path / "later.srt", SRT), source_id="chat-a")
    more = ingest_conversation(graph, srt, embedder)
    assert more.sessions_written == [2] and more.speakers_created == 0
    assert len(_speakers(graph, "chat-a")) == 2


# ---------------------------------------------------------------------------------------------- other formats


def test_generic_json(graph: MemoryGraph, embedder: TextEmbedder, tmp_path: Path) -> None:
    conv, questions = load_conversation(_write(tmp_path / "g.json", GENERIC))
    assert questions == [] and conv.source_id == "chat-generic" and conv.speakers == ("Ann", "Bob", "Cy")
    assert [s.key for s in conv.sessions][0] == "s1" and conv.sessions[1].key.startswith("sha1:")
    ingest_conversation(graph, conv, embedder)
    mems = _memories(graph, "chat-generic")
    assert [m["ids"] for m in mems] == [["t1"], ["S1:2"], ["S2:1"]]
    assert mems[1]["text"].endswith(": [shares an image: a photo of a red bicycle]")
    assert (mems[1]["start_s"], mems[1]["end_s"]) == (2.0, 4.0)
    assert set(_speakers(graph, "chat-generic")) == {"Ann", "Bob", "Cy"}


def test_srt_and_vtt_keep_cue_times_and_speakers(graph: MemoryGraph, embedder: TextEmbedder,
                                                 tmp_path: Path) -> None:
    srt, _ = load_conversation(_write(tmp_path / "meet.srt", SRT), source_id="chat-srt")
    ingest_conversation(graph, srt, embedder)
    mems = _memories(graph, "chat-srt")
    assert [(m["speakers"], m["ids"], m["start_s"], m["end_s"]) for m in mems] == [
        (["Ann"], ["meet#1"], 1.0, 3.5), (["Bob"], ["meet#2"], 4.0, 6.0),
        (["Ann"], ["meet#3.1"], 6.5, 8.0), (["Bob"], ["meet#3.2"], 6.5, 8.0)]
    assert mems[1]["text"].endswith(": On the kitchen shelf, next to the radio.")

    vtt, _ = load_conversation(_write(tmp_path / "meet.vtt", VTT), source_id="chat-vtt")
    ingest_conversation(graph, vtt, embedder)
    mems = _memories(graph, "chat-vtt")
    assert [(m["speakers"], m["ids"], m["start_s"]) for m in mems] == [(["Ann"], ["meet#intro"], 1.0),
                                                                       (["Bob"], ["meet#2"], 4.0)]
    assert mems[0]["text"].endswith(": Where is the blue notebook?")


def test_plain_transcript_sessions_and_dates(graph: MemoryGraph, embedder: TextEmbedder, tmp_path: Path) -> None:
    conv, _ = load_conversation(_write(tmp_path / "standup.txt", TEXT), source_id="chat-text")
    ingest_conversation(graph, conv, embedder)
    mems = _memories(graph, "chat-text")
    assert [(m["clip"], m["ids"]) for m in mems] == [(0, ["standup:L3"]), (0, ["standup:L4"]), (1, ["standup:L7"])]
    assert mems[1]["text"].endswith(": Morning Ann, the build is green again.")
    dates = _rows(graph, "MATCH (c:Clip {video_id: 'chat-text'}) RETURN toString(c.started_at) AS at ORDER BY at")
    assert dates == [{"at": "2024-05-01T09:00:00Z"}, {"at": "2024-05-02T09:00:00Z"}]


# ---------------------------------------------------------------------------------------------- malformed files

_BAD_TURN = _locomo({1: [S1[0], {"speaker": "Bob", "dia_id": "D1:2"}]})

MALFORMED = [
    ("bad-syntax.json", '{\n  "speaker_a": "Ann",\n  "session_1": [\n    {"speaker": "Ann",,}\n  ]\n}', 4,
     "invalid JSON"),
    ("bad-turn.json", json.dumps(_BAD_TURN, indent=2), 11, "session_1[1]: turn has no string 'text'"),
    ("bad-date.json", json.dumps(_locomo({1: S1}) | {"session_1_date_time": "yesterday"}, indent=2), 4,
     "unrecognised date"),
    ("bad-generic.json", json.dumps({"sessions": [{"turns": [{"speaker": "Ann", "text": "hi"},
                                                             {"speker": "Bob", "text": "yo"}]}]}, indent=2), 9,
     "unknown key 'speker'"),
    ("bad-timing.srt", "1\n00:00:01,000 --> 00:00:02,000\nAnn: hi\n\n2\n00:00:03 -> 00:00:04\nBob: yo\n", 6,
     "a cue needs a timing line"),
    ("no-label.srt", "1\n00:00:01,000 --> 00:00:02,000\nhello there\n", 3, "no speaker label"),
    ("bad-header.vtt", "WEBVT\n\n00:01.000 --> 00:02.000\n<v Ann>hi\n", 1, "must start with 'WEBVTT'"),
    ("bad-cue.vtt", "WEBVTT\n\n00:01.000 --> 00:02.000\n<v Ann>hi\n\n00:03.000 --> 00:0x.000\n<v Bob>yo\n", 6,
     "malformed cue timing"),
    ("no-speaker.txt", "Ann: hello\n--- 2024-05-01\nthis line has no speaker\n", 3, "expected 'Speaker: text'"),
    ("bad-sep.txt", "Ann: hello\n--- next tuesday\nBob: hi\n", 2, "unrecognised date"),
    ("latin1.txt", b"Ann: caf\xe9\n", 1, "not UTF-8"),
]


@pytest.mark.parametrize(("name", "content", "line", "message"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_files_name_the_line_and_change_nothing(graph: MemoryGraph, embedder: TextEmbedder,
                                                          tmp_path: Path, name: str, content: str | bytes,
                                                          line: int, message: str) -> None:
    conv, _ = load_locomo(_write(tmp_path / "chat-a.json", _locomo({1: S1})))
    ingest_conversation(graph, conv, embedder)
    before = _snapshot(graph)
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(ChatFormatError) as err:
        load_conversation(path, source_id="chat-a")
    assert err.value.line == line and f"{path}, line {line}: " in str(err.value) and message in str(err.value)
    result = CliRunner().invoke(main, ["ingest-chat", str(tmp_path / "chat-a.json"), str(path),
                                       "--source-id", "chat-b"], obj=graph.settings)
    assert result.exit_code != 0 and isinstance(result.exception, ChatFormatError)
    assert _snapshot(graph) == before  # the valid first file was not written either


def test_invalid_memorizer_output_writes_no_session(graph: MemoryGraph, embedder: TextEmbedder,
                                                    tmp_path: Path) -> None:
    conv, _ = load_locomo(_write(tmp_path / "chat-a.json", _locomo({1: S1, 2: S2})))
    before = _snapshot(graph)

    class TooLong:
        def memorize(self, conv: Conversation, session: Session) -> list[SessionMemory]:
            return [SessionMemory("episodic", "x" * (9000 if session.index == 1 else 10), ("D1:1",))]

    with pytest.raises(InvalidInputError, match="session session_2"):
        ingest_conversation(graph, conv, embedder, TooLong())
    assert _snapshot(graph) == before


def test_session_memorization_through_a_chat_model(graph: MemoryGraph, embedder: TextEmbedder,
                                                   tmp_path: Path) -> None:
    conv, _ = load_locomo(_write(tmp_path / "chat-a.json", _locomo({1: S1, 2: S2})))
    model = ScriptedModel([
        json.dumps({"episodic": ["Ann finished painting the kitchen. [D1:1]",
                                 "Bob asked about the notebook [D1:2, D9:9]"],
                    "semantic": ["Ann keeps the notebook in the blue drawer. [D1:3]",
                                 "<voice_3> likes tea. [D1:1]",  # a tag: no face or voice is in a session
                                 "Ann adopted a puppy named Pixel the day before. [D1:1]",  # the prompt's example
                                 "Bob likes green tea. [D7:4]"]}),  # cites a turn that is not in the session
        "I cannot help with that.", "still no JSON"])
    memorizer = LLMSessionMemorizer(model, graph.settings)  # type: ignore[arg-type]
    summary = ingest_conversation(graph, conv, embedder, memorizer)
    assert summary.sessions_written == [0, 1]
    assert "[D1:3] Ann: Yes, it was in the blue drawer all along." in model.requests[0].last_user
    ann = _speakers(graph, "chat-a")["Ann"][0]
    mems = _memories(graph, "chat-a")
    assert [(m["kind"], m["text"], m["ids"]) for m in mems if m["clip"] == 0] == [
        ("episodic", f"Ann <speaker_{ann}> finished painting the kitchen.", ["D1:1"]),
        ("episodic", f"Bob <speaker_{_speakers(graph, 'chat-a')['Bob'][0]}> asked about the notebook.", ["D1:2"]),
        ("semantic", f"Ann <speaker_{ann}> keeps the notebook in the blue drawer.", ["D1:3"])]
    assert memorizer.last is not None and memorizer.last.outcome == "fallback"
    # Session 2's output never parsed: every turn is kept, as without a model.
    assert [(m["kind"], m["ids"]) for m in mems if m["clip"] == 1] == [("episodic", ["D2:1"]), ("episodic", ["D2:2"])]


# ---------------------------------------------------------------------------------------------- deletion, CLI


def test_deleting_a_chat_source_removes_its_speakers_and_characters(graph: MemoryGraph, embedder: TextEmbedder,
                                                                    tmp_path: Path) -> None:
    conv, _ = load_locomo(_write(tmp_path / "chat-a.json", _locomo({1: S1, 2: S2})))
    ingest_conversation(graph, conv, embedder)
    ingest_conversation(graph, replace(conv, source_id="chat-b"), embedder)
    kept = _snapshot(graph)
    only_b = [_rows(graph, "MATCH (n) WHERE n.video_id = 'chat-b' OR n.source_id = 'chat-b' RETURN count(n) AS n")]

    # A session's deletion keeps the speakers that still speak elsewhere.
    graph.delete_clip("chat-a", 1)
    assert set(_speakers(graph, "chat-a")) == {"Ann", "Bob"} and graph.counts("chat-a")["Memory"] == 3 + 2  # names
    graph.delete_video("chat-a")
    assert _speakers(graph, "chat-a") == {} and graph.counts("chat-a")["Memory"] == 0
    chars = _rows(graph, "MATCH (c:Character) RETURN count(c) AS n")
    assert chars == [{"n": 2}]  # only chat-b's two speakers keep characters
    assert [_rows(graph, "MATCH (n) WHERE n.video_id = 'chat-b' OR n.source_id = 'chat-b' "
                         "RETURN count(n) AS n")] == only_b
    del kept


def test_delete_character_of_a_speaker(graph: MemoryGraph, embedder: TextEmbedder, tmp_path: Path) -> None:
    conv, _ = load_locomo(_write(tmp_path / "chat-a.json", _locomo({1: S1})))
    ingest_conversation(graph, conv, embedder)
    bob_char = _speakers(graph, "chat-a")["Bob"][1]
    assert bob_char is not None
    deleted = graph.delete_character(bob_char)
    assert (deleted["entities"], deleted["memories"]) == (1, 2)  # his turn and his name fact
    assert set(_speakers(graph, "chat-a")) == {"Ann"}
    assert all(not m["text"].startswith("Bob") for m in _memories(graph, "chat-a"))


def test_cli_ingests_every_format(graph: MemoryGraph, tmp_path: Path) -> None:
    files = [_write(tmp_path / "chat-a.json", _locomo({1: S1})), _write(tmp_path / "meet.srt", SRT),
             _write(tmp_path / "meet.vtt", VTT), _write(tmp_path / "standup.txt", TEXT),
             _write(tmp_path / "g.json", GENERIC)]
    result = CliRunner().invoke(main, ["ingest-chat", *map(str, files), "--started-at", "2024-06-01",
                                       "--json"], obj=graph.settings)
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert [(s["source_id"], s["turns"]) for s in out] == [("chat-a", 3), ("meet", 4), ("meet", 2),
                                                          ("standup", 3), ("chat-generic", 3)]
    dates = _rows(graph, "MATCH (c:Clip {video_id: 'meet'}) RETURN toString(c.started_at) AS at")
    assert dates == [{"at": "2024-06-01T00:00:00Z"}] * 2
    again = CliRunner().invoke(main, ["ingest-chat", *map(str, files)], obj=graph.settings)
    assert again.exit_code == 0 and again.output.count("0 sessions written") == 5
