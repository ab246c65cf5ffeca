"""The long-conversation generator (bench/conversation_gen.py): order, dates, sessions, renaming, sizes, reuse.

Why: `python -m bench.conversation` measures the product at 10^5–10^7 tokens of ONE conversation built by this
generator and resumes its ingestion by session id; a generator that reordered, re-dated backwards, changed an id
between runs or overshot a size would make every figure of that benchmark wrong without failing. The chats here
are small synthetic ones in BEAM's layout (the real set is ../shared/data/beam), written into the test's folder.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from bench.conversation_gen import Manifest, Spec, chat_names, generate, renames, sessions_of, tokens
from m3graph.devkit.eval.beam import Batch, Message, load_chat
from m3graph.ingest.chat.formats import load_conversation

SAY = ("We deploy Gizmoflow on port {n} with Postgres. Then gizmo stuff. Here is the plan for March. "
       "here we go ->-> 1,{n}")


def _chat(root: Path, name: str, anchors: list[str], turns_per_batch: int) -> None:
    batches, mid = [], 0
    for b, anchor in enumerate(anchors, start=1):
        turns = []
        for t in range(turns_per_batch):
            user = {"role": "user", "id": mid, "content": SAY.format(n=mid), "question_type": "main_question"}
            if t == 0:
                user["time_anchor"] = anchor
            turns.append([user, {"role": "assistant", "id": mid + 1, "content": f"Sure, Gizmoflow answer {mid}."}])
            mid += 2
        batches.append({"batch_number": b, "turns": turns})
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "chat.json").write_text(json.dumps(batches))
    (folder / "probing_questions.json").write_text(json.dumps({"knowledge_update": [
        {"question": "Which port?", "answer": "port 7", "rubric": ["port 7"], "source_chat_ids": [6]}]}))


@pytest.fixture
def beam_root(tmp_path: Path) -> Path:
    root = tmp_path / "beam"
    _chat(root, "500K-1", ["January-05-2024", "January-20-2024"], 3)
    _chat(root, "500K-2", ["March-01-2023", "March-09-2023"], 2)
    _chat(root, "500K-10", ["May-01-2022"], 2)
    return root


def _parts(out: Path, m: Manifest) -> list[dict[str, Any]]:
    return [json.loads((out / p.file).read_text()) for p in m.parts]


def test_tokens_are_characters_over_four() -> None:
    assert tokens("") == 1 and tokens("abcd") == 1 and tokens("abcde") == 2 and tokens("x" * 400) == 100


def test_chats_in_natural_order(beam_root: Path) -> None:
    assert chat_names(beam_root) == ["500K-1", "500K-2", "500K-10"]


def test_sessions_cut_before_a_user_message() -> None:
    msgs = tuple(Message(i, "user" if i % 3 == 0 else "assistant", f"m{i}") for i in range(10))
    cut = sessions_of(Batch(1, datetime(2024, 1, 1), msgs), 2)
    assert [[m.id for m in s] for s in cut] == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    assert [m for s in cut for m in s] == list(msgs)


def test_whole_set_then_renamed_copies_with_time_running_forward(beam_root: Path, tmp_path: Path) -> None:
    spec = Spec(tuple(chat_names(beam_root)), session_messages=2, gap_days=7)
    out = tmp_path / "conv"
    m = generate(beam_root, out, 1500, spec)
    assert [(p.chat, p.copy) for p in m.parts][:4] == [("500K-1", 0), ("500K-2", 0), ("500K-10", 0), ("500K-1", 1)]
    parts = _parts(out, m)
    starts = [datetime.fromisoformat(s["started_at"]) for p in parts for s in p["sessions"]]
    assert starts == sorted(starts) and len(set(starts)) == len(starts)  # time runs forward, no two alike
    assert starts[0] == datetime.fromisoformat("2024-01-05T09:00:00+00:00")  # the first chat keeps its dates
    second = datetime.fromisoformat(parts[1]["sessions"][0]["started_at"])
    last_of_first = datetime.fromisoformat(parts[0]["sessions"][-1]["started_at"])
    assert (second.date() - last_of_first.date()).days == 7  # the next chat starts gap_days after
    first_turns = [t for s in parts[0]["sessions"] for t in s["turns"]]
    assert first_turns[0]["id"] == "500K-1/c0/m0" and parts[0]["sessions"][0]["id"] == "500K-1/c0/b1/s0"
    assert first_turns[0]["text"] == ("We deploy Gizmoflow on port 0 with Postgres. Then gizmo stuff. Here is the "
                                      "plan for March. here we go")  # the generation's marker stripped
    copy = next(p for p, meta in zip(parts, m.parts, strict=True) if meta.copy == 1)
    text = copy["sessions"][0]["turns"][0]["text"]
    assert "Postgres2" in text and "Gizmoflow2" in text  # names: renamed in the copy
    assert "March" in text and "Here is" in text and "gizmo stuff" in text  # months, words also lower-cased: kept
    assert all(p["source_id"] == spec.source_id for p in parts)


def test_renames_only_names_never_lowercase(beam_root: Path) -> None:
    names = renames(load_chat(beam_root / "500K-1"))
    assert "Gizmoflow" in names and "Postgres" in names and "Sure" in names
    assert "Here" not in names and "March" not in names
    assert "Then" in names  # the rule's known limit: a sentence start never written in lower case reads as a name


def test_size_is_cut_at_a_session_and_counted(beam_root: Path, tmp_path: Path) -> None:
    spec = Spec(tuple(chat_names(beam_root)), session_messages=2)
    m = generate(beam_root, tmp_path / "conv", 200, spec)
    parts = _parts(tmp_path / "conv", m)
    counted = sum(tokens(t["text"]) for p in parts for s in p["sessions"] for t in s["turns"])
    last = parts[-1]["sessions"][-1]
    assert counted == m.tokens >= 200 and counted - sum(tokens(t["text"]) for t in last["turns"]) < 200
    assert sum(p.messages for p in m.parts) == sum(len(s["turns"]) for p in parts for s in p["sessions"])


def test_reused_when_long_enough_regenerated_identically_when_longer(beam_root: Path, tmp_path: Path) -> None:
    spec = Spec(tuple(chat_names(beam_root)), session_messages=2)
    out = tmp_path / "conv"
    small = generate(beam_root, out, 300, spec)
    before = _parts(out, small)
    stamp = (out / "manifest.json").stat().st_mtime_ns
    assert generate(beam_root, out, 250, spec).tokens == small.tokens
    assert (out / "manifest.json").stat().st_mtime_ns == stamp  # reused, not rewritten
    big = generate(beam_root, out, 3000, spec)
    after = _parts(out, big)
    assert big.tokens >= 3000 and len(big.parts) > len(small.parts)
    for old, new in zip(before, after, strict=False):  # the smaller conversation is a prefix of the larger
        assert new["sessions"][:len(old["sessions"])] == old["sessions"]
    other = Spec(spec.chats, session_messages=4)
    assert other.source_id != spec.source_id  # another layout is another source: stores never mix them


def test_parts_read_by_the_products_loader(beam_root: Path, tmp_path: Path) -> None:
    spec = Spec(tuple(chat_names(beam_root)), session_messages=2)
    m = generate(beam_root, tmp_path / "conv", 2000, spec)
    conv, _ = load_conversation(tmp_path / "conv" / m.parts[0].file, "auto")
    raw = _parts(tmp_path / "conv", m)[0]
    assert conv.source_id == spec.source_id and conv.speakers == ("User", "Assistant")
    assert [s.session_key for s in conv.sessions] == [s["id"] for s in raw["sessions"]]
    assert [t.turn_id for s in conv.sessions for t in s.turns] == [t["id"] for s in raw["sessions"]
                                                                   for t in s["turns"]]
