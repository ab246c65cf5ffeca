"""Running an answerer over a question set: per-question JSONL results, resumable, and a report.

A full M3-Bench run is thousands of multi-round controller calls, so results are appended one line per question
as they finish and a re-run skips every id already in the file: a crash, a killed job or an unavailable model
costs only the question in flight. The report is always recomputed from the file, so a resumed run reports the
same numbers as an uninterrupted one.

Why this module is over 400 lines: it is development tooling; the resumable results file, the answerer, the judge
calls and the report recomputed from the file are one run's bookkeeping and must agree on the record format.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import logging
import statistics
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from m3graph.devkit.eval.date_match import same_date
from m3graph.devkit.eval.judge import EntailmentJudge, Keyword, answer_match, keyword_verdict, token_f1
from m3graph.devkit.eval.m3bench import CANONICAL_TYPES, BenchQuestion
from m3graph.errors import ConfigError, InvalidInputError, M3GraphError, NotFoundError, RetryableError
from m3graph.reasoning.llm.base import Usage

if TYPE_CHECKING:
    from m3graph.graphdb.store import MemoryGraph
    from m3graph.settings import Settings

log = logging.getLogger(__name__)

# An answerer factory is called with (settings, graph) and returns an Answerer.
DEFAULT_ANSWERER = "m3graph.devkit.eval.runner:controller_answerer"
UNANSWERABLE = "unanswerable"  # the tag of a question whose answer is not in memory: abstaining is right


class AnswerTraceLike(Protocol):
    """What the controller returns for one question (m3graph.reasoning.control.AnswerTrace)."""

    answer: str | None
    outcome: str  # "answered" | "forced" | "failed"
    rounds: Sequence[Any]
    usage: Usage
    latency_s: float

    def to_dict(self) -> dict[str, Any]: ...


class Answerer(Protocol):
    def answer(self, question: str, videos: Sequence[str] | None = None,
               before_clip: int | None = None) -> AnswerTraceLike: ...


AnswererFactory = Callable[["Settings", "MemoryGraph"], Answerer]


@dataclass(frozen=True)
class EvalItem:
    """One question to evaluate, whatever set it comes from."""

    id: str
    question: str
    ground_truth: str
    types: tuple[str, ...]
    videos: tuple[str, ...] | None  # the memories the answer may use (None: all)
    before_clip: int | None = None
    keywords: tuple[Keyword, ...] | None = None  # set: the keyword judge scores it too
    forbidden: tuple[str, ...] = ()
    source: str = ""
    tags: tuple[str, ...] = ()


def items_from_bench(questions: Iterable[BenchQuestion]) -> list[EvalItem]:
    """M3-Bench questions: the memory is the annotation's video key; robot questions keep their before_clip."""
    return [EvalItem(id=q.question_id, question=q.question, ground_truth=q.answer, types=q.types, videos=(q.video,),
                     before_clip=q.before_clip, source=q.split) for q in questions]


# ---------------------------------------------------------------------------------------------- graph checks


@dataclass(frozen=True)
class Coverage:
    """Which of the questions' videos have memory in the graph."""

    present: dict[str, int]  # video -> clips in the graph
    missing: dict[str, int]  # video -> questions that need it
    unfinished: dict[str, int]  # present videos with clips still being ingested -> such clips

    def describe(self, limit: int = 20) -> str:
        if not self.missing:
            return f"all {len(self.present)} videos are in the graph"
        names = sorted(self.missing)
        shown = ", ".join(names[:limit]) + (f", … ({len(names) - limit} more)" if len(names) > limit else "")
        return (f"{len(names)} of {len(names) + len(self.present)} videos are not in the graph "
                f"({sum(self.missing.values())} questions): {shown}")


