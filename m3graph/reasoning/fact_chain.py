"""Multi-hop questions over facts: the values of the best facts become the subjects of the next hop (no model).

"What is the country of citizenship of the spouse of the author of Our Mutual Friend?" needs three facts, and only
the first ("The author of Our Mutual Friend is Charles Dickens") shares words with the question: the spouse's fact
is about Dickens, the citizenship about the spouse, and neither is near the question for a vector or a full-text
search. A small reader writing the next query itself rarely names the right person (FactConsolidation 6K,
multi-hop, 1.5B reader: 2 of 100 from BM25 alone). The graph already holds the hops: each fact with a slot is
ABOUT the thing it is about and NAMES the thing its value names (`facts/link_things`, keyed by normalised name
within the source), so a fact's value is the subject of the next one.

The step (`follow`), run by the controller (`control.py`) right after its automatic first search with the
question, before the reader's first step:
1. the first search again, as the round showed it (the same request, node mode), its hits best first by cosine;
   the `WIDTH` best are the chain's first link;
2. each further hop takes the facts ABOUT what the link's facts NAME (`facts/next_hop`), shown as the search
   shows facts: the current version (so the newer of a changed fact is the one followed), the one valid at the
   question's "as of", every version for a question about the past; never one said after the question's clip;
3. those facts are ranked by the question's content words they state (`relevance`: in their text or their slot's
   attribute, a word's stem matching: "citizenship" finds "citizen of"; ties: event order), all of them join
   the chain in that order, and the `WIDTH` best are the next link; a hop that finds nothing new ends the chain,
   and at most `HOPS` searches are chained.

It fires only when a first-link fact NAMES a thing another fact is ABOUT: questions over conversations and video,
whose best hits are turns and events without a slot, or facts whose values nothing else is about, see exactly
what they saw before. When it fires the reader sees the chain first (path by path, `Chain.lines`), then the rest
of the first search, within the round's cap of lines, and below them `CHAIN_NOTE`. A question that does not fire
keeps its prompt byte for byte: the same note for unchained questions whose best hits are facts ("trust the lines
over what you know") measured no better on FactConsolidation single-hop (30 such questions: one more right, one
more wrong), so it was left out. Measured through `m3graph eval facts` (the product's `ask` path).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from m3graph.embedding import query_embed
from m3graph.graphdb import facts
from m3graph.graphdb.query_text import STOP_WORDS
from m3graph.graphdb.types import RenderedMemory
from m3graph.reasoning.memory_tools import MemoryTools
from m3graph.service.search import run_search, version_view

HOPS = 3  # searches chained: the first search and two hops (three facts: X -> author -> spouse -> citizenship)
WIDTH = 2  # facts per link whose values become the next hop's subjects
PER_FACT = 20  # facts read about one value at most
# Told to the reader below the results of a question whose facts were chained (and only then: every other prompt
# is unchanged). The 1.5B reader shown the right chain still answered from what it knows of the world ("Which faith
# is the partner of Laura Bush associated with?": "Christianity", the chain ending in "Anglicanism").
CHAIN_NOTE = ("The first lines are a chain of facts: what one line names, the next one is about. Follow them from "
              "what the question names to what it asks, and trust the lines over what you know.")
_WORD = re.compile(r"\w+", re.UNICODE)


def content_words(text: str) -> set[str]:
    """Lowercase words without stop words: what a hop's facts are ranked by against the question."""
    return {w for w in _WORD.findall(text.lower()) if w not in STOP_WORDS}


def _same_word(a: str, b: str) -> bool:
    """Equal, or one word's stem begins the other ("citizen"/"citizenship", "religion"/"religious"): a shared
    start of at least 5 letters and 70% of the shorter word."""
    if a == b:
        return True
    shared = len(os.path.commonprefix((a, b)))
    return shared >= 5 and shared >= 0.7 * min(len(a), len(b))


def relevance(question_words: set[str], m: RenderedMemory) -> int:
    """How many of the question's content words a fact states: in its text or in its slot's attribute, which the
    statement parser folded to one word per relation ("is married to" -> "spouse", `m3graph.statements`), so
    "the spouse of Charles Darwin" finds "Charles Darwin is married to Amala Paul"."""
    attribute = m.slot.split(" · ")[1] if m.slot and m.slot.count(" · ") >= 1 else ""
    words = content_words(f"{m.text} {attribute}")
    return sum(any(_same_word(q, w) for w in words) for q in question_words)


