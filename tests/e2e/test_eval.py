"""The judge, the runner and the generated-media question set.

Verdict parsing and the runner's bookkeeping are checked with deterministic stand-ins for the *language model*
and the *answerer* (both are protocols; the doubles below implement them and record every call). The graph side
(which videos are in memory) runs against the session's real Neo4j, and one test asks the real offline judge model.
"""

from __future__ import annotations

import copy
import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from m3graph.cli.evaluate import evaluate
from m3graph.devkit.eval.chat_qa import NOT_MENTIONED, load_questions, stratified_sample
from m3graph.devkit.eval.judge import (
    VERDICT_SCHEMA,
    EntailmentJudge,
    answer_match,
    keyword_verdict,
    parse_verdict,
    strip_thinking,
    token_f1,
)
from m3graph.devkit.eval.m3bench import CANONICAL_TYPES
from m3graph.devkit.eval.runner import (
    EvalItem,
    ResultsFile,
    evaluate_item,
    quantile,
    run_eval,
    select_covered,
    summarize,
    video_coverage,
    write_report,
)
from m3graph.devkit.eval.testmedia_qa import build_questions, read_fact
from m3graph.devkit.testmedia import Line, Manifest, build_test_media
from m3graph.errors import GraphDBError, InvalidInputError, LLMError, LLMUnavailableError, NotFoundError
from m3graph.graphdb.store import MemoryGraph
from m3graph.localserver.server import ServerStatus
from m3graph.reasoning.llm.base import ChatResult, Message, ToolSpec, Usage
from m3graph.settings import Settings
from tests.helpers.graph import add_clip

ME, PU, CM, GK, MH = CANONICAL_TYPES
REPO = Path(__file__).resolve().parents[2]

# ---------------------------------------------------------------------------------------------- doubles


def reference_says(prompt: str) -> tuple[str, str]:
    """(ground truth, agent answer) as the judge prompt lays them out."""
    gt = re.search(r"^Reference answer: (.*)$", prompt, re.M)
    pred = re.search(r"^Agent's answer: (.*)$", prompt, re.M)
    assert gt and pred, prompt
    return gt.group(1), pred.group(1)


def substring_rule(prompt: str) -> str:
    gt, pred = reference_says(prompt)
    return "Yes" if gt.lower().strip(" .") in pred.lower() else "No"


@dataclass
class JudgeModelDouble:
    """Deterministic stand-in for the judge's language model: scripted replies first, then a rule."""

    replies: list[str | Exception] = field(default_factory=list)
    rule: Callable[[str], str] = substring_rule
    supports_json_schema: bool = False
    name: str = "judge-double"
    supports_images: bool = False
    supports_video: bool = False
    supports_tools: bool = False
    calls: list[dict[str, Any]] = field(default_factory=list)

    def chat(self, messages: Sequence[Message], *, max_tokens: int | None = None, temperature: float | None = None,
             json_schema: dict[str, Any] | None = None, tools: Sequence[ToolSpec] = (),
             stop: Sequence[str] = ()) -> ChatResult:
        self.calls.append({"messages": list(messages), "max_tokens": max_tokens, "temperature": temperature,
                           "json_schema": json_schema})
        reply = self.replies.pop(0) if self.replies else self.rule(messages[-1].text)
        if isinstance(reply, Exception):
            raise reply
        return ChatResult(text=reply, usage=Usage(40, 3), latency_s=0.25, finish_reason="stop", model=self.name)

    def close(self) -> None:
        pass


@dataclass
class Trace:
    answer: str | None
    outcome: str
    rounds: list[dict[str, Any]]
    usage: Usage
    latency_s: float

    def to_dict(self) -> dict[str, Any]:
        return {"answer": self.answer, "outcome": self.outcome, "rounds": self.rounds}