def video_coverage(graph: MemoryGraph, items: Sequence[EvalItem]) -> Coverage:
    """One indexed read per video (Clip by video_id): cheap even for M3-Bench's 1,020 videos."""
    need = Counter(v for item in items for v in (item.videos or ()))
    present: dict[str, int] = {}
    missing: dict[str, int] = {}
    unfinished: dict[str, int] = {}
    for video, n in need.items():
        clips = graph.ex.read("graph/video_progress", source_id=video)
        if not clips:
            missing[video] = n
            continue
        present[video] = len(clips)
        # Imported memories have no status; ingested clips are "done" once their memories are written.
        pending = sum(1 for c in clips if c.get("status") not in (None, "done"))
        if pending:
            unfinished[video] = pending
    return Coverage(present, missing, unfinished)


def select_covered(items: Sequence[EvalItem], coverage: Coverage, require_all: bool) -> list[EvalItem]:
    if coverage.missing and require_all:
        raise NotFoundError(coverage.describe() + ". Import them first (m3graph import-m3 PATH --video KEY) or "
                            "drop --require-all to skip their questions.")
    return [i for i in items if not any(v in coverage.missing for v in (i.videos or ()))]


def controller_answerer(settings: Settings, graph: MemoryGraph) -> Answerer:
    """The multi-round controller on `settings.llm.control` (the default answerer)."""
    from m3graph.embedding import text_embedder
    from m3graph.reasoning.control import make_controller

    return make_controller(settings, graph, text_embedder(settings))


