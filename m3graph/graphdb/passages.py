"""A shared file's best passages for a query, best first, in place of all of them (issue 39).

Why: a document shared in a chat is stored as one surrogate memory per passage, all in the session's clip. A clip
search showed the clip's memories in clip order, so a 40-page manual's hundreds of passages came in page order
under the one clip and the reader's line cap kept the first pages; node search attached a hit file's *first*
passage. Now, when the results reach a file (a shown memory is one of its passages, or the turn that shared it),
that file's passages are ranked inside the file by the product's hybrid fusion (`cypher/search/file_passages`:
vector cosine floored and normalised, plus BM25 over the file's own passages) and only its best `per_file` are
shown, best first, where its passages were; the first of them carries at least the score of the hit that reached
the file, so the reader's cap, which keeps the best-scored lines, applies after this ranking. Passages shown in
an earlier round are left out (`exclude`), so asking again about the same file shows its next-best passages.

Each passage says where it is: its header (written at ingestion, `ingest.chat.attachments`) names the file, the
page and the heading path, and `cite_as` turns that header into the citation an answer gives ("lease.pdf, p. 4").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from m3graph.graphdb.excerpts import EXCERPT_CHARS, excerpt
from m3graph.graphdb.executor import Executor
from m3graph.graphdb.search import render_memory
from m3graph.graphdb.search_plan import to_index_score
from m3graph.graphdb.types import ClipResult, RenderedMemory
from m3graph.settings import Settings

# Passages shown per reached file and search; the reader's cap (12 lines) keeps room for the rest. 4, not 3: on the
# real-document set the answering passage ranked 4th in the file for 2 of 47 questions, one in each half, and the 4th
# passage costs about 150 prompt tokens (devkit/eval/real_docs_shown.py, docs/files.md).
PER_FILE = 4
MAX_FILES = 8  # files ranked per search (the best-reached first)
MAX_TERMS = 24
# Lucene's English stop words plus question words: they say nothing about which passage answers.
_STOP_WORDS = ("a an and are as at be but by for if in into is it no not of on or such that the their then there "
               "these they this to was will with what which who whom whose when where why how does did do done can "
               "could would should i you he she we me my your his her our its from about any all some have has had "
               "been being were am")
_STOP = frozenset(_STOP_WORDS.split())
_WORD = re.compile(r"[a-z0-9][a-z0-9'\-]*[a-z0-9]|[a-z0-9]")
_HEADER = re.compile(r"^\[file (?P<name>.+?), (?P<kind>[a-z]+)(?:, page (?P<page>\d+))?(?:, (?P<section>[^\]]*?))?"
                     r", shared by [^\]]*\]")


def may_reach_file(text: str) -> bool:
    """Whether a shown memory's text may be a file's passage (``[file NAME, ...``) or a turn that shared one
    (``[shares a file: NAME]``, ingest.chat): only then is the file ranking's read worth running (it finds out
    for certain; a chat line that merely says so costs one read that finds nothing)."""
    return text.startswith("[file ") or "[shares a file" in text


def stem(word: str) -> str:
    """A light English stem (plural and -ing/-ed endings), so "payments" and "paid rent" meet "payment", "rent";
    matched as a substring of the lower-cased passage."""
    for suffix, keep in (("ies", "y"), ("sses", "ss"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) + len(keep) >= 4 and not word.endswith("ss"):
            return word[: len(word) - len(suffix)] + keep
    return word


def terms(query: str) -> list[str]:
    """The query's words as the in-file BM25 matches them: lower case, without stop words, stemmed, distinct."""
    words = [stem(w.strip("'-")) for w in _WORD.findall(query.lower())]
    return list(dict.fromkeys(w for w in words if len(w) >= 3 and w not in _STOP))[:MAX_TERMS]


@dataclass(frozen=True)
class Cite:
    """Where a file passage is: the file's name, its page (PDF) and heading path, from the passage's header."""

    name: str
    page: int | None = None
    section: str | None = None

    def __str__(self) -> str:
        return f"{self.name}, p. {self.page}" if self.page else self.name


def cite_of(text: str) -> Cite | None:
    """The citation of a file passage's text (``[file lease.pdf, document, page 4, 2 Rent, shared by Ann] ...``),
    None for any other memory. A photo's or audio file's surrogate names the file alone."""
    m = _HEADER.match(text)
    if m is None:
        return None
    section = m.group("section")
    if section and (section.startswith(("0:", "1:", "2:", "3:", "4:", "5:", "6:", "7:", "8:", "9:"))
                    or re.fullmatch(r"\d+:\d{2}-\d+:\d{2}", section)):
        section = None  # an audio utterance's time, not a heading
    return Cite(m.group("name"), int(m.group("page")) if m.group("page") else None, section or None)