class AnswererDouble:
    """Answers from a table keyed by question; records every call (question, videos, before_clip)."""

    def __init__(self, answers: dict[str, str | None | Exception]) -> None:
        self.answers = answers
        self.calls: list[tuple[str, list[str] | None, int | None]] = []

    def answer(self, question: str, videos: Sequence[str] | None = None, before_clip: int | None = None) -> Trace:
        self.calls.append((question, list(videos) if videos is not None else None, before_clip))
        reply = self.answers[question]
        if isinstance(reply, Exception):
            raise reply
        rounds = [{"action": "search_clip", "query": question, "clips": ["CLIP_0"]}, {"action": "answer"}]
        return Trace(reply, "answered" if reply else "failed", rounds, Usage(1000, 50), 2.0)


# ---------------------------------------------------------------------------------------------- verdict parsing


@pytest.mark.parametrize(("reply", "verdict"), [
    ("Yes", "yes"), ("No", "no"), ("yes", "yes"), ("  NO \n", "no"), ("Yes.", "yes"), ("No!", "no"),
    ("**Yes**", "yes"), ("'No'", "no"), ('"Yes"', "yes"), ("“Yes”", "yes"),
    ("<think>The agent said mugs, the truth is cups: no.</think>\nYes", "yes"),
    ("<think>\nyes? no?\n</think>No.", "no"),
    ("the model reasoned here without an opening tag</think> Yes", "yes"),
    ('{"verdict": "Yes"}', "yes"), ('{"verdict":"No"}', "no"), ('```json\n{"verdict": "No"}\n```', "no"),
    # Everything below is what the reference's substring check gets wrong or reads as a verdict anyway.
    ("Yes, but no", None), ("Yes and no", None), ("No, yes", None), ("Yes.\nThe answer matches.", None),
    ("I cannot say yes", None), ("Output: Yes", None), ("Yess", None), ("Not", None), ("", None),
    ("<think>It is clearly yes", None), ("<think>yes</think>", None), ('{"verdict": "Maybe"}', None),
    ('{"verdict": "Yes", "why": "same"}', None), ('{"answer": "Yes"}', None), ("{not json}", None),
])
def test_verdict_is_an_exact_token(reply: str, verdict: str | None) -> None:
    assert parse_verdict(reply) == verdict


def test_strip_thinking() -> None:
    assert strip_thinking("<think>a</think>b<think>c</think>d") == "bd"
    assert strip_thinking("b<think>cut off while thinking") == "b"
    assert strip_thinking("<THINK>x</THINK>Yes") == "Yes"


# ---------------------------------------------------------------------------------------------- judge


def test_empty_prediction_is_no_without_a_call() -> None:
    model = JudgeModelDouble()
    judge = EntailmentJudge(model)
    for empty in (None, "", "  \n"):
        j = judge.judge("Q?", "Coffee.", empty)
        assert (j.verdict, j.attempts, j.correct) == ("no", 0, False)
    assert model.calls == []


def test_prompt_carries_question_truth_and_answer_in_the_entailment_direction() -> None:
    model = JudgeModelDouble(replies=["Yes"])
    j = EntailmentJudge(model, max_tokens=8).judge("What do they drink?", "Coffee.", "They all drink coffee.")
    assert (j.verdict, j.attempts, j.correct, j.usage, j.model) == ("yes", 1, True, Usage(40, 3), "judge-double")
    (call,) = model.calls
    system, user = call["messages"]
    assert system.role == "system" and "video" in system.text
    assert user.role == "user"
    assert "Question: What do they drink?" in user.text
    assert "Reference answer: Coffee." in user.text and "Agent's answer: They all drink coffee." in user.text
    assert "contain the fact in the reference answer" in user.text  # the agent's answer must entail the truth
    assert user.text.rstrip().endswith("Reply with one word: Yes or No.")
    assert (call["temperature"], call["max_tokens"], call["json_schema"]) == (0.0, 8, None)


def test_unreadable_reply_gets_one_firmer_retry() -> None:
    model = JudgeModelDouble(replies=["Yes, but no", "No"])
    j = EntailmentJudge(model).judge("Q?", "Coffee.", "Tea.")
    assert (j.verdict, j.attempts, j.replies) == ("no", 2, ("Yes, but no", "No"))
    assert j.usage == Usage(80, 6) and j.latency_s == pytest.approx(0.5)
    first, second = (c["messages"][-1].text for c in model.calls)
    assert "exactly one word" not in first and "exactly one word, Yes or No" in second


