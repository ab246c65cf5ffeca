"""Search over a conversation with files, on the real Neo4j: a hit that shares a photo brings the photo's surrogate
and the name fact of the person in it (said sessions before), and a question that names a file type ("the first
PDF") ranks the turns that shared one, the first or last of them first. Face detection is replaced by fixed
embeddings (as in test_photo_names); every file is generated here."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from m3graph.embedding import TextEmbedder, query_embed
from m3graph.graphdb.search import MemorySearch
from m3graph.graphdb.search_plan import SearchSpec
from m3graph.graphdb.store import MemoryGraph
from m3graph.graphdb.types import ClipResult
from m3graph.ingest.chat import attachments
from m3graph.ingest.chat.formats import load_conversation
from m3graph.ingest.chat.ingest import ingest_conversation
from tests.helpers.graph import face_dim, near, unit, with_settings
from tests.helpers.shared_files import pdf_bytes, photo, stand_in_photo_faces

SOURCE = "search-files-chat"


@pytest.fixture
def conv(graph: MemoryGraph, embedder: TextEmbedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
         ) -> MemoryGraph:
    g = with_settings(graph, graph.settings.model_copy(update={"data_dir": tmp_path / "data"}))
    root = tmp_path / "conv"
    root.mkdir()
    (root / "lease.pdf").write_bytes(pdf_bytes([["Lease contract"], ["Deposit: 900 EUR"]]))
    (root / "invoice.pdf").write_bytes(pdf_bytes([["Invoice 77"], ["Amount due: 120 EUR"]]))
    (root / "runs.csv").write_text("month,km\nMarch,42\nApril,55\n", encoding="utf-8")
    first = photo(root / "lena.png", colour=(200, 30, 30))
    later = photo(root / "harbour.png", colour=(20, 90, 200), size=(200, 150))
    gen = np.random.default_rng(11)
    face = unit(face_dim(g), gen)
    monkeypatch.setattr(attachments, "photo_faces", stand_in_photo_faces({
        hashlib.sha256(first.read_bytes()).hexdigest(): [near(face, 0.97, gen)],
        hashlib.sha256(later.read_bytes()).hexdigest(): [near(face, 0.97, gen)]}))
    data = {"source_id": SOURCE, "speakers": ["Ann", "Bob"], "sessions": [
        {"id": "s1", "started_at": "2024-05-01T09:00:00Z", "turns": [
            {"id": "t1", "speaker": "Ann", "text": "This is my sister Lena.", "files": ["lena.png"]},
            {"id": "t2", "speaker": "Ann", "text": "Keep this for me, please.", "files": ["lease.pdf"]},
            {"id": "t3", "speaker": "Bob", "text": "Sure, I have filed it."}]},
        {"id": "s2", "started_at": "2024-05-08T09:00:00Z", "turns": [
            {"id": "t4", "speaker": "Ann", "text": "Look who I ran into at the harbour!", "files": ["harbour.png"]},
            {"id": "t5", "speaker": "Bob", "text": "My runs this spring.", "files": ["runs.csv"]}]},
        {"id": "s3", "started_at": "2024-05-15T09:00:00Z", "turns": [
            {"id": "t6", "speaker": "Ann", "text": "Keep this one too, please.", "files": ["invoice.pdf"]},
            {"id": "t7", "speaker": "Bob", "text": "Done, both are filed now."}]}]}
    path = root / "chat.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    loaded, _ = load_conversation(path)
    assert ingest_conversation(g, loaded, embedder, files_root=root).files_refused == []
    return g


def _search(g: MemoryGraph, embedder: TextEmbedder, question: str, k: int, **search: object) -> list[ClipResult]:
    s = MemorySearch(g.ex, g.settings.model_copy(update={"search": g.settings.search.model_copy(update=search)})) \
        if search else g.search
    vector = query_embed(embedder)([question])[0].tolist()
    return s.search(SearchSpec(vector, mode="node", videos=[SOURCE], k=k, text=question))


def _lines(found: list[ClipResult]) -> list[tuple[tuple[str, ...], str]]:
    return [(m.source_ids, m.raw_text) for c in found for m in c.memories]


def test_a_photo_hit_brings_its_surrogate_and_who_the_face_is(conv: MemoryGraph, embedder: TextEmbedder) -> None:
    question = "Who did Ann run into at the harbour?"
    found = _search(conv, embedder, question, 1)
    lines = _lines(found)
    assert "ran into at the harbour" in lines[0][1]  # the one ranked hit: the sharing turn
    assert any(text.startswith("[file harbour.png, image") for _, text in lines)  # what the photo shows
    named = [(ids, text) for ids, text in lines if text.endswith("'s name is Lena.")]
    assert len(named) == 1 and found[-1].clip_index == 0  # said in session 1, after the ranked clip
    intro = _lines(_search(conv, embedder, "This is my sister Lena.", 1, attach_file_evidence=False))[0]
    assert "sister Lena" in intro[1] and named[0][0] == intro[0]  # written from the introducing turn
    assert found[0].memories[0].score is not None and found[-1].memories[0].score is None  # unranked: no score
    plain = _lines(_search(conv, embedder, question, 1, attach_file_evidence=False))
    assert not any(text.endswith("'s name is Lena.") for _, text in plain)
    assert not any(text.startswith("[file harbour.png") for _, text in plain)
    early = conv.search.search(SearchSpec(query_embed(embedder)([question])[0].tolist(), mode="node", videos=[SOURCE],
                                          before_clip=0, k=3, text=question))
    assert not any("harbour" in text for _, text in _lines(early))  # never evidence from after the question


def test_a_named_file_type_ranks_its_sharing_turns_first_or_last(conv: MemoryGraph, embedder: TextEmbedder) -> None:
    def top(question: str, **search: object) -> str:
        return _search(conv, embedder, question, 1, attach_file_evidence=False, **search)[0].memories[0].raw_text

    assert "[shares a file: lease.pdf]" in top("What was the first PDF Ann shared?")
    assert "[shares a file: invoice.pdf]" in top("What was the latest PDF Ann shared?")
    assert "[shares a file: runs.csv]" in top("Which spreadsheet did Bob share?")
    plain = {top(q, file_weight=0.0) for q in ("What was the first PDF Ann shared?",
                                                "What was the latest PDF Ann shared?")}
    assert len(plain) == 1  # without the file type, "first" and "latest" name nothing to rank by


@pytest.mark.parametrize(("text", "kinds", "mimes", "order"), [
    ("What was the first PDF Ann shared?", [], ["application/pdf"], "first"),
    ("On which date did Dev share the Word document?", [],
     ["application/vnd.openxmlformats-officedocument.wordprocessingml.document"], "all"),
    ("What did Ben say in his latest voice note?", ["audio"], [], "last"),
    ("Which photos did Ann send?", ["image"], [], "all"),
    ("What was the first thing Ann said?", [], [], "all"),  # an order alone names no file
    ("What text was on the sign, in a word?", [], [], "all"),  # words too common to name a type
])
def test_named_file_types(text: str, kinds: list[str], mimes: list[str], order: str) -> None:
    from m3graph.graphdb.query_text import named_file_types

    assert named_file_types(text) == (kinds, mimes, order)


def test_attached_lines_name_their_hit_and_come_after_ranked_lines_for_the_reader(
        conv: MemoryGraph, embedder: TextEmbedder) -> None:
    """Search marks each attached memory with the hit that brought it; the reader shows attached lines only where
    its cap leaves room after the ranked ones (ranking them with their hit cost 4 of 75 file, photo and audio
    answers on the dev set: docs/files.md)."""
    from m3graph.reasoning.control import Evidence
    from m3graph.reasoning.memory_tools import MemoryTools

    found = _search(conv, embedder, "Who did Ann run into at the harbour?", 1)
    hit = found[0].memories[0]
    attached = [m for c in found for m in c.memories if m.attached_to is not None]
    assert {m.attached_to for m in attached} == {hit.memory_id} and len(attached) == 2
    tools = MemoryTools(conv.search, embedder, conv.settings, [SOURCE])
    result = tools.search_node("Who did Ann run into at the harbour?", k=1)
    lines = [line for ls in result.knowledge.values() for line in ls]
    assert len(lines) == 3
    kept = [line for ls in Evidence(cap=1).take(result, tools.line_scores).values() for line in ls]
    assert len(kept) == 1 and "ran into at the harbour" in kept[0]
    wide = [line for ls in Evidence(cap=5).take(result, tools.line_scores).values() for line in ls]
    assert sorted(wide) == sorted(lines)  # room left: the attached lines are shown too
