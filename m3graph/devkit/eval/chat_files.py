"""`m3graph eval chat-files`: questions about files shared in conversations, beside a text-only baseline.

The generated set (m3graph/devkit/chat_files.py) is ingested twice into one graph through the product's
`ingest-chat` command: as written, with its files (source ``files-NN``), and as the text-only baseline, where every
file is reduced to its name in the turn (``[shared file: receipt-01.pdf]``, source ``files-NN-textonly``), which
is what a memory without file understanding keeps. Every question is asked of both through the same answerer (the
controller by default) and scored the same way: answer match (judge.answer_match, deterministic) and the judge
beside it, evidence recall@5 of file-scoped questions (the sharing turn ids among the source ids of the top 5
memories of the product's hybrid search), and tokens per question.

Indexing time per file type: each attached file is described once more with the product's own steps
(`describe_times`), timed, the median per extension reported beside the ingestion time of the whole set.

Real documents (issue 39, `devkit.real_docs`): when the fetched PDFs are given, their conversations are built
beside the generated set (``SET_DIR/real-docs/``), ingested the same two ways, and asked as the category
``real-docs``; its table adds whether the answering passage and page were among the lines the reader was shown
(`chat_files_real`).

Why this module is over 400 lines: it is development tooling; preparing both sets, the two systems' ingestion,
scoring and the report are one evaluation run and must agree on the set's layout and the results' ids.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from m3graph.devkit import real_docs
from m3graph.devkit.chat_files import CATEGORIES, build, load_questions
from m3graph.devkit.chat_files_model import Question
from m3graph.devkit.eval.chat_files_real import ShownScores, format_table
from m3graph.devkit.eval.judge import answer_match
from m3graph.devkit.eval.runner import EvalItem
from m3graph.devkit.labelled_media import DEFAULT_IDENTITY
from m3graph.errors import NotFoundError

if TYPE_CHECKING:
    from m3graph.devkit.eval.judge import Structured
    from m3graph.graphdb.store import MemoryGraph
    from m3graph.settings import Settings

SYSTEMS = ("files", "text-only")
ALL_CATEGORIES = (*CATEGORIES, real_docs.CATEGORY)  # the generated set's, then the real documents'
REAL_LABEL = "real documents"
RECALL_K = 5
BASELINE_SUFFIX = "-textonly"


def source_of(question: Question, system: str) -> str:
    return question.conversation if system == "files" else question.conversation + BASELINE_SUFFIX


def items(questions: Sequence[Question], system: str) -> list[EvalItem]:
    """The questions as evaluation items of one system (ids prefixed by the system: one results file each)."""
    if system not in SYSTEMS:
        raise ValueError(f"system must be one of {SYSTEMS}")
    return [EvalItem(id=f"{system}/{q.id}", question=q.question, ground_truth=q.answer, types=(q.category,),
                     videos=(source_of(q, system),), source=q.conversation, tags=(system,)) for q in questions]


def sample(questions: Sequence[Question], per_category: int | None) -> list[Question]:
    """`per_category` questions of each category, spread evenly over its list (all when None or fewer exist);
    deterministic, so every run and every answerer sees the same questions."""
    if per_category is None:
        return list(questions)
    out: list[Question] = []
    for category in ALL_CATEGORIES:
        pool = [q for q in questions if q.category == category]
        if len(pool) <= per_category:
            out += pool
        else:
            out += [pool[(i * len(pool)) // per_category] for i in range(per_category)]
    return out


@dataclass(frozen=True)
class PreparedSet:
    set_dir: Path
    conversations: tuple[Path, ...]
    baseline: tuple[Path, ...]
    questions: tuple[Question, ...]
    real_root: Path | None = None  # the files root of the real-document conversations
    real: tuple[Path, ...] = ()
    real_baseline: tuple[Path, ...] = ()
    support: dict[str, tuple[str, int, str]] = field(default_factory=dict)  # question id -> (file, page, text)


def _baseline(convs: Sequence[Path], base_dir: Path) -> tuple[Path, ...]:
    base_dir.mkdir(parents=True, exist_ok=True)
    out = []
    for path in convs:
        target = base_dir / path.name
        target.write_text(json.dumps(text_only(json.loads(path.read_text(encoding="utf-8"))), indent=1) + "\n",
                          encoding="utf-8")
        out.append(target)
    return tuple(out)


def prepare(set_dir: Path, identity_dir: Path | None = None, conversations: int | None = None,
            real_docs_dir: Path | None = None, generated: bool = True,
            manifest: real_docs.Manifest | None = None) -> PreparedSet:
    """Builds the set into `set_dir` when it holds none yet (5 conversations, or `conversations`), and writes the
    text-only baseline beside it; with `conversations`, only the first N conversations and their questions.
    `real_docs_dir` (fetched documents): the real-document conversations too, built into ``SET_DIR/real-docs``
    (every run: a copy of 22 PDFs); `generated` False: only those."""
    convs: tuple[Path, ...] = ()
    questions: list[Question] = []
    if generated:
        qpath = set_dir / "questions.json"
        if not qpath.is_file():
            build(set_dir, identity_dir or DEFAULT_IDENTITY, max(conversations or 5, 1))
        convs = tuple(sorted(p for p in set_dir.glob("*.json") if p.name not in ("questions.json",
                                                                                  "ocr_truth.json")))
        convs = convs[:conversations] if conversations else convs
        kept = {p.stem for p in convs}
        questions = [q for q in load_questions(qpath) if q.conversation in kept]
    baseline = _baseline(convs, set_dir / "text-only")
    if real_docs_dir is None:
        return PreparedSet(set_dir, convs, baseline, tuple(questions))
    real_root = set_dir / real_docs.SET_NAME
    real, real_q = real_docs.build_set(real_root, real_docs_dir, manifest or real_docs.load_manifest())
    real_questions, where = real_docs.load_set_questions(real_q)
    support = {q.id: (q.files[0], *where[q.id]) for q in real_questions}
    return PreparedSet(set_dir, convs, baseline, tuple(questions + real_questions), real_root, tuple(real),
                       _baseline(real, real_root / "text-only"), support)


def reduce_files(doc: dict[str, Any], keep_ext: str | None, suffix: str) -> dict[str, Any]:
    """A conversation under new source and session ids (`suffix` appended) with only the files of extension
    `keep_ext` attached (None: none); every other file is named in its turn, ``[shared file: NAME]``, which is
    what a memory without file understanding keeps."""
    out = json.loads(json.dumps(doc))
    out["source_id"] = f"{doc['source_id']}{suffix}"
    for session in out["sessions"]:
        session["id"] = f"{session['id']}{suffix}"
        for turn in session["turns"]:
            kept, named = [], []
            for f in turn.pop("files", []):
                (kept if keep_ext is not None and Path(f["path"]).suffix.lower() == keep_ext else named).append(f)
            if kept:
                turn["files"] = kept
            if named:
                turn["text"] = " ".join([turn["text"], *(f"[shared file: {f.get('name') or Path(f['path']).name}]"
                                                        for f in named)]).strip()
    return out


def text_only(doc: dict[str, Any]) -> dict[str, Any]:
    """The baseline's view of a conversation: every file reduced to its name, source ``<id>-textonly``."""
    return reduce_files(doc, None, BASELINE_SUFFIX)


