"""Statements from speech: what a chat turn says about its speaker, read by `m3graph.statements` (no model).

Why a rewrite and not a second grammar: the slot a statement lands in decides which older fact it retires, so
speech must land in exactly the slots third-person memories use ("Nora moved to Porto" written by a memorizer
and "I moved to Porto" said by Nora are one slot). A turn is therefore turned into third-person sentences ("I"
→ the speaker's name, "my" → "Nora's", "you" → the addressee) and each sentence goes through
`statements.parse_statement`, with its forms, markers (`negated`, `changed`) and keys unchanged. A sentence the
rewrite or the parser cannot read stays free text (the turn itself is always kept).

What is read, per turn (`read_turn(text, speaker, addressee)`):
- sentences split on . ! ; and " - "; questions are dropped;
- a sentence's clauses split where "and/but/so/plus" starts a new subject ("I moved to Porto and I work at
  Farfetch" → two statements); a clause that is not an assertion (if, unless, would, can, will, wish, hope,
  maybe, I'd, I'll, gonna, ...) is dropped, the clauses beside it stand; leading interjections ("Yeah,",
  "Oh wow,") and vocatives ("Hey John,") go, and a comma-spliced second clause (", 'cause ...", ", it ...") is cut;
- first person: I/me/myself → the speaker, my → the speaker's, I'm/I am → "is", I've/I have → "has"; perfect
  tense reads as past ("I have never used Rust" → "Nora never used Rust"), "used to V" as "no longer V"
  (negated, changed), a progressive of a verb the parser knows as its simple form ("I'm using X" → "uses X");
- second person (you/your) → the addressee, only when the session has exactly two speakers (`addressee` given);
- he/she/it starting a clause → the subject of the previous statement read in the same turn, when that subject
  is neither the speaker nor the addressee (the only unambiguous antecedent the rules can see);
- a trailing time or frequency phrase ("last month", "every day", "for a while now") is cut from the value.
Refused: we/us/our (a group is not the speaker), mine/yours; a statement whose subject is not the rewritten
person or one thing of theirs ("Nora", "Nora's sister"; the guard against "Nora used to" or "John's friends look"
read as names); a value that is a pronoun, a clause, a prepositional phrase or a degree word ("love it", "love
how ...", "read about ...", "has such a caring heart"); a one-word judgement after a possessive ("your words are
encouraging"); "had ..." and perfect-tense events read as possession ("had a good time", "has built ..."); and
everything `parse_statement` refuses (among them the inverse "Ana is my manager" and unknown verbs).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from m3graph.statements import MULTI_VERBS, Statement, parse_statement


@dataclass(frozen=True)
class SpokenStatement:
    """One statement read from a turn, with the third-person sentence it was read from (what gets stored)."""

    sentence: str  # "Nora moved to Porto." — `parse_statement(sentence)` gives `statement`
    statement: Statement
    person: str  # the rewritten person the subject starts with: the speaker, the addressee or a named antecedent


_NOT_ASSERTED = re.compile(
    r"\b(?:if|unless|would|wish|hope|hopefully|maybe|perhaps|suppose|imagine|wonder|gonna|gotta|wanna|"
    r"going to|let's|let me|lemme|can|cannot|can't|should|could|might|must|may|will|won't|shall)\b|"
    r"\b(?:I|you|we|they|he|she|it)'(?:d|ll)\b", re.I)
_GROUP = re.compile(r"\b(?:we|us|our|ours|ourselves|we're|we've|we'd|we'll|mine|yours|y'all)\b", re.I)
_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\s+[-–—]\s+|\n+")
_CLAUSE = re.compile(r",?\s+(?:and|but|so|plus)\s+(?=(?:I|I'm|I've|I am|my|My|you|your|he|she|it)\b)")
_LEADING = re.compile(
    r"^(?:(?:yeah|yes|yep|yup|yea|nope|no|oh|ooh|wow|whoa|well|so|hey|hi|hello|ok|okay|actually|honestly|btw|"
    r"by the way|anyway|also|and|but|plus|haha|lol|sure|right|cool|great|guess what|thanks|thank you|"
    r"fun fact|funny enough|to be honest)\b[,!.:]?\s+)+", re.I)
_TRAILING = re.compile(
    r"(?:,?\s+(?:last|this|next) (?:week|month|year|summer|winter|spring|fall|autumn|weekend|night)|"
    r",?\s+(?:yesterday|today|right|you know|recently|lately|again|too|as well|"
    r"every (?:day|week|month|year|morning|night)|"
    r"daily|weekly|a lot|all the time|for a while(?: now)?|since \w+|(?:a|one|two|three|a few|a couple of|\d+) "
    r"(?:days?|weeks?|months?|years?) ago)|\s*[!.]+|\s+(?:lol|haha)|\s*[\U0001F300-\U0001FAFF\u2600-\u27BF]+)+$",
    re.I)
_ADVERBS = r"(?:really|just|also|actually|totally|absolutely|definitely|truly|finally|recently|even|always|usually)"
_PRONOUN_START = re.compile(r"^(?:he|she|it)(?:'s| is| was| has)?\b", re.I)
_BASE_VERBS = {*MULTI_VERBS, "work", "live", "reside", "come"}  # "Nora work at" → "Nora works at"
_PRONOUN_VALUE = re.compile(r"^(?:it|that|this|them|him|her|those|these|one|some|something|everything|there)\b", re.I)
# "Caroline's courage is inspiring": a judgement, not a value (a one-word adjective after a possessive's "is")
_JUDGEMENT = re.compile(r"^(?:so |really |very |truly |pretty |super |just )*(?:[a-z]+(?:ing|ed|ful|ous|ive|ble|some|"
                        r"ic|al|y|est|less)|hit|great|cool|nice|good|bad)\b")
# "had a good time", "has built ...": an event or a perfect tense, not a possession
_EVENT_HAVE = re.compile(r"^(?:had|been|come|gone|[a-z]+(?:ed|en|wn)|built|put|got|made|done|lost|found|left|kept|"
                         r"seen|met|felt|heard|learnt|taught|brought|thought)\b")
_PROGRESSIVE = {f"{v.removesuffix('e')}ing": v for v in (*MULTI_VERBS, "work", "live") if v != "have"}
# a value that is a clause or a prepositional phrase, not a thing: "love how it ...", "read about ..."
_NOT_A_VALUE = re.compile(r"^(?:how|what|that|when|where|why|who|whether|about|with|for|on|at|in|into|to|from|of|"
                          r"through|over|around|up|out|off|been|got|gotten|done|made|gone|had|a bit|so|such|very|"
                          r"really)\b", re.I)


def _third_person(verb: str) -> str:
    if verb == "have":
        return "has"
    if re.search(r"(?:s|sh|ch|x|o)$", verb):
        return verb + "es"
    if re.search(r"[^aeiou]y$", verb):
        return verb[:-1] + "ies"
    return verb + "s"


def _rewrite_person(clause: str, person: str, first: bool) -> str:
    """The clause with the first (or second) person replaced by `person`."""
    if first:
        subject_forms = (r"I am|I'm", r"I've|I have", r"I was", r"I")
        possessive, objects = r"[Mm]y", r"\b(?:me|myself)\b"
    else:
        subject_forms = (r"[Yy]ou are|[Yy]ou're", r"[Yy]ou've|[Yy]ou have", r"[Yy]ou were", r"[Yy]ou")
        possessive, objects = r"[Yy]our", r"\b(?:you|yourself)\b"
    verbs = ("is", "has", "was", "")
    for form, verb in zip(subject_forms, verbs, strict=True):
        clause = re.sub(rf"(?<![\w'])(?:{form})(?![\w'])", f"{person} {verb}".rstrip(), clause)
    clause = re.sub(rf"(?<![\w']){possessive}\b", f"{person}'s", clause)
    clause = re.sub(objects, person, clause)
    return clause


def _simple_tense(sentence: str, person: str) -> str:
    """Tenses the parser reads: perfect → past, "used to V" → "no longer V", progressive → simple."""
    p = re.escape(person)
    out = re.sub(rf"^({p}(?:'s [a-z ]+?)?) {_ADVERBS} ", r"\1 ", sentence)
    out = re.sub(rf"^({p}) has been (?=[a-z]+ing\b)", r"\1 is ", out)
    out = re.sub(rf"^({p}) (?:has|have)( never| not| no longer| already)? (?!been\b)(?=[a-z]+(?:ed|en|wn)\b)",
                 r"\1\2 ", out)
    out = re.sub(rf"^({p})( never| no longer)? ([a-z]+)\b", lambda m: m.group(1) + (m.group(2) or "") + " "
                 + (_third_person(m.group(3)) if m.group(3) in _BASE_VERBS else m.group(3)), out)
    out = re.sub(rf"^({p}) do(?= not\b|n't\b)", r"\1 does", out)
    used = re.match(rf"^({p}) used to ([a-z]+)\b(.*)$", out)
    if used:
        out = f"{used.group(1)} no longer {_third_person(used.group(2))}{used.group(3)}"
    progressive = re.match(rf"^({p}) (?:is|was) ([a-z]+ing)\b(.*)$", out)
    if progressive and progressive.group(2) in _PROGRESSIVE:
        verb = _PROGRESSIVE[progressive.group(2)]
        out = f"{progressive.group(1)} {_third_person(verb)}{progressive.group(3)}"
    return out


def _clauses(text: str, names: Sequence[str]) -> list[str]:
    """A turn's assertive clauses, interjections and vocatives taken off; questions and hypotheticals dropped."""
    text = re.sub(r"\s*\[[^\]]*\]", "", text.replace("\u2019", "'"))  # "[shares an image: ...]"
    out = []
    for sentence in _SENTENCE.split(text.strip()):
        sentence = sentence.strip()
        if not sentence or sentence.endswith("?"):
            continue
        for clause in _CLAUSE.split(sentence):
            if _NOT_ASSERTED.search(clause):  # a hypothetical or intended clause; the clauses beside it stand
                continue
            for name in names:  # "Hey John, I moved ..." / "... to Porto, John"
                clause = re.sub(rf"^(?:(?:hey|hi|oh|so|yeah|wow|thanks),?\s+)?{re.escape(name)}[,!]\s+", "", clause,
                                flags=re.I)
                clause = re.sub(rf",\s+{re.escape(name)}[.!]*$", "", clause)
            clause = _LEADING.sub("", clause.strip(" ,"))
            if clause:
                out.append(clause[0].upper() + clause[1:] if clause[:2] not in ("I ", "I'") else clause)
    return out


