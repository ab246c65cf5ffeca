"""An agent's note keeps its provenance (issue 37, item 7): MCP `remember`, over stdio against the real Neo4j, writes
only to a notes source, as an agent speaker, and every output marks it: search hits, clip views, the explorer and
the graph itself. A note aimed at a conversation or a video, as one of its people, is refused and writes nothing.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import requests
from mcp.client import ClientSession
from mcp.client.stdio import stdio_client

from m3graph.graphdb.store import MemoryGraph
from tests.e2e.test_mcp import VIDEO, Calls, _all_text, _stdio, chat_model, demo, env, workdir  # noqa: F401
from tests.helpers.explorer import running_explorer
from tests.helpers.graph import rows

# test_mcp's fixtures (chat_model, demo, env, workdir) are imported above: this module gets its own instances.
CHAT = "notes-standup"  # a conversation of Ann and Bob (workdir's standup.txt)
NOTES = "team-notes"  # a new source id: becomes a notes source
TOKEN = "agent-notes-test-token"


def _clips(graph: MemoryGraph, source: str) -> int:
    return int(rows(graph, "MATCH (c:Clip {video_id: $v}) RETURN count(c) AS n", v=source)[0]["n"])


def test_a_note_never_speaks_as_a_person_of_another_source(env: dict[str, str], workdir: Path,  # noqa: F811
                                                           demo: MemoryGraph) -> None:  # noqa: F811
    video_clips = _clips(demo, VIDEO)

    async def run() -> None:
        async with stdio_client(_stdio(env, workdir, "--allow-writes")) as (r, w), ClientSession(r, w) as session:
            await session.initialize()
            call = Calls(session)
            assert (await call.ok("ingest_chat", path="standup.txt", source_id=CHAT))["sessions_written"] == [0]

            # Into a conversation as one of its people, or onto a video's timeline: refused, nothing written.
            for source, speaker in ((CHAT, "Bob"), (CHAT, None), (VIDEO, "Mia")):
                args = {"text": "I will skip the release.", "source": source} | ({"speaker": speaker} if speaker
                                                                                 else {})
                refusal = await call.error("remember", **args)
                assert "not a notes source" in refusal and repr(source) in refusal, refusal
            assert "speaker" in await call.error("remember", text="x", source=NOTES, speaker="Bob <speaker_1>")
            assert "speaker" in await call.error("remember", text="x", source=NOTES, speaker="Bob: hi")

            # A new id becomes a notes source; the caller's name is stored as an agent's, not as Bob.
            note = await call.ok("remember", text="Bob will skip the release.", source=NOTES, speaker="Bob")
            assert note["source"] == NOTES and note["clip"] == 0 and note["agent_note"] is True
            assert note["speaker"] == "Bob (agent)" and note["remembered"] == "[agent note] Bob will skip the release."
            more = await call.ok("remember", text="The retro moved to Monday.", source=NOTES)
            assert more["clip"] == 1 and more["speaker"] == "agent"
            default = await call.ok("remember", text="Ann prefers short standups.", speaker="Ann (agent)")
            assert default["source"] == "agent-notes" and default["speaker"] == "Ann (agent)"

            # Search: the note's line is the agent's and says it is a note, in its own source only.
            hits = await call.ok("search_memory", query="Who will skip the release?")
            lines = [(c["video"], m) for c in hits["clips"] for m in c["memories"] if "skip the release" in m["text"]]
            assert lines and all(v == NOTES for v, _ in lines), lines
            for _, m in lines:
                assert m["text"].startswith("Bob (agent) <character_"), m
                assert "[agent note] Bob will skip the release." in m["text"], m
            said = await call.ok("search_memory", query="release", videos=[CHAT], speakers=["Bob"])
            assert "skip" not in _all_text(said) and "agent" not in _all_text(said)

            # Clip views: the note's clip says so; the conversation holds only its own two turns.
            assert "[agent note] The retro moved to Monday." in _all_text(await call.ok("fetch_clip", video=NOTES,
                                                                                          clip=1))
            chat = await call.ok("fetch_clip", video=CHAT, clip=0, after=5)
            assert [c["clip"] for c in chat["clips"]] == [0] and "agent" not in _all_text(chat)

    anyio.run(run)

    # The graph: nothing was added to the conversation or the video; the notes source, its clips and memories, and
    # its speakers are marked; the agent speakers are not the conversation's people.
    assert _clips(demo, CHAT) == 1 and _clips(demo, VIDEO) == video_clips
    sources = {r["v"]: r["notes"] for r in rows(demo, "MATCH (v:Video) RETURN v.video_id AS v, v.agent_notes AS notes")}
    assert sources[NOTES] is True and sources["agent-notes"] is True and not sources[CHAT] and not sources[VIDEO]
    marked = rows(demo, "MATCH (m:Memory)-[:IN_CLIP]->(c:Clip {video_id: $v}) "
                        "RETURN m.agent_note AS m, c.agent_note AS c", v=NOTES)
    assert marked and all(r["m"] is True and r["c"] is True for r in marked)
    speakers = {r["key"]: r["agent"] for r in rows(demo, "MATCH (s:Speaker) RETURN s.speaker_key AS key, "
                                                          "s.agent AS agent")}
    assert speakers[f"{NOTES}|Bob (agent)"] is True and speakers[f"{NOTES}|agent"] is True
    assert speakers[f"{CHAT}|Bob"] is None and speakers[f"{CHAT}|Ann"] is None
    bobs = rows(demo, "MATCH (s:Speaker)-[:IS]->(c:Character) WHERE s.speaker_key IN $keys "
                      "RETURN collect(DISTINCT c.char_id) AS chars", keys=[f"{NOTES}|Bob (agent)", f"{CHAT}|Bob"])
    assert len(bobs[0]["chars"]) == 2  # two people: the agent's name is not Bob's character

    # The explorer shows the note as an agent's note too.
    with running_explorer(demo, TOKEN) as url:
        page = requests.get(f"{url}/clip/{NOTES}/0", cookies={"m3graph_explore": TOKEN}, timeout=60)
        assert page.status_code == 200 and "[agent note] Bob will skip the release." in page.text
        assert "Bob (agent)" in page.text