def file_types(paths: Sequence[Path]) -> dict[str, int]:
    """Extension -> number of files attached across the conversations."""
    counts: dict[str, int] = defaultdict(int)
    for path in paths:
        for session in json.loads(path.read_text(encoding="utf-8"))["sessions"]:
            for turn in session["turns"]:
                for f in turn.get("files", []):
                    counts[Path(f["path"]).suffix.lower()] += 1
    return dict(sorted(counts.items()))


# ------------------------------------------------------------------------------------------------ scoring


def evidence_recall(graph: MemoryGraph, embedder: Any, question: Question, system: str,
                    k: int = RECALL_K) -> tuple[float, float | None]:
    """(turn recall, file recall) in the top-k memories of the product's hybrid search on the question.

    Turn recall: the share of evidence turns among their source ids; the sharing turn's own line counts, and
    both systems store it, so this says whether the right turn was found. File recall: the share of the
    question's files whose surrogate (a memory ``[file NAME, ...``, the agreed surrogate header) was among them,
    i.e. whether the file's content reached the reader; the baseline has no surrogate (0 by construction).
    None for a question about no file."""
    from m3graph.embedding import query_embed
    from m3graph.graphdb.search_plan import SearchSpec

    vector = query_embed(embedder)([question.question])[0].tolist()
    found = graph.search.search(SearchSpec(vector, mode="node", videos=[source_of(question, system)], k=k,
                                           text=question.question))
    memories = [m for clip in found for m in clip.memories]
    ids = {s for m in memories for s in m.source_ids}
    files = None
    if question.files:
        files = sum(any(m.raw_text.startswith(f"[file {name},") and question.evidence[0] in m.source_ids
                        for m in memories) for name in question.files) / len(question.files)
    return recall(question.evidence, ids), files


