"""The README's main job, end to end on the real server with the real packaged text model."""

from __future__ import annotations

from click.testing import CliRunner

from m3graph.cli import main
from m3graph.embedding import text_embedder
from m3graph.graphdb.search_plan import SearchSpec
from m3graph.graphdb.store import MemoryGraph
from m3graph.ingest.demo import load_demo
from m3graph.settings import Settings


def test_demo_memory_resolves_people_and_answers(graph: MemoryGraph, settings: Settings) -> None:
    embedder = text_embedder(settings)
    result = load_demo(graph, embedder, "demo-test")
    assert set(result.faces) == {"lily", "jack", "mia"} and set(result.voices) == {"lily", "jack", "mia"}
    chars = graph.characters_of([*result.faces.values(), *result.voices.values()])
    for person in ("lily", "jack", "mia"):
        assert chars[result.faces[person]] == chars[result.voices[person]], person
    # One wrong equivalence (Lily's face with Mia's voice) is outvoted and merges nobody.
    assert chars[result.faces["lily"]] != chars[result.faces["mia"]]
    assert len({chars[f] for f in result.faces.values()}) == 3

    before = graph.counts("demo-test")
    load_demo(graph, embedder, "demo-test")
    assert graph.counts("demo-test") == before  # the whole ingestion is idempotent

    hits = graph.search.search(SearchSpec(embedder.embed(["What fruit does Mia like?"])[0].tolist(),
                                          videos=["demo-test"]))
    texts = " ".join(m.text for clip in hits for m in clip.memories)
    assert "mango" in texts and "<character_" in texts and "<face_" not in texts
    assert graph.search.characters_named("Mia", ["demo-test"])[0][0] == chars[result.faces["mia"]]
    # before_clip: Mia's mango only appears from clip 3 on.
    early = graph.search.search(SearchSpec(embedder.embed(["mango"])[0].tolist(), videos=["demo-test"], before_clip=2,
                                           threshold=-1.0, k=10))
    assert all(clip.clip_index <= 2 for clip in early)
    assert "mango" not in " ".join(m.text for clip in early for m in clip.memories)


def test_cli_demo_and_search(settings: Settings, graph: MemoryGraph) -> None:
    runner = CliRunner()
    out = runner.invoke(main, ["demo", "--video", "demo-cli"], obj=settings, catch_exceptions=False)
    assert out.exit_code == 0, out.output
    assert "loaded 7 clips" in out.output and "mango" in out.output
    # The fact that changed: apples now, mango as of clip 4 (the demo prints both).
    assert "  now: Mia (<character_" in out.output and "favourite fruit is apples now." in out.output
    assert "  as of CLIP_4: Mia (<character_" in out.output  # the person by name beside the tag
    assert "favourite fruit is mango. (superseded on CLIP_6)" in out.output
    assert "(no memories found)" not in out.output  # every demo question finds memories (hybrid search)
    out = runner.invoke(main, ["search", "Where is the newspaper?", "--video", "demo-cli"], obj=settings,
                        catch_exceptions=False)
    assert out.exit_code == 0 and "newspaper" in out.output
