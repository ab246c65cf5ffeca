"""Statements as slots: who or what a fact is about, which attribute it states, and its value (no model).

Why deterministic: the offline memorization model (0.5B) was measured splitting statements into subject,
attribute and value at 1.3 s per statement and misaligned a third of a batch of 40 (docs/evaluation.md, "Facts
that change"); a fact's slot decides which older fact it retires, so a wrong slot hides a true fact. The rules
here read plain declarative English; a statement they cannot read returns None and stays free text (nothing is
lost, it only never supersedes anything).

`parse_statement(text)` → `Statement | None`. Two statements share a slot when their `slot_key`s are equal:
the normalised subject and attribute, plus the normalised value for attributes that may hold several values at
once (`functional` False: "Ann likes mangoes" and "Ann likes apples" are two slots, so neither retires the
other; only "Ann no longer likes mangoes" does).

Forms read (leftmost relation phrase wins; anything else is None):
- "The A of S is V" ("The capital of Italy is Rome"; "The name of the current head of state in S"; "the head of
  the S government"; "The headquarters of S is located in the city of V" → attribute "headquarters located in").
  The attribute is cut at the first "of"/"in" unless it is a known compound ("head of state", "chief of staff").
  A capitalised title ("The Wheel of Time was written in ..." / "... is a novel") is read as a subject instead.
- "The A that S verbs is V" (subject first: "The type of music that John McVie plays") and "The A that verbs S
  is V" (verb first: "The company that produced Ford F-Series").
- "S's A is V" (possessive noun; "Marco's dog is called Biscuit" → subject "Marco's dog", attribute "name"); an
  attribute holding "and"/"or" is two subjects, not an attribute ("Jon's studio and other schools are ...").
- "S <relation> V" from a fixed table: was born/died/founded/created in, was founded/written/performed by,
  is associated/affiliated with the sport/religion of, is a citizen of, is employed by, is married to, is famous
  for, speaks/plays the language/position of, lives in, moved/relocated to, works as/at/for/in, is called,
  is from, became, and preference/possession verbs (likes, loves, has, owns, visits, plays, speaks, ...).
- "S is N years old" (attribute "age"), "S is a/an N" (attribute "be", not functional).

`functional`: True for the "the A of S" and possessive forms (a singular definite noun states one value) and for
the relation table's one-value relations (born in, married to, lives in, works as, employed by, citizen of, the
"the sport/position/language of" forms, ...); False for preference/possession verbs and "is a N" (Jon can be a
teacher and a father). Unknown active verbs are not read at all.

Markers: `negated` for not/n't/never/no longer; `changed` for now, no longer, anymore/any more, nowadays, these
days, moved/relocated to, became. The markers are taken out before the form is read, so "Ann does not like
mangoes anymore" lands in the slot of "Ann likes mangoes".

Keys: names are lowercased, tags unwrapped ("<face_3>" → "face_3"), a leading article and the sentence-final
period dropped (inner ones kept: "Washington, D.C.." → "washington, d.c."; "Apple Inc." keeps its period);
words written all in lowercase fold their plural ("mangoes" = "mango"). Attributes lose auxiliaries, articles,
"current" and place fillers ("born in the city of" = "born in"); category fillers keep their noun ("associated
with the sport of" → "associated with sport", so a sport is never compared with a religion); verbs and plurals
fold ("likes" → "like", "headquarters" → "headquarter"), "favorite/color" → "favourite/colour", and synonyms
map to one key: married to/husband/wife → "spouse", lives in/resides in/moved to/relocated to → "live in",
works at/for → "employed by", called/named → "name", CEO → "chief executive officer".

None (stays free text): questions, turn lines ("Ann <speaker_3>: ..."), first or second person (a chat turn's
"I"/"my"/"you" are rewritten into the speaker or addressee by `m3graph.speech_statements`, which then calls
this parser: one grammar for both), pronoun subjects
(he/she/they/my sister: unresolved), several subjects ("Ann and Bob"), sentences with a second clause (but,
because, said that, "and Bob lives ..."), a remaining "not", modal or future verbs, and any form not listed.
Not read yet: the inverse "Stockholm is the capital of Sweden", "S switched to V", "S is in V".
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Statement:
    subject: str  # as written: "Apple Inc.", "<face_3>", "Mia"
    attribute: str  # as written: "chief executive officer", "favourite fruit", "likes"
    value: str  # as written: "Tim Cook", "mango"
    negated: bool = False  # "Ann does not like mangoes", "Bob is no longer married to Eve"
    changed: bool = False  # the statement itself marks a change: "now", "no longer", "anymore", "moved to", ...
    functional: bool = True  # the attribute holds one value at a time (a new value retires the old one)

    @property
    def subject_key(self) -> str:
        return normalise_name(self.subject)

    @property
    def attribute_key(self) -> str:
        return normalise_attribute(self.attribute)

    @property
    def value_key(self) -> str:
        return normalise_name(self.value)

    @property
    def slot_key(self) -> str:
        base = f"{self.subject_key} · {self.attribute_key}"
        return base if self.functional else f"{base} · {self.value_key}"


_ARTICLES = {"a", "an", "the"}
_PRONOUNS = {"i", "me", "my", "mine", "we", "us", "our", "you", "your", "he", "him", "his", "she", "her", "they",
             "them", "their", "it", "its", "this", "that", "these", "those", "there", "here", "someone", "everyone"}
_FIRST_SECOND = {"i", "me", "my", "mine", "we", "us", "our", "ours", "you", "your", "yours", "i'm", "i've", "we're"}
# plain words that tell a clause, not a name ("Remember that Ann", "Ann or Bob")
_NOT_IN_NAMES = {"and", "or", "but", "who", "which", "when", "where", "if", "not", "please", "remember", "tell"}
_ABBREVIATION = re.compile(r"(?:\b(?:[A-Za-z]\.){2,}|\b(?:Inc|Jr|Sr|Ltd|Co|Corp|St|Dr|Mr|Mrs|Ms|Bros)\.)$")
_TAG = re.compile(r"<([a-z]+_\d+)>")
_CLAUSE_BREAK = re.compile(
    r";|\?|!|:|\n|\b(?:but|because|although|though|while|whereas|if|when|said|says|told|tells|thinks?|thought|"
    r"believes?|wants?|wanted|hopes?|plans?|planning|going to|will|would|might|may|should|could)\b|,\s*(?:and|but|so)\b"
    r"|\band\s+(?:he|she|they|it|i|we|you|also|then|is|was|has|had|lives|works|likes|loves|moved)\b")
_PLACE_FILLER = re.compile(r"\b(in|to|from|of) (?:the )?(?:city|town|village|country|continent|state|region) of\b")
_PLACE_WORDS = r"(?: the (?:city|town|village|country|continent|state|region) of)?"
_ATTRIBUTE_SYNONYMS = {
    "married to": "spouse", "husband": "spouse", "wife": "spouse", "married": "spouse", "engaged to": "fiancé",
    "ceo": "chief executive officer", "reside in": "live in", "living in": "live in", "live": "live in",
    "moved to": "live in", "relocated to": "live in", "work at": "employed by", "work for": "employed by",
    "employed at": "employed by", "hired by": "employed by", "called": "name", "named": "name", "known as": "name",
    "come from": "from", "became": "be",
}
_MULTI_VERBS = ("like", "love", "enjoy", "hate", "dislike", "prefer", "own", "visit", "play", "collect", "speak",
                "know", "study", "teach", "drive", "use", "watch", "read", "eat", "drink", "support", "follow",
                "attend", "adore", "fear", "have")
_IRREGULAR = {"has": "have", "had": "have", "spoke": "speak", "taught": "teach", "ate": "eat", "drank": "drink",
              "knew": "know", "drove": "drive", "studies": "study", "studied": "study", "preferred": "prefer"}


def _verb_forms(verb: str) -> set[str]:
    stem = verb.removesuffix("e")
    return {verb, verb + "s", verb + "es", stem + "ed", verb + "d"}


MULTI_VERBS = _MULTI_VERBS  # the preference/possession verbs (speech_statements reads their progressives)
_LEMMA = {form: v for v in _MULTI_VERBS for form in _verb_forms(v)} | _IRREGULAR
_MULTI_PATTERN = "|".join(sorted((re.escape(f) for f in _LEMMA), key=len, reverse=True))
# relation phrases that follow the subject: (phrase, functional, changed); leftmost match wins, then list order
_RELATIONS: tuple[tuple[str, bool, bool], ...] = (
    (rf"(?:is|was|are|were) (?:located|based|headquartered) in{_PLACE_WORDS}", True, False),
    (rf"(?:is|was|were) (?:born|raised) in{_PLACE_WORDS}", True, False),
    (rf"died in{_PLACE_WORDS}", True, False),
    (rf"(?:is|was|were) (?:founded|created|established|formed) in{_PLACE_WORDS}", True, False),
    (r"(?:is|was|were) (?:founded|created|written|composed|performed|directed|produced|invented|designed|"
     r"developed|painted|sung|built) by", True, False),
    (r"(?:is|was) (?:associated|affiliated) with the [a-z]+ of", True, False),
    (r"(?:is|was) (?:a )?citizen of", True, False),
    (r"(?:is|was) (?:employed|hired) (?:by|at)", True, False),
    (r"(?:is|was) (?:married|engaged) to", True, False),
    (r"(?:is|was) famous for", True, False),
    (r"(?:speaks?|plays?|worked in|works? in|(?:is|was) written in) the [a-z]+ of", True, False),
    (r"(?:lives?|lived|resides?|is living) in", True, False),
    (r"(?:moved|relocated) to", True, True),
    (r"(?:works?|worked) (?:as|at|for|in)", True, False),
    (r"(?:is|was) (?:called|named|known as)", True, False),
    (r"(?:is|was|comes?) from", True, False),
    (r"became", False, True),
    (rf"(?:{_MULTI_PATTERN})", False, False),
)
_RELATION = re.compile(" ({}) ".format("|".join(f"(?:{p})" for p, _, _ in _RELATIONS)))
_RELATION_PARTS = [(re.compile(f"(?:{p})"), f, c) for p, f, c in _RELATIONS]
_COMPOUND = r"head of state|head of government|chief of staff|secretary of state|place of birth|date of birth"
_OF_FORM = re.compile(rf"^the (?:name of the )?(?:current )?((?:{_COMPOUND})|[^,]+?) (?:of|in) (.+)$", re.I)
_RELATIVE = re.compile(r"^the ([a-z ]+?) (?:that|where|which|who) (.+)$", re.I)
_POSSESSIVE = re.compile(r"^(.+?)'s ([a-z][a-z ]{1,40}?) (?:is|are|was|were|has changed to|changed to) (.+)$")


def _fold_word(word: str) -> str:
    if word in _LEMMA:
        return _LEMMA[word]
    if len(word) < 4 or word in {"this", "does", "was"}:
        return word
    if word.endswith("ies"):
        return word[:-3] + "y"
    if re.search(r"(?:ch|sh|x|ss|o)es$", word):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def normalise_name(text: str) -> str:
    """A subject or value as a key: tags unwrapped, lowercase, no leading article or sentence-final mark."""
    out = re.sub(r"\s+", " ", _TAG.sub(r"\1", text.replace("\u2019", "'"))).strip().strip("\"'").strip()
    if out.endswith("..") or out.endswith(".") and not _ABBREVIATION.search(out):  # "D.C.." → "D.C."
        out = out[:-1]
    out = out.rstrip(",;:!? ").lower()
    words = out.split(" ")
    if len(words) > 1 and words[0] in _ARTICLES:
        words = words[1:]
    if text.strip() == text.strip().lower() and "<" not in text:  # plain words fold plurals: "mangoes" = "mango"
        words = [_fold_word(w) for w in words]
    return " ".join(words)


def normalise_attribute(text: str) -> str:
    """An attribute as a key: no auxiliaries, articles or place fillers; verbs and plurals folded; synonyms mapped."""
    out = re.sub(r"\s+", " ", text.replace("\u2019", "'").lower()).strip(" .,")
    out = re.sub(r"\b(?:current|currently|now|still|also|has been|have been)\b", " ", out)
    out = _PLACE_FILLER.sub(r"\1", out)
    out = re.sub(r"\b(sport|religion|language|position|field|genre) of$", r"\1", out)
    out = out.replace("favorite", "favourite").replace("color", "colour")
    stop = _ARTICLES | {"is", "are", "was", "were", "be", "been", "does", "do", "did"}
    out = " ".join(_fold_word(w) for w in out.split() if w not in stop)
    return _ATTRIBUTE_SYNONYMS.get(out, out) or "be"


def _is_name(text: str) -> bool:
    """A subject as names are written: an entity tag, capitalised words with links, or a few plain lowercase words."""
    if re.fullmatch(r"<[a-z]+_\d+>", text):
        return True
    definite = text.lower().startswith("the ")
    text = text[4:] if definite else text
    owner = re.fullmatch(r"(.+)'s( [a-z]+){1,2}", text)  # "Marco's dog"
    if owner:
        return _is_name(owner.group(1))
    words = text.split()
    if not words or len(words) > 10 or " and " in f" {text} " or words[0].lower() in _PRONOUNS and (
            len(words) == 1 or not words[1][0].isupper()):  # "My sister" is not a name, "Our Mutual Friend" is
        return False
    plain = [w for w in words if w == w.lower() and w[0].isalpha() and "'" not in w]
    if any(w in _PRONOUNS | _NOT_IN_NAMES for w in plain):
        return False
    if text == text.lower():  # lowercase subjects: "quarterback", "split-finger fastball"
        return len(words) <= 3 and len(plain) == len(words)
    if definite and words[-1][0].isupper():  # "the imaginary Zentia"
        return all(w.lower() not in _PRONOUNS for w in words)
    # a capitalised name may hold plain words ("Slovakia national football team", "Rand al'Thor")
    return words[0][0].isupper() or words[0][0].isdigit()


def _is_value(text: str) -> bool:
    """A value is a short phrase with no second relation in it ("mangoes and Bob lives in Lisbon" is two)."""
    words = text.split()
    subject_pronouns = {"i", "we", "you", "he", "she", "they"}
    return 0 < len(words) <= 12 and not _RELATION.search(f" {text} ") and words[0].lower() not in subject_pronouns


def _markers(text: str) -> tuple[str, bool, bool]:
    """Take negation and change words out of the sentence; the rest must read as a plain statement."""
    negated = changed = False
    out = text
    if re.match(r"^(?:now|nowadays|these days),? ", out, re.I):
        out, changed = re.sub(r"^\w+(?: days)?,? ", "", out), True
    out, n = re.subn(r",? (?:anymore|any more|nowadays|these days|now)$", "", out)
    changed |= n > 0
    out, n = re.subn(r" no longer ", " ", out)
    negated, changed = negated or n > 0, changed or n > 0
    out, n = re.subn(r"\b(is|are|was|were|has|have)(?: not|n't)\b", r"\1", out)
    negated |= n > 0
    out, n = re.subn(r"\b(?:does|do|did)(?: not|n't) ", "", out)
    negated |= n > 0
    out, n = re.subn(r" never ", " ", out)
    negated |= n > 0
    out, n = re.subn(r" now ", " ", out)
    changed |= n > 0
    out = re.sub(r" (?:currently|still) ", " ", out)
    return out, negated, changed


def _strip_final_period(text: str) -> str:
    if text.endswith(".."):
        return text[:-1]
    if text.endswith(".") and not _ABBREVIATION.search(text):
        return text[:-1]
    return text


def _definite(text: str) -> tuple[str, str, str] | None:
    """"The A of S is V" and "The A that S verbs is V": (subject, attribute, value)."""
    copulas = list(re.finditer(r" (?:is|was|are|were) ", text))
    if len(copulas) == 2 and _RELATIVE.match(text[:copulas[1].start()]):  # "The university where S was educated is"
        copulas = copulas[1:]
    if len(copulas) != 1:
        return None
    left, value = text[:copulas[0].start()], text[copulas[0].end():]
    place = re.match(rf"^(?:located|based) in{_PLACE_WORDS} (.+)$", value)
    suffix = " located in" if place else ""
    value = place.group(1) if place else value
    government = re.match(r"^the (?:name of the )?(?:current )?head of the (.+) government$", left, re.I)
    if government:
        return government.group(1), "head of government", value
    relative = _RELATIVE.match(left)
    if relative:
        noun, rest = relative.groups()
        words = rest.split()
        if words[0][0].isupper() or words[0].startswith("<"):  # "that John McVie plays": subject first
            tail = len(words)
            while tail > 0 and words[tail - 1].islower():
                tail -= 1
            if tail == len(words) or tail == 0:
                return None
            return " ".join(words[:tail]), f"{noun} {' '.join(words[tail:])}" + suffix, value
        verb_len = 2 if words[0] in {"was", "is"} and len(words) > 2 else 1  # "that produced Ford F-Series"
        return " ".join(words[verb_len:]), f"{noun} that {' '.join(words[:verb_len])}" + suffix, value
    of_form = _OF_FORM.match(left)
    if of_form and (re.match(r"^[a-z]+(?:ed|en|wn)\b", value) or of_form.group(1)[0].isupper() and re.match(
            r"^(?:a|an)\b", value)):
        return None  # "The Wheel of Time was written in ...", "The Wheel of Time is a novel": a title, not "the A of S"
    if of_form:
        return of_form.group(2), of_form.group(1) + suffix, value
    return None


def parse_statement(text: str) -> Statement | None:
    """Read one declarative sentence as a Statement, or None when it is not one the rules can read safely."""
    text = re.sub(r"\s+", " ", text.replace("\u2019", "'")).strip()
    if not text or len(text) > 300 or _CLAUSE_BREAK.search(text):
        return None
    text = _strip_final_period(text)
    words = text.split()
    if words[0].lower() in _FIRST_SECOND or any(w.strip(",.") in _FIRST_SECOND for w in words[1:]) or re.search(
            r"(?:^|\s)I(?:'(?:m|ve|d|ll))? [a-z]", text):
        return None  # first or second person: a turn, not a statement ("Ardashir I's child" stays)
    text, negated, changed = _markers(text)
    if re.search(r"\bnot\b|n't\b", text):
        return None
    found = _definite(text) if re.match(r"^[Tt]he ", text) else None
    if found:  # "The capital of Italy is Rome"; else "The Vampyre was written in ..." reads as a relation below
        subject, attribute, value = found
        if not _is_name(subject) or not _is_value(value):
            return None
        return Statement(subject, attribute, value, negated, changed, True)
    relation = _RELATION.search(text)
    possessive = _POSSESSIVE.match(text)
    if possessive and not (relation and relation.start() == possessive.end(2)):
        subject, attribute, value = possessive.groups()
        changed |= "changed to" in text
        value = re.sub(r"^(?:on|at|in) (?=\w)", "", value)
        named = re.match(r"^(?:called|named|known as) (.+)$", value)  # "Marco's dog is called Biscuit"
        if named:
            subject, attribute, value = f"{subject}'s {attribute}", "name", named.group(1)
        if _is_name(subject) and _is_value(value) and not re.search(r"\b(?:and|or)\b", attribute):
            return Statement(subject, attribute, value, negated, changed, True)
        return None  # "Jon's dance studio and some other schools are ...": two subjects, not an attribute
    if relation:
        subject, phrase, value = text[:relation.start()], relation.group(1), text[relation.end():]
        functional, marks_change = next((f, c) for p, f, c in _RELATION_PARTS if p.fullmatch(phrase))
        if _is_name(subject) and _is_value(value):
            return Statement(subject, phrase, value, negated, changed or marks_change, functional)
        return None
    age = re.fullmatch(r"(.+?) (?:is|was) (\d{1,3}) years? old", text)
    if age and _is_name(age.group(1)):
        return Statement(age.group(1), "age", age.group(2), negated, changed, True)
    role = re.fullmatch(r"(.+?) (?:is|was) (?:a|an) ([a-z][a-z -]*)", text)
    if role and _is_name(role.group(1)) and len(role.group(2).split()) <= 3:
        return Statement(role.group(1), "is a", role.group(2), negated, changed, False)
    return None


def spelled_out(word: str) -> str | None:
    """The words an abbreviation stands for in attribute names ("CEO" -> "chief executive officer"), else None.

    Why: a question says "the CEO of Twitter" where the facts say "The chief executive officer of Twitter is …";
    the premise check (reasoning/premise.py) must count the abbreviation as mentioned when its expansion is."""
    if len(word) < 2 or not word.isupper():
        return None
    out = _ATTRIBUTE_SYNONYMS.get(word.lower())
    return out if out and " " in out else None
