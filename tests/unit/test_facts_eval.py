"""FactConsolidation's pieces without a model or a database: SubEM scoring, the BM25 baseline's selection, the
benchmark loader and the multi-hop chain over a fake search and lookup."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from m3graph.devkit.eval.facts import bm25_facts, chain_facts, load_benchmark, normalize, subem
from m3graph.errors import InvalidInputError, NotFoundError


def test_subem_normalises_case_punctuation_articles_and_space() -> None:
    assert normalize("  The  Pesäpallo, of course! ") == "pesäpallo of course"
    assert subem("Pesäpallo.", ["pesäpallo"])
    assert subem("It is played in the United States.", ["United States"])
    assert subem("washington dc", ["Washington, D.C."])
    assert subem("An apple", ["apple"]) and subem("apple", ["An apple"])
    assert not subem("baseball", ["pesäpallo"])
    assert not subem("Bel", ["Belgium"])  # the gold must be inside the answer, not the other way round
    assert not subem("anything", ["the"])  # a gold that normalises to nothing matches nothing
    assert subem("Rodez", ["Paris", "Rodez"])


def test_bm25_picks_the_matching_facts_and_shows_them_in_line_order() -> None:
    facts = [("F0", "Ann lives in Oslo."), ("F1", "Bob plays chess in Paris."), ("F2", "Carl paints."),
             ("F3", "Ann lives in Bergen."), ("F4", "The capital of Norway is Oslo.")]
    top = bm25_facts(facts, "Where does Ann live?", k=2)
    assert top == [("F0", "Ann lives in Oslo."), ("F3", "Ann lives in Bergen.")]
    assert bm25_facts(facts, "chess", k=5) == [("F1", "Bob plays chess in Paris.")]  # no match, no fact
    assert bm25_facts(facts, "zebra", k=3) == []


def _bench(tmp_path: Path, sources: Sequence[str], contexts: Sequence[str] | None = None) -> Path:
    contexts = contexts or ["Here is a list of facts:\n0. Ann lives in Oslo."] * len(sources)
    data = {"subsets": list(reversed(sources)), "data": [
        {"context": c, "questions": [f"q of {s}?"], "answers": [[f"gold of {s}"]], "metadata": {"source": s}}
        for s, c in zip(sources, contexts, strict=True)]}
    (tmp_path / "factconsolidation_6k.json").write_text(json.dumps(data), encoding="utf-8")
    return tmp_path


def test_the_loader_tells_subsets_apart_by_their_source(tmp_path: Path) -> None:
    bench = load_benchmark(_bench(tmp_path, ["factconsolidation_mh_6k", "factconsolidation_sh_6k"]))
    assert bench["sh"].source == "factconsolidation_sh_6k" and bench["mh"].source == "factconsolidation_mh_6k"
    assert bench["sh"].questions[0].question == "q of factconsolidation_sh_6k?"
    assert bench["mh"].questions[0].answers == ("gold of factconsolidation_mh_6k",)
    assert bench["mh"].questions[0].id == "mh/0"
    swapped = load_benchmark(_bench(tmp_path, ["factconsolidation_sh_6k", "factconsolidation_mh_6k"]))
    assert swapped["sh"].questions[0].question == "q of factconsolidation_sh_6k?"


def test_the_loader_refuses_what_it_cannot_use(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError):
        load_benchmark(tmp_path)
    with pytest.raises(InvalidInputError, match="not a FactConsolidation subset"):
        load_benchmark(_bench(tmp_path, ["factconsolidation_sh_6k", "something_else"]))
    with pytest.raises(InvalidInputError, match="expected the subsets"):
        load_benchmark(_bench(tmp_path, ["factconsolidation_sh_6k"]))
    with pytest.raises(InvalidInputError, match="different fact lists"):
        load_benchmark(_bench(tmp_path, ["factconsolidation_sh_6k", "factconsolidation_mh_6k"], ["0. a b.", "0. c."]))


@dataclass(frozen=True)
class F:
    memory_id: str
    text: str
    subject: str
    value: str | None

    @property
    def source_ids(self) -> tuple[str, ...]:
        return (self.memory_id,)


FACTS = [F("F1", "The author of Our Mutual Friend is Charles Dickens.", "Our Mutual Friend", "Charles Dickens"),
         F("F2", "Charles Dickens is married to Ellen Ternan.", "Charles Dickens", "Ellen Ternan"),
         F("F3", "Charles Dickens was born in the city of Portsmouth.", "Charles Dickens", "Portsmouth"),
         F("F4", "Ellen Ternan is a citizen of Belgium.", "Ellen Ternan", "Belgium"),
         F("F5", "Ellen Ternan plays the violin.", "Ellen Ternan", "violin"),
         F("F6", "Belgium is located in the continent of Europe.", "Belgium", "Europe"),
         F("F7", "The author of Bleak House is Charles Dickens.", "Bleak House", "Charles Dickens")]


def _search(results: Sequence[F]) -> tuple[list[tuple[str, int]], object]:
    calls: list[tuple[str, int]] = []

    def search(query: str, k: int) -> list[F]:
        calls.append((query, k))
        return list(results)[:k]

    return calls, search


def _about(asked: list[tuple[str, ...]]) -> object:
    def about(subjects: Sequence[str]) -> list[F]:
        asked.append(tuple(subjects))
        return [f for f in FACTS if f.subject in subjects]

    return about


def test_the_chain_follows_values_hop_by_hop_and_puts_the_chain_first() -> None:
    question = "What is the country of citizenship of the spouse of the author of Our Mutual Friend?"
    calls, search = _search([FACTS[0], FACTS[6], FACTS[4]])
    asked: list[tuple[str, ...]] = []
    shown = chain_facts(question, search, _about(asked), hops=3, k=3, width=1)  # type: ignore[arg-type]
    assert calls == [(question, 3)]
    assert asked == [("Charles Dickens",), ("Ellen Ternan",)]  # width 1: the first of equally good facts leads on
    assert [f.memory_id for f in shown] == ["F1", "F2", "F3", "F4", "F5", "F7"]

    born = "Which city was the author of Our Mutual Friend born in?"
    asked = []
    shown = chain_facts(born, search, _about(asked), hops=3, k=3, width=1)  # type: ignore[arg-type]
    assert asked == [("Charles Dickens",), ("Portsmouth",)]  # the fact sharing "city" and "born" leads on
    assert [f.memory_id for f in shown][:3] == ["F1", "F3", "F2"]

    asked = []
    shown = chain_facts(question, search, _about(asked), hops=3, k=3, width=2)  # type: ignore[arg-type]
    assert asked == [("Charles Dickens",), ("Ellen Ternan", "Portsmouth")]  # one subject asked once
    assert [f.memory_id for f in shown] == ["F1", "F7", "F2", "F3", "F4", "F5"]  # F4 (Belgium) reached in hop 3


def test_one_hop_is_the_search_alone_and_the_limit_holds() -> None:
    calls, search = _search(FACTS)
    asked: list[tuple[str, ...]] = []
    shown = chain_facts("Who wrote Bleak House?", search, _about(asked), hops=1, k=5, limit=3)  # type: ignore[arg-type]
    assert asked == [] and [f.memory_id for f in shown] == ["F1", "F2", "F3"]


def test_a_hop_without_values_or_new_facts_ends_the_chain() -> None:
    no_value = F("F9", "Something unparsed.", "", None)
    calls, search = _search([no_value])
    asked: list[tuple[str, ...]] = []
    assert [f.memory_id for f in chain_facts("q?", search, _about(asked), hops=3)] == ["F9"]  # type: ignore[arg-type]
    assert asked == []
    calls, search = _search([FACTS[5]])  # Belgium -> Europe, and nothing is about Europe
    assert [f.memory_id for f in chain_facts("q?", search, _about(asked), hops=3)] == ["F6"]  # type: ignore[arg-type]
    assert asked == [("Europe",)]
