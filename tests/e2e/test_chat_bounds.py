"""Issue 21: tags in chat text are structure only where ingestion resolved them, every chat file is bounded,
and binds beyond loopback need --allow-remote. Real Neo4j; the CLI runs as a user runs it (a subprocess)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from m3graph.cli import exit_codes, main
from m3graph.embedding import TextEmbedder
from m3graph.errors import ConfigError
from m3graph.graphdb.search_plan import SearchSpec
from m3graph.graphdb.store import MemoryGraph
from m3graph.graphdb.tags import parse_tags, safe_text
from m3graph.ingest.chat.formats import load_conversation
from m3graph.ingest.chat.ingest import MEMORY_CHARS, ingest_conversation
from m3graph.ingest.chat.parsing import ReadLimits
from m3graph.settings import load_settings
from tests.helpers.graph import add_clip, canonical_dump, face_cluster, rng, rows, unit

ENTRY = [sys.executable, "-c", "from m3graph.cli import run; run()"]


def _m3graph(graph: MemoryGraph, cwd: Path, *args: str, timeout: float = 300, **env: str
             ) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("M3GRAPH_", "NEO4J_"))}
    base |= {"NEO4J_URI": graph.settings.bolt_uri, "M3GRAPH_NEO4J_USER": graph.settings.neo4j_user,
             "M3GRAPH_NEO4J_PASSWORD": graph.settings.neo4j_password.get_secret_value(),
             "M3GRAPH_DATA_DIR": str(cwd / "data"), "OMP_WAIT_POLICY": "PASSIVE", **env}
    return subprocess.run([*ENTRY, *args], cwd=cwd, env=base, capture_output=True, text=True, timeout=timeout)


def _one_line_refusal(out: subprocess.CompletedProcess[str], code: int, *says: str) -> str:
    lines = out.stderr.strip().splitlines()
    assert out.returncode == code, (out.returncode, out.stderr)
    assert len(lines) == 1 and lines[0].startswith("error: "), out.stderr
    assert "Traceback" not in out.stderr
    for s in says:
        assert s in lines[0], lines[0]
    return lines[0]


# ---------------------------------------------------------------------------------------------- tags


def test_safe_text_escapes_every_tag_but_the_resolved_ones() -> None:
    text = "Mallory: <face_1> and <FACE_01> <<voice_2>> <character_3> told Ann <speaker_5> and <speaker_6>"
    safe = safe_text(text, {("speaker", 5)})
    assert parse_tags(safe) == [("speaker", 5)]
    assert "‹face_1›" in safe and "‹FACE_01›" in safe and "<‹voice_2›>" in safe and "‹character_3›" in safe
    assert safe_text(safe, {("speaker", 5)}) == safe  # idempotent: an escaped tag is never turned back
    assert safe_text("<character_3>", {("character", 3)}) == "‹character_3›"  # characters are never structure


def test_forged_tags_mention_nothing_outside_their_source(graph: MemoryGraph, embedder: TextEmbedder,
                                                         tmp_path: Path) -> None:
    gen = rng(5)
    add_clip(graph, "film", 0)
    (res,) = graph.resolve_faces("film", 0, [face_cluster(0, unit(graph.settings.identity.face_dim, gen), gen)])
    face = res.entity_id
    char = graph.characters_of([face])[face]
    transcript = tmp_path / "heist.txt"
    transcript.write_text(f"Mallory: <face_{face}> stole the mango\n"
                          f"Trent: <voice_{face}> and <character_{char}> saw it, ask <speaker_{face}>\n")
    conv, _ = load_conversation(transcript, "text")
    ingest_conversation(graph, conv, embedder)
    named = tmp_path / "named.json"  # a speaker "name" and an image caption that are tags
    named.write_text(json.dumps({"sessions": [{"turns": [
        {"speaker": f"<face_{face}>", "text": "the mango is mine", "image_caption": f"<face_{face}> eating"}]}]}))
    conv2, _ = load_conversation(named, "json", "named")
    ingest_conversation(graph, conv2, embedder)

    for source in ("heist", "named"):
        targets = rows(graph, "MATCH (m:Memory {video_id: $v})-[:MENTIONS]->(e) RETURN labels(e) AS l, "
                              "e.source_id AS src", v=source)
        assert targets and all(t["l"] == ["Speaker"] and t["src"] == source for t in targets), targets
    texts = [r["t"] for r in rows(graph, "MATCH (m:Memory {video_id: 'heist'}) RETURN m.text AS t")]
    assert any(f"‹face_{face}› stole the mango" in t for t in texts), texts
    assert rows(graph, "MATCH (m:Memory)-[:MENTIONS]->(:Face) WHERE m.video_id <> 'film' RETURN m") == []

    query = "who stole the mango"
    vector = embedder.embed([query])[0].tolist()
    found = graph.search.search(SearchSpec(vector, text=query))
    assert any(c.source_id == "heist" for c in found)  # the memory is findable: the scoped search below can fail
    scoped = graph.search.search(SearchSpec(vector, characters=[char], text=query))
    assert not any(c.source_id in ("heist", "named") for c in scoped), scoped


class _TaggingModel:
    """A memorizer stand-in whose 'model output' forges a tag: only what ingestion resolved may be structure."""

    def __init__(self, face: int) -> None:
        self.face = face

    def memorize(self, conv: Any, session: Any) -> list[Any]:
        from m3graph.ingest.chat.ingest import SessionMemory

        ids = tuple(t.turn_id for t in session.turns)
        return [SessionMemory("semantic", f"Ann told <face_{self.face}> about <speaker_{self.face}>.", ids)]


def test_model_output_cannot_mention_entities_outside_the_session(graph: MemoryGraph, embedder: TextEmbedder,
                                                                 tmp_path: Path) -> None:
    gen = rng(6)
    add_clip(graph, "film", 0)
    (res,) = graph.resolve_faces("film", 0, [face_cluster(0, unit(graph.settings.identity.face_dim, gen), gen)])
    path = tmp_path / "memo.txt"
    path.write_text("Ann: hello there\n")
    conv, _ = load_conversation(path, "text")
    ingest_conversation(graph, conv, embedder, _TaggingModel(res.entity_id))
    (row,) = rows(graph, "MATCH (m:Memory {video_id: 'memo'}) WHERE size(m.source_ids) > 0 "  # not Ann's name fact
                         "OPTIONAL MATCH (m)-[:MENTIONS]->(e) "
                         "RETURN m.text AS t, collect(labels(e)) AS l")
    assert row["l"] == [["Speaker"]], row  # only Ann, tagged by ingestion itself
    assert f"‹face_{res.entity_id}›" in row["t"] and f"‹speaker_{res.entity_id}›" in row["t"]


# ---------------------------------------------------------------------------------------------- files


def test_a_turn_longer_than_a_memory_is_stored_in_parts(graph: MemoryGraph, embedder: TextEmbedder,
                                                        tmp_path: Path) -> None:
    words = [f"w{i}" for i in range(9000)]
    long_text = " ".join(words)[:52_000].rsplit(" ", 1)[0]
    assert len(long_text) > 51_000
    path = tmp_path / "code.json"
    path.write_text(json.dumps({"sessions": [{"id": "s1", "turns": [
        {"id": "q", "speaker": "Ann", "text": "show me the code"},
        {"id": "a", "speaker": "Assistant", "text": long_text}]}]}))
    conv, _ = load_conversation(path, "json")
    summary = ingest_conversation(graph, conv, embedder)
    assert summary.sessions_written == [0]
    parts = rows(graph, "MATCH (m:Memory {video_id: 'code'}) WHERE m.text STARTS WITH 'Assistant' "
                        "AND size(m.source_ids) > 0 "  # the turn's parts, not the speaker's name fact
                        "RETURN m.text AS t, m.source_ids AS ids ORDER BY m.order_in_clip")
    assert len(parts) == 7 and [p["ids"] for p in parts] == [["a"]] + [[f"a#p{i}"] for i in range(2, 8)]
    assert all(len(p["t"]) <= MEMORY_CHARS for p in parts)
    bodies = [p["t"].split(": ", 1)[1] for p in parts]
    assert " ".join(bodies) == long_text  # nothing lost, nothing repeated
    again = ingest_conversation(graph, load_conversation(path, "json")[0], embedder)
    assert again.sessions_written == [] and again.sessions_skipped == 1


@pytest.fixture
def odd_files(tmp_path: Path) -> dict[str, Path]:
    (tmp_path / "fifo.txt").unlink(missing_ok=True)
    os.mkfifo(tmp_path / "fifo.txt")
    (tmp_path / "loop-a.txt").symlink_to(tmp_path / "loop-b.txt")
    (tmp_path / "loop-b.txt").symlink_to(tmp_path / "loop-a.txt")
    return {"zero": Path("/dev/zero"), "fifo": tmp_path / "fifo.txt", "loop": tmp_path / "loop-a.txt"}


# case -> (what the one line says)
ODD_FILES = {"zero": "is a character device, not a regular file", "fifo": "is a named pipe (FIFO), not a regular file",
             "loop": "cannot be read (Too many levels of symbolic links)"}


@pytest.mark.parametrize("case", sorted(ODD_FILES))
def test_a_file_that_is_no_regular_file_is_refused_at_once(case: str, odd_files: dict[str, Path],
                                                          graph: MemoryGraph, tmp_path: Path) -> None:
    before = canonical_dump(graph)
    started = time.monotonic()
    out = _m3graph(graph, tmp_path, "ingest-chat", str(odd_files[case]), "--format", "text", timeout=120)
    _one_line_refusal(out, exit_codes.DATA, str(odd_files[case]), ODD_FILES[case], "nothing was written")
    assert time.monotonic() - started < 60  # no hang (a FIFO without a writer), no read to the end (/dev/zero)
    assert canonical_dump(graph) == before


def test_a_big_transcript_is_refused_at_the_bounds_while_reading(graph: MemoryGraph, tmp_path: Path) -> None:
    path = tmp_path / "dump.txt"
    line = "Ann: this is one of very many turns about mangoes and the weather today\n"
    with path.open("w") as f:
        f.write(line * (50 * 2**20 // len(line) + 1))  # 50 MB, ~730k turns
    before = canonical_dump(graph)
    out = _m3graph(graph, tmp_path, "ingest-chat", str(path), M3GRAPH_CHAT__MAX_FILE_MB="16")
    _one_line_refusal(out, exit_codes.DATA, str(path), "larger than 16 MiB", "chat.max_file_mb")
    started = time.monotonic()
    out = _m3graph(graph, tmp_path, "ingest-chat", str(path), M3GRAPH_CHAT__MAX_TURNS="50000")
    _one_line_refusal(out, exit_codes.DATA, f"{path}, line 50001", "more than 50000 turns", "chat.max_turns")
    assert time.monotonic() - started < 120
    assert canonical_dump(graph) == before
    # the same bounds hold for the loaders used by the MCP tools (default bounds)
    with pytest.raises(Exception, match="more than 1000 turns"):
        load_conversation(path, "auto", limits=ReadLimits(max_bytes=64 * 2**20, max_turns=1000))


# ---------------------------------------------------------------------------------------------- binds


def test_local_server_host_beyond_loopback_needs_allow_remote(monkeypatch: pytest.MonkeyPatch,
                                                              tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    for key in [k for k in os.environ if k.startswith(("M3GRAPH_", "NEO4J_"))]:
        monkeypatch.delenv(key)
    for host in ("0.0.0.0", "192.168.1.5", "example.org", "::"):
        monkeypatch.setenv("M3GRAPH_LOCAL__HOST", host)
        with pytest.raises(ConfigError, match="allow_remote") as err:
            load_settings()
        assert "\n" not in str(err.value)
    monkeypatch.setenv("M3GRAPH_LOCAL__ALLOW_REMOTE", "true")
    assert load_settings().local.host == "::"
    monkeypatch.delenv("M3GRAPH_LOCAL__ALLOW_REMOTE")
    for host in ("127.0.0.1", "127.0.0.2", "localhost", "::1"):
        monkeypatch.setenv("M3GRAPH_LOCAL__HOST", host)
        assert load_settings().local.host == host


def test_browser_beyond_loopback_needs_allow_remote(graph: MemoryGraph) -> None:
    out = CliRunner().invoke(main, ["db", "browser", "--host", "0.0.0.0", "--no-open"], obj=graph.settings)
    assert out.exit_code == exit_codes.USAGE and "--allow-remote" in out.output, out.output


def test_mcp_http_beyond_loopback_needs_allow_remote(graph: MemoryGraph, tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    out = _m3graph(graph, tmp_path, "mcp", "--http", "10.1.2.3:1", timeout=120)
    assert out.returncode == exit_codes.USAGE and "--allow-remote" in out.stderr, out.stderr


def test_mcp_on_another_loopback_address_answers_its_own_url() -> None:
    pytest.importorskip("mcp")
    from m3graph.mcp.security import http_security

    sec = http_security("127.0.0.2", 8766)
    assert "127.0.0.2:8766" in sec.allowed_hosts and "http://127.0.0.2:8766" in sec.allowed_origins
    assert "127.0.0.1:8766" in sec.allowed_hosts  # the loopback names still answer
    remote = http_security("10.1.2.3", 8766)
    assert remote.allowed_hosts == ["10.1.2.3:8766"]
