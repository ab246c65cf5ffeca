"""The follow-up search's pure parts: which words it adds, how two clip rankings fuse, how node answers merge."""

from __future__ import annotations

from bench.search_followup import followup_terms, fuse_clips, merge_nodes
from m3graph.graphdb.types import ClipResult, RenderedMemory


def _mem(mid: str, text: str, clip: int = 0, order: int = 0, score: float | None = None) -> RenderedMemory:
    return RenderedMemory(memory_id=mid, kind="episodic", text=text, raw_text=text, clip_index=clip,
                          order_in_clip=order, score=score)


def _clip(index: int, rank: float, mems: list[RenderedMemory] | None = None) -> ClipResult:
    return ClipResult(source_id="v", clip_index=index, start_s=0.0, end_s=1.0, score=None, memories=mems or [],
                      rank=rank)


def test_names_inside_a_sentence_and_higher_seeds_come_first() -> None:
    seeds = [_mem("a", "Melanie <speaker_1>: we camped by the lake near Tahoe"),
             _mem("b", "Caroline: the lake was cold, and the hike was long")]
    words = followup_terms("Where did Melanie camp?", seeds, 10)
    assert words[:3] == ["tahoe", "lake", "camped"]  # a name doubles (2); in both seeds (1 + 1/2); one seed (1)
    assert "melanie" not in words and "caroline" not in words  # speakers
    assert "where" not in words and "the" not in words
    assert followup_terms("Where?", seeds, 2) == words[:2]


def test_fused_clips_mix_scaled_scores_and_keep_first_order_on_ties() -> None:
    first = [_clip(0, 2.0), _clip(1, 1.8), _clip(2, 0.2)]
    second = [_clip(5, 4.0), _clip(0, 2.0)]
    assert [c.clip_index for c in fuse_clips(first, second, 0.0, 2)] == [0, 1]
    assert [c.clip_index for c in fuse_clips(first, second, 0.5, 2)] == [0, 5]  # 0.75 and 0.5 beat 0.45
    assert [c.clip_index for c in fuse_clips(first, second, 1.0, 3)] == [5, 0, 1]
    assert fuse_clips(first, second, 0.5, 1)[0].rank == 0.75


def test_merged_nodes_keep_the_first_answer_and_fill_with_new_memories() -> None:
    a, b, c = _mem("a", "x", 0, 0, 0.9), _mem("b", "y", 0, 1, 0.5), _mem("c", "z", 3, 0, 0.2)
    first = [_clip(0, 1.0, [a, b])]
    second = [_clip(0, 1.0, [a]), _clip(3, 0.5, [c])]
    merged = merge_nodes(first, second, 3)
    assert [(r.clip_index, [m.memory_id for m in r.memories]) for r in merged] == [(0, ["a", "b"]), (3, ["c"])]
    assert [m.memory_id for r in merge_nodes(first, second, 2) for m in r.memories] == ["a", "b"]
