"""The M3-Bench annotations (``robot.json``, ``web.json``) as typed, validated records.

The released files are hand-edited and inconsistent in small ways (reference §8.2–8.3): robot still says
"Multi-Detail Reasoning" where web says "Multi-Evidence Reasoning", an older revision said "Human Understanding",
robot timestamps are ``MM:SS`` with unpadded or > 59 minutes, and ``before_clip`` is stored beside the timestamp
it is derived from. Normalizing here means every later count and score uses one vocabulary, and checking the
``before_clip`` rule here means a wrong memory window is reported instead of silently evaluated.
"""

from __future__ import annotations

import json
import re
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from m3graph.errors import InvalidInputError

SPLITS: tuple[str, ...] = ("robot", "web")
SplitName = Literal["robot", "web"]

# Reporting order: the paper's table order.
CANONICAL_TYPES: tuple[str, ...] = (
    "Multi-Evidence Reasoning",
    "Person Understanding",
    "Cross-Modal Reasoning",
    "General Knowledge Extraction",
    "Multi-Hop Reasoning",
)
TYPE_ALIASES: dict[str, str] = {
    "Multi-Detail Reasoning": "Multi-Evidence Reasoning",
    "Human Understanding": "Person Understanding",
}
TYPE_ABBREVIATIONS: dict[str, str] = {
    "Multi-Evidence Reasoning": "ME",
    "Person Understanding": "PU",
    "Cross-Modal Reasoning": "CM",
    "General Knowledge Extraction": "GK",
    "Multi-Hop Reasoning": "MH",
}
CLIP_SECONDS = 30  # the clip length the released before_clip values were computed with

_TIMESTAMP = re.compile(r"^(?:(\d+):)?(\d+):([0-5]\d)$")


class M3BenchFormatError(InvalidInputError):
    """An annotation file or entry that does not follow the M3-Bench schema; the message names file and entry."""


def normalize_type(label: str) -> str:
    """The canonical label for `label`; unknown labels raise, because a typo would silently split a category."""
    canonical = TYPE_ALIASES.get(label.strip(), label.strip())
    if canonical not in CANONICAL_TYPES:
        known = ", ".join([*CANONICAL_TYPES, *TYPE_ALIASES])
        raise ValueError(f"unknown question type {label!r} (known: {known})")
    return canonical


def type_from_user(text: str) -> str:
    """A type given on the command line: a label or alias in any case, or its abbreviation (ME, PU, CM, GK, MH)."""
    wanted = text.strip().lower()
    for abbreviation_of, abbreviation in TYPE_ABBREVIATIONS.items():
        if wanted == abbreviation.lower():
            return abbreviation_of
    for label in [*CANONICAL_TYPES, *TYPE_ALIASES]:
        if wanted == label.lower():
            return normalize_type(label)
    return normalize_type(text)  # raises, listing the known labels


def parse_timestamp(text: str) -> int:
    """Seconds from ``MM:SS`` (minutes unbounded, e.g. ``75:10``) or ``H:MM:SS``."""
    match = _TIMESTAMP.match(text.strip())
    if match is None:
        raise ValueError(f"timestamp {text!r} is not MM:SS")
    hours, minutes, seconds = match.groups()
    if hours is not None and int(minutes) > 59:
        raise ValueError(f"timestamp {text!r}: minutes over 59 next to an hour field")
    return int(hours or 0) * 3600 + int(minutes) * 60 + int(seconds)


def expected_before_clip(timestamp_s: int, clip_seconds: int = CLIP_SECONDS) -> int:
    """The last fully completed clip when the question is asked (−1: none yet)."""
    return timestamp_s // clip_seconds - 1


@dataclass(frozen=True)
class BenchQuestion:
    split: str
    video: str  # the annotation's video key = the video id of its memory in the graph
    question_id: str
    question: str
    answer: str
    reasoning: str
    types: tuple[str, ...]  # canonical, de-duplicated, in annotation order
    raw_types: tuple[str, ...]  # as written in the file
    timestamp: str | None = None  # robot: when the question is asked
    timestamp_s: int | None = None
    before_clip: int | None = None  # robot: memory restricted to clips 0..before_clip


