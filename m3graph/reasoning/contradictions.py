"""Contradictions named: a person who both denied and affirmed something gets both statements back, dated.

Why: asked "Have I ever used X?" about a person who said "I have never used X" in one session and "I set up X last
week" in another, the reader answered a bare "Yes" or "No" (issue 38: 0 of 40 on held-out chats); the right answer
names both statements and asks which holds (BEAM's contradiction-resolution gold answers). The graph marks
`CONTRADICTS` between facts it slots (`m3graph.fact_versions`), but a conversation's turns are never slotted, so
the check runs here over the lines one question was shown. No model, no list of topics:

- a denial is a clause, in a line with a speaker, in which the speaker says of themself "I/we (have) never",
  "I/we haven't / hadn't (ever) VERB-ed" or "I/we don't / didn't VERB" (not a verb of thinking or wanting:
  "I don't know how to X" denies nothing about X; not "yet": "I haven't deployed it yet" is a plan, and its later
  "I deployed it" an update, not a contradiction) and runs to the clause's end; its topic is its content words,
  at least `MIN_SHARED` of them, or one that is a name ("I have never used Rust");
- a sentence that asks ("..., so can you help me ...?") states only what comes before its asking;
- an affirmation is a first-person sentence of another line by the same speaker, not a question, whose clauses
  without a negation hold at least `MIN_SHARED` and at least half of the denial's topic words (stemmed:
  "synchronized" = "synchronize");
- the pair touches the question when the question holds at least `MIN_SHARED` of the words they share.

Finding the denial (`denial_query`, `is_denial`): a conflict is named only when both its lines are shown, and a
denial said in passing inside a long request ("…, since I've never customized the pipeline, can you …") ranks
low for the question's own words. So a yes/no question about the asker's own doing ("Have I ever used X?") is also
searched in the words its denial would use ("I have never used X"), and the lines of that search that hold a
denial (`DENIAL_LINES` at most) join the first round.

Rendering (`conflict_answer`): a yes/no question (or a bare yes/no answer) touching a pair is answered with both
statements, oldest first, each with its date and speaker, and the question which holds. Other questions are left
to the reader, who is shown the pair as a note with the evidence.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date

from m3graph.reasoning.attribution import split_speaker
from m3graph.reasoning.recency import day_of

DENIAL_LINES = 2  # lines holding a denial the denial search adds to the first round
MIN_SHARED = 2  # topic words an affirmation (and a question) must share with a denial
TOPIC_WORDS = 10  # the first content words of a denial that make its topic
QUOTE_CHARS = 160

_WORD = re.compile(r"[a-z0-9][a-z0-9.+#-]*[a-z0-9+#]|[a-z0-9]")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+|```")
_CLAUSE_END = re.compile(r"[,;:.!?()]|\s(?:so|but|which|because|and then|although|though|while|since)\s",
                         re.IGNORECASE)
_NOT_DENYING = (r"know|think|understand|remember|see|get|want|need|mind|care|worry|forget|feel|believe|expect|"
                r"wish|mean|seem|have\s+to|really\s+know|quite|even")
_DENIAL = re.compile(
    r"\b(?:I|we)(?:'ve|’ve|\s+have)?\s+(?:actually\s+|really\s+|just\s+)?(?:"
    rf"(?:never|not\s+ever)\s+(?!(?:{_NOT_DENYING})\b)"
    r"|(?:have|has|had)\s*(?:n't|n’t|\s+not)\s+(?:ever\s+|actually\s+|really\s+)?(?=\w+(?:ed|en|wn|t)\b)"
    rf"|(?:do|did)\s*(?:n't|n’t|\s+not)\s+(?:actually\s+|really\s+|ever\s+)?(?!(?:{_NOT_DENYING})\b))",
    re.IGNORECASE)
_FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'd|me|my|we|we're|we've|our|us)\b|\bI’", re.IGNORECASE)
_ANY_NEGATION = re.compile(r"\b(?:never|not|no|none|nothing|neither|nor|without)\b|n't\b", re.IGNORECASE)
_NAME = re.compile(r"(?<!^)(?<![.!?]\s)\b[A-Z][A-Za-z0-9.+#-]*[A-Za-z0-9+#]")  # a capitalised word not opening it
_YET = re.compile(r"\byet\b", re.IGNORECASE)
_ASKING = re.compile(r"(?:^|[,;:]\s*|\s)(?:(?:so|and|but)\s+)?(?:can|could|would|will|do|does|did|is|are|what|how|why|"
                     r"should|where|which|who)\s+(?:you|i|we|someone|anyone|it|there|this|that|the|my)\b",
                     re.IGNORECASE)
_YES_NO_QUESTION = re.compile(r"^\W*(?:have|has|had|did|do|does|is|are|was|were|am|can|could|will|would)\b",
                              re.IGNORECASE)
_YES_NO_ANSWER = re.compile(r"^\W*(?:yes|no|yeah|nope|not really|never)\b", re.IGNORECASE)
_STOP = frozenset(_WORD.findall(
    "a an the is are was were be been being do does did done of in on at to for from by with about and or but what "
    "which who whom whose where when why how that this these those it its there their his her he she they them i "
    "you we my your our me us has have had having any some so as if not no yes just also very really too it's im "
    "ive i've i'm never ever actually before still yet all any anything something used use using one thing things "
    "way much many more most lot get got make made want need like able sure thing ve can could will would should "
    "might must may last next set up try trying tried"))


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s", "e"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def content(text: str) -> frozenset[str]:
    return frozenset(_stem(w) for w in _WORD.findall(text.lower().replace("’", "'")) if w not in _STOP)


@dataclass(frozen=True)
class Statement:
    label: str
    speaker: str
    sentence: str
    day: date | None


@dataclass(frozen=True)
class Conflict:
    """A denial and an affirmation by one speaker, and the topic words they share."""

    denied: Statement
    affirmed: Statement
    shared: frozenset[str]

    def ordered(self) -> tuple[Statement, Statement]:
        a, b = self.denied, self.affirmed
        return (a, b) if (a.day or date.max) <= (b.day or date.max) else (b, a)


def _sentences(body: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(body) if s and s.strip()]


def _denial_topic(sentence: str) -> frozenset[str] | None:
    match = _DENIAL.search(sentence)
    if match is None:
        return None
    rest = sentence[match.end():]
    end = _CLAUSE_END.search(rest)
    clause = rest[:end.start()] if end else rest
    if _YET.search(clause):
        return None
    words = [w for w in (_stem(x) for x in _WORD.findall(clause.lower())) if w not in _STOP]
    topic = frozenset(words[:TOPIC_WORDS])
    if len(topic) == 1 and _NAME.search(clause):  # "I have never used Rust": one word, but a name
        return topic
    return topic if len(topic) >= MIN_SHARED else None


def _declarative(sentence: str) -> str:
    """What a sentence states: all of it, or, for a question, the statement before the asking ("I've never used X,
    so can you help me ...?" states its first clause); nothing for a plain question."""
    if not sentence.rstrip().endswith("?"):
        return sentence
    ask = _ASKING.search(sentence)
    return sentence[:ask.start()].strip() if ask and ask.start() > 0 else ""


def _affirmed_words(sentence: str) -> frozenset[str]:
    """The content words of a sentence's clauses that hold no negation ("I'm trying to synchronize X, but I'm not
    sure how" affirms its first clause)."""
    words: set[str] = set()
    pos = 0
    for end in [*_CLAUSE_END.finditer(sentence), None]:
        clause = sentence[pos:end.start() if end else len(sentence)]
        if not _ANY_NEGATION.search(clause):
            words |= content(clause)
        pos = end.end() if end else pos
    return frozenset(words)


_ABOUT_ONESELF = re.compile(r"^\W*(?P<aux>have|has|had|did|do|does)\s+(?P<who>I|we)\s+(?:ever\s+)?(?P<rest>[^?]+)",
                            re.IGNORECASE)


def denial_query(question: str) -> str | None:
    """The words a denial of a yes/no question about the asker's own doing would use ("Have I ever used X?" ->
    "I have never used X"; "Did we deploy X?" -> "we never deploy X"), or None for any other question."""
    m = _ABOUT_ONESELF.match(question)
    if m is None:
        return None
    have = m["aux"].lower() in ("have", "has", "had")
    return f"{m['who']} {'have never' if have else 'never'} {m['rest'].strip()}"


def is_denial(line: str) -> bool:
    """Whether a speaker's line holds a denial with a topic (module docstring)."""
    spoken = split_speaker(line)
    return spoken.speaker is not None and any(
        _denial_topic(sentence) is not None for sentence in (_declarative(x) for x in _sentences(spoken.body))
        if sentence)


def conflicts(shown: Sequence[tuple[str, str]], dates: Mapping[str, str]) -> list[Conflict]:
    """Every denial in the shown lines that another shown line of the same speaker affirms."""
    denials: list[tuple[int, Statement, frozenset[str]]] = []
    affirmations: list[tuple[int, Statement, frozenset[str]]] = []
    for i, (label, line) in enumerate(shown):
        spoken = split_speaker(line)
        if spoken.speaker is None:
            continue
        day = day_of(dates.get(label))
        for sentence in (_declarative(x) for x in _sentences(spoken.body)):
            if not sentence:
                continue
            said = Statement(label, spoken.speaker, sentence, day)
            topic = _denial_topic(sentence)
            if topic is not None:
                denials.append((i, said, topic))
            elif _FIRST_PERSON.search(sentence):
                affirmations.append((i, said, _affirmed_words(sentence)))
    out: list[Conflict] = []
    for i, denied, topic in denials:
        best: tuple[int, Statement, frozenset[str]] | None = None
        for j, affirmed, words in affirmations:
            shared = topic & words
            if j == i or affirmed.speaker != denied.speaker:
                continue
            enough = len(shared) >= min(MIN_SHARED, len(topic)) and 2 * len(shared) >= len(topic)
            if enough and (best is None or len(shared) > len(best[2])):
                best = (j, affirmed, shared)
        if best is not None:
            out.append(Conflict(denied, best[1], best[2]))
    return out


def touching(question: str, found: Sequence[Conflict]) -> list[Conflict]:
    """The conflicts the question is about: it holds at least `MIN_SHARED` of their shared words (or all of them,
    when they share fewer)."""
    words = content(question)
    return [c for c in found if len(words & c.shared) >= min(MIN_SHARED, len(c.shared))]


def _quote(s: Statement) -> str:
    when = f"on {s.day.day} {s.day:%B %Y}" if s.day else f"in {s.label}"
    text = s.sentence if len(s.sentence) <= QUOTE_CHARS else s.sentence[:QUOTE_CHARS - 1] + "…"
    return f'{when}, {s.speaker} said "{text}"'


def conflict_note(found: Sequence[Conflict]) -> str | None:
    """The pairs, as the reader is shown them beside the evidence."""
    if not found:
        return None
    lines = ["These statements conflict (one denies what the other affirms):"]
    lines += [f"- {_quote(a)}; {_quote(b)}." for a, b in (c.ordered() for c in found)]
    return "\n".join(lines)


def conflict_answer(question: str, answer: str | None, found: Sequence[Conflict]) -> str | None:
    """Both statements and the question which holds, for a yes/no question (or a bare yes/no answer) touching a
    conflict; None otherwise."""
    hit = touching(question, found)
    if not hit or not (_YES_NO_QUESTION.match(question) or (answer and _YES_NO_ANSWER.match(answer))):
        return None
    first, second = hit[0].ordered()
    return (f"The memory holds conflicting statements: {_quote(first)}; {_quote(second)}. "
            "Which one holds?")