def test_two_unreadable_replies_are_invalid_and_scored_wrong() -> None:
    model = JudgeModelDouble(replies=["Probably yes.", "<think>hmm, yes</think>Yes, mostly"])
    j = EntailmentJudge(model).judge("Q?", "Coffee.", "Coffee, I think.")
    assert (j.verdict, j.correct, j.attempts) == ("invalid", False, 2)
    assert len(model.calls) == 2


def test_json_schema_where_the_backend_supports_it() -> None:
    # Default policy "retry": a plain word first, the schema-constrained object only on the firm retry.
    model = JudgeModelDouble(replies=["Certainly!", '{"verdict": "Yes"}'], supports_json_schema=True)
    j = EntailmentJudge(model, max_tokens=8).judge("Q?", "Coffee.", "Coffee.")
    assert (j.verdict, j.attempts) == ("yes", 2)
    first, second = model.calls
    assert first["json_schema"] is None and first["max_tokens"] == 8
    assert second["json_schema"] == VERDICT_SCHEMA and second["max_tokens"] >= 16
    assert VERDICT_SCHEMA["type"] == "object"
    assert VERDICT_SCHEMA["properties"]["verdict"]["enum"] == ["Yes", "No"]
    assert '{"verdict": "Yes"}' in second["messages"][-1].text

    always = JudgeModelDouble(replies=['{"verdict": "No"}'], supports_json_schema=True)
    assert EntailmentJudge(always, structured="always").judge("Q?", "Coffee.", "Tea.").verdict == "no"
    assert always.calls[0]["json_schema"] == VERDICT_SCHEMA

    unsupported = JudgeModelDouble(replies=["Nope", "No"], supports_json_schema=False)
    EntailmentJudge(unsupported, structured="always").judge("Q?", "Coffee.", "Tea.")
    assert [c["json_schema"] for c in unsupported.calls] == [None, None]

    with pytest.raises(ValueError, match="structured"):
        EntailmentJudge(model, structured="sometimes")  # type: ignore[arg-type]


def test_model_errors() -> None:
    refused = JudgeModelDouble(replies=[LLMError("context length exceeded")])
    j = EntailmentJudge(refused).judge("Q?", "Coffee.", "Coffee.")
    assert j.verdict == "invalid" and "context length exceeded" in (j.error or "")
    down = JudgeModelDouble(replies=[LLMUnavailableError("connection refused")])
    with pytest.raises(LLMUnavailableError):
        EntailmentJudge(down).judge("Q?", "Coffee.", "Coffee.")


def test_real_offline_judge_model(settings: Settings) -> None:
    """The configured judge (offline default: packaged Qwen2.5-Coder 0.5B via llama.cpp) on clear-cut cases."""
    from m3graph.devkit.eval.judge import make_judge

    judge = make_judge(settings)
    try:
        right = judge.judge("What are the drinks for the three people?", "Coffee.", "They are drinking coffee.")
        wrong = judge.judge("What are the drinks for the three people?", "Coffee.",
                            "They are drinking orange juice.")
    finally:
        judge.model.close()
    assert right.verdict == "yes", right
    assert wrong.verdict == "no", wrong
    assert right.usage.prompt_tokens > 0 and right.usage.completion_tokens > 0


# ---------------------------------------------------------------------------------------------- keyword judge


def test_keyword_judge() -> None:
    assert keyword_verdict("It is on the kitchen shelf.", [("kitchen",), ("shelf",)]) == "yes"
    assert keyword_verdict("It is in the kitchen.", [("kitchen",), ("shelf",)]) == "no"
    assert keyword_verdict("Two notebooks, both BLUE!", [("notebook",), ("blue",)]) == "yes"  # plural, case
    assert keyword_verdict("There were 2 people.", [("two", "2")]) == "yes"
    assert keyword_verdict("Yes, he was on screen.", [("yes", "on screen")], ("not",)) == "yes"
    assert keyword_verdict("He was not on screen.", [("yes", "on screen")], ("not",)) == "no"
    assert keyword_verdict("The shelves", [("shelf",)]) == "no"  # only -s/-es endings are folded
    assert keyword_verdict("bookshelf", [("shelf",)]) == "no"  # whole words only
    assert keyword_verdict("I don't know.", [], ("garden",)) == "yes"
    assert keyword_verdict("Near the garden.", [], ("garden",)) == "no"
    assert keyword_verdict("", []) == "no" and keyword_verdict(None, [("x",)]) == "no"


