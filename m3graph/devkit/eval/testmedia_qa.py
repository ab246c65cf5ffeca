"""Questions with known answers about the generated test videos (m3graph/devkit/testmedia.py).

M3-Bench needs the released memory graphs, which are not available offline; these questions exercise the same
machinery (ingested memory, controller, judge) end to end on videos whose truth is known exactly. Every question
and answer is derived from the manifest: spoken facts through generic sentence patterns ("The X is on the Y." →
"Where is the X?"), identities from the voice → person map, what is on screen from the shots, clip indexes from
line times. When the manifest changes the questions follow it, and a fact no pattern recognizes yields no
question instead of a wrong one.

Type labels use M3-Bench's vocabulary. A spoken fact about the surroundings is "General Knowledge Extraction"
(M3-Bench's robot questions of that kind, e.g. where things are kept), a preference or an identity is
"Person Understanding", what was seen while something was heard is "Cross-Modal Reasoning". Finer tags
(`single-detail`, `cross-video`, `temporal`, `unanswerable`, ...) say what each question tests beyond that.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from m3graph.devkit.eval.judge import Keyword, contains_phrase, tokenize
from m3graph.devkit.eval.runner import EvalItem
from m3graph.devkit.testmedia import Line, Manifest, VideoSpec

if TYPE_CHECKING:
    from m3graph.graphdb.store import MemoryGraph
    from m3graph.settings import Settings

log = logging.getLogger(__name__)

GK, PU, CM, ME, MH = ("General Knowledge Extraction", "Person Understanding", "Cross-Modal Reasoning",
                      "Multi-Evidence Reasoning", "Multi-Hop Reasoning")
QA_VIDEOS: tuple[str, ...] = ("tm-a", "tm-b")  # the videos the questions are about (tm-silent has no speech)
COLOURS = frozenset({"red", "blue", "green", "yellow", "black", "white", "brown", "orange", "purple", "pink",
                     "grey", "gray"})
NUMBER_WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}
_STOP = frozenset({"a", "an", "the", "at", "on", "in", "near", "of", "for", "to", "is", "more", "some", "early",
                   "today", "tomorrow", "after", "before", "ripe", "fresh"})


@dataclass(frozen=True)
class TestQuestion:
    """A question, its ground truth, and what the keyword judge looks for."""

    __test__ = False  # not a pytest class despite the name

    id: str
    question: str
    answer: str
    types: tuple[str, ...]
    tags: tuple[str, ...]
    videos: tuple[str, ...]
    keywords: tuple[Keyword, ...]  # all groups required; any form within a group suffices
    forbidden: tuple[str, ...] = ()  # words whose presence fails the keyword judge (leaked or opposite facts)
    before_clip: int | None = None
    evidence: tuple[str, ...] = ()  # the manifest lines the answer rests on

    def item(self) -> EvalItem:
        return EvalItem(id=self.id, question=self.question, ground_truth=self.answer, types=self.types,
                        videos=self.videos, before_clip=self.before_clip, keywords=self.keywords,
                        forbidden=self.forbidden, source="testmedia", tags=self.tags)


# ---------------------------------------------------------------------------------------------- spoken facts


@dataclass(frozen=True)
class Fact:
    """A spoken line read by a pattern: the question it answers and the words that carry the answer."""

    kind: str
    question: str
    answer: str
    span: str  # the part of the line that is the answer
    subject: str  # what the question is about (for derived questions)
    types: tuple[str, ...]


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


_Pattern = tuple[str, re.Pattern[str], Callable[[re.Match[str]], tuple[str, str, str, str]], tuple[str, ...]]
_PATTERNS: list[_Pattern] = [
    ("location", re.compile(r"^The (?P<thing>[a-z ]+?) is (?:parked |kept |placed )?"
                            r"(?P<prep>on|in|near|under|behind|next to) the (?P<place>[a-z ]+)\.$", re.I),
     lambda m: (f"Where is the {m['thing']}?", f"{_cap(m['prep'])} the {m['place']}.", m["place"], m["thing"]),
     (GK,)),
    ("placement", re.compile(r"^Please put the (?P<thing>[a-z ]+?) (?P<prep>on|in|near|under|next to) "
                             r"the (?P<place>[a-z ]+)\.$", re.I),
     lambda m: (f"Where should the {m['thing']} be put?", f"{_cap(m['prep'])} the {m['place']}.", m["place"],
                m["thing"]), (GK,)),
    ("reminder", re.compile(r"^Remember to (?P<action>[a-z ]+?) (?P<when>(?:tomorrow|today|tonight)(?: [a-z]+)?)\.$",
                            re.I),
     lambda m: (f"What should be done {m['when']}?", f"{_cap(m['action'])}.", m["action"], m["when"]), (GK,)),
    ("preference", re.compile(r"^My (?:favourite|favorite) (?P<category>[a-z]+) is (?:a |an |the )?"
                              r"(?P<value>[a-z ]+)\.$", re.I),
     lambda m: (f"Which {m['category']} did someone call their favourite?", f"{_cap(m['value'])}.", m["value"],
                m["category"]), (PU,)),
    ("schedule", re.compile(r"^The (?P<thing>[a-z ]+?) (?P<verb>closes|opens|starts|ends|begins) "
                            r"(?P<when>[a-z ]+)\.$", re.I),
     lambda m: (f"When does the {m['thing']} {m['verb'][:-1]}?", f"{_cap(m['when'])}.", m["when"], m["thing"]),
     (GK,)),
    ("need", re.compile(r"^We need (?P<what>[a-z ]+?) for the (?P<purpose>[a-z ]+)\.$", re.I),
     lambda m: (f"What is needed for the {m['purpose']}?", f"{_cap(m['what'])}.", m["what"], m["purpose"]), (GK,)),
    ("purchase", re.compile(r"^I bought (?P<what>[a-z ]+?) at the (?P<place>[a-z ]+)\.$", re.I),
     lambda m: (f"Where was the {m['what']} bought?", f"At the {m['place']}.", m["place"], m["what"]), (GK,)),
]


def read_fact(line: Line) -> Fact | None:
    """The first pattern that reads the line, or None (then the line yields no detail question)."""
    for kind, pattern, build, types in _PATTERNS:
        match = pattern.match(line.text.strip())
        if match is not None:
            question, answer, span, subject = build(match)
            return Fact(kind, question, answer, span, subject, types)
    return None


def answer_keywords(line: Line, span: str) -> tuple[Keyword, ...]:
    """The manifest's key words for the line that fall inside the answer, else the span's content words."""
    words = tokenize(span)
    chosen = [k for k in line.keywords if contains_phrase(words, k)]
    if not chosen:
        chosen = [w for w in words if w not in _STOP] or words
    return tuple((k,) for k in chosen)


def _quote(line: Line) -> str:
    return f'"{line.text.strip()}"'


def _number(n: int) -> Keyword:
    return (NUMBER_WORDS.get(n, str(n)), str(n))


def _mid(line: Line) -> float:
    return (line.start_s + (line.end_s or line.start_s)) / 2


def _yes_no(truth: bool, positive: Sequence[str] = (), negative: Sequence[str] = ()
            ) -> tuple[str, tuple[Keyword, ...], tuple[str, ...]]:
    """Ground truth, key words and forbidden words of a yes/no question. `positive`/`negative` are phrasings
    that say the same without the word yes/no ("the same person", "different people"); negations are
    forbidden in a yes-answer so that "not the same" cannot pass as "same"."""
    if truth:
        return "Yes.", (("yes", *positive),), ("no", "not", *negative)
    return "No.", (("no", "not", *negative),), ("yes",)


# ---------------------------------------------------------------------------------------------- the question set


def build_questions(manifest: Manifest, videos: Sequence[str] = QA_VIDEOS) -> list[TestQuestion]:
    """Every question the manifest supports for `videos`, in a stable order with stable ids."""
    specs = [manifest.video(v) for v in videos]
    out: list[TestQuestion] = []
    facts: list[tuple[VideoSpec, int, Line, Fact]] = []
    for spec in specs:
        for i, line in enumerate(spec.lines):
            fact = read_fact(line)
            if fact is None:
                log.info("%s line %d %r matches no fact pattern: no detail question", spec.source_id, i, line.text)
                continue
            facts.append((spec, i, line, fact))
            out.append(TestQuestion(
                id=f"{spec.source_id}/L{i}/{fact.kind}", question=fact.question, answer=fact.answer, types=fact.types,
                tags=("single-detail",), videos=(spec.source_id,), keywords=answer_keywords(line, fact.span),
                evidence=(line.text,)))
    out += _person_questions(manifest, specs)
    out += _cross_modal_questions(manifest, specs)
    out += _multi_questions(specs, facts)
    out += _temporal_questions(specs, facts)
    return out


def _first_line_by_person(spec: VideoSpec) -> dict[str, Line]:
    firsts: dict[str, Line] = {}
    for line in spec.lines:
        firsts.setdefault(line.person, line)
    return firsts


def _person_questions(manifest: Manifest, specs: Sequence[VideoSpec]) -> list[TestQuestion]:
    """Same speaker across videos (voice and face re-identification), different speakers within a video."""
    out: list[TestQuestion] = []
    firsts = [(spec, _first_line_by_person(spec)) for spec in specs]
    same = next(((a, b, la, lb) for i, (a, fa) in enumerate(firsts) for b, fb in firsts[i + 1:]
                 for person, la in fa.items() if (lb := fb.get(person)) is not None), None)
    if same is not None:
        a, b, la, lb = same
        answer, keys, forbidden = _yes_no(True, ("same",), ("different",))
        out.append(TestQuestion(
            id=f"{a.source_id}+{b.source_id}/same-speaker", types=(PU,), tags=("person", "cross-video"),
            question=f"Was the person who said {_quote(la)} the same person who said {_quote(lb)}?",
            answer=answer, videos=(a.source_id, b.source_id), keywords=keys, forbidden=forbidden,
            evidence=(la.text, lb.text)))
    for spec, first in firsts:
        people = list(first)
        if len(people) >= 2:
            la, lb = first[people[0]], first[people[1]]
            answer, keys, forbidden = _yes_no(False, ("same",), ("different",))
            out.append(TestQuestion(
                id=f"{spec.source_id}/different-speaker", types=(PU,), tags=("person",),
                question=f"Was the person who said {_quote(la)} the same person who said {_quote(lb)}?",
                answer=answer, videos=(spec.source_id,), keywords=keys, forbidden=forbidden,
                evidence=(la.text, lb.text)))
            break
    return out


def _cross_modal_questions(manifest: Manifest, specs: Sequence[VideoSpec]) -> list[TestQuestion]:
    """What was on screen while something was said: needs face and voice memories of the same moment."""
    out: list[TestQuestion] = []
    crowded = next(((s, ln, manifest.on_screen(s.source_id, _mid(ln))) for s in specs for ln in s.lines
                    if len(manifest.on_screen(s.source_id, _mid(ln))) >= 2), None)
    if crowded is not None:
        spec, line, people = crowded
        n = len(people)
        out.append(TestQuestion(
            id=f"{spec.source_id}/on-screen-count", types=(CM,), tags=("cross-modal", "counting"),
            question=f"How many people were on screen when someone said {_quote(line)}?",
            answer=f"{_cap(NUMBER_WORDS.get(n, str(n)))}.", videos=(spec.source_id,), keywords=(_number(n),),
            evidence=(line.text,)))
    # Prefer a line outside the meta-clips: there no single-face/single-voice clip ties the voice to the face.
    meta = {(v, c) for v, c, _ in manifest.meta_clips()}
    lines = [(s, ln) for s in specs for ln in s.lines]
    chosen = next(((s, ln) for s, ln in lines if (s.source_id, ln.clip_index) not in meta), lines[0] if lines else None)
    if chosen is not None:
        spec, line = chosen
        visible = line.person in manifest.on_screen(spec.source_id, _mid(line))
        answer, keys, forbidden = _yes_no(visible, ("visible", "on screen"), ("invisible", "off screen"))
        tags = ("cross-modal", "person") + (() if (spec.source_id, line.clip_index) in meta else ("no-meta-clip",))
        out.append(TestQuestion(
            id=f"{spec.source_id}/speaker-visible", types=(CM, PU), tags=tags,
            question=f"Was the person who said {_quote(line)} visible on screen while saying it?",
            answer=answer, videos=(spec.source_id,), keywords=keys, forbidden=forbidden, evidence=(line.text,)))
    return out


def _multi_questions(specs: Sequence[VideoSpec],
                     facts: Sequence[tuple[VideoSpec, int, Line, Fact]]) -> list[TestQuestion]:
    out: list[TestQuestion] = []
    # Multi-hop across videos: a preference stated in one video, asked about via a line from another video.
    for spec, _, line, fact in facts:
        if fact.kind != "preference":
            continue
        found = next(((s.source_id, ln) for s in specs if s.source_id != spec.source_id for ln in s.lines
                      if ln.person == line.person), None)
        if found is None:
            continue
        other, anchor = found
        out.append(TestQuestion(
            id=f"{other}+{spec.source_id}/preference-of-speaker", types=(PU, MH), tags=("person", "cross-video"),
            question=f"What is the favourite {fact.subject} of the person who said {_quote(anchor)}?",
            answer=fact.answer, videos=tuple(s.source_id for s in specs if s.source_id in (other, spec.source_id)),
            keywords=answer_keywords(line, fact.span), evidence=(anchor.text, line.text)))
        break
    # Multi-evidence: colours of two things mentioned in different clips of one video.
    for spec in specs:
        coloured = [(line, fact) for s, _, line, fact in facts if s is spec and fact.kind == "location"
                    and fact.subject.split()[0].lower() in COLOURS and len(fact.subject.split()) >= 2]
        pair = next(((a, b) for i, a in enumerate(coloured) for b in coloured[i + 1:]
                     if a[0].clip_index != b[0].clip_index), None)
        if pair is None:
            continue
        (la, fa), (lb, fb) = pair
        ca, *na = fa.subject.split()
        cb, *nb = fb.subject.split()
        noun_a, noun_b = " ".join(na), " ".join(nb)
        out.append(TestQuestion(
            id=f"{spec.source_id}/colours", types=(ME,), tags=("multi-evidence",),
            question=f"What colours are the {noun_a} and the {noun_b}?",
            answer=f"The {noun_a} is {ca.lower()} and the {noun_b} is {cb.lower()}.", videos=(spec.source_id,),
            keywords=((ca.lower(),), (cb.lower(),)), evidence=(la.text, lb.text)))
        break
    # Counting speakers needs every clip's voices: evidence spread over the whole video.
    for spec in specs:
        people = {ln.person for ln in spec.lines}
        if len(people) >= 2:
            n = len(people)
            out.append(TestQuestion(
                id=f"{spec.source_id}/speaker-count", types=(PU, ME), tags=("multi-evidence", "counting"),
                question="How many different people speak in this video?",
                answer=f"{_cap(NUMBER_WORDS.get(n, str(n)))}.", videos=(spec.source_id,), keywords=(_number(n),),
                evidence=tuple(ln.text for ln in spec.lines)))
            break
    return out


def _temporal_questions(specs: Sequence[VideoSpec],
                        facts: Sequence[tuple[VideoSpec, int, Line, Fact]]) -> list[TestQuestion]:
    """Asked part-way through a video (before_clip): a fact already said is answerable, a later one is not."""
    out: list[TestQuestion] = []
    multi = [s for s in specs if len(s.clips) >= 2]
    said = next(((s, i, ln, f) for s, i, ln, f in facts if s in multi and f.kind == "location"
                 and ln.clip_index < len(s.clips) - 1), None)
    if said is not None:
        spec, i, line, fact = said
        out.append(TestQuestion(
            id=f"{spec.source_id}/L{i}/{fact.kind}@clip{line.clip_index}", question=fact.question, answer=fact.answer,
            types=fact.types, tags=("temporal", "single-detail"), videos=(spec.source_id,),
            keywords=answer_keywords(line, fact.span), before_clip=line.clip_index, evidence=(line.text,)))
    later = next(((s, i, ln, f) for s, i, ln, f in facts if f.kind == "location" and ln.clip_index >= 1), None)
    if later is not None:
        spec, i, line, fact = later
        leaked = tuple(form for group in answer_keywords(line, fact.span) for form in group)
        out.append(TestQuestion(
            id=f"{spec.source_id}/L{i}/{fact.kind}@clip{line.clip_index - 1}", question=fact.question,
            answer=f"Unknown: by then nothing had been said about where the {fact.subject} is.",
            types=fact.types, tags=("temporal", "unanswerable"), videos=(spec.source_id,), keywords=(),
            forbidden=leaked, before_clip=line.clip_index - 1, evidence=(line.text,)))
    return out


# ---------------------------------------------------------------------------------------------- ingestion


def ensure_ingested(graph: MemoryGraph, settings: Settings, manifest: Manifest, videos: Sequence[str] = QA_VIDEOS,
                    progress: Callable[[str, int, int, str], None] | None = None) -> list[str]:
    """Ingests (perception + memorization, in this process) each video with no finished memory; returns them.

    A video whose clips are all done is left alone; one with missing or unfinished clips (a crash mid-ingest
    leaves a clip without state or memories) is re-run, which the pipeline makes idempotent."""
    from m3graph.embedding import text_embedder
    from m3graph.ingest.pipeline import ingest_video_inprocess
    from m3graph.reasoning.memorize import make_memorizer

    todo = []
    for video in videos:
        clips = graph.ex.read("graph/video_progress", source_id=video)
        if len(clips) < len(manifest.video(video).clips) or any(c.get("status") != "done" for c in clips):
            todo.append(video)
    if todo:
        embedder = text_embedder(settings)
        memorizer = make_memorizer(settings)
        try:
            for video in todo:
                ingest_video_inprocess(graph, embedder, manifest.path(video), video, memorizer=memorizer,
                                       progress=progress)
        finally:
            model = getattr(memorizer, "model", None)  # an LLM memorizer holds model weights until closed
            if model is not None:
                model.close()
    return todo
