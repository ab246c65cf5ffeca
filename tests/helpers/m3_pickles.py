"""Builds small pickles with the exact structure the research code writes (reference §3).

The released graphs are pickles of ``videograph.VideoGraph`` with nested ``VideoGraph.Node`` objects. The
real class is not importable here (and must never be: importing it is what the safe loader avoids), so this
helper defines look-alikes whose ``__module__``/``__qualname__`` match, and registers a fake ``videograph``
(or ``mmagent.videograph``) module in ``sys.modules`` only while dumping, so `pickle` records the same
class paths as the research code did. The builder mirrors the research methods that shape the data:
node ids from one counter, edges stored in both orientations with weight 1, ``reinforce_node`` adding 1 per
edge key (so +2 per undirected edge), ``text_nodes_by_clip`` in insertion order.
"""

from __future__ import annotations

import pickle
import re
import sys
import types
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

_TAG = re.compile(r"<(face|voice)_(\d+)>")


def _classes(module: str) -> type:
    """Fresh look-alike classes recorded by pickle as ``<module>.VideoGraph`` and ``<module>.VideoGraph.Node``."""

    class VideoGraph:
        def __init__(self) -> None:
            self.nodes: dict[int, Any] = {}
            self.edges: dict[tuple[int, int], float] = {}
            self.text_nodes: list[int] = []
            self.text_nodes_by_clip: dict[int, list[int]] = {}
            self.event_sequence_by_clip: dict[int, list[int]] = {}
            self.max_img_embeddings = 10
            self.max_audio_embeddings = 20
            self.img_matching_threshold = 0.3
            self.audio_matching_threshold = 0.6
            self.next_node_id = 0

        class Node:
            def __init__(self, node_id: int, node_type: str) -> None:
                self.id = node_id
                self.type = node_type
                self.embeddings: list[Any] = []
                self.metadata: dict[str, Any] = {}

    VideoGraph.__module__ = module
    VideoGraph.__qualname__ = "VideoGraph"
    VideoGraph.Node.__module__ = module
    VideoGraph.Node.__qualname__ = "VideoGraph.Node"
    return VideoGraph


@contextmanager
def fake_module(module: str, graph_cls: type) -> Iterator[None]:
    """Makes `module` importable (for pickle's class-path check) only inside the block."""
    names = module.split(".")
    saved = {name: sys.modules.get(name) for name in (".".join(names[: i + 1]) for i in range(len(names)))}
    try:
        for i in range(len(names)):
            full = ".".join(names[: i + 1])
            sys.modules[full] = types.ModuleType(full)
        sys.modules[module].VideoGraph = graph_cls  # type: ignore[attr-defined]
        for i in range(len(names) - 1):
            setattr(sys.modules[".".join(names[: i + 1])], names[i + 1], sys.modules[".".join(names[: i + 2])])
        yield
    finally:
        for name, previous in saved.items():
            if previous is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = previous


class GraphBuilder:
    """A research-shaped VideoGraph, built with the same bookkeeping as ``mmagent/videograph.py``."""

    def __init__(self, module: str = "videograph", text_dim: int = 16, seed: int = 0) -> None:
        self.module = module
        self.cls = _classes(module)
        self.graph = self.cls()
        self.text_dim = text_dim
        self.rng = np.random.default_rng(seed)

    def _node(self, node_type: str) -> Any:
        node = self.cls.Node(self.graph.next_node_id, node_type)
        self.graph.nodes[node.id] = node
        self.graph.next_node_id += 1
        return node

    def face(self, embeddings: Sequence[Any], crops: Sequence[str] | None = None) -> int:
        node = self._node("img")
        node.embeddings.extend(list(embeddings)[: self.graph.max_img_embeddings])
        node.metadata["contents"] = list(crops) if crops is not None else []
        return int(node.id)

    def voice(self, embeddings: Sequence[Any], asr: Sequence[str] | None = None) -> int:
        node = self._node("voice")
        node.embeddings.extend(list(embeddings)[: self.graph.max_audio_embeddings])
        node.metadata["contents"] = list(asr) if asr is not None else []
        return int(node.id)

    def text(self, text: str, clip: int, kind: str = "episodic") -> int:
        """add_text_node + the edges insert_memory creates to every tagged entity (weight 1, both ways)."""
        node = self._node(kind)
        vec = self.rng.normal(size=self.text_dim)
        node.embeddings = [(vec / np.linalg.norm(vec)).tolist()]  # the research code stored plain lists
        node.metadata["contents"] = [text]
        node.metadata["timestamp"] = clip
        self.graph.text_nodes.append(node.id)
        self.graph.text_nodes_by_clip.setdefault(clip, []).append(node.id)
        if kind == "episodic":
            self.graph.event_sequence_by_clip.setdefault(clip, []).append(node.id)
        for match in _TAG.finditer(text):
            entity = int(match.group(2))
            if entity in self.graph.nodes:
                self.graph.edges[(node.id, entity)] = 1.0
                self.graph.edges[(entity, node.id)] = 1.0
        return int(node.id)

    def reinforce(self, node_id: int) -> None:
        """reinforce_node: +1 on every edge key touching the node; both orientations are keys, so +2 each."""
        for a, b in list(self.graph.edges):
            if node_id in (a, b) and (a, b) in self.graph.edges:
                self.graph.edges[(a, b)] += 1
                self.graph.edges[(b, a)] += 1

    def dumps(self, protocol: int = pickle.DEFAULT_PROTOCOL) -> bytes:
        with fake_module(self.module, self.cls):
            return pickle.dumps(self.graph, protocol=protocol)

    def dump(self, path: Path, protocol: int = pickle.DEFAULT_PROTOCOL) -> Path:
        path.write_bytes(self.dumps(protocol))
        return path


