"""A question's premise checked against memory: a name the question gives that nothing remembered mentions.

Why: LoCoMo's adversarial questions (category 5) are built by swapping one thing in a true question ("What did Jon
take a trip to Barcelona for?" where he went to Rome; "Where is Gina's HR internship?" where it was in fashion).
The lines a search shows for such a question are the true story's, and a small reader answers from them ("Rome").
When the question names something (a capitalised name that does not start a sentence: "Barcelona", "HR", "Shia
Labeouf") that no memory in the question's scope holds, the memory cannot hold the answer, and the controller
says so before any model call: "Not in memory: nothing remembered mentions Barcelona."

The check is one read of the memory full-text index (`cypher/search/named_terms_found.cypher`), one escaped,
quoted term per word of each name, counted in the question's scope (sources, `before_clip`). Questions that ask for an
inference ("Would Melanie enjoy Vivaldi?") name things the memory need not hold and are left alone
(`attribution.asks_for_inference`). Measured on the LoCoMo dev set (`python -m bench.premise_check`): see
docs/evaluation.md.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterable, Sequence

from m3graph.dates import MONTH_NAMES
from m3graph.graphdb.executor import Executor
from m3graph.graphdb.query_text import FILE_KINDS, FILE_MIMES, lucene_phrase
from m3graph.reasoning.attribution import asks_for_inference
from m3graph.statements import spelled_out

# A word that starts with a capital and holds only letters (an acronym "HR" too), possibly with an apostrophe
# or hyphen inside ("O'Brien", "Jean-Paul"); a trailing possessive is dropped.
_NAME = re.compile(r"^[A-Z][A-Za-z]*(?:['’-][A-Za-z]+)*$")
_POSSESSIVE = re.compile(r"['’]s$")
_WORDS = re.compile(r"[a-z]+(?:['’-][a-z]+)*")  # a shown line's words, lowercased, as a name is matched to them
_SENTENCE_OPEN = re.compile(r"[\"“‘(\[]")
_SENTENCE_CLOSE = re.compile(r"[.?!:;]['\"”’)\]]*$")
# Not names: "I", months, weekdays, and the words that name a kind or type of file ("the PDF", "a Word document":
# a shared file's memory names the file, "report.pdf", which the index keeps as one word).
_NOT_NAMES = frozenset({"i", *(m.lower() for m in MONTH_NAMES), *(d.lower() for d in calendar.day_name),
                        *FILE_KINDS, *FILE_MIMES})
_TITLES = frozenset({"mr.", "mrs.", "ms.", "dr.", "st.", "prof.", "jr.", "sr."})  # "Dr. Seuss": not a sentence end
_PUNCT = "\"“”‘’'()[],;:?!."
_CLOSERS = ",;:?!.\"”’)]"
NAMES_CHECKED = 6  # names looked up per question; a question naming more is checked for its first six
WORDS_CHECKED = 12  # words of those names looked up (one query holds them all); a word past them is not checked
HIT_CAP = 2000  # full-text hits read per word; a word held more often than that counts as mentioned


def named_things(question: str) -> list[str]:
    """The names a question gives, in order, each a run of capitalised words ("Shia Labeouf") that does not start
    the question or a quoted sentence; month and weekday names and "I" are not names."""
    out: list[str] = []
    run: list[str] = []
    starts = True  # the next word starts a sentence: the question's own, or one it quotes
    for raw in question.split():
        if raw.lower() in _TITLES:  # not a name itself, and the name after it does not start a sentence
            out, run, starts = out + [" ".join(run)] if run else out, [], False
            continue
        quoted = bool(_SENTENCE_OPEN.match(raw))
        word = _POSSESSIVE.sub("", raw.strip(_PUNCT))
        name = not (starts or quoted) and bool(_NAME.match(word)) and word.lower() not in _NOT_NAMES
        if name:
            run.append(word)
        ends = not name or raw.rstrip(_CLOSERS) != raw or bool(_POSSESSIVE.search(raw))
        if ends and run:  # punctuation or a possessive closes a name
            out.append(" ".join(run))
            run = []
        starts = bool(_SENTENCE_CLOSE.search(raw)) or (quoted and not word)
    if run:
        out.append(" ".join(run))
    return list(dict.fromkeys(out))


def unmentioned(ex: Executor, question: str, videos: Sequence[str] | None, before_clip: int | None,
                shown: Iterable[str] = ()) -> list[str]:
    """The names the question gives that no memory in scope mentions (empty for an inference question). A word
    in one of the `shown` lines (memories of the same scope, as the reader saw them) needs no lookup."""
    if asks_for_inference(question):
        return []
    names = named_things(question)[:NAMES_CHECKED]
    if not names:
        return []
    # Each word of a name is looked up alone: "Is Oscar Melanie's pet?" runs two names together, and a name
    # whose words are all mentioned is not a premise the memory lacks.
    words = list(dict.fromkeys(w for n in names for w in n.split()))[:WORDS_CHECKED]
    seen = {w for line in shown for w in _WORDS.findall(line.lower())}
    ask = [w for w in words if w.lower() not in seen]
    if not ask:
        return []
    # An abbreviation is mentioned when its expansion is ("CEO" where the facts say "chief executive officer").
    terms = [{"term": w, "query": lucene_phrase(q)} for w in ask for q in (w, spelled_out(w)) if q]
    rows = ex.read("search/named_terms_found", terms=terms, videos=list(videos) if videos else None,
                   before_clip=before_clip, cap=HIT_CAP)
    absent = set(ask) - {r["term"] for r in rows if r["found"]}
    return [n for n in names if absent.intersection(n.split())]


def not_mentioned_message(names: Sequence[str]) -> str:
    said = " or ".join(names)
    return f"Not in memory: nothing remembered mentions {said}."