def read_clause(clause: str, speaker: str, addressee: str | None, antecedent: str | None = None
                ) -> SpokenStatement | None:
    """One clause as a statement about the speaker, the addressee or `antecedent`, or None."""
    if _GROUP.search(clause):
        return None
    person: str | None = None
    text = clause
    if re.search(r"(?<![\w'])(?:I|I'm|I've|[Mm]y|me|myself)(?![\w'])", text):
        person, text = speaker, _rewrite_person(text, speaker, True)
    if re.search(r"(?<![\w'])(?:[Yy]ou|[Yy]our|[Yy]ou're|[Yy]ou've|yourself)(?![\w'])", text):
        if addressee is None:
            return None
        person = person or addressee
        text = _rewrite_person(text, addressee, False)
    if person is None and antecedent is not None and _PRONOUN_START.match(text):
        person = antecedent
        text = re.sub(r"^(?:he|she|it)(?:'s)?", lambda m: antecedent + (" is" if m.group(0).endswith("'s") else ""),
                      text, flags=re.I)
    if person is None or not text.startswith(person):
        return None  # the subject must be the rewritten person: "Nora" or "Nora's manager"
    sentence = _TRAILING.sub("", _simple_tense(text, person)).strip()
    sentence = re.sub(r",\s+(?:it|this|that|he|she|they|which|who|so|'cause|cause|as|since|and|but)\b.*$|"
                      r" and (?:[a-z]+ed|met|went|got|had|made|saw|took|did)\b.*$", "", sentence)  # a second clause
    got = parse_statement(sentence)
    if got is None or not (got.subject == person or re.fullmatch(rf"{re.escape(person)}'s [a-z]+", got.subject)):
        return None  # the person or one thing of theirs ("Nora's sister"), not "John's friends look"
    purpose = re.match(r"^(.+?) (?:to|in order to|so that) [a-z]+\b", got.value)
    if purpose and not got.functional:  # "uses X to catch Y": the thing used is X
        sentence = sentence[:len(sentence) - len(got.value)] + purpose.group(1)
        got = parse_statement(sentence)
        if got is None:
            return None
    if _NOT_A_VALUE.match(got.value) or _PRONOUN_VALUE.match(got.value):
        return None  # an auxiliary, a degree word, a clause or a pronoun read as a value
    rest = sentence[len(person):].split()
    if got.attribute_key == "have" and rest and (rest[0] == "had" or _EVENT_HAVE.match(
            " ".join(w for w in rest[1:] if w not in ("always", "never", "just", "already", "really")))):
        return None
    if rest and rest[0].startswith("'s") and _JUDGEMENT.match(got.value):
        return None  # "Nora's courage is inspiring": a judgement, not a value
    return SpokenStatement(sentence + ".", got, person)


def read_turn(text: str, speaker: str, addressee: str | None = None) -> list[SpokenStatement]:
    """Every statement one turn makes, in order (see the module docstring for what is read)."""
    names = [n for n in (speaker, addressee) if n]
    out: list[SpokenStatement] = []
    antecedent: str | None = None
    for clause in _clauses(text, names):
        found = read_clause(clause, speaker, addressee, antecedent)
        if found is None:
            continue
        out.append(found)
        antecedent = None if found.statement.subject in names else found.statement.subject
    return list({s.sentence: s for s in out}.values())
