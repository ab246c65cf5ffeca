"""A small generated memory for the README's main command, until perception and the LLM land.

It goes through the same store API that real ingestion uses: clips are registered, per-clip face and voice
clusters are resolved against persistent entities (embeddings are synthetic but person-consistent, so the
same person is recognised across clips), memories are embedded with the configured text model, and
equivalence statements become voted SAME_AS edges. One deliberately wrong equivalence (the reference's
failure case, §3.6) shows that a single bad vote does not merge two people. Each clip goes through
`MemoryGraph.register_clip`, so the meta-clip vote (one face and one voice alone in a clip) is the store's own
rule, and the demo's questions are searched as `SearchRequest`s by the application service, like every front end.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from m3graph.embedding import TextEmbedder
from m3graph.graphdb.store import MemoryGraph
from m3graph.graphdb.types import (
    ClipInfo,
    FaceCluster,
    FaceObservation,
    MemoryIn,
    UtteranceObservation,
    VoiceCluster,
)
from m3graph.service.requests import SearchRequest

DEMO_VIDEO = "demo-kitchen"

# Per clip: faces on screen, voices with what they say, then episodic and semantic memories. `F:name` and
# `V:name` are placeholders for the entity tags that resolution assigns.
SCRIPT: list[dict[str, list]] = [
    {"faces": ["lily", "jack"], "voices": [("lily", "Good morning Jack, everyone looks tired today.")],
     "episodic": ["F:lily walks into the kitchen carrying a bag of coffee beans.",
                  "F:jack sits at the table reading a newspaper.",
                  "V:lily says everyone looks tired and suggests making coffee."],
     "semantic": ["Equivalence: F:lily, V:lily", "F:lily is energetic and cares about her friends."]},
    {"faces": ["lily"], "voices": [("lily", "My name is Lily. I will make three cups of coffee.")],
     "episodic": ["F:lily grinds the coffee beans and fills the kettle.",
                  "V:lily says her name is Lily and that she will make three cups of coffee."],
     "semantic": ["F:lily's name is Lily.", "Equivalence: F:lily, V:lily"]},
    {"faces": ["jack", "mia"], "voices": [("jack", "Thanks Lily. I am Jack, and this is my sister Mia.")],
     "episodic": ["F:mia enters the kitchen wearing a red coat.",
                  "V:jack thanks Lily and introduces his sister Mia.",
                  "F:jack puts the newspaper on the green table."],
     "semantic": ["Equivalence: F:jack, V:jack", "F:jack's name is Jack.", "F:mia is Jack's sister."]},
    {"faces": ["mia"], "voices": [("mia", "I would rather have a mango than coffee.")],
     "episodic": ["F:mia takes a mango from the fruit bowl.",
                  "V:mia says she prefers a mango to coffee."],
     "semantic": ["Equivalence: F:mia, V:mia", "F:mia likes mangoes more than coffee.", "F:mia's name is Mia.",
                  "F:mia's favourite fruit is mango."]},
    {"faces": ["lily", "mia"], "voices": [("lily", "Here is your coffee. Mia, do you want some?"),
                                          ("mia", "No thank you, the mango is perfect.")],
     "episodic": ["F:lily hands a cup of coffee to F:jack.",
                  "V:lily offers coffee to Mia.",
                  "V:mia declines the coffee and keeps eating the mango."],
     # One wrong equivalence on purpose: the voting keeps Mia's voice with Mia's face.
     "semantic": ["Equivalence: F:lily, V:mia", "F:lily and F:mia are friends who share breakfast."]},
    {"faces": ["jack"], "voices": [("jack", "I have to leave for work at nine.")],
     "episodic": ["F:jack looks at the clock and picks up his keys.",
                  "V:jack says he has to leave for work at nine."],
     "semantic": ["Equivalence: F:jack, V:jack", "F:jack works in an office and starts at nine."]},
    # A fact that changes: later that morning Mia's favourite fruit is apples (the mango fact of clip 3 is kept,
    # superseded; m3graph.fact_versions).
    {"faces": ["lily", "mia"], "voices": [("lily", "Mia, do you want another mango for the road?"),
                                          ("mia", "No thanks. I have gone off mangoes, apples are my favourite now.")],
     "episodic": ["F:lily offers F:mia another mango.",
                  "V:mia says she has gone off mangoes and that apples are her favourite fruit now."],
     "semantic": ["Equivalence: F:mia, V:mia", "F:mia's favourite fruit is apples now."]},
]

# What the demo asks of the fact that changed: as it holds now, and as it held after clip 4 (before it changed).
CHANGING_FACT = "What is Mia's favourite fruit?"
BEFORE_THE_CHANGE = 4

QUESTIONS = [
    "What are the drinks for the three people?",
    "What fruit does Mia like to eat?",
    "Where did Jack put the newspaper?",
    "When does Jack have to leave for work?",
]


def demo_request(question: str, source_id: str = DEMO_VIDEO) -> SearchRequest:
    """How the demo searches: the controller's clip search over the demo video."""
    return SearchRequest(query=question, videos=(source_id,))