def recall(evidence: Sequence[str], found: set[str]) -> float:
    wanted = set(evidence)
    return len(wanted & found) / len(wanted) if wanted else 1.0


@dataclass
class Cell:
    n: int = 0
    matched: int = 0
    judged: int = 0
    recall_sum: float = 0.0
    recall_n: int = 0
    file_sum: float = 0.0
    file_n: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def add(self, record: dict[str, Any], recall_value: float | None, file_value: float | None = None) -> None:
        self.n += 1
        self.matched += answer_match(record.get("answer"), record.get("gt") or "") == "yes"
        self.judged += record.get("verdict") == "yes"
        tokens = record.get("tokens", {}).get("answerer", {})
        self.prompt_tokens += int(tokens.get("prompt", 0))
        self.completion_tokens += int(tokens.get("completion", 0))
        if recall_value is not None:
            self.recall_sum += recall_value
            self.recall_n += 1
        if file_value is not None:
            self.file_sum += file_value
            self.file_n += 1

    def to_dict(self) -> dict[str, Any]:
        n = self.n or 1
        return {"n": self.n, "answer_match": round(self.matched / n, 4), "judge": round(self.judged / n, 4),
                "recall_at_5": round(self.recall_sum / self.recall_n, 4) if self.recall_n else None,
                "file_recall_at_5": round(self.file_sum / self.file_n, 4) if self.file_n else None,
                "tokens_per_question": round((self.prompt_tokens + self.completion_tokens) / n, 1)}