@dataclass(frozen=True)
class ChainFact:
    """One fact of the chain, as the reader is shown it (its clip label and line) and the hop that found it."""

    hop: int  # 1: the first search; 2, 3: the facts about the previous link's values
    memory: RenderedMemory
    label: str
    line: str
    parent: str | None = None  # the memory id of the link fact whose value this fact is about (None: hop 1)


@dataclass
class Chain:
    """The links found for one question; `fired` when at least one hop past the first search found a fact."""

    facts: list[ChainFact] = field(default_factory=list)

    @property
    def fired(self) -> bool:
        return any(f.hop > 1 for f in self.facts)

    def lines(self) -> list[tuple[str, str]]:
        """The chain as the reader reads it: path by path, each fact followed at once by the facts about its
        value ("X's author is A", "A is married to B", "B is a citizen of C", then A's other facts), starting
        from the first search's best fact. Shown hop by hop instead (every first fact, then every fact about
        their values), the second best first fact's path cut the right one in two and the 1.5B reader answered
        from the wrong one ("Mike D'Antoni plays the position of point guard", "Tunisia national football team
        is associated with the sport of basketball", "point guard is associated with the sport of cricket", ...)."""
        children: dict[str | None, list[ChainFact]] = {}
        for f in self.facts:
            children.setdefault(f.parent, []).append(f)
        out: list[tuple[str, str]] = []
        todo = list(reversed(children.get(None, [])))
        while todo:
            f = todo.pop()
            out.append((f.label, f.line))
            todo.extend(reversed(children.get(f.memory.memory_id, [])))
        return out

    def note(self) -> str:
        hops = max((f.hop for f in self.facts), default=1)
        return (f"facts chained through their values: {hops - 1} hop{'s' if hops > 2 else ''}, "
                f"{sum(f.hop > 1 for f in self.facts)} facts about the values of the best ones")


def reader_line(tools: MemoryTools, m: RenderedMemory) -> str:
    """A fact as the reader sees it in a search result (`memory_tools`: dates resolved in place, a superseded
    version marked, a tagged person named)."""
    line = m.times.insert(m.text)
    if m.current is False and m.superseded:
        line = f"{line} ({m.superseded})"
    return tools.names.line(line) if tools.names is not None else line


def _first_hits(tools: MemoryTools, question: str, k: int) -> list[tuple[str, RenderedMemory]]:
    """The first search with the question (the round's request, node mode), hits best first by cosine."""
    embed = query_embed(tools.embedder)
    results = run_search(tools.search, lambda q: [float(x) for x in embed([q])[0]],
                         tools.request(question, "node", k))
    hits = [(r.source_id, m) for r in results for m in r.memories]
    return sorted(hits, key=lambda h: -(h[1].score if h[1].score is not None else -2.0))


def _next_hop(tools: MemoryTools, question: str, link: Sequence[ChainFact]
              ) -> list[tuple[str, RenderedMemory, str]]:
    """(video, fact, the link fact it was reached from) ABOUT what the link's facts NAME, visible as the
    question's search shows facts (`graphdb.facts.next_hop`); a fact about the values of two link facts comes
    once, from the first."""
    view = version_view(tools.search, tools.request(question, "node", 1))
    found = facts.next_hop(tools.search.ex, [f.memory.memory_id for f in link], tools.before_clip, view.params(),
                           PER_FACT)
    for video, m, _, day in found:
        if day is not None:  # a dated source: the reader sees each line's date, as for the search's own clips
            tools.dates.setdefault(tools.label(video, m.clip_index), f"{day.day} {day:%B %Y}")
    return [(video, m, parent) for video, m, parent, _ in found]


def follow(question: str, tools: MemoryTools, k: int, hops: int = HOPS, width: int = WIDTH) -> Chain:
    """The chain for one question (see the module docstring); `k`: the first search's depth (the round's)."""
    chain = Chain()
    first = _first_hits(tools, question, k)
    link = [ChainFact(1, m, tools.label(video, m.clip_index), reader_line(tools, m)) for video, m in first[:width]
            if m.value]
    if not link:
        return chain
    chain.facts.extend(link)
    seen = {f.memory.memory_id for f in link}
    words = content_words(question)
    for hop in range(2, hops + 1):
        found = [h for h in _next_hop(tools, question, link) if h[1].memory_id not in seen]
        if not found:
            break
        ranked = sorted(found, key=lambda h: -relevance(words, h[1]))  # stable: ties keep event order
        found_now = [ChainFact(hop, m, tools.label(video, m.clip_index), reader_line(tools, m), parent)
                     for video, m, parent in ranked]
        seen.update(f.memory.memory_id for f in found_now)
        chain.facts.extend(found_now)
        link = found_now[:width]
    return chain if chain.fired else Chain()