@dataclass
class DemoResult:
    source_id: str
    clips: int
    faces: dict[str, int]
    voices: dict[str, int]


def _person_vectors(names: list[str], dim: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {name: rng.normal(size=dim) for name in names}


def _tagged(text: str, faces: dict[str, int], voices: dict[str, int]) -> str:
    for name, eid in faces.items():
        text = text.replace(f"F:{name}", f"<face_{eid}>")
    for name, eid in voices.items():
        text = text.replace(f"V:{name}", f"<voice_{eid}>")
    return text


def load_demo(graph: MemoryGraph, embedder: TextEmbedder, source_id: str = DEMO_VIDEO,
              progress: Callable[[int, int], None] | None = None) -> DemoResult:
    """Ingests the script clip by clip; re-running it changes nothing (every step is keyed by video and clip).
    `progress(done, total)` is called after each clip (the CLI prints it; a library caller may pass nothing)."""
    ident = graph.settings.identity
    people = ["lily", "jack", "mia"]
    face_base = _person_vectors(people, ident.face_dim, seed=7)
    voice_base = _person_vectors(people, ident.voice_dim, seed=11)
    rng = np.random.default_rng(3)
    clip_s = graph.settings.clip_seconds
    faces: dict[str, int] = {}
    voices: dict[str, int] = {}
    for index, clip in enumerate(SCRIPT):
        start = index * clip_s
        face_clusters = [
            FaceCluster(label=i, observations=[
                FaceObservation(frame_time_s=start + t, bbox=(40 + 200 * i, 60, 160 + 200 * i, 200),
                                det_score=0.99, quality=0.8 + 0.02 * t,
                                embedding=list(face_base[name] + 0.15 * rng.normal(size=ident.face_dim)))
                for t in range(0, 10, 2)])
            for i, name in enumerate(clip["faces"])]
        voice_clusters = [
            VoiceCluster(label=i, utterances=[UtteranceObservation(
                start_s=start + 2 + 8 * i, end_s=start + 7 + 8 * i, text=line,
                embedding=list(voice_base[name] + 0.1 * rng.normal(size=ident.voice_dim)))])
            for i, (name, line) in enumerate(clip["voices"])]
        names = [name for name, _ in clip["voices"]]
        # Clip, face and voice resolution and the paper's meta-clip vote (one face and one voice alone in a clip
        # are the same person), as real ingestion registers a clip.
        face_res, voice_res = graph.register_clip(
            ClipInfo(source_id=source_id, clip_index=index, start_s=start, end_s=start + clip_s), face_clusters,
            voice_clusters, video_name="Demo: breakfast in the kitchen")
        faces.update({name: res.entity_id for res, name in zip(face_res, clip["faces"], strict=True)})
        voices.update({name: res.entity_id for res, name in zip(voice_res, names, strict=True)})
        texts = [(kind, _tagged(t, faces, voices)) for kind in ("episodic", "semantic") for t in clip[kind]]
        vectors = embedder.embed([t for _, t in texts])
        graph.write_memories(source_id, index, [
            MemoryIn(kind=kind, text=text, embedding=vec.tolist())
            for (kind, text), vec in zip(texts, vectors, strict=True)])
        if progress is not None:
            progress(index + 1, len(SCRIPT))
    return DemoResult(source_id=source_id, clips=len(SCRIPT), faces=faces, voices=voices)
