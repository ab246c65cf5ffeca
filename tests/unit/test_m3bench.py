"""The M3-Bench loader against the released annotations: the published statistics must come out exactly.

The numbers are those of the reference notes (../shared/docs/m3-agent-reference.md §8.3). The data directory is
required: a missing ../shared/data/m3bench fails these tests instead of skipping them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from m3graph.cli.evaluate import evaluate
from m3graph.devkit.eval.m3bench import (
    CANONICAL_TYPES,
    BenchSplit,
    M3BenchFormatError,
    default_data_dir,
    expected_before_clip,
    filter_questions,
    format_stats,
    load_m3bench,
    load_split,
    normalize_type,
    parse_timestamp,
    type_from_user,
)
from m3graph.settings import Settings

ME, PU, CM, GK, MH = CANONICAL_TYPES


@pytest.fixture(scope="module")
def data_dir() -> Path:
    found = default_data_dir()
    assert found is not None, "the M3-Bench annotations (../shared/data/m3bench/{robot,web}.json) are required"
    return found


@pytest.fixture(scope="module")
def robot(data_dir: Path) -> BenchSplit:
    return load_split("robot", data_dir)


@pytest.fixture(scope="module")
def web(data_dir: Path) -> BenchSplit:
    return load_split("web", data_dir)


# ---------------------------------------------------------------------------------------------- published numbers


def test_robot_statistics_are_the_published_ones(robot: BenchSplit) -> None:
    s = robot.stats()
    assert (s.videos, s.questions) == (100, 1276)
    assert s.type_counts == {ME: 842, PU: 548, CM: 476, GK: 327, MH: 85}
    assert s.labels_per_question == {1: 548, 2: 475, 3: 233, 4: 19, 5: 1}
    q = s.questions_per_video
    assert (q.min, q.median, round(q.mean, 2), q.max) == (9, 13, 12.76, 20)
    assert (s.question_words.median, round(s.question_words.mean, 1), s.question_words.max) == (7, 7.9, 25)
    assert (s.answer_words.median, round(s.answer_words.mean, 1), s.answer_words.max) == (2, 3.5, 29)
    # The file still says Multi-Detail; it is counted as Multi-Evidence.
    assert s.raw_type_counts["Multi-Detail Reasoning"] == 842
    assert "Multi-Evidence Reasoning" not in s.raw_type_counts


def test_web_statistics_are_the_published_ones(web: BenchSplit) -> None:
    s = web.stats()
    assert (s.videos, s.questions) == (920, 3214)
    assert s.type_counts == {ME: 968, PU: 1301, CM: 424, GK: 972, MH: 457}
    assert s.labels_per_question == {1: 2354, 2: 813, 3: 46, 4: 1, 5: 0}
    q = s.questions_per_video
    assert (q.min, q.median, round(q.mean, 2), q.max) == (1, 3, 3.49, 15)
    assert s.before_clip_checked == 0  # web questions have no timestamp: the whole video is memory
    assert all(v.video_url and v.video_url.startswith("https://www.youtube.com/watch?v=") for v in web.videos)
    assert all(q.before_clip is None and q.timestamp is None for q in web.questions)


def test_before_clip_rule_holds_for_every_robot_question(robot: BenchSplit) -> None:
    s = robot.stats()
    assert s.before_clip_checked == 1276
    assert robot.violations == ()
    for q in robot.questions:
        assert q.timestamp_s is not None and q.before_clip == q.timestamp_s // 30 - 1
    assert max(q.before_clip or 0 for q in robot.questions) == 114


def test_example_entries_are_read_verbatim(robot: BenchSplit, web: BenchSplit) -> None:
    by_id = {q.question_id: q for q in robot.questions + web.questions}
    q1 = by_id["living_room_06_Q01"]
    assert (q1.video, q1.question, q1.answer, q1.timestamp, q1.timestamp_s, q1.before_clip, q1.types) == (
        "living_room_06", "What are the drinks for the three people?", "Coffee.", "00:43", 43, 0, (CM,))
    assert by_id["living_room_06_Q04"].before_clip == 31
    hobley = by_id["FWGeUSoywDk_Q2"]
    assert hobley.split == "web" and hobley.types == (PU, CM) and hobley.before_clip is None
    video = next(v for v in robot.videos if v.key == "living_room_06")
    assert video.mem_path == "data/memory_graphs/robot/living_room_06.pkl"


def test_unpadded_minutes_in_the_released_timestamps(robot: BenchSplit) -> None:
    q = next(q for q in robot.questions if q.question_id == "living_room_17_Q01")
    assert (q.timestamp, q.timestamp_s, q.before_clip) == ("8:16", 496, 15)


def test_all_loads_both_splits_and_stats_table(data_dir: Path) -> None:
    splits = load_m3bench("all", data_dir)
    assert [s.name for s in splits] == ["robot", "web"]
    table = format_stats([s.stats() for s in splits])
    assert "| Questions | 1,276 | 3,214 |" in table
    assert "| Labels per question, 1/2/3/4/5 | 548 / 475 / 233 / 19 / 1 | 2354 / 813 / 46 / 1 / 0 |" in table
    assert "1276 of 1276" in table


def test_stats_only_cli_needs_no_database(data_dir: Path) -> None:
    result = CliRunner().invoke(evaluate, ["m3bench", "--stats-only", "--data", str(data_dir)], obj=Settings())
    assert result.exit_code == 0, result.output
    assert "| Videos | 100 | 920 |" in result.output
    assert "| Multi-Evidence Reasoning (ME) | 842 (66.0%) | 968 (30.1%) |" in result.output


def test_filters(robot: BenchSplit) -> None:
    mh = filter_questions(robot.questions, types=["MH"])
    assert len(mh) == 85 and all(MH in q.types for q in mh)
    assert len(filter_questions(robot.questions, types=["Multi-Detail Reasoning"])) == 842
    one = filter_questions(robot.questions, videos=["living_room_06"])
    assert {q.video for q in one} == {"living_room_06"} and len(one) == len(robot.videos[0].questions)
    assert len(filter_questions(robot.questions, limit=7)) == 7


# ---------------------------------------------------------------------------------------------- normalization


def test_type_normalization() -> None:
    assert normalize_type("Multi-Detail Reasoning") == "Multi-Evidence Reasoning"
    assert normalize_type("Human Understanding") == "Person Understanding"
    assert normalize_type(" Cross-Modal Reasoning ") == "Cross-Modal Reasoning"
    with pytest.raises(ValueError, match="unknown question type 'Multi-Detial Reasoning'"):
        normalize_type("Multi-Detial Reasoning")
    assert type_from_user("gk") == GK
    assert type_from_user("multi-detail reasoning") == ME


@pytest.mark.parametrize(("text", "seconds"), [
    ("00:43", 43), ("8:16", 496), ("59:59", 3599), ("60:00", 3600), ("75:10", 4510), ("123:05", 7385),
    ("1:02:03", 3723), (" 07:33 ", 453),
])
def test_timestamps(text: str, seconds: int) -> None:
    assert parse_timestamp(text) == seconds


@pytest.mark.parametrize("text", ["12:60", "12", "ab:cd", "1:75:00", "", "12:5", "-1:00"])
def test_bad_timestamps(text: str) -> None:
    with pytest.raises(ValueError, match="timestamp"):
        parse_timestamp(text)


def test_before_clip_rule() -> None:
    assert expected_before_clip(43) == 0
    assert expected_before_clip(29) == -1  # asked before the first clip is complete: no memory yet
    assert expected_before_clip(60) == 1
    assert expected_before_clip(75 * 60 + 10) == 149


# ---------------------------------------------------------------------------------------------- malformed files


def _qa(**overrides: Any) -> dict[str, Any]:
    qa = {"question": "Where is the mug?", "answer": "On the desk.", "question_id": "kitchen_01_Q01",
          "reasoning": "", "timestamp": "01:10", "type": ["Multi-Detail Reasoning"], "before_clip": 1}
    qa.update(overrides)
    return {k: v for k, v in qa.items() if v is not None}


def _write(tmp_path: Path, data: Any, name: str = "robot") -> Path:
    path = tmp_path / f"{name}.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def _video(*qas: dict[str, Any]) -> dict[str, Any]:
    return {"kitchen_01": {"video_path": "v.mp4", "mem_path": "m.pkl", "qa_list": list(qas)}}


def test_a_valid_temp_file_loads(tmp_path: Path) -> None:
    _write(tmp_path, _video(_qa(), _qa(question_id="kitchen_01_Q02", timestamp="75:10", before_clip=149,
                                      type=["Human Understanding", "Person Understanding"])))
    split = load_split("robot", tmp_path)
    q1, q2 = split.questions
    assert q1.types == (ME,) and q1.raw_types == ("Multi-Detail Reasoning",)
    assert q2.timestamp_s == 4510 and q2.types == (PU,)  # the alias and the label collapse to one
    assert split.violations == ()


@pytest.mark.parametrize(("qa", "problem"), [
    (_qa(answer=None), "question 'kitchen_01_Q01': field 'answer' must be a string"),
    (_qa(answer="  "), "question 'kitchen_01_Q01': field 'answer' is empty"),
    (_qa(type=["Spatial Reasoning"]), "question 'kitchen_01_Q01': unknown question type 'Spatial Reasoning'"),
    (_qa(type=[]), "question 'kitchen_01_Q01': field 'type' must be a non-empty list"),
    (_qa(type="Multi-Hop Reasoning"), "field 'type' must be a non-empty list"),
    (_qa(timestamp="1:2:3"), "question 'kitchen_01_Q01': timestamp '1:2:3' is not MM:SS"),
    (_qa(before_clip=None), "question 'kitchen_01_Q01': robot questions need 'timestamp' and 'before_clip'"),
    (_qa(before_clip="1"), "field 'before_clip' must be an integer"),
    (_qa(question_id=None), "video 'kitchen_01', question #1: field 'question_id' must be a string"),
])
def test_malformed_question_names_file_and_question(tmp_path: Path, qa: dict[str, Any], problem: str) -> None:
    path = _write(tmp_path, _video(qa))
    with pytest.raises(M3BenchFormatError) as info:
        load_split("robot", tmp_path)
    assert str(path) in str(info.value)
    assert problem in str(info.value)


def test_malformed_file_structure(tmp_path: Path) -> None:
    path = _write(tmp_path, "{not json")
    with pytest.raises(M3BenchFormatError, match=f"{path}: not valid JSON"):
        load_split("robot", tmp_path)
    _write(tmp_path, [1, 2])
    with pytest.raises(M3BenchFormatError, match="top level must be an object"):
        load_split("robot", tmp_path)
    _write(tmp_path, {"kitchen_01": {"qa_list": {"a": 1}}})
    with pytest.raises(M3BenchFormatError, match="video 'kitchen_01': 'qa_list' must be a list"):
        load_split("robot", tmp_path)
    _write(tmp_path, _video(_qa(), _qa()))
    with pytest.raises(M3BenchFormatError, match="question 'kitchen_01_Q01': duplicate question_id"):
        load_split("robot", tmp_path)
    with pytest.raises(M3BenchFormatError, match="web.json: no such file"):
        load_split("web", tmp_path)
    with pytest.raises(M3BenchFormatError, match="does not exist"):
        load_split("robot", tmp_path / "nowhere")
    with pytest.raises(M3BenchFormatError, match="unknown M3-Bench split 'kitchen'"):
        load_split("kitchen", tmp_path)


def test_before_clip_violations_are_reported_not_raised(tmp_path: Path) -> None:
    _write(tmp_path, _video(_qa(timestamp="02:00", before_clip=2)))
    split = load_split("robot", tmp_path)
    (v,) = split.violations
    assert (v.question_id, v.timestamp, v.before_clip, v.expected) == ("kitchen_01_Q01", "02:00", 2, 3)
    assert "0 of 1" in format_stats([split.stats()])
    assert "kitchen_01_Q01 at 02:00 has before_clip 2, expected 3" in format_stats([split.stats()])