def unit(rng: np.random.Generator, dim: int, base: np.ndarray | None = None, noise: float = 0.05) -> np.ndarray:
    """A unit vector, near `base` when given (one person's embeddings cluster)."""
    vec = rng.normal(size=dim) if base is None else base + noise * rng.normal(size=dim)
    return np.asarray(vec / np.linalg.norm(vec), dtype=np.float32)


# Stands for a research face crop: only the JPEG markers matter to the importer, which never decodes images.
TINY_JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + b"crop-pixels" + b"\xff\xd9"


def sample_graph(face_dim: int = 128, voice_dim: int = 256, module: str = "videograph",
                 crops: bool = True) -> tuple[GraphBuilder, dict[str, int]]:
    """The test scenario: 2 faces, 1 voice, 3 clips, episodic + semantic memories, one equivalence.

    Node ids are chosen so that ``<face_1>`` and ``<face_12>`` both occur: filler nodes are added until the
    second face gets id 12, which is the pair the research code's substring rewrite got wrong (§6.1).
    """
    import base64

    b = GraphBuilder(module=module)
    rng = np.random.default_rng(7)
    b.text("The kitchen is empty in the morning.", 0)  # id 0
    alice_base, bob_base = unit(rng, face_dim), unit(rng, face_dim)
    crop = base64.b64encode(TINY_JPEG).decode("ascii")
    alice = b.face([unit(rng, face_dim, alice_base) for _ in range(3)], [crop] * 3 if crops else [])  # id 1
    voice_base = unit(rng, voice_dim)
    voice = b.voice([unit(rng, voice_dim, voice_base).tolist() for _ in range(2)],
                    ["Good morning, I am Alice.", "The coffee is ready."])  # id 2: lists, not arrays
    b.text(f"<face_{alice}> walks into the kitchen carrying a bag of coffee beans.", 0)
    b.text(f"<voice_{voice}> says good morning and introduces herself as Alice.", 0)
    eq = b.text(f"Equivalence: <face_{alice}>, <voice_{voice}>", 0, "semantic")
    b.text(f"<face_{alice}>'s name is Alice.", 0, "semantic")
    while b.graph.next_node_id < 12:
        b.text("Sunlight falls on the green kitchen table.", 1)
    bob = b.face([unit(rng, face_dim, bob_base) for _ in range(2)], [crop] * 2 if crops else [])  # id 12
    assert (alice, bob) == (1, 12)
    b.text(f"<face_{alice}> hands a cup of coffee to <face_{bob}>.", 1)
    b.text(f"<face_{bob}> reads a newspaper about the football match.", 2)
    b.text(f"<face_{bob}> and <face_{alice}> are neighbours.", 2, "semantic")
    b.reinforce(eq)  # the equivalence was stated again in a later clip: weight 1 -> 3, i.e. 2 votes
    return b, {"alice": alice, "bob": bob, "voice": voice, "equivalence": eq}
