"""BEAM long user–assistant chats (../shared/data/beam): facts that change, asked through the product's `ask`.

Each chat (`500K-N/chat.json`, README there) is ten dated batches of user and assistant messages. The harness
ingests a chat, or its first `max_messages` messages, with the product's chat ingestion (`ingest_conversation`,
what `m3graph ingest-chat` and `Memory.add_turns` run: one session per batch, dated by the batch's `time_anchor`,
speakers "User" and "Assistant", turn ids "m<id>", the generation's ` ->-> 1,3` markers stripped), then asks the
chat's questions of the chosen categories through `MemoryService.ask` with the product's controller (the path of
`m3graph ask`, `Memory.ask` and MCP `ask`; the development kit sits under the front ends, so it builds the service
as they do). In the same run a baseline answers each
question with the same reader model from BM25 over the ingested messages (the top `BASELINE_K`, dated, in chat
order; no memory). Answers are scored by `beam_score` (deterministic checks and a word-overlap rubric). Each
question's rounds, notes and shown evidence go to `beam-traces.jsonl` beside the results, for reading failures.

Nothing of a question (its answer, rubric, references, `source_chat_ids`) reaches the memory; the source ids
only decide which questions a slice can answer: a question is *in the slice* when every message it cites is,
and a question citing none only with the whole chat. A slice asks only its questions (`--smoke` asks the chat's
earliest-cited one even when its evidence lies beyond the slice, and the baseline reads 2 messages of 300
characters: it checks the plumbing in about a minute once the server runs, not the memory).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from m3graph.devkit.eval.beam_score import Score, score
from m3graph.errors import InvalidInputError, NotFoundError

if TYPE_CHECKING:
    from m3graph.graphdb.store import MemoryGraph
    from m3graph.ingest.chat.model import Conversation
    from m3graph.reasoning.llm.base import ChatModel
    from m3graph.settings import Settings

SPEAKERS = {"user": "User", "assistant": "Assistant"}
_MARKER = re.compile(r"\s*->->\s*\d+\s*,\s*\d+\s*$")
BASELINE_K = 6  # messages the baseline reader sees
BASELINE_CHARS = 700  # of each, at most
MAX_TOKENS = 160
BASELINE_PROMPT = ("You answer the user's question about their earlier conversation with an assistant, from dated "
                   "excerpts of it. When the excerpts disagree, say so and name both statements. Answer in one "
                   "to three sentences.")


@dataclass(frozen=True)
class Message:
    id: int
    role: str  # user | assistant
    text: str


@dataclass(frozen=True)
class Batch:
    number: int
    when: datetime
    messages: tuple[Message, ...]


@dataclass(frozen=True)
class Question:
    id: str  # "500K-1/knowledge_update/0"
    category: str
    question: str
    gold: str
    rubric: tuple[str, ...]
    cites: tuple[int, ...]  # message ids the item cites (empty: none given)
    confusion: str = ""  # knowledge update: the stale value the item warns of

    def in_slice(self, max_messages: int | None) -> bool:
        return max_messages is None or bool(self.cites) and max(self.cites) < max_messages


@dataclass(frozen=True)
class Chat:
    name: str  # "500K-1"
    batches: tuple[Batch, ...]
    questions: tuple[Question, ...]

    def sliced(self, max_messages: int | None) -> list[Batch]:
        """The batches holding the first `max_messages` messages (the last one cut)."""
        out = []
        for b in self.batches:
            kept = tuple(m for m in b.messages if max_messages is None or m.id < max_messages)
            if kept:
                out.append(Batch(b.number, b.when, kept))
        return out


def default_data_dir() -> Path:
    """``../shared/data/beam`` beside the checkout (this workplace's layout), else relative to the cwd."""
    for base in (Path(__file__).resolve().parents[3].parent, Path.cwd().parent):
        if (base / "shared" / "data" / "beam").is_dir():
            return base / "shared" / "data" / "beam"
    return Path("../shared/data/beam")


def _cites(item: dict[str, Any]) -> tuple[int, ...]:
    ids = item.get("source_chat_ids")
    values = ids.values() if isinstance(ids, dict) else [ids] if ids is not None else []
    flat: list[int] = []
    for v in values:
        flat += [int(x) for x in (v if isinstance(v, list) else [v]) if isinstance(x, int | str) and str(x).isdigit()]
    return tuple(sorted(set(flat)))


def load_chat(folder: Path) -> Chat:
    """One chat folder (`chat.json`, `probing_questions.json`), validated."""
    try:
        batches_raw = json.loads((folder / "chat.json").read_text(encoding="utf-8"))
        probing = json.loads((folder / "probing_questions.json").read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise NotFoundError(f"{exc.filename} not found (a BEAM chat folder holds chat.json and "
                            "probing_questions.json)") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise InvalidInputError(f"{folder}: not a readable BEAM chat ({exc})") from None
    if not isinstance(batches_raw, list) or not isinstance(probing, dict):
        raise InvalidInputError(f"{folder}: chat.json must be a list of batches, probing_questions.json an object")
    batches: list[Batch] = []
    when: datetime | None = None
    for b in batches_raw:
        msgs = [m for turn in b.get("turns") or [] for m in turn]
        anchor = b.get("time_anchor") or next((m.get("time_anchor") for m in msgs if m.get("time_anchor")), None)
        if anchor:
            when = datetime.strptime(str(anchor), "%B-%d-%Y").replace(tzinfo=UTC)
        if when is None:
            raise InvalidInputError(f"{folder}: batch {b.get('batch_number')} has no time_anchor before it")
        kept = tuple(Message(int(m["id"]), str(m["role"]), _MARKER.sub("", str(m["content"])).strip())
                     for m in msgs if str(m.get("content") or "").strip() and m.get("role") in SPEAKERS)
        batches.append(Batch(int(b.get("batch_number") or len(batches) + 1), when, kept))
    questions = [Question(f"{folder.name}/{cat}/{i}", cat, str(item["question"]),
                          str(item.get("answer") or item.get("ideal_answer") or ""),
                          tuple(str(r) for r in item.get("rubric") or []), _cites(item),
                          str(item.get("potential_confusion") or ""))
                 for cat, items in sorted(probing.items()) if isinstance(items, list)
                 for i, item in enumerate(items) if isinstance(item, dict) and item.get("question")]
    return Chat(folder.name, tuple(batches), tuple(questions))


def select(chat: Chat, categories: Sequence[str], max_messages: int | None, smoke: int | None) -> list[Question]:
    """The questions to ask: those in the slice, or with `smoke` the N citing the earliest messages."""
    wanted = [q for q in chat.questions if q.category in categories]
    if smoke is not None:
        return sorted(wanted, key=lambda q: (max(q.cites) if q.cites else 1 << 30, q.id))[:smoke]
    return [q for q in wanted if q.in_slice(max_messages)]


def source_id(chat: Chat, max_messages: int | None, speech_facts: bool) -> str:
    """The memory's source for a chat slice: slices and ingestion settings never share one."""
    slug = chat.name.lower().replace("/", "-")
    return f"beam-{slug}" + (f"-m{max_messages}" if max_messages else "") + ("-speech" if speech_facts else "")


def conversation(source: str, batches: Sequence[Batch]) -> Conversation:
    """The slice as one conversation: a session per batch, at its date, keyed by its content."""
    from m3graph.ingest.chat.generic_json import session_digest
    from m3graph.ingest.chat.model import Conversation, Session, Turn

    sessions = []
    for i, b in enumerate(batches):
        turns = tuple(Turn(turn_id=f"m{m.id}", speaker=SPEAKERS[m.role], text=" ".join(m.text.split()))
                      for m in b.messages)
        sessions.append(Session(index=i, started_at=b.when, turns=turns, key=session_digest(turns, b.when)))
    return Conversation(source_id=source, sessions=tuple(sessions), speakers=tuple(SPEAKERS.values()), path=None)


def ingest(graph: MemoryGraph, embedder: Any, source: str, batches: Sequence[Batch]) -> tuple[int, float | None]:
    """The slice through the product's chat ingestion; (messages, seconds, or None when all was already stored)."""
    from m3graph.ingest.chat.ingest import ingest_conversation

    t0 = time.perf_counter()
    summary = ingest_conversation(graph, conversation(source, batches), embedder)
    seconds = time.perf_counter() - t0
    return sum(len(b.messages) for b in batches), (seconds if summary.sessions_written else None)


def baseline_lines(batches: Sequence[Batch], question: str, k: int = BASELINE_K,
                   chars: int = BASELINE_CHARS) -> list[str]:
    """BM25's top-k messages for the question, in chat order, each with its date and speaker."""
    from m3graph.devkit.eval.retrieval import BM25

    msgs = [(b.when, m) for b in batches for m in b.messages]
    index = BM25([m.text for _, m in msgs], k1=1.2, b=0.75)
    return [f"[{msgs[i][0]:%d %B %Y}] {SPEAKERS[msgs[i][1].role]}: {msgs[i][1].text[:chars]}"
            for i in sorted(index.top(question, k))]


def baseline_answer(model: ChatModel, question: str, lines: Sequence[str]) -> str:
    from m3graph.reasoning.llm.base import Message as ChatMessage

    user = "Excerpts:\n" + "\n\n".join(lines) + f"\n\nQuestion (asked by the user): {question}\nAnswer:"
    result = model.chat([ChatMessage("system", BASELINE_PROMPT), ChatMessage("user", user)], max_tokens=MAX_TOKENS,
                        temperature=0.0)
    return result.text.strip()


def trace_record(q: Question, rounds: Sequence[dict[str, Any]], evidence: dict[str, list[str]]) -> dict[str, Any]:
    """What reading a failure needs: each round's action, query or answer and note, the reader's raw reply, and
    the evidence shown (`beam-traces.jsonl`, one line per question)."""
    return {"id": q.id, "question": q.question, "gold": q.gold, "cites": list(q.cites),
            "rounds": [{"action": r.get("action"), "content": r.get("content"), "note": r.get("note"),
                        "raw": r.get("raw")} for r in rounds],
            "evidence": evidence}


@dataclass
class BeamReport:
    messages: int = 0
    ingest_s: float | None = None  # None: already stored
    speech_facts: bool = False
    tallies: dict[str, dict[str, list[float]]] = field(default_factory=dict)  # system -> category -> [ok, rub, n]

    def add(self, system: str, category: str, s: Score) -> None:
        t = self.tallies.setdefault(system, {}).setdefault(category, [0.0, 0.0, 0.0])
        t[0] += s.correct
        t[1] += s.rubric
        t[2] += 1

    def ingestion(self) -> str:
        mode = "speech facts on" if self.speech_facts else "default settings"
        if self.ingest_s is None:
            return f"ingestion: {self.messages} messages already stored ({mode}; --fresh times it again)"
        return (f"ingestion ({mode}): {self.messages} messages in {self.ingest_s:.1f} s "
                f"({1000 * self.ingest_s / max(self.messages, 1):.0f} s per 1,000 turns)")

    def table(self) -> str:
        rows = [f"{'category':<26}{'system':<10}{'correct':>10}{'%':>7}{'rubric':>8}"]
        for system, cats in self.tallies.items():
            for cat, (ok, rub, n) in sorted(cats.items()):
                rows.append(f"{cat:<26}{system:<10}{f'{ok:.0f}/{n:.0f}':>10}{100 * ok / n:>7.1f}{100 * rub / n:>7.1f}%")
        return "\n".join(rows)

    def summary(self) -> dict[str, Any]:
        return {"messages": self.messages, "ingest_s": self.ingest_s, "speech_facts": self.speech_facts,
                "scores": {s: {c: {"correct": int(ok), "n": int(n), "rubric": round(rub / n, 3)}
                               for c, (ok, rub, n) in cats.items()} for s, cats in self.tallies.items()}}


Progress = Callable[[dict[str, Any]], None]


def run(settings: Settings, graph: MemoryGraph, chats: Sequence[Chat], categories: Sequence[str],
        max_messages: int | None, smoke: int | None, out_dir: Path, fresh: bool = False, baseline: bool = True,
        progress: Progress | None = None) -> BeamReport:
    """Ingest each chat (slice), ask its questions through the product's `ask` and the baseline; JSONL + summary."""
    from m3graph.embedding import text_embedder
    from m3graph.reasoning.control import controller_factory
    from m3graph.reasoning.llm import make_chat_model
    from m3graph.service.memory import MemoryService
    from m3graph.service.requests import AskRequest

    embedder = text_embedder(settings)
    service = MemoryService(settings, graph, embedder_factory=lambda: embedder,
                            controller_factory=controller_factory(settings, graph))
    report = BeamReport(speech_facts=settings.chat.speech_facts)
    out_dir.mkdir(parents=True, exist_ok=True)
    model = make_chat_model(settings.llm.control, settings.llm.models_dir) if baseline else None
    try:
        with (out_dir / "beam.jsonl").open("w", encoding="utf-8") as out, \
                (out_dir / "beam-traces.jsonl").open("w", encoding="utf-8") as traces:
            for chat in chats:
                source, batches = source_id(chat, max_messages, report.speech_facts), chat.sliced(max_messages)
                if fresh and graph.video_exists(source):
                    graph.delete_video(source)
                n, seconds = ingest(graph, embedder, source, batches)
                report.messages += n
                if seconds is not None:
                    report.ingest_s = (report.ingest_s or 0.0) + seconds
                for q in select(chat, categories, max_messages, smoke):
                    answers: dict[str, tuple[str, float]] = {}
                    t0 = time.perf_counter()
                    asked = service.ask(AskRequest(question=q.question, videos=[source]))
                    answers["m3graph"] = (asked.answer or "", time.perf_counter() - t0)
                    traces.write(json.dumps(trace_record(q, asked.rounds, asked.evidence), ensure_ascii=False) + "\n")
                    traces.flush()
                    if model is not None:
                        t0 = time.perf_counter()
                        lines = baseline_lines(batches, q.question, *((2, 300) if smoke else (BASELINE_K,
                                                                                               BASELINE_CHARS)))
                        answers["baseline"] = (baseline_answer(model, q.question, lines), time.perf_counter() - t0)
                    for system, (answer, latency) in answers.items():
                        s = score(q.category, q.question, q.rubric, answer, q.gold, q.confusion)
                        report.add(system, q.category, s)
                        record = {"id": q.id, "category": q.category, "system": system, "question": q.question,
                                  "answer": answer, "correct": s.correct, "rubric": round(s.rubric, 3),
                                  "why": s.detail, "gold": q.gold, "in_slice": q.in_slice(max_messages),
                                  "source": source, "latency_s": round(latency, 2)}
                        out.write(json.dumps(record, ensure_ascii=False) + "\n")
                        out.flush()
                        if progress:
                            progress(record)
    finally:
        if model is not None:
            model.close()
    summary = report.summary() | {"chats": [c.name for c in chats], "max_messages": max_messages, "smoke": smoke,
                                  "reader": settings.llm.control.model, "categories": list(categories)}
    (out_dir / "beam-summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    return report


def rescore(out_dir: Path, chats: Sequence[Chat]) -> BeamReport:
    """The results file scored again with the current checks (no server, no model): `--report-only`."""
    questions = {q.id: q for chat in chats for q in chat.questions}
    report = BeamReport()
    path = out_dir / "beam.jsonl"
    if not path.is_file():
        raise NotFoundError(f"{path} not found (run `m3graph eval beam` with this --out-dir first)")
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        q = questions.get(record["id"])
        if q is not None:
            report.add(record["system"], q.category, score(q.category, q.question, q.rubric, record["answer"], q.gold,
                                                           q.confusion))
    return report

