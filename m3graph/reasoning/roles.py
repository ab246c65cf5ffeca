"""A who-question about whom something is done to, answered with the role or thing the line names (issue 36).

Why: asked "Who should be called tomorrow morning?" over ``<character_7> says: "Remember to call the doctor
tomorrow morning."``, the reader answered with the speaker, "character_7": a who-question reads to a small model
as "which tagged person", while the line's answer is its object, "the doctor". The check, no model:

- the question asks for the one a verb is done to: a passive ("Who should be called ...?", "Who was invited?")
  or a question ending on the verb with another subject ("Who did Mia call?", "Whom does Jon need to visit?");
- the reader's answer is a person of the lines (a tag, or the name of a person tagged in them);
- among the shown lines, those with the verb (any form: call, calls, called, calling) followed by a noun phrase
  that is no person (not a tag, not a pronoun, not a possessive's "my"/"your"/"our": those name people the rule
  cannot tell) are candidates; one object, or the one of the line sharing the most other words with the question,
  is the answer ("the doctor").

Anything else leaves the answer as the reader gave it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_AUX = r"(?:should|must|will|would|can|could|shall|might|may|is|are|was|were|has|have|had|to|needs?|ought)"
_PASSIVE = re.compile(rf"^\W*(?:who|whom)\s+(?:{_AUX}\s+){{0,3}}(?:be|been|being|is|are|was|were|get|gets|got)\s+"
                      r"(?P<verb>[a-z]+)\b", re.IGNORECASE)
_OBJECT_Q = re.compile(r"^\W*(?:who|whom)\s+(?:did|does|do|should|will|must|can|could|would|shall|might)\s+"
                       r"(?P<subject>[\w<>']+(?:\s+[\w<>']+){0,2}?)\s+(?:(?:need|needs|want|wants|have|has|had|plan|plans|planned|try|"
                       r"tries|tried|going|went|hope|hopes)\s+to\s+)?(?P<verb>[a-z]+)\s*\?*\s*$", re.IGNORECASE)
_IRREGULAR = {"met": "meet", "told": "tell", "sent": "send", "seen": "see", "saw": "see", "brought": "bring",
              "taken": "take", "took": "take", "given": "give", "gave": "give", "paid": "pay", "caught": "catch",
              "found": "find", "left": "leave", "chosen": "choose", "chose": "choose", "bought": "buy",
              "taught": "teach", "heard": "hear", "kept": "keep", "thought": "think", "led": "lead", "fed": "feed",
              "held": "hold", "hit": "hit", "let": "let", "put": "put", "read": "read", "sought": "seek",
              "forgotten": "forget", "forgot": "forget", "beaten": "beat", "bitten": "bite", "driven": "drive",
              "drove": "drive", "woken": "wake", "shown": "show", "known": "know", "written": "write"}
# Words that end the object's noun phrase: prepositions, conjunctions, times, verbs' particles.
_STOP = frozenset(_WORD.findall(
    "at in on about for to with from after before when while and or but because so if as by into onto over under "
    "until till tomorrow today tonight yesterday morning afternoon evening night now then later soon again back up "
    "out off first next this that which who please asap right away every each week weekend month year monday "
    "tuesday wednesday thursday friday saturday sunday"))
_PERSON_WORDS = frozenset(_WORD.findall("me you him her us them myself yourself himself herself themselves it "
                                        "my your our his their its someone somebody everyone everybody anyone"))
_DETERMINERS = frozenset(("the", "a", "an", "some", "another"))
_TAG = re.compile(r"<(?:character|face|voice|speaker)_\d+>|\bcharacter[_ ]\d+\b", re.IGNORECASE)
_QUESTION_STOP = frozenset(_WORD.findall("who whom should must will would can could be been being is are was were "
                                         "get got did does do the a an to of"))
OBJECT_WORDS = 4  # at most this many words after a determiner make the object ("the new family doctor")


def patient_verb(question: str) -> str | None:
    """The verb whose object a who-question asks for ("called" in "Who should be called ...?"), else None. A
    passive needs a participle ("Who is Mia's brother?" has none), and one that names ("Who is called Jack?",
    "named") asks for a person."""
    passive = _PASSIVE.match(question)
    if passive is not None:
        verb = passive.group("verb").lower()
        after = question[passive.end():].split()
        if verb in ("named", "called") and after and after[0][:1].isupper():
            return None
        participle = verb.endswith(("ed", "en", "wn")) or verb in _IRREGULAR
        return verb if participle and verb not in _STOP else None
    active = _OBJECT_Q.match(question)
    verb = active.group("verb").lower() if active else None
    return verb if verb and verb not in _STOP and verb not in _QUESTION_STOP else None


def _bases(word: str) -> set[str]:
    """The forms a verb's base may have, read off one form ("called" -> call; "invited" -> invite, invit)."""
    w = word.lower()
    out = {w}
    if w in _IRREGULAR:
        out.add(_IRREGULAR[w])
    for suffix in ("ing", "ed", "es", "s", "en", "d"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            stem = w[: -len(suffix)]
            out |= {stem, stem + "e"}
            if len(stem) > 3 and stem[-1] == stem[-2]:
                out.add(stem[:-1])  # "planned" -> plan
            if stem.endswith("i"):
                out.add(stem[:-1] + "y")  # "married" -> marry
    return out


def _object_after(words: list[str], start: int) -> str | None:
    phrase: list[str] = []
    for word in words[start:start + 1 + OBJECT_WORDS]:
        if word in _STOP:
            break
        if not phrase and word in _PERSON_WORDS:
            return None
        phrase.append(word)
    if not phrase or (phrase[0] in _DETERMINERS and len(phrase) == 1):
        return None
    return " ".join(phrase)


def objects(verb: str, line: str) -> list[str]:
    """The noun phrases the verb takes in the line ("call the doctor tomorrow" -> "the doctor"); a tagged or
    pronoun object is no role, so it gives nothing."""
    bases = _bases(verb)
    text = _TAG.sub(" someone ", line.lower().replace("’", "'"))
    words = _WORD.findall(text)
    out = []
    for i, word in enumerate(words):
        if word not in bases and not (_bases(word) & bases):
            continue
        found = _object_after(words, i + 1)
        if found:
            out.append(found)
    return out


def _overlap(question: str, line: str) -> int:
    words = {w for w in _WORD.findall(question.lower()) if w not in _QUESTION_STOP}
    return len(words & set(_WORD.findall(line.lower())))


def names_a_person(answer: str, people: Sequence[str]) -> bool:
    """The answer is a tag or holds the name of someone the lines tag."""
    return bool(_TAG.search(answer)) or any(
        re.search(rf"(?<!\w){re.escape(p)}(?!\w)", answer, re.IGNORECASE) for p in people if p)


def role_answer(question: str, answer: str, lines: Sequence[str], people: Sequence[str] = ()) -> str | None:
    """The role or thing the question's verb is done to, where the reader answered with a person instead; None
    when the rule does not apply or the lines do not single one out."""
    verb = patient_verb(question)
    if verb is None or not names_a_person(answer, people):
        return None
    scored = [(_overlap(question, line), obj) for line in lines for obj in objects(verb, line)]
    if not scored:
        return None
    best = max(s for s, _ in scored)
    chosen = {obj for s, obj in scored if s == best}
    if len(chosen) != 1:
        return None
    found = chosen.pop()
    if found in answer.lower():
        return None
    return found[:1].upper() + found[1:]
