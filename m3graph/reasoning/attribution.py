"""Speaker attribution: is an answer about the person the question asks about, or about the other speaker?

LoCoMo's adversarial questions (category 5) ask about one speaker a fact the *other* speaker said about
themself ("What did Caroline realize after her charity race?" when it was Melanie's race); a small reader
answers from the line that matches, whoever said it (0 of 8 abstained on the dev-set sample). Conversation
memories are rendered ``Name <character_K>: text`` (a raw turn: the speaker's name, then their tag), so who said
a line is in the line itself. The rule: the question names exactly one of the speakers seen in the evidence,
the lines that support the answer (those sharing the most of its content words) are all spoken by someone
else, and none of them is about the named person — it does not name them, and it is not addressed to them
("you ..."). Then the memory holds the fact for someone else and the reader abstains.

Measured offline on the dev set's evidence turns (bench/attribution_rule.py, docs/evaluation.md): the rule
fires on most speaker-swapped category-5 questions and on a few percent of answerable ones. A line without a
speaker prefix (video memories, with ``<character_K>`` tags and no names; model-written summaries) is never
attributed, so the rule cannot fire on it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from m3graph.graphdb.speech import SPEAKER_LINE

_WORD = re.compile(r"[a-z0-9]+")
_SECOND_PERSON = re.compile(r"\b(?:you|your|yours|yourself|ya)\b", re.IGNORECASE)
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|me|my|mine|myself)\b", re.IGNORECASE)
# A line about both speakers: what the two did together is as much the listener's as the speaker's ("we both
# went", "you and I", "we both love it"), so it answers a question about either. A bare "we" is not enough: in
# most turns it is the speaker's family or group ("we went camping with the kids"), and "together" or "let's"
# mostly are too: counting them as joint cut the rule's firing on the adversarial questions from 69 to 46 ("we") or
# 65 ("together", "let's") of 112 without lowering it on answerable ones (bench/attribution_rule.py).
_JOINT = re.compile(r"\b(?:both of us|we both|us both|the two of us|you and (?:i|me)|(?:i|me) and you|each other|"
                    r"our friendship)\b", re.IGNORECASE)
_GREETINGS = ("hey|hi|hello|thanks|thank you|thx|yeah|yes|yep|wow|oh|aw|aww|awesome|great|congrats|congratulations|"
              "sorry|sure|ok|okay|well|good|nice|cool|dear|so")
# A question that asks for an inference ("What might John's financial status be?", "Would Melanie be considered
# ...?", "What fields would Caroline be likely to pursue?") asks the reader to reason about the person from
# whatever was said, by anyone; the rule is for facts a line states, so it stays out. LoCoMo's adversarial
# questions are factual questions with the speaker swapped and never hedge this way (none of 112 on the dev set),
# while 18 of its 21 open-domain questions do, and 5 of the 7 false abstentions of the last dev run were theirs.
_INFERENCE = re.compile(r"\b(?:might|would|likely|probably|considered)\b", re.IGNORECASE)


def asks_for_inference(question: str) -> bool:
    """The question hedges ("would", "might", "likely"): it asks the reader to reason, not to find a stated fact."""
    return bool(_INFERENCE.search(question))


_STOP = frozenset(_WORD.findall(
    "a an the is are was were be been being do does did done of in on at to for from by with about and or but what "
    "which who whom whose where when why how that this these those it its there their his her he she they them i "
    "you we my your our me us has have had having any some so as if not no yes just also very really too it's "
    "im ive"))


@dataclass(frozen=True)
class SpokenLine:
    """A memory line split into who said it (None: the line has no speaker prefix) and what was said."""

    speaker: str | None
    body: str


def split_speaker(line: str) -> SpokenLine:
    match = SPEAKER_LINE.match(line)  # "Caroline <character_3>: text" (or <speaker_5> before rendering)
    if match is None:
        return SpokenLine(None, line)
    return SpokenLine(" ".join(match.group("name").split()), match.group("body"))


def _name_pattern(name: str) -> re.Pattern[str]:
    """The full name or the first name, as a whole word ("Caroline", "Caroline's"; not "Carolines")."""
    forms = sorted({name, name.split()[0]}, key=len, reverse=True)
    return re.compile(r"(?<![\w])(?:" + "|".join(re.escape(f) for f in forms) + r")(?:'s|’s)?(?![\w])")


def names(text: str, name: str) -> bool:
    return bool(_name_pattern(name).search(text))


def _vocative_pattern(name: str) -> re.Pattern[str]:
    """The name said *to* the person, set off by punctuation: "Thanks, Caroline!", "Hey Gina, ...", "Yep,
    Melanie!". Speakers greet each other by name in most turns; that names the listener, not what the line is
    about."""
    forms = "|".join(re.escape(f) for f in sorted({name, name.split()[0]}, key=len, reverse=True))
    return re.compile(rf"(?:^|[,.!?;:]\s*|\b(?:{_GREETINGS})[\s,]+)(?:{forms})(?=\s*(?:[,.!?;:]|$))",
                      re.IGNORECASE)


def mentions(text: str, name: str) -> bool:
    """The text names the person other than by addressing them ("Caroline's race", "I told Caroline")."""
    return names(_vocative_pattern(name).sub(" ", text), name)


def person_asked(question: str, speakers: Sequence[str]) -> str | None:
    """The one speaker the question names (full or first name); None when it names none or several."""
    named = [s for s in dict.fromkeys(speakers) if names(question, s)]
    return named[0] if len(named) == 1 else None


_BRACKETED = re.compile(r"\[[^\]]*\]")  # "[shares an image: two people next to each other]": not speech


def joint(body: str) -> bool:
    """The line speaks of the speaker and the listener together ("we both", "you and I", "each other"); what
    is in brackets (an image's caption, a resolved date) is not what was said."""
    return bool(_JOINT.search(_BRACKETED.sub(" ", body).replace("’", "'")))


def is_about(line: SpokenLine, person: str, addressed: bool = True, shared: bool = True) -> bool:
    """A line is about a person when they said it, when it names them other than to address them,
    (``shared``) when it speaks of both speakers ("we went camping", "our trip"), or (``addressed``) when another
    speaker says it to them in the second person without speaking of themself ("you ran a race?")."""
    if line.speaker is None or line.speaker == person or mentions(line.body, person):
        return True
    if shared and joint(line.body):
        return True
    return addressed and bool(_SECOND_PERSON.search(line.body)) and not _FIRST_PERSON.search(line.body)


def content_words(text: str) -> frozenset[str]:
    out = set()
    for word in _WORD.findall(text.lower().replace("'", "")):
        if word in _STOP:
            continue
        out.add(word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word)
    return frozenset(out)


def supporting(answer: str, lines: Sequence[str]) -> list[SpokenLine]:
    """The lines an answer rests on: those whose said text shares the most of the answer's content words (at
    least one); none when no line shares any (a date or a paraphrase: the rule cannot tell, so it stays out)."""
    words = content_words(answer)
    if not words:
        return []
    spoken = [split_speaker(line) for line in lines]
    overlaps = [len(words & content_words(s.body)) for s in spoken]
    best = max(overlaps, default=0)
    return [s for s, n in zip(spoken, overlaps, strict=True) if best and n == best]


@dataclass(frozen=True)
class Misattribution:
    person: str  # whom the question asks about
    speakers: tuple[str, ...]  # who said the supporting lines instead

    def message(self) -> str:
        said = " and ".join(self.speakers)
        return (f"Not in memory: the memory has this from {said}, not {self.person}; "
                f"nothing remembered says it about {self.person}.")


def misattributed(question: str, answer: str, lines: Sequence[str], addressed: bool = True,
                  shared: bool = True) -> Misattribution | None:
    """A `Misattribution` when the answer is supported only by lines that other speakers said about themselves;
    None otherwise (including whenever a supporting line has no speaker, the question names no single speaker
    seen in the lines, or it asks for an inference)."""
    if asks_for_inference(question):
        return None
    speakers = [s.speaker for s in map(split_speaker, lines) if s.speaker]
    person = person_asked(question, speakers)
    if person is None:
        return None
    support = supporting(answer, lines)
    if not support or any(is_about(s, person, addressed, shared) for s in support):
        return None
    return Misattribution(person, tuple(dict.fromkeys(s.speaker for s in support if s.speaker)))
