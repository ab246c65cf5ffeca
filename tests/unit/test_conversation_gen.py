"""The long-conversation generator (bench/conversation_gen.py): order, dates, sessions, renaming, sizes, reuse.

Why: `python -m bench.conversation` measures the product at 10^5–10^7 tokens of ONE conversation built by this
generator and resumes its ingestion by session id; a generator that reordered, re-dated backwards, changed an id
between runs or overshot a size would make every figure of that benchmark wrong without failing. So would one
whose messages name other days than their sessions (version 1 moved the sessions by days and left the dates in
the text: a later chat's temporal questions mixed the two); the re-dating tests read the generated turns with the
product's own date finder. The chats here are small synthetic ones in BEAM's layout (the real set is
../shared/data/beam), written into the test's folder.
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bench.conversation_gen import (
    Manifest,
    Spec,
    chat_names,
    date_years,
    generate,
    renames,
    sessions_of,
    shift_date,
    shift_question,
    shift_text,
    tokens,
    year_shift,
)
from m3graph.dates import find_times
from m3graph.devkit.eval.beam import Batch, Message, Question, load_chat
from m3graph.ingest.chat.formats import load_conversation

SAY = ("We deploy Gizmoflow on port {n} with Postgres. Then gizmo stuff. Here is the plan for March. "
       "here we go ->-> 1,{n}")


def _chat(root: Path, name: str, anchors: list[str], turns_per_batch: int, say: str = SAY) -> None:
    batches, mid = [], 0
    for b, anchor in enumerate(anchors, start=1):
        turns = []
        for t in range(turns_per_batch):
            user = {"role": "user", "id": mid, "content": say.format(n=mid), "question_type": "main_question"}
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
    spec = Spec(tuple(chat_names(beam_root)), session_messages=2, gap_days=7, unique=0)  # 0: every chat copied
    out = tmp_path / "conv"
    m = generate(beam_root, out, 1500, spec)
    assert [(p.chat, p.copy) for p in m.parts][:4] == [("500K-1", 0), ("500K-2", 0), ("500K-10", 0), ("500K-1", 1)]
    parts = _parts(out, m)
    starts = [datetime.fromisoformat(s["started_at"]) for p in parts for s in p["sessions"]]
    assert starts == sorted(starts) and len(set(starts)) == len(starts)  # time runs forward, no two alike
    assert starts[0] == datetime.fromisoformat("2024-01-05T09:00:00+00:00")  # the first chat keeps its dates
    second = datetime.fromisoformat(parts[1]["sessions"][0]["started_at"])
    last_of_first = datetime.fromisoformat(parts[0]["sessions"][-1]["started_at"])
    # the next chat (dated March 2023) moves by the fewest whole 4-year steps that start it gap_days or more later
    assert m.parts[1].shift_years == 4 and second == datetime.fromisoformat("2027-03-01T09:00:00+00:00")
    assert second - last_of_first >= timedelta(days=7) > shift_date(second, -4) - last_of_first
    assert [p.shift_years for p in m.parts][:4] == [0, 4, 8, 8]  # 2024, 2027, 2030, 2032: forward, leap years kept
    first_turns = [t for s in parts[0]["sessions"] for t in s["turns"]]
    assert first_turns[0]["id"] == "500K-1/c0/m0" and parts[0]["sessions"][0]["id"] == "500K-1/c0/b1/s0"
    assert first_turns[0]["text"] == ("We deploy Gizmoflow on port 0 with Postgres. Then gizmo stuff. Here is the "
                                      "plan for March. here we go")  # the generation's marker stripped
    copy = next(p for p, meta in zip(parts, m.parts, strict=True) if meta.copy == 1)
    text = copy["sessions"][0]["turns"][0]["text"]
    assert "Postgres2" in text and "Gizmoflow2" in text  # names: renamed in the copy
    assert "March" in text and "Here is" in text and "gizmo stuff" in text  # months, words also lower-cased: kept
    assert all(p["source_id"] == spec.source_id for p in parts)


def test_unique_chats_are_never_copied(beam_root: Path, tmp_path: Path) -> None:
    spec = Spec(tuple(chat_names(beam_root)), session_messages=2, unique=2)
    m = generate(beam_root, tmp_path / "conv", 2500, spec)
    order = [(p.chat, p.copy) for p in m.parts]
    assert order[:5] == [("500K-1", 0), ("500K-2", 0), ("500K-10", 0), ("500K-10", 1), ("500K-10", 2)]
    assert {c for c, k in order if k} == {"500K-10"} and m.tokens >= 2500
    assert spec.source_id != Spec(spec.chats, session_messages=2, unique=1).source_id  # another conversation
    assert Manifest.read(tmp_path / "conv" / "manifest.json") == m  # read back whole, `unique` included
    with pytest.raises(SystemExit, match="never copied"):  # nothing left to copy: said, not looped forever
        generate(beam_root, tmp_path / "all", 2500, Spec(spec.chats, session_messages=2, unique=3))


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


# A chat whose text names days with and without a year, and numbers that are not years; its dates cross 29
# February 2024, so a shift into a year of another leap status would change the spans.
DATED = ("Deadline February 15, 2024 for {n}, review 2024-02-28, start by March 15, sprint March 1-15, 2024. "
         "The RTX 2060 box uses maxconn 2000 and waits 2000 ms; datetime(2024, 3, 1) in code.")


@pytest.fixture
def dated_root(tmp_path: Path) -> Path:
    root = tmp_path / "beam"
    _chat(root, "500K-1", ["January-05-2024", "April-20-2024"], 1)
    _chat(root, "500K-2", ["January-10-2024", "March-01-2024"], 3, DATED)
    return root


def _days_named(text: str, said: date) -> list[tuple[str, int]]:
    """What the product's date finder reads in a turn: each expression and its first day, in days from `said`."""
    return [(t.text, (t.first - said).days) for t in find_times(text, said)]


