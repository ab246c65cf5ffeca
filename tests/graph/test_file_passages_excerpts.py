"""A long passage's answering sentence past the reader's cut, on the real Neo4j (issue 39, graphdb/excerpts.py):
the reader is shown the passage's part that matches the question, with its header (file, section), where before
it was shown the passage's first 900 characters and not the answer. The file is a Markdown manual written here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from m3graph.embedding import TextEmbedder
from m3graph.graphdb import passages
from m3graph.graphdb.store import MemoryGraph
from m3graph.ingest.chat.formats import load_conversation
from m3graph.ingest.chat.ingest import ingest_conversation
from m3graph.reasoning.control import PASSAGE_CHARS, Evidence
from m3graph.reasoning.memory_tools import MemoryTools
from tests.helpers.graph import with_settings
from tests.helpers.spec_pdf import sharing_chat

SOURCE = "file-excerpt-chat"
ANSWER = "The backup daemon keeps exactly fourteen nightly snapshots before it deletes the oldest one."
QUESTION = "How many nightly snapshots does the backup daemon keep?"
FILLER = " ".join(f"Step {i}: the installer copies the configuration templates into the service folder and checks "
                  "their permissions." for i in range(9))


def _manual() -> str:
    other = " ".join(f"Remark {i} on the network ports and the firewall." for i in range(10))
    return f"# Operations manual\n\n## Backups\n\n{FILLER} {ANSWER}\n\n## Network\n\n{other}\n"


@pytest.fixture
def conv(graph: MemoryGraph, embedder: TextEmbedder, tmp_path: Path) -> MemoryGraph:
    g = with_settings(graph, graph.settings.model_copy(update={"data_dir": tmp_path / "data"}))
    root = tmp_path / "conv"
    root.mkdir()
    (root / "ops.md").write_text(_manual(), encoding="utf-8")
    path = root / "chat.json"
    path.write_text(json.dumps(sharing_chat(SOURCE, "ops.md", "manual")), encoding="utf-8")
    loaded, _ = load_conversation(path)
    assert ingest_conversation(g, loaded, embedder, files_root=root).files_refused == []
    return g


def test_the_answering_sentence_past_the_cut_is_shown_as_an_excerpt(conv: MemoryGraph,
                                                                    embedder: TextEmbedder) -> None:
    cap = conv.settings.llm.control_evidence_lines
    tools = MemoryTools(conv.search, embedder, conv.settings, [SOURCE])
    found = tools.search_node(QUESTION, k=cap)
    shown = [x for ls in Evidence(cap).take(found, tools.line_scores).values() for x in ls
             if x.startswith("[file ops.md")]
    stored = [m.raw_text for r in tools.search.fetch_clip(SOURCE, 0) for m in r.memories
              if m.raw_text.startswith("[file ops.md") and ANSWER in m.raw_text]
    assert stored and stored[0].index(ANSWER) + len(ANSWER) > PASSAGE_CHARS  # the old cut could not show it
    assert any(ANSWER in x for x in shown)
    line = next(x for x in shown if ANSWER in x)
    assert line.startswith("[file ops.md, document, Operations manual > Backups, shared by")
    assert len(line) < PASSAGE_CHARS and "…" in line
    assert found.citations and found.citations[0].startswith("ops.md")


def test_without_excerpts_the_passage_shows_its_beginning(conv: MemoryGraph, embedder: TextEmbedder) -> None:
    """The same ranking with `excerpt_chars=None` (for a caller that wants the whole passage) keeps it whole; the
    stored text (`raw_text`) is never changed."""
    tools = MemoryTools(conv.search, embedder, conv.settings, [SOURCE])
    results = tools.search.fetch_clip(SOURCE, 0)
    vector = tools._vector(QUESTION)
    whole = passages.rank_in_results(conv.search.ex, conv.settings, results, vector, QUESTION, [SOURCE], None,
                                     excerpt_chars=None)
    cut = passages.rank_in_results(conv.search.ex, conv.settings, results, vector, QUESTION, [SOURCE], None)
    first = [m for r in whole.results for m in r.memories if m.text.startswith("[file ops.md")][0]
    excerpted = [m for r in cut.results for m in r.memories if m.text.startswith("[file ops.md")][0]
    assert ANSWER in first.text and len(first.text) > PASSAGE_CHARS  # whole: the stored passage, tags rendered
    assert excerpted.raw_text == first.raw_text and ANSWER in excerpted.text and len(excerpted.text) < PASSAGE_CHARS
