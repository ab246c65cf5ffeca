"""Who said a quoted line and how many people speak, looked up on the real Neo4j (m3graph/reasoning/speakers.py),
and shown to the reader with the controller's first search: a conversation (named speakers) and the demo video
(voices resolved to characters). The chat model is scripted; the lookups and searches are real Cypher."""

from __future__ import annotations

from contextlib import suppress
from pathlib import Path

import pytest

from m3graph.embedding import TextEmbedder
from m3graph.errors import NotFoundError
from m3graph.graphdb.speech import who_said
from m3graph.graphdb.store import MemoryGraph
from m3graph.ingest.chat.ingest import ingest_conversation
from m3graph.ingest.demo import load_demo
from m3graph.reasoning.control import Controller
from m3graph.reasoning.speakers import speaker_note
from tests.helpers.chat_doubles import ScriptedModel
from tests.helpers.locomo import locomo_conversation

VIDEO = "speakers-chat"
SESSIONS = {
    1: [{"speaker": "Ann", "dia_id": "D1:1", "text": "I took a short trip to Rome to clear my mind."},
        {"speaker": "Bob", "dia_id": "D1:2", "text": "Rome sounds lovely! I joined the new team at work."}],
    2: [{"speaker": "Ann", "dia_id": "D2:1", "text": "My garden finally has ripe tomatoes this week."},
        {"speaker": "Bob", "dia_id": "D2:2", "text": "That is wonderful to hear."}],
}
REPLY = '{"answer": "Yes", "next_query": null}'


def _label(video: str, clip: int) -> str:
    return f"{video}/CLIP_{clip}"


@pytest.fixture
def chat(graph: MemoryGraph, embedder: TextEmbedder, tmp_path: Path) -> MemoryGraph:
    ingest_conversation(graph, locomo_conversation(tmp_path, VIDEO, SESSIONS), embedder)
    return graph


def _first_prompt(graph: MemoryGraph, embedder: TextEmbedder, question: str, videos: list[str],
                  before_clip: int | None = None) -> tuple[str, str | None]:
    model = ScriptedModel([REPLY])
    trace = Controller(model, graph, embedder, graph.settings, mode="tools", rounds=2, prefetch=True).answer(
        question, videos, before_clip)
    return model.requests[0].last_user, trace.rounds[0].note


def test_quoted_lines_are_traced_to_their_speakers(chat: MemoryGraph, embedder: TextEmbedder) -> None:
    ann = who_said(chat.ex, "I took a short trip to Rome to clear my mind", [VIDEO], None, _label)
    assert [(x.who.split()[0], x.label) for x in ann] == [("Ann", f"{VIDEO}/CLIP_0")]
    # Same speaker across sessions, a transcript's slip ("tomatos") included.
    same = ('Was the person who said "I took a short trip to Rome" the same person who said "My garden finally has '
            'ripe tomatos this week"?')
    prompt, note = _first_prompt(chat, embedder, same, [VIDEO])
    assert "Who said the quoted lines (looked up in memory):" in prompt
    assert '"I took a short trip to Rome" was said by Ann <character_' in prompt
    assert "All the quoted lines were said by the same person, Ann <character_" in prompt
    assert note is not None and "speakers looked up" in note
    # Different speakers; and a quote no remembered line matches says so.
    other = ('Was the person who said "I took a short trip to Rome" the same person who said "That is wonderful '
             'to hear"?')
    prompt, _ = _first_prompt(chat, embedder, other, [VIDEO])
    assert "The quoted lines were said by 2 different people." in prompt
    prompt, _ = _first_prompt(chat, embedder, 'Who said "the violin concert was loud"?', [VIDEO])
    assert 'No remembered line matches "the violin concert was loud".' in prompt


def test_the_lookup_keeps_the_questions_scope(chat: MemoryGraph) -> None:
    tomatoes = "My garden finally has ripe tomatoes this week"
    assert who_said(chat.ex, tomatoes, [VIDEO], 0, _label) == []  # said in session 2, asked as of session 1
    assert len(who_said(chat.ex, tomatoes, [VIDEO], 1, _label)) == 1
    assert who_said(chat.ex, tomatoes, ["speakers-other"], None, _label) == []
    # Lucene syntax in a quote is words: nothing matches, nothing fails.
    assert who_said(chat.ex, 'Rome" OR text:* AND (x', [VIDEO], None, _label) == []
    count = speaker_note(chat.ex, "How many people speak in this conversation?", [VIDEO], 0, _label, list)
    assert count is not None and count.startswith(f"Who speaks (every line said in {VIDEO}): 2 different people")


def test_questions_without_a_quote_or_a_count_see_the_same_prompt(chat: MemoryGraph, embedder: TextEmbedder) -> None:
    prompt, note = _first_prompt(chat, embedder, "Where did Ann take a short trip?", [VIDEO])
    assert "Who said" not in prompt and "Who speaks" not in prompt
    assert note == "automatic first search with the question"


def test_speakers_of_a_video_are_counted_by_character(graph: MemoryGraph, embedder: TextEmbedder) -> None:
    video = "speakers-demo"
    with suppress(NotFoundError):
        graph.delete_video(video)
    load_demo(graph, embedder, video)
    prompt, _ = _first_prompt(graph, embedder, "How many different people speak in this video?", [video])
    # Lily, Mia and Jack each say something; the one wrong equivalence vote (Lily's face, Mia's voice) merges no one.
    said = next(line for line in prompt.splitlines() if line.startswith("Who speaks"))
    assert said.startswith(f"Who speaks (every line said in {video}): 3 different people speak: <character_"), said
    assert said.count("<character_") == 3
    # Every source when the question has no scope (the demo is the only one).
    assert speaker_note(graph.ex, "How many speakers are there?", None, None, _label, graph.search.all_videos) == said