@dataclass
class ChatFilesReport:
    """Per category and system: answer match, judge, recall@5 (file-scoped questions), tokens per question."""

    cells: dict[tuple[str, str], Cell] = field(default_factory=dict)
    indexing: dict[str, dict[str, float]] = field(default_factory=dict)  # ext -> files, seconds per file
    ingest_s: dict[str, float] = field(default_factory=dict)  # system -> seconds for the whole set
    shown: ShownScores = field(default_factory=ShownScores)  # real documents: answering passage/page shown

    def add(self, system: str, category: str, record: dict[str, Any], recall_value: float | None,
            file_value: float | None = None) -> None:
        for key in ((system, category), (system, "all"), (system, "file-scoped") if recall_value is not None
                    else (system, "text-only questions")):
            self.cells.setdefault(key, Cell()).add(record, recall_value, file_value)

    def to_dict(self) -> dict[str, Any]:
        return {"by_system": {s: {c: cell.to_dict() for (s2, c), cell in self.cells.items() if s2 == s}
                              for s in SYSTEMS},
                "real_documents_shown": self.shown.to_dict(),
                "indexing_per_file_type": self.indexing, "ingest_s": self.ingest_s}

    def format(self) -> str:
        rows = ["| category | n | answer match: files | text-only | turn recall@5: files | text-only | file recall@5: "
                "files | tokens/question: files | text-only |",
                "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for category in (*ALL_CATEGORIES, "file-scoped", "all"):
            f, t = self.cells.get(("files", category)), self.cells.get(("text-only", category))
            if f is None and t is None:
                continue
            fd, td = (f or Cell()).to_dict(), (t or Cell()).to_dict()

            def rec(d: dict[str, Any], key: str = "recall_at_5") -> str:
                return "-" if d[key] is None else f"{d[key]:.2f}"

            rows.append(f"| {category} | {max(fd['n'], td['n'])} | {fd['answer_match']:.1%} | "
                        f"{td['answer_match']:.1%} | {rec(fd)} | {rec(td)} | {rec(fd, 'file_recall_at_5')} | "
                        f"{fd['tokens_per_question']:.0f} | {td['tokens_per_question']:.0f} |")
        if self.shown.cells:
            match = {s: cell.to_dict() for (s, c), cell in self.cells.items() if c == real_docs.CATEGORY}
            rows += ["", *format_table(REAL_LABEL, match, self.shown, SYSTEMS)]
        if self.indexing:
            rows += ["", "| file type | files | describe s/file (median) |", "| --- | ---: | ---: |"]
            rows += [f"| {ext} | {v['files']:.0f} | {v['seconds_per_file']:.3f} |" for ext, v in self.indexing.items()]
        if self.ingest_s:
            rows.append("")
            rows.append("ingestion of the whole set: " + ", ".join(f"{s} {v:.1f} s" for s, v in self.ingest_s.items()))
        return "\n".join(rows)


def score(questions: Sequence[Question], records: dict[str, dict[str, Any]],
          recalls: dict[str, tuple[float, float | None]],
          support: dict[str, tuple[str, int, str]] | None = None) -> ChatFilesReport:
    """The report from the results records (keyed by item id) and the (turn, file) recalls of file-scoped
    questions (keyed the same way); `support` (question id -> file name, page, supporting text, the real
    documents') adds whether the answering passage and page were shown."""
    report = ChatFilesReport()
    for system in SYSTEMS:
        for q in questions:
            record = records.get(f"{system}/{q.id}")
            if record is None:
                continue
            turn, files = recalls.get(f"{system}/{q.id}", (None, None)) if q.file_scoped else (None, None)
            report.add(system, q.category, record, turn, files)
            if support and q.id in support:
                report.shown.add(system, record, *support[q.id])
    return report


def describe_times(conversations: Sequence[Path], files_root: Path, settings: Settings,
                   work_dir: Path) -> dict[str, dict[str, float]]:
    """Seconds to describe one file of each type with the product's own steps (`ingest.chat.attachments`: type
    sniffing, text extraction or OCR and colours, for photos face detection and embedding, for audio voice
    activity, speaker embedding and ASR): the median per
    extension, so the first file that loads a model does not set the figure. Not included: embedding the
    surrogate texts and writing them (as for any turn), and resolving faces to entities in the graph."""
    import statistics

    from m3graph.ingest.chat.attachments import audio_voices, photo_faces, surrogate_texts
    from m3graph.perception.file_types import sniff

    work_dir.mkdir(parents=True, exist_ok=True)
    seconds: dict[str, list[float]] = defaultdict(list)
    for path in conversations:
        for session in json.loads(path.read_text(encoding="utf-8"))["sessions"]:
            for turn in session["turns"]:
                for f in turn.get("files", []):
                    file = files_root / f["path"]
                    t0 = time.perf_counter()
                    ftype = sniff(file, f["name"])
                    surrogate_texts(file, ftype, f.get("kind") or ftype.kind, f["name"], turn["speaker"], settings)
                    if ftype.parser == "image":
                        photo_faces(file, settings, work_dir, 0.0)
                    elif ftype.parser == "audio" and settings.files.audio_voices:
                        audio_voices(file, settings, work_dir, 0.0)
                    seconds[file.suffix.lower()].append(time.perf_counter() - t0)
    return {ext: {"files": len(v), "seconds_per_file": round(statistics.median(v), 3)}
            for ext, v in sorted(seconds.items())}


def timed(run: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    run()
    return time.perf_counter() - t0


def write_report(report: ChatFilesReport, out: Path) -> Path:
    path = out.with_suffix(".report.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report.to_dict(), indent=2) + "\n", encoding="utf-8")
    return path


def run(settings: Settings, graph: MemoryGraph, prepared: PreparedSet, questions: Sequence[Question],
        out_dir: Path, answerer: Any, judge: Any, fresh: bool,
        progress: Callable[[int, int, dict[str, Any]], None] | None = None,
        systems: Sequence[str] = SYSTEMS) -> ChatFilesReport:
    """Asks every question of each system (both by default; results resumable per system) and scores them."""
    from m3graph.devkit.eval.runner import ResultsFile, run_eval
    from m3graph.embedding import text_embedder

    embedder = text_embedder(settings)
    records: dict[str, dict[str, Any]] = {}
    recalls: dict[str, tuple[float, float | None]] = {}
    for system in systems:
        out = out_dir / f"chat-files-{system}.jsonl"
        run_eval(items(questions, system), answerer, judge, out, fresh=fresh, progress=progress)
        records.update(ResultsFile(out).load())
        for q in questions:
            if q.file_scoped:
                recalls[f"{system}/{q.id}"] = evidence_recall(graph, embedder, q, system)
    return score(questions, records, recalls, prepared.support)


def run_command(settings: Settings, set_dir: Path, identity_dir: Path | None, per_category: int | None,
                conversations: int | None, out_dir: Path, index_times: bool, fresh: bool, answerer_spec: str,
                structured: Structured, ingest_chat: Callable[[Sequence[Path], Path | None], None], *,
                echo: Callable[[str], None], progress: Callable[[int, int, dict[str, Any]], None],
                close: Callable[[object], None], real_docs_dir: Path | None = None,
                categories: Sequence[str] | None = None) -> Path:
    """`m3graph eval chat-files` (the command passes its own `ingest-chat` in, so this runs exactly the product's
    ingestion path): build or read the set, ingest both systems (timed), ask, score; returns the report path.
    `real_docs_dir`: the fetched real documents are a category too; `categories`: only these categories' questions
    are asked, and the generated set is neither built nor ingested when none of its categories is asked."""
    from m3graph.devkit.eval.judge import make_judge
    from m3graph.devkit.eval.runner import load_answerer_factory
    from m3graph.graphdb.store import MemoryGraph
    from m3graph.localserver.server import ensure_server

    wanted = tuple(categories or ALL_CATEGORIES)
    if real_docs.CATEGORY in (categories or ()) and real_docs_dir is None:
        raise ValueError("the real-docs category needs the fetched real documents (--real-docs DIR)")
    prepared = prepare(set_dir, identity_dir, conversations, real_docs_dir,
                       generated=any(c in CATEGORIES for c in wanted))
    questions = [q for q in sample(prepared.questions, per_category) if q.category in wanted]

    def ingest(paths: Sequence[Path], files_root: Path | None) -> float:
        return timed(lambda: ingest_chat(paths, files_root)) if paths else 0.0

    ensure_server(settings)
    with MemoryGraph.connect(settings) as graph:

        def forget(source: str) -> None:  # a source that is not stored is already forgotten
            with suppress(NotFoundError):
                graph.delete_video(source)

        if fresh:
            for source in sorted({source_of(q, system) for q in prepared.questions for system in SYSTEMS}):
                forget(source)
        ingest_s = {"text-only": ingest(prepared.baseline, None), "files": ingest(prepared.conversations, set_dir)} \
            if prepared.conversations else {}
        if prepared.real:
            ingest_s |= {f"text-only ({REAL_LABEL})": ingest(prepared.real_baseline, None),
                         f"files ({REAL_LABEL})": ingest(prepared.real, prepared.real_root)}
        indexing = describe_times(prepared.conversations, set_dir, settings, out_dir / "chat-files-crops") \
            if index_times else {}
        answerer = load_answerer_factory(answerer_spec)(settings, graph)
        judge = make_judge(settings, structured)
        try:
            echo(f"evaluating {len(questions)} questions x 2 systems -> {out_dir} (judge: {judge.name})")
            report = run(settings, graph, prepared, questions, out_dir, answerer, judge, fresh, progress=progress)
        finally:
            judge.model.close()
            close(answerer)
    report.ingest_s, report.indexing = {k: round(v, 2) for k, v in ingest_s.items()}, indexing
    echo("\n" + report.format())
    path = write_report(report, out_dir / "chat-files.jsonl")
    echo(f"report: {path}")
    return path
