"""The chat-qa oracle over a conversation ingested into the session's Neo4j, with a scripted model: the reader
sees exactly the gold evidence lines, rendered as the controller renders search results, in one answer step; and
the miss analysis recognises those rendered lines as the evidence turns."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import suppress
from datetime import UTC, datetime

import pytest

from m3graph.devkit.eval.chat_misses import ConversationTurns
from m3graph.devkit.eval.chat_oracle import GOLD_NOTE, OracleAnswerer
from m3graph.devkit.eval.chat_qa import ChatQuestion
from m3graph.embedding import text_embedder
from m3graph.errors import NotFoundError
from m3graph.graphdb.store import MemoryGraph
from m3graph.ingest.chat.ingest import ingest_conversation
from m3graph.ingest.chat.model import Conversation, Session, Turn
from m3graph.reasoning.control import FINAL_SCHEMA, READER_LAST
from m3graph.settings import Settings
from tests.helpers.chat_doubles import ScriptedModel

SOURCE = "oracle-chat"
S1 = (("Ann", "Hi Bob! I ran a charity race yesterday."), ("Bob", "Wow, Ann! How did it go?"),
      ("Ann", "Great, I finished in the top ten."))
S2 = (("Bob", "I adopted a puppy called Pixel."), ("Ann", "What breed is Pixel?"), ("Bob", "Pixel is a beagle."))
CONV = Conversation(SOURCE, (
    Session(0, datetime(2023, 5, 8, 13, 56, tzinfo=UTC),
            tuple(Turn(f"D1:{i + 1}", who, text) for i, (who, text) in enumerate(S1))),
    Session(1, datetime(2023, 6, 2, 9, 0, tzinfo=UTC),
            tuple(Turn(f"D2:{i + 1}", who, text) for i, (who, text) in enumerate(S2)))), ("Ann", "Bob"))
QUESTION = ChatQuestion("oracle-chat/q0", SOURCE, "When did Ann run a race and what breed is Pixel?",
                        "7 May 2023; beagle", 1, ("D1:1", "D2:3"))


@pytest.fixture(scope="module")
def chat(memory_graph: MemoryGraph, settings: Settings) -> Iterator[str]:
    with suppress(NotFoundError):
        memory_graph.delete_video(SOURCE)
    ingest_conversation(memory_graph, CONV, text_embedder(settings))
    yield SOURCE
    memory_graph.delete_video(SOURCE)


def test_the_oracle_reads_only_the_gold_lines_in_one_step(chat: str, memory_graph: MemoryGraph,
                                                          settings: Settings) -> None:
    model = ScriptedModel(['{"answer": "7 May 2023; a beagle"}'])
    oracle = OracleAnswerer(model, memory_graph, text_embedder(settings), settings, [(SOURCE, QUESTION)])
    trace = oracle.answer(QUESTION.question, [SOURCE])
    assert trace.answer == "7 May 2023; a beagle" and trace.outcome == "forced" and trace.mode == "oracle"
    (request,) = model.requests  # one model call: the last step, with the final schema
    assert request.kwargs["json_schema"] == FINAL_SCHEMA and request.last_user.endswith(READER_LAST)
    shown = trace.rounds[0].knowledge
    assert list(shown) == ["CLIP_0", "CLIP_1"] and [len(v) for v in shown.values()] == [1, 1]
    assert shown["CLIP_0"][0].startswith("Ann <character_") and "yesterday [= 7 May 2023]" in shown["CLIP_0"][0]
    assert shown["CLIP_1"][0].endswith(": Pixel is a beagle.")
    assert "- [8 May 2023] Ann <character_" in request.last_user  # each line with its session's date
    assert "- [2 June 2023] Bob <character_" in request.last_user and ": What breed is Pixel?" not in request.last_user
    assert trace.rounds[0].result is not None and trace.rounds[0].result["fallback"] == GOLD_NOTE
    # The miss analysis finds both evidence turns among the lines, as rendered from the graph.
    assert ConversationTurns(CONV).shown(shown) == {"D1:1", "D2:3"}
    with pytest.raises(NotFoundError):
        oracle.answer("Something never asked?", [SOURCE])
