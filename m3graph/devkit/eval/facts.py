"""FactConsolidation (MemoryAgentBench): facts that change, answered from memory, scored by SubEM.

The benchmark file (../shared/data/facts, see its README) holds one numbered facts list (later facts override
earlier ones about the same subject and relation) and two question sets over it: single-hop and multi-hop.
The list goes in through the product path (`ingest-chat`'s facts format: one semantic memory per fact, in line
order) as ONE source, and the systems answer every question in the same run:

* ``m3graph``: the product's `ask` (`MemoryService.ask`, the controller every front end runs, with the control
  model): current facts only, once supersession hides the retired ones; a multi-hop question is chained by the
  controller's own model-free step (`m3graph.reasoning.fact_chain`: the values of the best facts become the
  subjects of the next hop), the same for both subsets: the product does not know which kind a question is.
* ``baseline``: BM25 (k1 1.2, b 0.75) over the raw fact lines, no supersession: the top facts in line order
  with their numbers, and the prompt says that a later number overrides an earlier one; read by the same model
  with this harness's short reader prompt.
* ``chain`` (only when asked for, `run(systems=...)`): the harness's own chaining before the step moved into the
  product (`chain_facts`, hops by subset), read with the harness's reader: the figure the product replaced.

Scoring is the benchmark's: SubEM (the normalised gold string contained in the normalised answer), every
question in the denominator. Gold answers never reach the memory or the reader.
"""

from __future__ import annotations

import json
import re
import string
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from m3graph.devkit.eval.retrieval import BM25, tokens
from m3graph.errors import InvalidInputError, NotFoundError

if TYPE_CHECKING:
    from m3graph.graphdb.store import MemoryGraph
    from m3graph.reasoning.llm.base import ChatModel
    from m3graph.service.memory import MemoryService
    from m3graph.settings import Settings

DATA_FILE = "factconsolidation_6k.json"
SUBSETS = {"sh": "factconsolidation_sh_6k", "mh": "factconsolidation_mh_6k"}
SOURCE_ID = "factconsolidation-6k"
SYSTEMS = ("m3graph", "baseline")  # run by default; "chain" on request (the harness chaining)
K = 10  # facts retrieved per search
HOPS = {"sh": 1, "mh": 3}  # searches chained per question
WIDTH = 2  # facts per hop whose values become the next hop's subjects
SHOWN = 12  # facts the reader sees at most
MAX_TOKENS = 24
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = frozenset(string.punctuation)

READER = ("You answer questions from a short list of facts. The facts may contradict what you know: trust the "
          "facts, not your memory. Reply with the answer only, a name or a short phrase, no sentence.")
ORDER_NOTE = " Facts are numbered in the order they were learned: when two facts disagree, the higher number wins."


# -- the benchmark file ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FactsQuestion:
    id: str  # "sh/3"
    question: str
    answers: tuple[str, ...]


@dataclass(frozen=True)
class FactsSubset:
    name: str  # "sh" | "mh"
    source: str  # metadata.source
    context: str
    questions: tuple[FactsQuestion, ...]


def default_data_dir() -> Path:
    """``../shared/data/facts`` beside the checkout (this workplace's layout), else relative to the cwd."""
    for base in (Path(__file__).resolve().parents[3].parent, Path.cwd().parent):
        if (base / "shared" / "data" / "facts").is_dir():
            return base / "shared" / "data" / "facts"
    return Path("../shared/data/facts")


def load_benchmark(data_dir: Path) -> dict[str, FactsSubset]:
    """Both subsets, told apart by `metadata.source` (not by position or the `subsets` list)."""
    path = Path(data_dir) / DATA_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise NotFoundError(f"{path} not found (--data-dir: the folder of {DATA_FILE})") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise InvalidInputError(f"{path}: not a readable benchmark file ({exc})") from None
    out: dict[str, FactsSubset] = {}
    for i, item in enumerate(data.get("data") or [] if isinstance(data, dict) else []):
        source = (item.get("metadata") or {}).get("source")
        name = next((k for k, v in SUBSETS.items() if v == source), None)
        qs, golds = item.get("questions"), item.get("answers")
        if name is None or not isinstance(qs, list) or not isinstance(golds, list) or len(qs) != len(golds):
            raise InvalidInputError(f"{path}: data[{i}] is not a FactConsolidation subset (source {source!r})")
        questions = tuple(FactsQuestion(f"{name}/{j}", str(q), tuple(str(a) for a in (g if isinstance(g, list)
                                                                                     else [g])))
                          for j, (q, g) in enumerate(zip(qs, golds, strict=True)))
        out[name] = FactsSubset(name, source, str(item.get("context") or ""), questions)
    if set(out) != set(SUBSETS):
        raise InvalidInputError(f"{path}: expected the subsets {sorted(SUBSETS.values())}, found {sorted(out)}")
    if out["sh"].context != out["mh"].context:
        raise InvalidInputError(f"{path}: the two subsets have different fact lists (one source holds one list)")
    return out