@dataclass(frozen=True)
class BenchVideo:
    split: str
    key: str
    video_path: str | None
    mem_path: str | None
    video_url: str | None
    questions: tuple[BenchQuestion, ...]


@dataclass(frozen=True)
class BeforeClipViolation:
    question_id: str
    timestamp: str
    before_clip: int
    expected: int


@dataclass(frozen=True)
class BenchSplit:
    name: str
    path: Path
    videos: tuple[BenchVideo, ...]
    violations: tuple[BeforeClipViolation, ...] = ()  # questions whose before_clip disagrees with the timestamp

    @property
    def questions(self) -> list[BenchQuestion]:
        return [q for v in self.videos for q in v.questions]

    def stats(self) -> SplitStats:
        return compute_stats(self)


# ---------------------------------------------------------------------------------------------- loading


def default_data_dir() -> Path | None:
    """``../shared/data/m3bench`` beside the checkout, when it exists (the layout of this workplace)."""
    candidates = [Path(__file__).resolve().parents[3].parent / "shared" / "data" / "m3bench",
                  Path.cwd().parent / "shared" / "data" / "m3bench"]
    return next((c.resolve() for c in candidates if (c / "robot.json").is_file() or (c / "web.json").is_file()), None)


def _resolve_dir(data_dir: Path | str | None) -> Path:
    if data_dir is not None:
        path = Path(data_dir)
        if not path.is_dir():
            raise M3BenchFormatError(f"M3-Bench data directory {path} does not exist")
        return path
    found = default_data_dir()
    if found is None:
        raise M3BenchFormatError("no M3-Bench data directory given and ../shared/data/m3bench was not found; "
                                 "pass the directory holding robot.json and web.json (--data DIR)")
    return found


def _text(where: str, entry: dict[str, Any], key: str, *, allow_empty: bool = False) -> str:
    value = entry.get(key)
    if not isinstance(value, str):
        raise M3BenchFormatError(f"{where}: field {key!r} must be a string, got {type(value).__name__}")
    if not allow_empty and not value.strip():
        raise M3BenchFormatError(f"{where}: field {key!r} is empty")
    return value


def _optional_text(where: str, entry: dict[str, Any], key: str) -> str | None:
    return None if entry.get(key) is None else _text(where, entry, key)


def _question(path: Path, split: str, key: str, index: int, entry: object) -> BenchQuestion:
    where = f"{path}: video {key!r}, question #{index + 1}"
    if not isinstance(entry, dict):
        raise M3BenchFormatError(f"{where}: expected an object, got {type(entry).__name__}")
    qid = entry.get("question_id")
    if isinstance(qid, str) and qid.strip():
        where = f"{path}: video {key!r}, question {qid!r}"
    qid = _text(where, entry, "question_id")
    raw_types = entry.get("type")
    if not isinstance(raw_types, list) or not raw_types or not all(isinstance(t, str) for t in raw_types):
        raise M3BenchFormatError(f"{where}: field 'type' must be a non-empty list of labels, got {raw_types!r}")
    try:
        types = tuple(dict.fromkeys(normalize_type(t) for t in raw_types))
    except ValueError as exc:
        raise M3BenchFormatError(f"{where}: {exc}") from None
    timestamp, timestamp_s, before_clip = entry.get("timestamp"), None, entry.get("before_clip")
    if split == "robot" and (timestamp is None or before_clip is None):
        raise M3BenchFormatError(f"{where}: robot questions need 'timestamp' and 'before_clip'")
    if timestamp is not None:
        if not isinstance(timestamp, str):
            raise M3BenchFormatError(f"{where}: field 'timestamp' must be a string like '12:34', got {timestamp!r}")
        try:
            timestamp_s = parse_timestamp(timestamp)
        except ValueError as exc:
            raise M3BenchFormatError(f"{where}: {exc}") from None
    if before_clip is not None and (not isinstance(before_clip, int) or isinstance(before_clip, bool)
                                    or before_clip < -1):
        raise M3BenchFormatError(f"{where}: field 'before_clip' must be an integer >= -1, got {before_clip!r}")
    return BenchQuestion(split=split, video=key, question_id=qid, question=_text(where, entry, "question"),
                         answer=_text(where, entry, "answer"), reasoning=_text(where, entry, "reasoning",
                                                                               allow_empty=True),
                         types=types, raw_types=tuple(raw_types), timestamp=timestamp, timestamp_s=timestamp_s,
                         before_clip=before_clip)