def load_answerer_factory(spec: str) -> AnswererFactory:
    """``module:attribute`` → the factory; a clear error while the controller is not importable."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ConfigError(f"answerer {spec!r} must be 'module:factory'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"cannot import the answerer module {module_name!r}: {exc}") from exc
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise ConfigError(f"{module_name} has no callable {attr!r} to build the answerer")
    return factory  # type: ignore[no-any-return]


# ---------------------------------------------------------------------------------------------- results file


class ResultsFile:
    """Append-only JSONL, one object per question, keyed by ``id``."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)

    def load(self) -> dict[str, dict[str, Any]]:
        """Records by id. A torn last line (the process died mid-write) is cut off; a bad line elsewhere is an
        error, because silently dropping it would re-run and double-count."""
        if not self.path.is_file():
            return {}
        raw = self.path.read_bytes()
        lines = raw.split(b"\n")
        records: dict[str, dict[str, Any]] = {}
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                if not isinstance(record, dict) or not isinstance(record.get("id"), str):
                    raise ValueError("not an object with a string 'id'")
            except ValueError as exc:
                if number == len(lines) and not raw.endswith(b"\n"):
                    log.warning("%s: dropping an incomplete last line (an interrupted write)", self.path)
                    with self.path.open("r+b") as fh:
                        fh.truncate(len(raw) - len(line))
                    break
                raise InvalidInputError(f"{self.path}:{number}: not a result record ({exc}); fix or remove the "
                                        "line, or start over with --fresh") from None
            records[record["id"]] = record
        return records

    def append(self, record: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps(record, ensure_ascii=False, default=str)
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(line + "\n")
            fh.flush()

    def reset(self) -> None:
        if self.path.exists():
            self.path.unlink()


# ---------------------------------------------------------------------------------------------- evaluation


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if hasattr(value, "model_dump"):
        return value.model_dump()
    return value


def evaluate_item(item: EvalItem, answerer: Answerer, judge: EntailmentJudge) -> dict[str, Any]:
    """Answer, judge, and the result record. Retryable failures (a model server down) propagate: the question
    is then simply not in the file and a re-run does it; other m3graph errors are recorded as ``failed``."""
    started = time.monotonic()
    trace: AnswerTraceLike | None = None
    error: str | None = None
    try:
        trace = answerer.answer(item.question, list(item.videos) if item.videos is not None else None,
                                item.before_clip)
    except RetryableError:
        raise
    except M3GraphError as exc:
        error = f"{type(exc).__name__}: {exc}"
        log.warning("%s: the answerer failed: %s", item.id, error)
    answer_latency = trace.latency_s if trace is not None else time.monotonic() - started
    answer = trace.answer if trace is not None else None
    usage = trace.usage if trace is not None else Usage()
    if trace is not None:
        details = trace.to_dict()
        rounds = details["rounds"] if "rounds" in details else [_plain(r) for r in trace.rounds]
    else:
        rounds = []
    judgement = judge.judge(item.question, item.ground_truth, answer)
    unanswerable = UNANSWERABLE in item.tags
    record: dict[str, Any] = {
        "id": item.id,
        "source": item.source,
        "videos": list(item.videos) if item.videos is not None else None,
        "before_clip": item.before_clip,
        "question": item.question,
        "gt": item.ground_truth,
        "answer": answer,
        "outcome": trace.outcome if trace is not None else "failed",
        "answer_match": answer_match(answer, item.ground_truth, unanswerable),
        "f1": round(token_f1(answer, item.ground_truth), 4),
        "verdict": judgement.verdict,
        "correct": judgement.correct,
        "types": list(item.types),
        "tags": list(item.tags),
        "tokens": {"answerer": {"prompt": usage.prompt_tokens, "completion": usage.completion_tokens},
                   "judge": {"prompt": judgement.usage.prompt_tokens,
                             "completion": judgement.usage.completion_tokens}},
        "latency_s": {"answerer": round(answer_latency, 4), "judge": round(judgement.latency_s, 4)},
        "rounds": rounds,
        "judge": {"model": judgement.model, "attempts": judgement.attempts, "replies": list(judgement.replies),
                  "error": judgement.error},
        "error": error,
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    if item.keywords is not None:
        record["keywords"] = [list(k) for k in item.keywords]
        record["forbidden"] = list(item.forbidden)
        record["keyword_verdict"] = keyword_verdict(answer, item.keywords, item.forbidden)
    return record


Progress = Callable[[int, int, dict[str, Any]], None]  # (done, total, record)


def run_eval(items: Sequence[EvalItem], answerer: Answerer, judge: EntailmentJudge, out: Path | str, *,
             fresh: bool = False, progress: Progress | None = None,
             skipped: dict[str, int] | None = None) -> EvalReport:
    """Evaluate every item not yet in `out`, then report over all `items` (new and earlier results)."""
    ids = [i.id for i in items]
    if len(set(ids)) != len(ids):
        dup = next(i for i, n in Counter(ids).items() if n > 1)
        raise InvalidInputError(f"question id {dup!r} occurs twice in the evaluation set")
    results = ResultsFile(out)
    if fresh:
        results.reset()
    done = results.load()
    todo = [i for i in items if i.id not in done]
    if done:
        log.info("%s: %d of %d questions already evaluated; %d to go", results.path,
                 len(items) - len(todo), len(items), len(todo))
    for n, item in enumerate(todo, start=1):
        record = evaluate_item(item, answerer, judge)
        results.append(record)
        done[item.id] = record
        if progress is not None:
            progress(n, len(todo), record)
    return summarize([done[i] for i in ids], skipped=skipped)


# ---------------------------------------------------------------------------------------------- report


@dataclass(frozen=True)
class Score:
    n: int
    correct: int

    @property
    def accuracy(self) -> float:
        return self.correct / self.n if self.n else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "correct": self.correct, "accuracy": round(self.accuracy, 4)}


def quantile(values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), 0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def _scores(records: Sequence[dict[str, Any]], correct: Callable[[dict[str, Any]], bool]) -> tuple[Score,
                                                                                                   dict[str, Score]]:
    total = Score(len(records), sum(1 for r in records if correct(r)))
    counts: Counter[str] = Counter()
    right: Counter[str] = Counter()
    for r in records:
        for t in dict.fromkeys(r.get("types") or ()):  # multi-label: the question counts in each of its types
            counts[t] += 1
            right[t] += correct(r)
    order = [t for t in CANONICAL_TYPES if t in counts] + sorted(t for t in counts if t not in CANONICAL_TYPES)
    return total, {t: Score(counts[t], right[t]) for t in order}


@dataclass(frozen=True)
class EvalReport:
    total: Score
    by_type: dict[str, Score]
    outcomes: dict[str, int]
    unanswered: int  # no answer at all (failed, or no answer after the last round)
    invalid: int  # judge gave no readable verdict after its retry (scored wrong)
    errors: int  # answerer raised
    tokens: dict[str, dict[str, float]]  # role -> mean prompt/completion tokens per question
    latency: dict[str, dict[str, float]]  # role -> median/p90 seconds
    judge_models: list[str]
    skipped: dict[str, int] = field(default_factory=dict)  # missing video -> questions not evaluated
    keyword_total: Score | None = None
    keyword_by_type: dict[str, Score] | None = None
    disagreements: list[str] = field(default_factory=list)  # ids where judge and keyword verdicts differ
    match_total: Score | None = None  # deterministic answer match (judge.answer_match), the primary score
    match_by_type: dict[str, Score] = field(default_factory=dict)
    f1_mean: float = 0.0  # mean token F1 against the ground truth
    temporal_date_match: Score | None = None  # temporal questions: answer match OR same date (eval.date_match)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "questions": self.total.n, "correct": self.total.correct, "accuracy": round(self.total.accuracy, 4),
            "by_type": {t: s.to_dict() for t, s in self.by_type.items()}, "outcomes": self.outcomes,
            "unanswered": self.unanswered, "invalid_verdicts": self.invalid, "answerer_errors": self.errors,
            "tokens_mean": self.tokens, "latency_s": self.latency, "judge_models": self.judge_models,
            "skipped_videos": len(self.skipped), "skipped_questions": sum(self.skipped.values()),
        }
        if self.match_total is not None:
            out["answer_match"] = {**self.match_total.to_dict(), "f1_mean": round(self.f1_mean, 4),
                                   "by_type": {t: s.to_dict() for t, s in self.match_by_type.items()}}
        if self.temporal_date_match is not None:
            out["temporal_date_match"] = self.temporal_date_match.to_dict()
        if self.keyword_total is not None:
            out["keyword"] = {**self.keyword_total.to_dict(),
                              "by_type": {t: s.to_dict() for t, s in (self.keyword_by_type or {}).items()},
                              "disagreements": self.disagreements}
        return out

    def format(self) -> str:
        lines = [f"questions evaluated: {self.total.n}"]
        if self.skipped:
            lines.append(f"skipped: {sum(self.skipped.values())} questions of {len(self.skipped)} videos that are "
                         "not in the graph")
        judge = f" (judge: {', '.join(self.judge_models)})" if self.judge_models else ""
        if self.match_total is not None:
            lines.append(f"answer match: {self.match_total.accuracy:.1%} ({self.match_total.correct}/"
                         f"{self.match_total.n}); mean token F1 {self.f1_mean:.3f}")
        if self.temporal_date_match is not None:
            tdm = self.temporal_date_match
            lines.append(f"temporal answer match or same date: {tdm.accuracy:.1%} ({tdm.correct}/{tdm.n})")
        lines.append(f"accuracy{judge}: {self.total.accuracy:.1%} ({self.total.correct}/{self.total.n})")
        if self.keyword_total is not None:
            lines.append(f"keyword accuracy: {self.keyword_total.accuracy:.1%} "
                         f"({self.keyword_total.correct}/{self.keyword_total.n}); judge and keyword verdicts differ "
                         f"on {len(self.disagreements)}" + (f": {', '.join(self.disagreements)}"
                                                            if self.disagreements else ""))
        if len(self.judge_models) > 1:
            lines.append("WARNING: results were judged by different models (a resumed run with another judge)")
        width = max([len(t) for t in self.by_type] + [4])
        header = f"  {'type':<{width}}  {'n':>5}  {'match':>7}  {'judge':>7}" + (
            "  keyword" if self.keyword_by_type else "")
        lines.append(header)
        for t, s in self.by_type.items():
            match = self.match_by_type.get(t)
            row = f"  {t:<{width}}  {s.n:>5}  {match.accuracy if match else 0.0:>7.1%}  {s.accuracy:>7.1%}"
            if self.keyword_by_type:
                row += f"  {self.keyword_by_type[t].accuracy:>7.1%}"
            lines.append(row)
        lines.append("outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(self.outcomes.items()))
                     + f"; unanswered {self.unanswered}; invalid verdicts {self.invalid}; answerer errors "
                       f"{self.errors}")
        for role in ("answerer", "judge"):
            tok, lat = self.tokens[role], self.latency[role]
            lines.append(f"{role}: mean tokens/question prompt {tok['prompt']:.0f}, completion "
                         f"{tok['completion']:.0f}; latency median {lat['median']:.2f} s, p90 {lat['p90']:.2f} s")
        return "\n".join(lines)