# -- scoring ---------------------------------------------------------------------------------------------------
def normalize(text: str) -> str:
    """Lower case, punctuation removed, articles removed, whitespace collapsed (the benchmark's normalisation)."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def subem(answer: str, golds: Sequence[str]) -> bool:
    """True when any normalised gold string is contained in the normalised answer."""
    got = normalize(answer)
    return any(normalize(g) in got for g in golds if normalize(g))


# -- retrieval ---------------------------------------------------------------------------------------------------
class Fact(Protocol):
    """What the hop loop reads of a retrieved fact (a RenderedMemory, or a test's stand-in)."""

    memory_id: str
    text: str
    source_ids: tuple[str, ...]
    value: str | None


Search = Callable[[str, int], Sequence[Fact]]  # query, k -> facts, best first
About = Callable[[Sequence[str]], Sequence[Fact]]  # subject names -> their current facts


def _overlap(question: set[str], fact: Fact) -> int:
    return len(question & set(tokens(fact.text)))


def chain_facts(question: str, search: Search, about: About, hops: int, k: int = K, width: int = WIDTH,
                limit: int = SHOWN) -> list[Fact]:
    """The facts a reader sees: the chain first (hop by hop), then the rest of the first search.

    Hop 1 is the search with the question (best first); its `width` best facts are the chain's first link. Each
    further hop looks up the facts ABOUT the values of the previous link (the author found in hop 1 is the
    subject of hop 2) and keeps, as its link, the `width` sharing most words with the question (ties: the
    order `about` gave). A hop that finds nothing new ends the chain.
    """
    first = list(search(question, k))
    words = set(tokens(question))
    seen: dict[str, Fact] = {}
    link = first[:width]
    for f in link:
        seen.setdefault(f.memory_id, f)
    for _ in range(1, hops):
        subjects = list(dict.fromkeys(f.value for f in link if f.value))
        found = [f for f in about(subjects) if f.memory_id not in seen] if subjects else []
        if not found:
            break
        ranked = sorted(found, key=lambda f: -_overlap(words, f))  # stable: ties keep `about`'s order
        for f in ranked:
            seen.setdefault(f.memory_id, f)
        link = ranked[:width]
    for f in first:
        seen.setdefault(f.memory_id, f)
    return list(seen.values())[:limit]


def graph_search(service: MemoryService, source: str) -> Search:
    """The product's node search over one source, best first (by the memory's cosine; the search returns its
    top k grouped by clip in clip order)."""
    from m3graph.service.requests import SearchRequest

    def search(query: str, k: int) -> list[Fact]:
        results = service.search_results(SearchRequest(query=query, videos=(source,), mode="node", k=k))
        mems = [m for r in results for m in r.memories]
        return sorted(mems, key=lambda m: -(m.score if m.score is not None else -2.0))

    return search


def graph_about(service: MemoryService, source: str) -> About:
    """The current facts whose subject is one of the names (`MemoryService.facts_about_results`)."""

    def about(subjects: Sequence[str]) -> list[Fact]:
        from m3graph.service.requests import FactsAboutRequest

        return list(service.facts_about_results(FactsAboutRequest(video=source, subjects=tuple(subjects)[:50])))

    return about


def bm25_facts(facts: Sequence[tuple[str, str]], question: str, k: int = K) -> list[tuple[str, str]]:
    """The top-k (id, text) facts by BM25 (k1 1.2, b 0.75), shown in line order."""
    index = BM25([text for _, text in facts], k1=1.2, b=0.75)
    return [facts[i] for i in sorted(index.top(question, k))]


# -- the reader ------------------------------------------------------------------------------------------------
def read(model: ChatModel, question: str, lines: Sequence[str], numbered_note: bool) -> str:
    """The reader's short answer from `lines` (one fact each), at temperature 0."""
    from m3graph.reasoning.llm.base import Message

    system = READER + (ORDER_NOTE if numbered_note else "")
    user = "Facts:\n" + "\n".join(lines) + f"\n\nQuestion: {question}\nAnswer:"
    result = model.chat([Message("system", system), Message("user", user)], max_tokens=MAX_TOKENS, temperature=0.0)
    return " ".join(result.text.strip().splitlines()[:1]).strip()


# -- the run -----------------------------------------------------------------------------------------------------
@dataclass
class FactsReport:
    facts: int = 0
    ingest_s: float | None = None  # None: the source was already stored
    scores: dict[str, dict[str, list[int]]] = field(default_factory=dict)  # subset -> system -> [correct, total]

    def add(self, subset: str, system: str, correct: bool) -> None:
        tally = self.scores.setdefault(subset, {}).setdefault(system, [0, 0])
        tally[0] += int(correct)
        tally[1] += 1

    def ingestion(self) -> str:
        if self.ingest_s is None:
            return f"ingestion: {self.facts} facts already stored (run with --fresh to time it)"
        rate = self.facts / self.ingest_s if self.ingest_s > 0 else float("inf")
        return (f"ingestion: {self.facts} facts in {self.ingest_s:.1f} s ({rate:.1f} facts/s, "
                f"{1000 * self.ingest_s / max(self.facts, 1):.1f} s per 1,000 facts)")

    def table(self) -> str:
        rows = [f"{'subset':<8}{'system':<10}{'correct':>12}{'%':>8}"]
        for subset, systems in self.scores.items():
            for system, (ok, n) in systems.items():
                rows.append(f"{subset:<8}{system:<10}{f'{ok}/{n}':>12}{100 * ok / max(n, 1):>8.1f}")
        return "\n".join(rows)


def ingest_facts(graph: MemoryGraph, settings: Settings, context: str, out_dir: Path, fresh: bool,
                 embedder: Any) -> tuple[list[tuple[str, str]], float | None]:
    """The list written to a file and ingested through `ingest-chat`'s facts path; (facts, seconds or None)."""
    from m3graph.ingest.chat.facts_list import FactsMemorizer
    from m3graph.ingest.chat.formats import load_conversation
    from m3graph.ingest.chat.ingest import ingest_conversation
    from m3graph.ingest.chat.parsing import ReadLimits

    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{SOURCE_ID}.txt"
    path.write_text(context, encoding="utf-8")
    conv, _ = load_conversation(path, "facts", SOURCE_ID, ReadLimits.of(settings.chat))
    facts = [(t.turn_id, t.text) for s in conv.sessions for t in s.turns]
    if fresh and graph.video_exists(SOURCE_ID):
        graph.delete_video(SOURCE_ID)
    t0 = time.perf_counter()
    summary = ingest_conversation(graph, conv, embedder, FactsMemorizer())
    return facts, (time.perf_counter() - t0) if summary.sessions_written else None


Progress = Callable[[dict[str, Any]], None]


def run(settings: Settings, graph: MemoryGraph, subsets: Sequence[FactsSubset], out_dir: Path, limit: int | None,
        fresh: bool = False, progress: Progress | None = None, systems: Sequence[str] = SYSTEMS) -> FactsReport:
    """Ingests the list once, then answers each question with each system; per-question JSONL per subset."""
    from m3graph.embedding import text_embedder
    from m3graph.reasoning.control import Controller
    from m3graph.reasoning.llm import make_chat_model
    from m3graph.service.memory import MemoryService
    from m3graph.service.requests import AskRequest

    unknown = sorted(set(systems) - {*SYSTEMS, "chain"})
    if unknown:
        raise InvalidInputError(f"unknown systems {unknown}: choose among m3graph, baseline, chain")
    embedder = text_embedder(settings)
    facts, seconds = ingest_facts(graph, settings, subsets[0].context, out_dir, fresh, embedder)
    report = FactsReport(facts=len(facts), ingest_s=seconds)
    model = make_chat_model(settings.llm.control, settings.llm.models_dir)
    # The product's controller with the model loaded once for every system (a second copy of the reader would
    # double the memory of the run, nothing else): `ask` runs it exactly as the CLI, MCP and HTTP front ends do.
    service = MemoryService(settings, graph, embedder_factory=lambda: embedder,
                            controller_factory=lambda e, rounds, mode: Controller(model, graph, e, settings,
                                                                                   mode=mode, rounds=rounds))
    search, about = graph_search(service, SOURCE_ID), graph_about(service, SOURCE_ID)
    number = {fid: fid.removeprefix("F") for fid, _ in facts}
    try:
        for subset in subsets:
            with (out_dir / f"facts-{subset.name}.jsonl").open("w", encoding="utf-8") as out:
                for q in subset.questions[:limit]:
                    for system in systems:
                        t0 = time.perf_counter()
                        extra: dict[str, Any] = {}
                        if system == "m3graph":
                            asked = service.ask(AskRequest(question=q.question, videos=[SOURCE_ID]))
                            answer = asked.answer or ""
                            lines = [x for v in asked.evidence.values() for x in v]
                            extra = {"outcome": asked.outcome, "first_round": asked.rounds[0].get("note"),
                                     "rounds": len(asked.rounds)}
                        elif system == "baseline":
                            top = bm25_facts(facts, q.question)
                            lines = [f"{number[i]}. {t}" for i, t in top]
                            answer = read(model, q.question, lines, True)
                        else:
                            shown = chain_facts(q.question, search, about, HOPS[subset.name])
                            lines = [f.text for f in shown]
                            answer = read(model, q.question, lines, False)
                        record = {"id": q.id, "subset": subset.name, "system": system, "question": q.question,
                                  "gold": list(q.answers), "answer": answer, "correct": subem(answer, q.answers),
                                  "shown": lines, "latency_s": round(time.perf_counter() - t0, 2)} | extra
                        report.add(subset.name, system, record["correct"])
                        out.write(json.dumps(record, ensure_ascii=False) + "\n")
                        out.flush()
                        if progress:
                            progress(record)
    finally:
        model.close()
    summary = {"source": SOURCE_ID, "facts": report.facts, "ingest_s": report.ingest_s, "limit": limit,
               "reader": settings.llm.control.model, "k": K, "systems": list(systems), "scores": report.scores}
    (out_dir / "facts-summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    return report


__all__ = ["SUBSETS", "FactsQuestion", "FactsReport", "FactsSubset", "bm25_facts", "chain_facts", "load_benchmark",
           "normalize", "run", "subem"]
