"""chat-qa's miss split: evidence turns found among the lines the controller showed, on hand-built records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from m3graph.cli import main
from m3graph.devkit.eval.chat_misses import ConversationTurns, analyse, evidence_ids, load_data, shown_text
from m3graph.reasoning.control import LINE_CHARS
from m3graph.settings import Settings

LONG = ("Yesterday I walked the whole coastal path from the old lighthouse to the harbour, " * 5).strip()
CONVERSATION: dict[str, Any] = {
    "speaker_a": "Ana", "speaker_b": "Ben",
    "session_1_date_time": "10:00 am on 3 March, 2023",
    "session_1": [
        {"speaker": "Ana", "dia_id": "D1:1", "text": "I went to a pottery class yesterday."},
        {"speaker": "Ben", "dia_id": "D1:2", "text": "Nice, what did you make?"},
        {"speaker": "Ana", "dia_id": "D1:3", "text": "A blue vase.", "blip_caption": "a photo of a vase"},
    ],
    "session_2_date_time": "6:30 pm on 20 April, 2023",
    "session_2": [
        {"speaker": "Ben", "dia_id": "D2:1", "text": "Nice, what did you make?"},  # the same words as D1:2
        {"speaker": "Ana", "dia_id": "D2:2", "text": LONG},
        {"speaker": "Ben", "dia_id": "D2:3", "text": "My dog is called Pepper."},
    ],
    "qa": [
        {"question": "What did Ana make?", "answer": "a blue vase", "evidence": ["D1:3"], "category": 4},
        {"question": "When and where did Ana walk?", "answer": "19 April 2023, coastal path",
         "evidence": ["D1:1; D2:2"], "category": 1},
        {"question": "What is Ben's dog called?", "answer": "Pepper", "evidence": ["D2:3"], "category": 4},
        {"question": "What did Ana make in class?", "answer": "vase", "evidence": ["D1:3"], "category": 4},
        {"question": "What is Ana's cat called?", "evidence": ["D2:3"], "category": 5,
         "adversarial_answer": "Pepper"},
    ],
}
# What the controller shows (memory_tools: tags as <character_K>, resolved dates inserted; control: lines cut).
POTTERY = "Ana <character_3>: I went to a pottery class yesterday [= 2 March 2023]."
VASE = "Ana <character_3>: A blue vase. [shares an image: a photo of a vase]"
WHAT = "Ben <character_4>: Nice, what did you make?"
_long = f"Ana <character_3>: {LONG}".replace("Yesterday", "Yesterday [= 19 April 2023]", 1)
WALK = _long[:LINE_CHARS - 1] + "…"
DOG = "Ben <character_4>: My dog is called Pepper."


def _write(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    (data / "conv-a.json").write_text(json.dumps(CONVERSATION), encoding="utf-8")
    return data


def _record(qid: str, answer: str, gt: str, category: str, knowledge: list[dict[str, list[str]]]) -> dict[str, Any]:
    tags = [category] + (["unanswerable"] if category == "adversarial" else [])
    rounds = [{"index": i, "action": "search_node", "result": {"clips": [f"conv-a#{label.split('_')[-1]}"
                                                                            for label in k]}, "knowledge": k}
              for i, k in enumerate(knowledge)]
    return {"id": qid, "source": "conv-a", "videos": ["conv-a"], "question": "?", "gt": gt, "answer": answer,
            "outcome": "answered", "verdict": "no", "types": [category], "tags": tags, "rounds": rounds,
            "tokens": {"answerer": {"prompt": 1, "completion": 1}, "judge": {"prompt": 1, "completion": 1}},
            "latency_s": {"answerer": 1.0, "judge": 0.1}, "judge": {"model": "j"}, "error": None}


RECORDS = [
    # evidence shown, answer wrong: a reading miss
    _record("conv-a/q0", "a pottery class", "a blue vase", "single-hop", [{"CLIP_0": [POTTERY, VASE]}]),
    # one of the two sessions found (the cut line of D2:2 only): a retrieval miss, any but not all
    _record("conv-a/q1", "the harbour", "19 April 2023, coastal path", "multi-hop", [{"CLIP_1": [WALK]}]),
    # abstained although the evidence was shown (in round 2): a reading miss and a false abstention
    _record("conv-a/q2", "Not in memory: nothing remembered answers this question.", "Pepper", "single-hop",
            [{"CLIP_0": [WHAT]}, {"CLIP_1": [DOG]}]),
    # right; D1:3 shown only under the wrong clip label does not count, but the answer is right anyway
    _record("conv-a/q3", "A blue vase", "vase", "single-hop", [{"CLIP_1": [VASE]}]),
    # an unanswerable question answered
    _record("conv-a/q4", "Pepper", "Not mentioned in the conversation.", "adversarial", [{"CLIP_1": [DOG]}]),
]


def test_evidence_ids_are_found_in_malformed_lists() -> None:
    assert evidence_ids(["D8:6; D9:17", "D1:3", "D8:6"]) == ("D8:6", "D9:17", "D1:3")
    assert evidence_ids(["", "no id"]) == ()


def test_shown_lines_map_back_to_the_turns_of_their_session(tmp_path: Path) -> None:
    turns = ConversationTurns.load(_write(tmp_path) / "conv-a.json")
    assert turns.clip_of == {"D1:1": 0, "D1:2": 0, "D1:3": 0, "D2:1": 1, "D2:2": 1, "D2:3": 1}
    assert shown_text(POTTERY) == ("Ana: I went to a pottery class yesterday.", False)
    assert turns.turns_in(POTTERY, 0) == {"D1:1"}
    assert turns.turns_in(VASE, 0) == {"D1:3"}
    assert turns.turns_in(WALK, 1) == {"D2:2"}  # cut, and the cut ran past a date note
    assert turns.turns_in(WHAT, 0) == {"D1:2"} and turns.turns_in(WHAT, 1) == {"D2:1"}  # same words, by session
    assert turns.turns_in(VASE, 1) == set()  # a line is a turn of its own session only
    assert turns.turns_in("Ana <character_3>: I went to a pottery", 0) == set()  # a prefix without "…" is no turn
    assert turns.shown({"other/CLIP_0": [VASE], "conv-a/CLIP_0": [POTTERY]}) == {"D1:1"}


def test_wrong_answers_split_into_retrieval_and_reading_misses(tmp_path: Path) -> None:
    questions, turns = load_data([_write(tmp_path) / "conv-a.json"])
    oracle = {r["id"]: {**r, "answer": a} for r, a in zip(RECORDS, ["blue vase", "coastal path", "Pepper",
                                                                     "vase", "Not mentioned"], strict=True)}
    report = analyse(RECORDS + [{"id": "elsewhere/q0"}], questions, turns, oracle)
    kinds = {q.id: q.kind for q in report.questions}
    assert kinds == {"conv-a/q0": "reading miss", "conv-a/q1": "retrieval miss", "conv-a/q2": "reading miss",
                     "conv-a/q3": "correct", "conv-a/q4": "answered"}
    q1 = next(q for q in report.questions if q.id == "conv-a/q1")
    assert q1.evidence == ("D1:1", "D2:2") and q1.shown == ("D2:2",) and q1.any_shown and not q1.all_shown
    assert (q1.sessions, q1.sessions_found) == (2, 1)
    single, total = report.rows["single-hop"], report.rows["total"]
    assert (single.n, single.correct, single.all_shown, single.reading_misses, single.retrieval_misses) == (3, 1, 2,
                                                                                                         2, 0)
    assert (single.false_abstentions, single.false_abstentions_shown) == (1, 1)
    assert (total.retrieval_misses, total.reading_misses, total.answered_unanswerable) == (1, 2, 1)
    assert (total.turns, total.turns_shown) == (6, 4)  # q3's D1:3 under the wrong label is not counted
    assert (total.sessions, total.sessions_found) == (6, 4)  # q1 found one of its two sessions, q3 none
    # oracle: q1's "coastal path" misses the date, every other oracle answer matches
    assert (total.oracle_correct, total.oracle_n) == (4, 5)
    assert (total.retrieval_misses_oracle_right, total.reading_misses_oracle_right) == (0, 2)
    assert report.not_in_data == ["elsewhere/q0"]
    table = report.format()
    assert "single-hop" in table and "oracle" in table and "answered 1" in table


def test_report_only_reads_an_existing_results_file(tmp_path: Path) -> None:
    data = _write(tmp_path)
    out, oracle = tmp_path / "results.jsonl", tmp_path / "oracle.jsonl"
    out.write_text("".join(json.dumps(r) + "\n" for r in RECORDS), encoding="utf-8")
    oracle.write_text(json.dumps({**RECORDS[0], "answer": "a blue vase"}) + "\n", encoding="utf-8")
    before = out.read_bytes()
    args = ["eval", "chat-qa", "--report-only", "--data", str(data), "--out", str(out), "--oracle-results",
            str(oracle)]
    run = CliRunner().invoke(main, args, obj=Settings(), catch_exceptions=False)
    assert run.exit_code == 0, run.output
    assert "answer match: 20.0% (1/5)" in run.output
    row = [line for line in run.output.splitlines() if line.strip().startswith("single-hop")][-1]  # the miss table
    assert row.split() == ["single-hop", "3", "1/3", "2/3", "2/3", "2/3", "0", "2", "1", "(1", "shown)", "1/1"]
    misses = json.loads((tmp_path / "results.jsonl.misses.json").read_text())
    assert misses["rows"]["multi-hop"]["retrieval_misses"] == 1
    assert out.read_bytes() == before  # reporting never rewrites the results
    missing = CliRunner().invoke(main, ["eval", "chat-qa", "--report-only", "--data", str(data), "--out",
                                        str(tmp_path / "none.jsonl")], obj=Settings())
    assert missing.exit_code != 0 and "no results file" in missing.output