def cite_as(text: str) -> str | None:
    """"lease.pdf, p. 4" for a file passage's text (with its heading: "lease.pdf, p. 4 (2 Rent)"), else None."""
    c = cite_of(text)
    if c is None:
        return None
    return f"{c} ({c.section})" if c.section else str(c)


def answer_citations(answer: str | None, lines: Sequence[str]) -> list[str]:
    """The citations of the shown file passages an answer rests on, best first: a passage holds every number of
    the answer and at least half of its other content words (stemmed). For the trace of an answer ("three months"
    -> "lease.pdf, p. 4 (4 Termination and notice)"); [] when no file passage holds it."""
    if not answer:
        return []
    words = terms(answer)
    numbers = [w for w in words if any(ch.isdigit() for ch in w)]
    plain = [w for w in words if w not in numbers]
    if not words:
        return []
    found: list[tuple[float, int, str]] = []
    for i, line in enumerate(lines):
        cited = cite_as(line)
        if cited is None:
            continue
        body = line.split("]", 1)[-1].lower()
        if not all(n in body for n in numbers):
            continue
        share = sum(w in body for w in plain) / len(plain) if plain else 1.0
        if share >= 0.5:
            found.append((-share, i, cited))
    return list(dict.fromkeys(c for _, _, c in sorted(found)))


@dataclass
class Ranked:
    """What `rank_in_results` did: the results, and the passages it put in (their ids and citations, best first
    per file)."""

    results: list[ClipResult]
    shown: list[str] = field(default_factory=list)
    citations: list[str] = field(default_factory=list)


def rank_in_results(ex: Executor, settings: Settings, results: Sequence[ClipResult], vector: Sequence[float],
                    query: str, videos: Sequence[str] | None, before_clip: int | None, k: int = PER_FILE,
                    exclude: Sequence[str] = (), excerpt_chars: int | None = EXCERPT_CHARS) -> Ranked:
    """The results with each reached file's passages replaced by its best `k` for the query (the module's
    docstring), in one read (`search/file_passages`); results that reach no file come back as they were. A passage
    longer than `excerpt_chars` is shown as its part that matches the query (`excerpts.excerpt`; None: whole)."""
    hits = sorted((m for r in results for m in r.memories), key=lambda m: -(m.score if m.score is not None else -2.0))
    if not hits:
        return Ranked(list(results))
    words = terms(query)
    rows = ex.read("search/file_passages", ids=[m.memory_id for m in hits], max_files=MAX_FILES,
                   videos=list(videos) if videos else None, before_clip=before_clip,
                   query=[float(x) for x in vector], terms=words,
                   min_score=to_index_score(settings.search_floor), vector_weight=settings.search_vector_weight,
                   k=k, exclude=list(exclude))
    if not rows:
        return Ranked(list(results))
    surrogate = {i for r in rows for i in r["surrogates"]}
    out = Ranked([])
    extra: dict[tuple[str, int], list[RenderedMemory]] = {}
    clip_rows: dict[tuple[str, int], dict[str, Any]] = {}
    for r in rows:
        reach = hits[r["first"]].score  # the best-ranked memory that reached the file
        for i, p in enumerate(r["passages"]):
            s = p["cos"]
            if i == 0 and reach is not None and (s is None or reach > s):
                s = reach  # the file's best passage is as relevant as the hit that reached the file
            key = (p["source_id"], p["clip_index"])
            memory = render_memory(p, s)
            if excerpt_chars is not None and len(memory.text) > excerpt_chars:
                memory = memory.model_copy(update={"text": excerpt(memory.text, words, excerpt_chars)})
            extra.setdefault(key, []).append(memory)
            clip_rows.setdefault(key, p)
            out.shown.append(p["memory_id"])
            cited = cite_as(p["text"])
            if cited:
                out.citations.append(cited)
    placed: set[tuple[str, int]] = set()
    for clip in results:
        key = (clip.source_id, clip.clip_index)
        kept = [m for m in clip.memories if m.memory_id not in surrogate]
        if key in extra:
            kept += extra[key]
            placed.add(key)
        if kept:
            out.results.append(clip.model_copy(update={"memories": kept}))
    for key, memories in extra.items():  # a file shared in a clip the search did not show
        if key not in placed:
            row = clip_rows[key]
            started = row["started_at"]
            out.results.append(ClipResult(source_id=key[0], clip_index=key[1], start_s=row["start_s"],
                                          end_s=row["end_s"], memories=memories, score=memories[0].score,
                                          started_at=started.to_native() if hasattr(started, "to_native")
                                          else started))
    return out


__all__ = ["PER_FILE", "Cite", "Ranked", "answer_citations", "cite_as", "cite_of", "may_reach_file", "rank_in_results",
           "terms"]