def load_split(name: str, data_dir: Path | str | None = None, *, path: Path | str | None = None) -> BenchSplit:
    """One split from ``<data_dir>/<name>.json`` (or an explicit file); every entry is validated."""
    if name not in SPLITS:
        raise M3BenchFormatError(f"unknown M3-Bench split {name!r} (known: {', '.join(SPLITS)})")
    file = Path(path) if path is not None else _resolve_dir(data_dir) / f"{name}.json"
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise M3BenchFormatError(f"{file}: no such file (expected the M3-Bench {name} annotations)") from None
    except json.JSONDecodeError as exc:
        raise M3BenchFormatError(f"{file}: not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise M3BenchFormatError(f"{file}: the top level must be an object of videos, got {type(data).__name__}")
    videos: list[BenchVideo] = []
    seen: dict[str, str] = {}
    violations: list[BeforeClipViolation] = []
    for key, video in data.items():
        if not isinstance(video, dict):
            raise M3BenchFormatError(f"{file}: video {key!r}: expected an object, got {type(video).__name__}")
        qa_list = video.get("qa_list")
        if not isinstance(qa_list, list):
            raise M3BenchFormatError(f"{file}: video {key!r}: 'qa_list' must be a list, got {type(qa_list).__name__}")
        questions = tuple(_question(file, name, key, i, entry) for i, entry in enumerate(qa_list))
        for q in questions:
            if q.question_id in seen:
                raise M3BenchFormatError(f"{file}: video {key!r}, question {q.question_id!r}: duplicate question_id "
                                         f"(also in video {seen[q.question_id]!r})")
            seen[q.question_id] = key
            if q.timestamp_s is not None and q.before_clip is not None:
                expected = expected_before_clip(q.timestamp_s)
                if q.before_clip != expected:
                    violations.append(BeforeClipViolation(q.question_id, q.timestamp or "", q.before_clip, expected))
        where = f"{file}: video {key!r}"
        videos.append(BenchVideo(split=name, key=key, video_path=_optional_text(where, video, "video_path"),
                                 mem_path=_optional_text(where, video, "mem_path"),
                                 video_url=_optional_text(where, video, "video_url"), questions=questions))
    return BenchSplit(name=name, path=file, videos=tuple(videos), violations=tuple(violations))


def load_m3bench(split: str = "all", data_dir: Path | str | None = None) -> list[BenchSplit]:
    """``robot``, ``web`` or ``all`` (both, robot first); question ids must be unique across what is loaded."""
    names = SPLITS if split == "all" else (split,)
    splits = [load_split(n, data_dir) for n in names]
    owner: dict[str, str] = {}
    for s in splits:
        for q in s.questions:
            if q.question_id in owner:
                raise M3BenchFormatError(f"question id {q.question_id!r} occurs in both {owner[q.question_id]} "
                                         f"and {s.path}")
            owner[q.question_id] = str(s.path)
    return splits


def filter_questions(questions: Iterable[BenchQuestion], *, videos: Sequence[str] = (), types: Sequence[str] = (),
                     limit: int | None = None) -> list[BenchQuestion]:
    """Questions of the given videos that carry any of the given types (aliases and abbreviations accepted),
    the first `limit` of them kept."""
    wanted_types = {type_from_user(t) for t in types}
    wanted_videos = set(videos)
    out = [q for q in questions
           if (not wanted_videos or q.video in wanted_videos) and (not wanted_types or wanted_types & set(q.types))]
    return out if limit is None else out[:limit]


# ---------------------------------------------------------------------------------------------- statistics


@dataclass(frozen=True)
class Summary:
    min: float
    median: float
    mean: float
    max: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Summary:
        if not values:
            return cls(0, 0, 0, 0)
        return cls(min(values), statistics.median(values), statistics.fmean(values), max(values))


@dataclass(frozen=True)
class SplitStats:
    split: str
    videos: int
    questions: int
    type_counts: dict[str, int]  # canonical labels, in CANONICAL_TYPES order; multi-label: sums exceed questions
    raw_type_counts: dict[str, int]  # as written in the file
    labels_per_question: dict[int, int]  # 1..5 labels -> questions
    questions_per_video: Summary
    question_words: Summary
    answer_words: Summary
    before_clip_checked: int
    before_clip_violations: tuple[BeforeClipViolation, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        def summ(s: Summary) -> dict[str, float]:
            return {"min": s.min, "median": s.median, "mean": round(s.mean, 4), "max": s.max}

        return {"split": self.split, "videos": self.videos, "questions": self.questions,
                "type_counts": self.type_counts, "raw_type_counts": self.raw_type_counts,
                "labels_per_question": self.labels_per_question,
                "questions_per_video": summ(self.questions_per_video),
                "question_words": summ(self.question_words), "answer_words": summ(self.answer_words),
                "before_clip_checked": self.before_clip_checked,
                "before_clip_violations": [v.__dict__ for v in self.before_clip_violations]}


def compute_stats(split: BenchSplit) -> SplitStats:
    questions = split.questions
    types = Counter(t for q in questions for t in q.types)
    raw = Counter(t for q in questions for t in q.raw_types)
    n_labels = Counter(len(q.types) for q in questions)
    top = max(5, *n_labels) if n_labels else 5
    return SplitStats(
        split=split.name, videos=len(split.videos), questions=len(questions),
        type_counts={t: types.get(t, 0) for t in CANONICAL_TYPES},
        raw_type_counts=dict(sorted(raw.items(), key=lambda kv: (-kv[1], kv[0]))),
        labels_per_question={k: n_labels.get(k, 0) for k in range(1, top + 1)},
        questions_per_video=Summary.of([len(v.questions) for v in split.videos]),
        question_words=Summary.of([len(q.question.split()) for q in questions]),
        answer_words=Summary.of([len(q.answer.split()) for q in questions]),
        before_clip_checked=sum(1 for q in questions if q.timestamp_s is not None and q.before_clip is not None),
        before_clip_violations=split.violations,
    )


def _pct(n: int, total: int) -> str:
    return f"{n} ({100 * n / total:.1f}%)" if total else str(n)


def format_stats(stats: Sequence[SplitStats]) -> str:
    """A Markdown table, one column per split (what `m3graph eval m3bench --stats-only` prints)."""
    head = "| | " + " | ".join(s.split for s in stats) + " |"
    rule = "|---|" + "---|" * len(stats)
    rows = [head, rule]

    def row(label: str, cells: Iterable[str]) -> None:
        rows.append(f"| {label} | " + " | ".join(cells) + " |")

    def summ(s: Summary, digits: int = 2) -> str:
        return f"{s.min:g} / {s.median:g} / {s.mean:.{digits}f} / {s.max:g}"

    row("Videos", (f"{s.videos:,}" for s in stats))
    row("Questions", (f"{s.questions:,}" for s in stats))
    row("Questions per video (min / median / mean / max)", (summ(s.questions_per_video) for s in stats))
    row("Question words (min / median / mean / max)", (summ(s.question_words, 1) for s in stats))
    row("Answer words (min / median / mean / max)", (summ(s.answer_words, 1) for s in stats))
    top = max(len(s.labels_per_question) for s in stats)
    row("Labels per question, " + "/".join(str(k) for k in range(1, top + 1)),
        (" / ".join(str(s.labels_per_question.get(k, 0)) for k in range(1, top + 1)) for s in stats))
    for t in CANONICAL_TYPES:
        row(f"{t} ({TYPE_ABBREVIATIONS[t]})", (_pct(s.type_counts[t], s.questions) for s in stats))
    row("Labels as written", ("; ".join(f"{k} {v}" for k, v in s.raw_type_counts.items()) for s in stats))
    row("before_clip = floor(t/30) − 1 holds",
        (f"{s.before_clip_checked - len(s.before_clip_violations)} of {s.before_clip_checked}"
         if s.before_clip_checked else "n/a (no timestamps)" for s in stats))
    out = "\n".join(rows)
    for s in stats:
        for v in s.before_clip_violations[:20]:
            out += (f"\n{s.split}: {v.question_id} at {v.timestamp} has before_clip {v.before_clip}, "
                    f"expected {v.expected}")
    return out