# ---------------------------------------------------------------------------------------------- runner


def _items() -> list[EvalItem]:
    return [
        EvalItem("q1", "What do they drink?", "Coffee.", (ME, PU), ("v1",), source="robot", before_clip=3),
        EvalItem("q2", "Who is Lily?", "The host.", (PU,), ("v1",), source="robot", before_clip=5),
        EvalItem("q3", "Where is the mug?", "On the desk.", (ME, CM), ("v2",), source="web"),
    ]


ANSWERS: dict[str, str | None | Exception] = {"What do they drink?": "They drink coffee.",
                                               "Who is Lily?": "A guest.",
                                               "Where is the mug?": "The mug is on the desk."}


def test_run_writes_jsonl_and_resumes(tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    items = _items()
    answerer, model = AnswererDouble(ANSWERS), JudgeModelDouble()
    first = run_eval(items[:2], answerer, EntailmentJudge(model), out)
    assert first.total.n == 2 and first.total.correct == 1
    assert [c[0] for c in answerer.calls] == ["What do they drink?", "Who is Lily?"]
    assert answerer.calls[0] == ("What do they drink?", ["v1"], 3)  # robot questions pass before_clip
    lines = out.read_text().splitlines()
    assert len(lines) == 2
    record = json.loads(lines[0])
    assert record["id"] == "q1" and record["gt"] == "Coffee." and record["answer"] == "They drink coffee."
    assert record["verdict"] == "yes" and record["correct"] is True and record["outcome"] == "answered"
    assert record["types"] == [ME, PU] and record["before_clip"] == 3 and record["videos"] == ["v1"]
    assert record["tokens"] == {"answerer": {"prompt": 1000, "completion": 50},
                                "judge": {"prompt": 40, "completion": 3}}
    assert record["latency_s"] == {"answerer": 2.0, "judge": 0.25}
    assert [r["action"] for r in record["rounds"]] == ["search_clip", "answer"]
    assert record["judge"]["model"] == "judge-double" and "keyword_verdict" not in record

    # A second run over the full set answers only the new question and reports over all three.
    answerer.calls.clear()
    report = run_eval(items, answerer, EntailmentJudge(model), out)
    assert [c[0] for c in answerer.calls] == ["Where is the mug?"]
    assert report.total.n == 3 and report.total.correct == 2
    assert len(out.read_text().splitlines()) == 3
    # A run over a subset reports over that subset only; the file keeps everything.
    answerer.calls.clear()
    assert run_eval(items[2:], answerer, EntailmentJudge(model), out).total.n == 1
    assert answerer.calls == []
    # --fresh starts over.
    again = run_eval(items, answerer, EntailmentJudge(model), out, fresh=True)
    assert len(answerer.calls) == 3 and again.total.correct == 2
    report_path = write_report(again, out)
    assert report_path.name == "results.jsonl.report.json"
    assert json.loads(report_path.read_text())["accuracy"] == round(2 / 3, 4)


def test_a_torn_last_line_is_dropped_and_redone(tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    items = _items()
    run_eval(items[:1], AnswererDouble(ANSWERS), EntailmentJudge(JudgeModelDouble()), out)
    with out.open("a") as fh:
        fh.write('{"id": "q2", "question": "Who is')  # the process died mid-write
    assert set(ResultsFile(out).load()) == {"q1"}
    answerer = AnswererDouble(ANSWERS)
    run_eval(items[:2], answerer, EntailmentJudge(JudgeModelDouble()), out)
    assert [c[0] for c in answerer.calls] == ["Who is Lily?"]
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == ["q1", "q2"]


def test_a_corrupt_line_in_the_middle_is_an_error(tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    out.write_text('{"id": "q1"}\nnot json\n{"id": "q3"}\n')
    with pytest.raises(InvalidInputError, match=r"results.jsonl:2: not a result record"):
        ResultsFile(out).load()


def test_duplicate_ids_are_refused(tmp_path: Path) -> None:
    items = _items()
    with pytest.raises(InvalidInputError, match="'q1' occurs twice"):
        run_eval([items[0], items[0]], AnswererDouble(ANSWERS), EntailmentJudge(JudgeModelDouble()),
                 tmp_path / "r.jsonl")


def test_answerer_failures() -> None:
    item = _items()[0]
    model = JudgeModelDouble()
    failed = evaluate_item(item, AnswererDouble({item.question: GraphDBError("query failed")}), EntailmentJudge(model))
    assert failed["outcome"] == "failed" and failed["verdict"] == "no" and failed["answer"] is None
    assert "GraphDBError: query failed" in failed["error"] and model.calls == []  # nothing to judge
    unanswered = evaluate_item(item, AnswererDouble({item.question: None}), EntailmentJudge(model))
    assert unanswered["verdict"] == "no" and unanswered["error"] is None and model.calls == []
    with pytest.raises(LLMUnavailableError):  # retryable: not recorded, so a re-run does it
        evaluate_item(item, AnswererDouble({item.question: LLMUnavailableError("down")}), EntailmentJudge(model))


def _record(rid: str, types: list[str], verdict: str, *, answer: str | None = "x", latency: float = 1.0,
            prompt: int = 100, keyword: str | None = None, outcome: str = "answered") -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": rid, "types": types, "verdict": verdict, "answer": answer, "outcome": outcome, "error": None,
        "tokens": {"answerer": {"prompt": prompt, "completion": 10}, "judge": {"prompt": 30, "completion": 2}},
        "latency_s": {"answerer": latency, "judge": 0.1}, "judge": {"model": "m"}}
    if keyword is not None:
        record["keyword_verdict"] = keyword
    return record


def test_per_type_accuracy_counts_a_question_in_each_of_its_types() -> None:
    records = [
        _record("r1", [ME, PU], "yes", latency=1.0, prompt=100),
        _record("r2", [PU], "no", latency=2.0, prompt=200),
        _record("r3", [ME, CM], "invalid", latency=3.0, prompt=300),
        _record("r4", [GK], "no", answer=None, latency=4.0, prompt=400, outcome="failed"),
        _record("r5", [ME], "yes", latency=10.0, prompt=500, outcome="forced"),
    ]
    report = summarize(records, skipped={"v9": 4})
    assert (report.total.n, report.total.correct, report.total.accuracy) == (5, 2, 0.4)
    got = {t: (s.n, s.correct) for t, s in report.by_type.items()}
    assert got == {ME: (3, 2), PU: (2, 1), CM: (1, 0), GK: (1, 0)}
    assert list(report.by_type) == [ME, PU, CM, GK]  # the paper's order; absent types are left out
    assert report.by_type[ME].accuracy == pytest.approx(2 / 3)
    assert (report.invalid, report.unanswered) == (1, 1)
    assert report.outcomes == {"answered": 3, "failed": 1, "forced": 1}
    assert report.tokens["answerer"] == {"prompt": 300.0, "completion": 10.0}
    assert report.tokens["judge"] == {"prompt": 30.0, "completion": 2.0}
    assert report.latency["answerer"]["median"] == 3.0
    assert report.latency["answerer"]["p90"] == pytest.approx(7.6)  # 4 + 0.6 * (10 - 4)
    text = report.format()
    assert "accuracy (judge: m): 40.0% (2/5)" in text and "skipped: 4 questions of 1 videos" in text
    assert report.to_dict()["skipped_questions"] == 4


def test_keyword_verdicts_are_reported_beside_the_judge() -> None:
    records = [_record("a", [PU], "yes", keyword="yes"), _record("b", [PU, MH], "no", keyword="yes"),
               _record("c", [MH], "invalid", keyword="no")]
    report = summarize(records)
    assert report.keyword_total is not None and report.keyword_by_type is not None
    assert (report.keyword_total.n, report.keyword_total.correct) == (3, 2)
    assert {t: (s.n, s.correct) for t, s in report.keyword_by_type.items()} == {PU: (2, 2), MH: (2, 1)}
    assert report.disagreements == ["b"]
    assert report.to_dict()["keyword"]["accuracy"] == round(2 / 3, 4)


def test_quantile() -> None:
    assert quantile([], 0.9) == 0.0
    assert quantile([5.0], 0.9) == 5.0
    assert quantile([1, 2, 3, 4, 10], 0.5) == 3
    assert quantile(list(range(11)), 0.9) == pytest.approx(9.0)


# ---------------------------------------------------------------------------------------------- graph coverage


def test_missing_videos_are_named_and_skipped(graph: MemoryGraph) -> None:
    add_clip(graph, "eval-present", 0)
    add_clip(graph, "eval-present", 1)
    items = [EvalItem("a", "Q1?", "A", (PU,), ("eval-present",)), EvalItem("b", "Q2?", "A", (PU,), ("eval-absent",)),
             EvalItem("c", "Q3?", "A", (ME,), ("eval-absent",)),
             EvalItem("d", "Q4?", "A", (ME,), ("eval-present", "eval-absent"))]
    coverage = video_coverage(graph, items)
    assert coverage.present == {"eval-present": 2}
    assert coverage.missing == {"eval-absent": 3}
    assert "1 of 2 videos are not in the graph (3 questions): eval-absent" in coverage.describe()
    assert [i.id for i in select_covered(items, coverage, require_all=False)] == ["a"]
    with pytest.raises(NotFoundError, match="eval-absent.*import-m3"):
        select_covered(items, coverage, require_all=True)
    assert coverage.unfinished == {}
    graph.set_clip_status("eval-present", 1, "perceived")
    assert video_coverage(graph, items).unfinished == {"eval-present": 1}
    graph.set_clip_status("eval-present", 1, "done")
    assert video_coverage(graph, items[:1]).describe() == "all 1 videos are in the graph"


def _bench_dir(tmp_path: Path) -> Path:
    qa = {"question": "Where is the mug?", "answer": "On the desk.", "question_id": "eval_room_Q01",
          "reasoning": "", "timestamp": "01:10", "type": ["Multi-Detail Reasoning"], "before_clip": 1}
    data = {"eval_room": {"video_path": "v.mp4", "mem_path": "m.pkl", "qa_list": [qa]}}
    (tmp_path / "robot.json").write_text(json.dumps(data))
    return tmp_path


def test_cli_names_missing_videos(graph: MemoryGraph, settings: Settings, neo4j_server: ServerStatus | None,
                                  tmp_path: Path) -> None:
    data = _bench_dir(tmp_path)
    out = tmp_path / "out.jsonl"
    args = ["m3bench", "--split", "robot", "--data", str(data), "--out", str(out)]
    strict = CliRunner().invoke(evaluate, [*args, "--require-all"], obj=settings)
    assert isinstance(strict.exception, NotFoundError), strict.output
    assert "eval_room" in str(strict.exception) and "--require-all" in str(strict.exception)
    lenient = CliRunner().invoke(evaluate, args, obj=settings)
    assert lenient.exit_code != 0
    assert "1 of 1 videos are not in the graph (1 questions): eval_room" in lenient.output
    assert "none of the selected questions has its video in the graph" in lenient.output
    assert not out.exists()


# ---------------------------------------------------------------------------------------------- generated media


@pytest.fixture(scope="module")
def media() -> Manifest:
    return build_test_media(REPO / ".m3graph" / "testmedia")


def test_testmedia_questions_follow_the_manifest(media: Manifest) -> None:
    questions = build_questions(media)
    by_id = {q.id: q for q in questions}
    assert len(by_id) == len(questions) == 18
    assert all(set(q.types) <= set(CANONICAL_TYPES) and q.types for q in questions)
    assert {t for q in questions for t in q.types} == set(CANONICAL_TYPES)
    notebook = by_id["tm-a/L2/location"]
    assert (notebook.question, notebook.answer, notebook.keywords) == (
        "Where is the blue notebook?", "On the kitchen shelf.", (("kitchen",), ("shelf",)))
    same = by_id["tm-a+tm-b/same-speaker"]
    assert same.answer == "Yes." and same.videos == ("tm-a", "tm-b") and "cross-video" in same.tags
    assert by_id["tm-a/different-speaker"].answer == "No."
    assert by_id["tm-a/on-screen-count"].answer == "Two."
    hop = by_id["tm-a+tm-b/preference-of-speaker"]
    assert (hop.answer, hop.types) == ("Ripe mango.", (PU, MH)) and "coffee" in hop.question
    visible = by_id["tm-a/speaker-visible"]
    assert visible.answer == "Yes." and "no-meta-clip" in visible.tags  # Biden's voice never has a meta-clip
    early = by_id["tm-a/L2/location@clip0"]
    assert early.before_clip == 0 and early.answer == "On the kitchen shelf."
    leak = by_id["tm-a/L3/location@clip0"]
    assert leak.before_clip == 0 and "unanswerable" in leak.tags and leak.forbidden == ("garden",)
    for q in questions:  # every ground truth passes its own keyword check; the leak check has no key words
        assert keyword_verdict(q.answer, q.keywords, q.forbidden) == "yes", q.id
        item = q.item()
        assert item.source == "testmedia" and item.keywords == q.keywords and item.videos == q.videos
    assert keyword_verdict("No.", same.keywords, same.forbidden) == "no"
    assert keyword_verdict("Yes.", by_id["tm-a/different-speaker"].keywords,
                           by_id["tm-a/different-speaker"].forbidden) == "no"
    assert keyword_verdict("Near the garden.", leak.keywords, leak.forbidden) == "no"


def test_testmedia_questions_change_with_the_manifest(media: Manifest) -> None:
    changed = copy.deepcopy(media)
    tm_a, tm_b = changed.video("tm-a"), changed.video("tm-b")
    tm_a.lines[2] = Line("A", 14.0, "The blue notebook is under the bed.", ["notebook", "bed"], 16.0, "obama", 0)
    tm_a.lines[1] = Line("A", 7.0, "Hello there, everyone.", ["hello"], 9.0, "obama", 0)
    for line in tm_b.lines:  # tm-b now spoken by Biden's voice
        line.voice, line.person = "B", "biden"
    by_id = {q.id: q for q in build_questions(changed)}
    assert by_id["tm-a/L2/location"].answer == "Under the bed."
    assert by_id["tm-a/L2/location"].keywords == (("bed",),)
    assert not any(i.startswith("tm-a/L1/") for i in by_id)  # no pattern reads the greeting: no question
    hop = by_id["tm-a+tm-b/preference-of-speaker"]
    assert "The red car is parked near the garden." in hop.question  # anchored on a line of the new speaker
    same = by_id["tm-a+tm-b/same-speaker"]
    assert "The red car is parked near the garden." in same.question


def test_fact_patterns() -> None:
    def fact(text: str) -> tuple[str, str] | None:
        f = read_fact(Line("A", 0.0, text, []))
        return None if f is None else (f.question, f.answer)

    assert fact("The green lamp is in the study.") == ("Where is the green lamp?", "In the study.")
    assert fact("The library closes early on Sunday.") == ("When does the library close?", "Early on Sunday.")
    assert fact("My favorite color is green.") == ("Which color did someone call their favourite?", "Green.")
    assert fact("What a lovely day.") is None


# ------------------------------------------------------------------------------------ answer match


@pytest.mark.parametrize(("prediction", "truth", "unanswerable", "verdict"), [
    ("The blue notebook is on the kitchen shelf.", "On the kitchen shelf.", False, "yes"),
    ("On the kitchen table.", "On the kitchen shelf.", False, "no"),  # one of two content words is not enough
    ("mangoes", "Mango.", False, "yes"),
    ("mango", "Ripe mango.", False, "yes"),  # F1 2/3: a missing modifier
    ("kitchen table", "On the kitchen shelf.", False, "no"),  # F1 1/2: a different place
    ("2 people", "Two.", False, "yes"),
    ("8 May 2023", "7 May 2023", False, "no"),  # a number is never optional
    ("She went on 7 May, 2023.", "7 May 2023", False, "yes"),
    ("No, they are different people.", "No.", False, "yes"),
    ("They are not the same person.", "No.", False, "yes"),
    ("Yes, the same person.", "No.", False, "no"),
    ("Pottery, camping and painting", "pottery, camping, painting, swimming", False, "yes"),  # 3 of 4
    ("Pottery", "pottery, camping, painting, swimming", False, "no"),
    ("Not in memory: nothing remembered answers this question.", "On the kitchen shelf.", False, "no"),
    ("Not in memory: nothing remembered answers this question.", "Not mentioned in the conversation.", True, "yes"),
    ("It was never mentioned.", "Unknown.", True, "yes"),
    ("Self-care is important.", "Not mentioned in the conversation.", True, "no"),
    (None, "Mango.", False, "no"),
    ("", "Not mentioned.", True, "no"),
])
def test_answer_match(prediction: str | None, truth: str, unanswerable: bool, verdict: str) -> None:
    assert answer_match(prediction, truth, unanswerable) == verdict


def test_token_f1() -> None:
    assert token_f1("A ripe mango", "Mango.") == pytest.approx(2 / 3)
    assert token_f1("mango", "a mango") == 1.0 and token_f1(None, "mango") == 0.0


def test_answer_match_is_reported_first_and_recomputed_from_the_records() -> None:
    records = [{"id": "a", "gt": "On the shelf.", "answer": "It is on the shelf.", "verdict": "no", "types": ["GK"],
                "tags": [], "outcome": "answered", "tokens": {"answerer": {"prompt": 1, "completion": 1},
                                                            "judge": {"prompt": 1, "completion": 1}},
                "latency_s": {"answerer": 1.0, "judge": 0.1}, "judge": {"model": "m"}},
               {"id": "b", "gt": "Unknown.", "answer": "Not in memory.", "verdict": "no", "types": ["GK"],
                "tags": ["unanswerable"], "outcome": "abstained",
                "tokens": {"answerer": {"prompt": 1, "completion": 1}, "judge": {"prompt": 1, "completion": 1}},
                "latency_s": {"answerer": 3.0, "judge": 0.1}, "judge": {"model": "m"}}]
    report = summarize(records)
    assert report.match_total is not None and report.match_total.correct == 2 and report.total.correct == 0
    assert report.format().splitlines()[1].startswith("answer match: 100.0% (2/2)")
    assert report.to_dict()["answer_match"]["by_type"]["GK"]["correct"] == 2


def test_chat_questions_sample_is_stratified_nested_and_deterministic(tmp_path: Path) -> None:
    qa = [{"question": f"q{i}?", "answer": f"a{i}", "category": 1 + i % 4, "evidence": [f"D1:{i}"]}
          for i in range(40)] + [{"question": f"never{i}?", "category": 5, "adversarial_answer": "x"}
                                 for i in range(7)]
    (tmp_path / "conv-1.json").write_text(json.dumps({"qa": qa}))
    questions = load_questions(tmp_path / "conv-1.json")
    small, large = stratified_sample(questions, 3), stratified_sample(questions, 6)
    assert Counter(q.category for q in small) == {1: 3, 2: 3, 3: 3, 4: 3, 5: 3}
    assert {q.id for q in small} <= {q.id for q in large} and small == stratified_sample(questions, 3)
    never = next(q for q in questions if q.category == 5)
    item = never.item("conv-1")
    assert item.ground_truth == NOT_MENTIONED and "unanswerable" in item.tags and item.videos == ("conv-1",)
    (tmp_path / "bad.json").write_text(json.dumps({"qa": [{"question": "x?", "category": 2}]}))
    with pytest.raises(InvalidInputError, match=r"bad.json: qa\[0\]"):
        load_questions(tmp_path / "bad.json")
