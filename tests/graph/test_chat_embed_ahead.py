"""Chat ingestion embeds one session ahead of the session it writes (issue 40, m3graph/ingest/chat/embed_ahead.py):
the stored vectors are those of the all-first order, a text is embedded once per ingestion, the first session's
vectors are checked before anything is written, and a later failure leaves only whole earlier sessions."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import numpy as np
import pytest

from m3graph.embedding import TextEmbedder
from m3graph.errors import InvalidInputError
from m3graph.graphdb.store import MemoryGraph
from m3graph.ingest.chat.ingest import ingest_conversation
from m3graph.ingest.chat.model import Conversation, Session, Turn

SESSIONS = [[("Ann", "I finally finished painting the kitchen yellow."), ("Bob", "Thanks for telling me!"),
             ("Ann", "The blue drawer still sticks though.")],
            [("Bob", "I adopted a puppy called Pixel yesterday."), ("Ann", "Thanks for telling me!")],
            [("Ann", "Pixel chewed my notebook."), ("Bob", "Sorry! I'll buy you a new one.")]]


def _conv(source: str, sessions: Sequence[Sequence[tuple[str, str]]] = SESSIONS) -> Conversation:
    out = tuple(Session(index=i, started_at=datetime(2023, 5, i + 1, tzinfo=UTC),
                        turns=tuple(Turn(turn_id=f"D{i + 1}:{j + 1}", speaker=who, text=text)
                                    for j, (who, text) in enumerate(turns)))
                for i, turns in enumerate(sessions))
    return Conversation(source_id=source, sessions=out, speakers=("Ann", "Bob"))


class _Counting:
    """The real embedder, recording the texts it is asked for; a text containing POISON gets a NaN vector."""

    def __init__(self, inner: TextEmbedder) -> None:
        self.inner, self.dim, self.asked = inner, inner.dim, []  # type: ignore[var-annotated]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.asked += list(texts)
        out = np.array(self.inner.embed(texts))
        out[[i for i, t in enumerate(texts) if "POISON" in t]] = np.nan
        return out


def _vectors(graph: MemoryGraph, source: str) -> dict[str, list[float]]:
    with graph.ex.session() as session:
        rows = session.run("MATCH (m:Memory {video_id: $v, kind: 'episodic'}) RETURN m.source_ids[0] AS t, "
                           "m.embedding AS e", v=source).data()
    return {r["t"]: r["e"] for r in rows}


def _sessions(graph: MemoryGraph, source: str) -> int:
    return len(graph.ex.read("chat/source_sessions", source_id=source))


def test_ahead_stores_the_vectors_of_the_all_first_order_and_embeds_a_text_once(
        graph: MemoryGraph, embedder: TextEmbedder) -> None:
    counting = _Counting(embedder)
    times: dict[str, float] = {}
    summary = ingest_conversation(graph, _conv("ahead"), counting, times=times)
    assert summary.sessions_written == [0, 1, 2] and summary.turns == 7
    assert sorted(counting.asked) == sorted(set(counting.asked))  # "Thanks for telling me!" twice, embedded once
    assert set(times) >= {"split", "plan", "embed", "wait", "write"} and all(v >= 0 for v in times.values())
    ingest_conversation(graph, _conv("first"), embedder, embed_ahead=False)
    ahead, first = _vectors(graph, "ahead"), _vectors(graph, "first")
    assert len(ahead) == 7 and ahead == first


def test_a_bad_first_session_writes_nothing_and_a_later_one_keeps_whole_sessions(
        graph: MemoryGraph, embedder: TextEmbedder) -> None:
    first_bad = [[("Ann", "POISON in the first session")], *SESSIONS[1:]]
    with pytest.raises(InvalidInputError, match="nothing was written"):
        ingest_conversation(graph, _conv("bad0", first_bad), _Counting(embedder))
    assert _sessions(graph, "bad0") == 0
    later_bad = [*SESSIONS[:2], [("Bob", "POISON in the last session")]]
    with pytest.raises(InvalidInputError, match="nothing was written"):  # all first: checked before any write
        ingest_conversation(graph, _conv("bad2", later_bad), _Counting(embedder),
                            embed_ahead=False)
    assert _sessions(graph, "bad2") == 0
    with pytest.raises(InvalidInputError, match="sessions before it were written"):
        ingest_conversation(graph, _conv("bad2", later_bad), _Counting(embedder))
    assert _sessions(graph, "bad2") == 2
    assert len(_vectors(graph, "bad2")) == 5  # the two sessions whole, nothing of the third
    summary = ingest_conversation(graph, _conv("bad2"), embedder)  # the fixed file: the rest is appended
    assert summary.sessions_written == [2] and summary.sessions_skipped == 2