def test_a_messages_dates_move_with_its_session(dated_root: Path, tmp_path: Path) -> None:
    spec = Spec(tuple(chat_names(dated_root)), unique=0)  # a session per batch; every chat copied
    m = generate(dated_root, tmp_path / "conv", 10_000, spec)
    assert [(p.chat, p.copy, p.shift_years) for p in m.parts[:2]] == [("500K-1", 0, 0), ("500K-2", 0, 4)]
    original = load_chat(dated_root / "500K-2")
    sessions = _parts(tmp_path / "conv", m)[1]["sessions"]
    for batch, session in zip(original.batches, sessions, strict=True):
        moved = datetime.fromisoformat(session["started_at"])
        assert moved.date() == date(batch.when.year + 4, batch.when.month, batch.when.day)
        before, after = batch.messages[0].text, session["turns"][0]["text"]
        read_before = _days_named(before, batch.when.date())
        assert len(read_before) >= 4
        # every day named, with or without a year, lies as many days from its session as before the move
        assert _days_named(after, moved.date()) == [(t.replace("2024", "2028"), d) for t, d in read_before]
    text = sessions[0]["turns"][0]["text"]
    assert "February 15, 2028" in text and "review 2028-02-28" in text and "March 1-15, 2028" in text
    assert "start by March 15," in text and "datetime(2028, 3, 1)" in text  # a year-less date stays as written
    assert "RTX 2060" in text and "maxconn 2000" in text and "2000 ms" in text  # numbers that are not years stay
    i, copy = next((i, p) for i, p in enumerate(m.parts) if (p.chat, p.copy) == ("500K-2", 1))  # renamed, moved on
    assert copy.shift_years == 12 and copy.renamed
    assert "Deadline2 February 15, 2036 for" in _parts(tmp_path / "conv", m)[i]["sessions"][0]["turns"][0]["text"]
    again = generate(dated_root, tmp_path / "again", 10_000, spec)  # stable: the same spec gives the same files
    assert [(tmp_path / "again" / p.file).read_bytes() for p in again.parts] == [
        (tmp_path / "conv" / p.file).read_bytes() for p in m.parts]


def test_spans_inside_a_chat_survive_the_move() -> None:
    first, later = datetime(2024, 1, 10, tzinfo=UTC), datetime(2024, 3, 1, tzinfo=UTC)  # 29 February between
    n = year_shift(first, {2024}, datetime(2024, 6, 1, tzinfo=UTC))
    assert n == 4 and shift_date(later, n) - shift_date(first, n) == later - first == timedelta(days=51)
    assert year_shift(first, {2024}, None) == 0  # the first chat keeps its dates
    # 2100 is not a leap year: a 2024 chat that must start after 2096 goes to 2104, not 2100
    assert year_shift(first, {2024}, datetime(2096, 6, 1, tzinfo=UTC)) == 80
    assert year_shift(datetime(2023, 3, 1, tzinfo=UTC), {2023}, datetime(2096, 6, 1, tzinfo=UTC)) == 76  # 2099
    assert shift_text("a leap day, February 29, 2024", 80) == "a leap day, February 29, 2104"


def test_years_move_only_in_date_contexts() -> None:
    moved = ["February 15, 2024", "15 Feb 2025", "March 2024", "April.2023", "March 1-15, 2024", "2024-02-15",
             "dayjs('2024-02-22T17:00')", "2023/03/16", "expires on 02/15/2025", "datetime(2024, 3, 1)",
             "Q3 2024", "2024 Q3", "summer of 2024", "as of 2024", "since 2019", "in 2010."]
    for text in moved:
        assert len(date_years(text)) == 1, text
        year = text[slice(*date_years(text)[0])]
        assert shift_text(text, 4) == text.replace(year, str(int(year) + 4)), text
    kept = ['"Version": "2012-10-17"', "lambda:path/2015-03-31/function", "Comet C/2019 Q4", "RTX 2060",
            "maxconn 2000", "in 2000 ms", "Amazon Linux 2018.03", "CVE-2023-12345", "ecmaVersion: 2021",
            "calculus-fall-2010/", "metrics_y2024", "a batch of 2048"]
    for text in kept:
        assert date_years(text) == [] and shift_text(text, 4) == text, text


def test_a_gold_with_a_year_moves_with_its_chat() -> None:
    q = Question("500K-5/knowledge_update/0", "knowledge_update", "What is the deadline for the RTX 2060 demo?",
                 "April 5, 2024", ("LLM response should mention: April 5, 2024",), (4,),
                 "LLM might recall the original April 1, 2024 deadline instead of the adjusted April 5, 2024")
    moved = shift_question(q, 8)
    assert moved.question == q.question  # "RTX 2060" is no year
    assert moved.gold == "April 5, 2032" and moved.rubric == ("LLM response should mention: April 5, 2032",)
    assert moved.confusion == ("LLM might recall the original April 1, 2032 deadline instead of the adjusted "
                               "April 5, 2032")
    assert (moved.id, moved.category, moved.cites) == (q.id, q.category, q.cites)
    assert shift_question(q, 0) is q
