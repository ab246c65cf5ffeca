"""The identity profile of bench.run (bench/identity_profile.py) measures the calls it names (issue 40).

Why: the profile is the evidence for where a `resolve_faces` call spends its time; if its "unchanged" kind moved the
exemplar set (and so the face index), or its "returning" kind created people, the split of the commit into the
index update and the log force would be read from the wrong calls. Runs on the real server with a small face set.
"""

from __future__ import annotations

from bench.identity_profile import KINDS, VIDEO, profile_identity, profile_line
from bench.loader import load_faces
from bench.synth import make_faces
from m3graph.graphdb.store import MemoryGraph
from tests.helpers.graph import rows


def test_the_profile_times_each_part_of_each_kind_of_call(graph: MemoryGraph) -> None:
    s = graph.settings
    faces = make_faces(60, s.identity.face_dim, seed=5, threshold=s.face_match_threshold,
                       max_exemplars=s.identity.max_face_exemplars)
    load_faces(graph.ex, faces)
    before = {r["id"]: r["obs"] for r in rows(graph, "MATCH (f:Face) RETURN f.entity_id AS id, f.exemplar_obs AS obs")}

    profile = profile_identity(graph, faces, per_kind=2, seed=6, warmup=1)

    assert set(profile) == {"clips", *KINDS}
    parts_write = {"returning", "returning_unchanged", "new", "api_returning"}
    assert profile["api_returning"]["n"] == 2 and profile["api_returning"]["right"] == 2
    assert set(profile["api_returning"]) == {"total", "n", "right"}
    for kind in KINDS[:-1]:
        assert profile[kind]["n"] == 2
        parts = {"total", "begin", "commit", "client_python"}
        statements = {"lock_only": ("graph/lock",), "match_only": ("identity/face_match",)}.get(
            kind, ("identity/face_match", "identity/face_write"))
        parts |= {f"{name} {side}" for name in statements for side in ("client", "server")}
        assert any(p.startswith("identity/face_write") for p in profile[kind]) == (kind in parts_write)
        assert parts <= set(profile[kind])
        assert all(profile[kind][p]["p50_ms"] >= 0 for p in parts)
        assert profile[kind]["total"]["p50_ms"] >= profile[kind]["commit"]["p50_ms"] > 0
        if kind != "lock_only":
            assert profile[kind]["right"] == 2, kind  # matched to its own Face / created / decided

    # Which Face each resolved clip's observations joined, and whether they entered its exemplar set.
    joined = rows(graph, "MATCH (o:FaceObs {video_id: $v})-[:OF]->(f:Face) "
                         "RETURN o.clip_index AS clip, f.entity_id AS id, o.obs_key IN f.exemplar_obs AS kept",
                  v=VIDEO)
    by_clip: dict[int, list[dict[str, object]]] = {}
    for r in joined:
        by_clip.setdefault(int(r["clip"]), []).append(r)
    clips = profile["clips"]
    # match_only rolled back: only the committed kinds left observations.
    assert {c for k in parts_write for c in clips[k]} == set(by_clip)
    for c in clips["returning_unchanged"]:
        (eid,) = {r["id"] for r in by_clip[c]}
        assert not any(r["kept"] for r in by_clip[c])
        now = rows(graph, "MATCH (f:Face {entity_id: $id}) RETURN f.exemplar_obs AS obs", id=eid)[0]["obs"]
        assert now == before[eid]  # the exemplar set, and so the indexed centroid, did not move
    for c in clips["returning"] + clips["api_returning"]:
        assert all(r["id"] in before for r in by_clip[c]) and any(r["kept"] for r in by_clip[c])
    for c in clips["new"]:
        assert all(r["id"] not in before for r in by_clip[c])
    assert "lock_only: total" in profile_line(profile)
