"""The pure rules of facts that change: the walk over one slot, and which versions a view shows.

`VersionView.visible` is the Python twin of the filter in `search/ranked` (applied there to ranked memories, here to
a whole clip's memories); tests/graph/test_fact_versions.py checks the Cypher side through real searches.
"""

from __future__ import annotations

import itertools

from m3graph.fact_versions import OPEN, Assertion, VersionView, walk


def _said(memory_id: str, at: float, value: str, *, negated: bool = False, changed: bool = False) -> Assertion:
    return Assertion(memory_id, (at, int(at // 30), 0), None, f"v#{int(at // 30)}", value, negated, changed,
                     f"CLIP_{int(at // 30)}")


def test_the_walk_gives_the_same_versions_whatever_the_input_order() -> None:
    said = [_said("mango", 0, "mango"), _said("apple", 60, "apple"), _said("mango", 120, "mango")]
    results = [walk(p) for p in itertools.permutations(said)]
    assert all(r == results[0] for r in results)
    v = results[0]
    assert v["mango"].current and not v["apple"].current  # said again later: newer again
    assert v["mango"].from_order == [0, 120] and v["mango"].to_order == [60, OPEN]
    assert v["apple"].to_order == [120] and v["apple"].superseded_note == "superseded on CLIP_4"


def test_a_flip_without_a_change_word_contradicts_and_with_one_updates() -> None:
    v = walk([_said("no", 0, "rust", negated=True), _said("yes", 30, "rust")])
    assert v["no"].current and v["yes"].current and list(v["yes"].contradicts) == ["no"]
    v = walk([_said("yes", 0, "rust"), _said("stopped", 30, "rust", negated=True, changed=True)])
    assert not v["yes"].current and list(v["stopped"].supersedes) == ["yes"]


def test_a_view_shows_current_facts_or_those_valid_at_a_point() -> None:
    old = {"slot_key": "mia · fruit", "current": False, "source_id": "v", "valid_from_order": [0.0],
           "valid_to_order": [60.0], "valid_from_at": [], "valid_to_at": []}
    new = old | {"current": True, "valid_from_order": [60.0], "valid_to_order": [OPEN]}
    episodic = {"slot_key": None}
    now, then = VersionView(), VersionView(video="v", order=30.0)
    assert [now.visible(m) for m in (old, new, episodic)] == [False, True, True]
    assert [then.visible(m) for m in (old, new, episodic)] == [True, False, True]
    assert VersionView(all_versions=True).visible(old)
    other_source = VersionView(video="w", order=30.0)  # a clip point of another source: current state
    assert [other_source.visible(m) for m in (old, new)] == [False, True]
    dated = old | {"valid_from_at": [100.0], "valid_to_at": [200.0]}
    assert VersionView(at=150.0).visible(dated) and not VersionView(at=250.0).visible(dated)
