"""Mistakes said out loud (issue 36, item 5): every bad input names the problem, the closest known names and the
documented exit status; list commands and `--json` for every table; `delete` asks, `--yes`, `--dry-run`.

Runs the `m3graph` command through click's CliRunner against the session's real server. A command's error ends
the way `m3graph.cli.run` ends it: `exit_codes.one_line` on stderr and `exit_codes.exit_code` as the status; one
case runs the installed entry point in a subprocess to show that path end to end.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from m3graph.cli import deletes as delete_module
from m3graph.cli import exit_codes, main
from m3graph.embedding import text_embedder
from m3graph.errors import NotFoundError
from m3graph.graphdb.store import MemoryGraph
from m3graph.ingest.demo import load_demo
from m3graph.service import CharacterRequest, MemoryService, SearchRequest
from m3graph.service.lookup import AmbiguousNameError
from tests.helpers.graph import wipe

VIDEO = "mistakes-kitchen"
CHAT = "mistakes-chat"


def m3graph(graph: MemoryGraph, *args: str, stdin: str | None = None) -> tuple[int, str]:
    """(exit status, what the user sees: stdout and stderr) as `m3graph.cli.run` would end the command."""
    result = CliRunner().invoke(main, list(args), obj=graph.settings, input=stdin)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        return exit_codes.exit_code(result.exception), result.output + exit_codes.one_line(result.exception)
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def world(memory_graph: MemoryGraph, tmp_path_factory: pytest.TempPathFactory) -> tuple[MemoryGraph, dict[str, int]]:
    """The demo video (Lily, Jack and Mia, named by facts) and a chat ingested without --memorize, in which a
    second Mia speaks: the name "Mia" is then ambiguous. Shared by the module (the delete test comes last)."""
    graph, tmp_path = memory_graph, tmp_path_factory.mktemp("mistakes")
    wipe(graph)
    result = load_demo(graph, text_embedder(graph.settings), VIDEO)
    chars = graph.characters_of(list(result.faces.values()))
    people = {name: chars[face] for name, face in result.faces.items()}
    transcript = tmp_path / f"{CHAT}.txt"
    transcript.write_text("Mia: I started a pottery class today.\nNora: Call the doctor tomorrow morning.\n")
    code, out = m3graph(graph, "ingest-chat", str(transcript), "--source-id", CHAT, "--started-at", "2024-06-01")
    assert code == 0, out
    return graph, people


def test_unknown_sources_are_refused_with_the_closest_ids(world: tuple[MemoryGraph, dict[str, int]]) -> None:
    graph, _ = world
    code, out = m3graph(graph, "search", "pottery", "--video", "mistakes-kitchn")
    assert code == exit_codes.NOT_FOUND
    assert "no source 'mistakes-kitchn' in the graph (closest: mistakes-kitchen" in out
    code, out = m3graph(graph, "search", "pottery", "--video", "nosuch")
    assert code == exit_codes.NOT_FOUND and "no memories found" not in out
    assert "no source 'nosuch' in the graph (known sources: mistakes-chat, mistakes-kitchen" in out
    for args in (["stats", "--video", "mistakes-chta"], ["clips", "mistakes-chta"], ["history", "mistakes-chta", "Mia"],
                 ["characters", "--video", "mistakes-chta"], ["delete", "video", "mistakes-chta", "--yes"]):
        code, out = m3graph(graph, *args)
        assert code == exit_codes.NOT_FOUND, (args, out)
        assert "no source 'mistakes-chta' in the graph (closest: mistakes-chat" in out, (args, out)
    code, out = m3graph(graph, "delete", "clip", "mistakes-chta", "0", "--yes")
    assert code == exit_codes.NOT_FOUND
    assert "clip mistakes-chta#0 does not exist: no source 'mistakes-chta' (closest: mistakes-chat" in out


def test_people_are_named_by_id_or_name_and_refused_out_loud(world: tuple[MemoryGraph, dict[str, int]]) -> None:
    graph, people = world
    mia = people["mia"]
    code, out = m3graph(graph, "search", "pottery", "--character", "99999")
    assert code == exit_codes.NOT_FOUND and "no character 99999 in the graph (known people: " in out
    assert f"Mia (character_{mia})" in out and "`m3graph characters` lists them" in out
    code, out = m3graph(graph, "search", "What does she like?", "--character", "Mai")
    assert code == exit_codes.NOT_FOUND
    assert f"no character is named 'Mai' in memory (closest: Mia (character_{mia})" in out
    # Two people are called Mia: the demo's and the chat's speaker. The name alone is refused, naming both.
    code, out = m3graph(graph, "search", "fruit", "--character", "Mia")
    assert code == exit_codes.DATA and "2 people may be called 'Mia': " in out, out
    assert f"Mia (character_{mia})" in out and "name one by id (e.g. --character " in out
    # Within one source the name is one person; so is the id, in any of its spellings.
    for ref in ("Mia", f"<character_{mia}>", f"Mia (character_{mia})"):
        code, out = m3graph(graph, "search", "What fruit does she like?", "--video", VIDEO, "--character", ref,
                            "--json")
        assert code == 0, (ref, out)
        found = json.loads(out)
        assert found["characters"] == [mia] and found["clips"], ref
    code, out = m3graph(graph, "search", "What fruit does Mia like?", "--video", VIDEO)
    assert code == 0 and f"Mia (<character_{mia}>) takes a mango" in out, out  # the name beside its tag
    assert f"<character_{mia}>'s name is Mia." in out  # a line that names her already is left as it is


def test_sources_and_characters_are_listed_with_names(world: tuple[MemoryGraph, dict[str, int]]) -> None:
    graph, people = world
    code, out = m3graph(graph, "sources")
    assert code == 0 and out.splitlines()[0].split()[:4] == ["SOURCE", "NAME", "CLIPS", "MEMORIES"], out
    assert [line.split()[0] for line in out.splitlines()[1:]] == [CHAT, VIDEO]
    code, out = m3graph(graph, "sources", "--json")
    assert code == 0 and [v["source_id"] for v in json.loads(out)["videos"]] == [CHAT, VIDEO]
    code, out = m3graph(graph, "characters")
    assert code == 0 and out.splitlines()[0].split()[:3] == ["ID", "PERSON", "SIZE"], out
    for name, char_id in people.items():
        assert f"{name.capitalize()} (character_{char_id})" in out, out
    code, out = m3graph(graph, "characters", "--video", CHAT, "--json")
    listed = json.loads(out)["characters"]
    assert code == 0 and sorted(p["name"] for p in listed) == ["Mia", "Nora"], listed
    assert all(p["shown"] == f"{p['name']} (character_{p['char_id']})" and p["memories"] >= 1 for p in listed), listed


def test_clips_stats_and_history_print_tables_or_json(world: tuple[MemoryGraph, dict[str, int]]) -> None:
    graph, _ = world
    code, out = m3graph(graph, "clips", VIDEO)
    assert code == 0 and out.splitlines()[0].split() == ["CLIP", "STATE", "SINCE", "(UTC)", "WHY"], out
    code, out = m3graph(graph, "clips", VIDEO, "--json")
    clips = json.loads(out)["clips"]
    assert code == 0 and [c["clip"] for c in clips] == list(range(len(clips))) and len(clips) > 3
    assert set(clips[0]) == {"clip", "state", "at", "reason"}

    # stats --video counts that source only: the chat has no faces, the video no speakers.
    code, out = m3graph(graph, "stats", "--json")
    whole = json.loads(out)["counts"]
    code, out = m3graph(graph, "stats", "--video", CHAT, "--json")
    chat = json.loads(out)["counts"]
    code, out = m3graph(graph, "stats", "--video", VIDEO, "--json")
    video = json.loads(out)["counts"]
    assert code == 0 and chat["Clip"] == 1 and chat["episodic"] == 2 and chat["facts"] == 0
    assert chat["Face"] == 0 and chat["Speaker"] == 2 and chat["Character"] == 2
    assert video["Clip"] == len(clips) and video["Speaker"] == 0 and video["Face"] == 3 and video["facts"] > 0
    assert whole["Memory"] == chat["Memory"] + video["Memory"] and whole["Character"] == 5
    assert chat["MENTIONS"] + video["MENTIONS"] == whole["MENTIONS"] and whole["Face"] == video["Face"]
    code, out = m3graph(graph, "stats", "--video", CHAT)
    assert code == 0 and out.splitlines()[0] == f"counts of source {CHAT}:" and "Speaker" in out

    code, out = m3graph(graph, "history", CHAT, "Nora")  # only the name the chat gives her
    assert code == 0 and f"{CHAT} holds no facts beyond the names its people go by" in out, out
    assert "a conversation ingested without --memorize has none (its 2 memories are the lines as said" in out
    code, out = m3graph(graph, "history", CHAT, "pottery", "--json")
    assert code == 0 and json.loads(out)["slots"] == []
    assert json.loads(out)["note"].startswith(f"no facts about 'pottery' in {CHAT}: this conversation holds no facts")
    code, out = m3graph(graph, "history", VIDEO, "pottery")
    assert code == 0 and f"no facts about 'pottery' in {VIDEO} (it holds {video['facts']} facts about others" in out
    code, out = m3graph(graph, "history", VIDEO, "Mia", "--json")
    assert code == 0 and json.loads(out)["slots"] and "note" not in json.loads(out)


def test_the_installed_command_exits_with_the_documented_status(world: tuple[MemoryGraph, dict[str, int]],
                                                                tmp_path: Path) -> None:
    graph, _ = world
    env = {k: v for k, v in os.environ.items() if not k.startswith(("M3GRAPH_", "NEO4J_"))}
    env |= {"NEO4J_URI": graph.settings.bolt_uri, "M3GRAPH_NEO4J_USER": graph.settings.neo4j_user,
            "M3GRAPH_NEO4J_PASSWORD": graph.settings.neo4j_password.get_secret_value(),
            "M3GRAPH_DATA_DIR": str(tmp_path / "data"), "OMP_WAIT_POLICY": "PASSIVE"}
    done = subprocess.run([sys.executable, "-c", "from m3graph.cli import run; run()", "search", "pottery",
                           "--video", "nosuch"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == exit_codes.NOT_FOUND and done.stdout == ""
    assert done.stderr.startswith("error: no source 'nosuch' in the graph (known sources: "), done.stderr
    done = subprocess.run([sys.executable, "-c", "from m3graph.cli import run; run()", "delete", "video", VIDEO],
                          env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert done.returncode == exit_codes.USAGE and "stdin is not a terminal" in done.stderr
    assert graph.video_exists(VIDEO)


def test_the_service_refuses_for_every_front_end(world: tuple[MemoryGraph, dict[str, int]]) -> None:
    """The MCP tools and the explorer call the same service: its refusals are theirs (a tool error, a 404)."""
    graph, people = world
    service = MemoryService(graph.settings, graph)
    with pytest.raises(NotFoundError, match=r"no source 'nosuch' in the graph \(known sources: "):
        service.search(SearchRequest(query="pottery", videos=("nosuch",)))
    with pytest.raises(NotFoundError, match="no character 99999 in the graph"):
        service.search(SearchRequest(query="pottery", characters=(99999,)))
    with pytest.raises(NotFoundError, match="no character 99999 in the graph"):
        service.search(SearchRequest(query="what does <character_99999> like?"))
    with pytest.raises(AmbiguousNameError, match="2 people may be called 'Mia'"):
        service.character(CharacterRequest(name="Mia"))
    with pytest.raises(NotFoundError, match=r"no character is named 'Norah' in memory \(closest: Nora \(character_"):
        service.character(CharacterRequest(name="Norah"))
    assert service.character(CharacterRequest(name="Mia", videos=(VIDEO,))).char_id == people["mia"]
    assert service.character(CharacterRequest(name="nora")).name == "Nora"


def test_delete_asks_on_a_terminal_and_refuses_without_one(world: tuple[MemoryGraph, dict[str, int]],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    graph, people = world
    before = graph.counts(None)
    size = f"source {CHAT} (1 clip, {graph.counts(CHAT)['Memory']} memories"
    code, out = m3graph(graph, "delete", "video", CHAT)  # CliRunner's stdin is no terminal
    assert code == exit_codes.USAGE and f"not deleting {size}" in out
    assert "stdin is not a terminal" in out and "pass --yes to delete" in out
    code, out = m3graph(graph, "delete", "video", CHAT, "--dry-run")
    assert code == 0 and f"would delete {size}" in out and "nothing was deleted" in out
    code, out = m3graph(graph, "delete", "character", "Mia", "--dry-run", "--json")
    assert code == exit_codes.DATA and "2 people may be called 'Mia'" in out
    code, out = m3graph(graph, "delete", "character", str(people["jack"]), "--dry-run", "--json")
    plan = json.loads(out)
    assert code == 0 and plan["dry_run"] and plan["name"] == "Jack" and plan["counts"]["faces"] == 1
    assert graph.counts(None) == before  # nothing was deleted

    monkeypatch.setattr(delete_module, "interactive", lambda: True)
    code, out = m3graph(graph, "delete", "video", CHAT, stdin="n\n")
    assert code == delete_module.DECLINED and f"delete source {CHAT} (1 clip," in out and "nothing deleted" in out
    assert graph.video_exists(CHAT)
    code, out = m3graph(graph, "delete", "video", CHAT, stdin="y\n")
    assert code == 0 and f"deleted video {CHAT} (1 clips)" in out and not graph.video_exists(CHAT)
    monkeypatch.undo()
    code, out = m3graph(graph, "delete", "clip", VIDEO, "0", "--yes", "--json")
    assert code == 0 and json.loads(out) == {"deleted": "clip", "video": VIDEO, "clip": 0}