def summarize(records: Sequence[dict[str, Any]], skipped: dict[str, int] | None = None) -> EvalReport:
    """The report over result records (see `evaluate_item` for their fields)."""
    total, by_type = _scores(records, lambda r: r.get("verdict") == "yes")
    n = len(records) or 1

    def mean(role: str, kind: str) -> float:
        return sum(r["tokens"][role][kind] for r in records) / n if records else 0.0

    def lat(role: str) -> dict[str, float]:
        values = [float(r["latency_s"][role]) for r in records]
        return {"median": statistics.median(values) if values else 0.0, "p90": quantile(values, 0.9)}

    match_total, match_types = _scores(records, lambda r: _matched(r) == "yes")
    temporal = [r for r in records if "temporal" in (r.get("types") or ())]
    date_score = Score(len(temporal), sum(1 for r in temporal if _matched(r) == "yes" or same_date(
        r.get("answer"), r.get("gt") or ""))) if temporal else None
    keyworded = [r for r in records if "keyword_verdict" in r]
    kw_total = kw_types = None
    disagreements: list[str] = []
    if keyworded:
        kw_total, kw_types = _scores(keyworded, lambda r: r["keyword_verdict"] == "yes")
        disagreements = [r["id"] for r in keyworded if (r["keyword_verdict"] == "yes") != (r["verdict"] == "yes")]
    return EvalReport(
        total=total, by_type=by_type, outcomes=dict(Counter(r.get("outcome", "failed") for r in records)),
        unanswered=sum(1 for r in records if not (r.get("answer") or "").strip()),
        invalid=sum(1 for r in records if r.get("verdict") == "invalid"),
        errors=sum(1 for r in records if r.get("error")),
        tokens={role: {"prompt": mean(role, "prompt"), "completion": mean(role, "completion")}
                for role in ("answerer", "judge")},
        latency={role: lat(role) for role in ("answerer", "judge")},
        judge_models=sorted({r["judge"]["model"] for r in records if r.get("judge", {}).get("model")}),
        skipped=dict(skipped or {}), keyword_total=kw_total, keyword_by_type=kw_types, disagreements=disagreements,
        match_total=match_total, match_by_type=match_types, temporal_date_match=date_score,
        f1_mean=sum(token_f1(r.get("answer"), r.get("gt") or "") for r in records) / n if records else 0.0,
    )


def _matched(record: dict[str, Any]) -> str:
    """A record's answer match, recomputed (results written before the scorer existed are scored the same)."""
    return answer_match(record.get("answer"), record.get("gt") or "", UNANSWERABLE in (record.get("tags") or ()))


def write_report(report: EvalReport, out: Path | str) -> Path:
    """``<out>.report.json`` beside the results."""
    path = Path(f"{out}.report.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path
