"""A 17-page PDF shared in a chat, on the real Neo4j (issue 39): a question about its page 4 shows that page's
passage first among the file's lines, with its page and heading, only the file's best few, and the citation
"spec.pdf, p. 4" in the trace; asked again, the next-best passages; `look_at_file NAME page N` still reads one
page. The PDF is generated here (tests/helpers/spec_pdf.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from m3graph.embedding import TextEmbedder
from m3graph.graphdb import passages
from m3graph.graphdb.store import MemoryGraph
from m3graph.ingest.chat.formats import load_conversation
from m3graph.ingest.chat.ingest import ingest_conversation
from m3graph.reasoning.control import Evidence
from m3graph.reasoning.memory_tools import MemoryTools, describe
from m3graph.service.memory import MemoryService
from m3graph.service.requests import SearchRequest
from tests.helpers.graph import with_settings
from tests.helpers.spec_pdf import NOTICE_PAGE, NOTICE_QUESTION, sharing_chat, spec_pdf

SOURCE = "file-passages-chat"
CITE = "spec.pdf, p. 4 (4 Termination and notice)"


@pytest.fixture
def conv(graph: MemoryGraph, embedder: TextEmbedder, tmp_path: Path) -> MemoryGraph:
    g = with_settings(graph, graph.settings.model_copy(update={"data_dir": tmp_path / "data"}))
    root = tmp_path / "conv"
    root.mkdir()
    (root / "spec.pdf").write_bytes(spec_pdf())
    data = sharing_chat(SOURCE, "spec.pdf", "spec")
    path = root / "chat.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    loaded, _ = load_conversation(path)
    assert ingest_conversation(g, loaded, embedder, files_root=root).files_refused == []
    return g


def _file_lines(knowledge: dict[str, list[str]]) -> list[str]:
    return [line for lines in knowledge.values() for line in lines if line.startswith("[file spec.pdf")]


def test_a_clip_search_shows_the_answering_page_first_and_only_the_best_few(conv: MemoryGraph,
                                                                           embedder: TextEmbedder) -> None:
    tools = MemoryTools(conv.search, embedder, conv.settings, [SOURCE])
    found = tools.search_clip(NOTICE_QUESTION)
    lines = _file_lines(found.knowledge)
    assert f"page {NOTICE_PAGE}, 4 Termination and notice" in lines[0] and "three months" in lines[0]
    assert len(lines) == passages.PER_FILE
    assert found.citations[0] == CITE and describe(found)["citations"] == found.citations
    kept = _file_lines(Evidence(cap=4).take(found, tools.line_scores))
    assert any("three months" in line for line in kept)  # the reader's cap applies after the ranking

    before = MemoryTools(conv.search, embedder, conv.settings, [SOURCE])
    before.rank_files = False  # the behaviour this replaces: every passage, in page order, under the one clip
    old = before.search_clip(NOTICE_QUESTION)
    assert len(_file_lines(old.knowledge)) == 17 and ", page 1," in _file_lines(old.knowledge)[0]
    assert "citations" not in describe(old)
    assert not any("three months" in line for line in _file_lines(Evidence(cap=4).take(old, before.line_scores)))


def test_a_node_search_ranks_the_page_and_asking_again_shows_the_next_best(conv: MemoryGraph,
                                                                         embedder: TextEmbedder) -> None:
    tools = MemoryTools(conv.search, embedder, conv.settings, [SOURCE])
    first = tools.search_node(NOTICE_QUESTION, k=12)
    lines = _file_lines(first.knowledge)
    assert lines and "three months" in lines[0] and first.citations[0] == CITE
    again = tools.search_node(NOTICE_QUESTION, k=12)
    assert _file_lines(again.knowledge) and not set(_file_lines(again.knowledge)) & set(lines)


def test_a_question_naming_the_file_reaches_its_best_passage(conv: MemoryGraph, embedder: TextEmbedder) -> None:
    tools = MemoryTools(conv.search, embedder, conv.settings, [SOURCE])
    found = tools.search_node("What does the rental spec say about keeping a dog?", k=6)
    assert found.citations and found.citations[0].startswith("spec.pdf, p. 8")


def test_look_at_file_page_still_reads_one_page(conv: MemoryGraph, embedder: TextEmbedder) -> None:
    tools = MemoryTools(conv.search, embedder, conv.settings, [SOURCE])
    page = tools.look_at_file("spec.pdf page 4")
    lines = [line for ls in page.knowledge.values() for line in ls]
    assert len(lines) == 1 and "4 Termination and notice" in lines[0] and passages.cite_as(lines[0]) == CITE


def test_the_front_ends_search_shows_the_best_passages_with_their_citation(conv: MemoryGraph,
                                                                          embedder: TextEmbedder) -> None:
    """`MemoryService.search` (CLI, MCP, explorer, library): the file's best passages, the answering one first,
    each with `cite` in the JSON an agent reads; the ranking before it (`search_results`) still shows every page."""
    service = MemoryService(conv.settings, conv, embedder_factory=lambda: embedder)
    request = SearchRequest(query=NOTICE_QUESTION, videos=[SOURCE], mode="clip", k=2)
    shown = [m for c in service.search(request).to_json()["clips"] for m in c["memories"]
             if m["text"].startswith("[file spec.pdf")]
    assert len(shown) == passages.PER_FILE and "three months" in shown[0]["text"]
    assert shown[0]["cite"] == CITE
    ranked = [m for r in service.search_results(request) for m in r.memories if m.text.startswith("[file spec.pdf")]
    assert len(ranked) == 17
    turns = [m for c in service.search(request).to_json()["clips"] for m in c["memories"]
             if not m["text"].startswith("[file ")]
    assert all("cite" not in m for m in turns)  # a turn is not a file passage
