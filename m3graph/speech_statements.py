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
Updates said in other words (each lands in the slot of the earlier statement, so it becomes a new version):
- a move said of a group the speaker is in: "we moved to Porto", "we live in Porto now" → the speaker (only the
  live-in relations: "we use X" stays refused);
- the inverse of a possessive role: "Ana is my manager" → "Nora's manager is Ana", and a role verb with the
  speaker as object: "Ben manages me now" → "Nora's manager is Ben" (manages/supervises/mentors/coaches/teaches/
  employs → manager/supervisor/mentor/coach/teacher/employer), so it supersedes "my manager is Ana";
- measurements ("<metric> is|has (now) reached|dropped (from X) to <number unit>", "I increased <metric> (from X)
  to <value>", "..., which is currently at <value>") → "Nora's <metric> is <value>" (metric lowercased, articles and
  possessives off; an unowned metric is the speaker's). Values are canonical numbers with folded units ("1,000" =
  "1000", "400ms" = "400 milliseconds"), so a restatement is not an update. A pronoun ("it's now down to 250 ms")
  binds to the speaker's latest metric of the same unit family in the session, a shorter name ("the API responds
  in 250 ms") to an earlier one of that family holding all its words (first five letters compared); deltas ("by
  20%"), intentions ("trying to ... increase X to 25") and dates are refused. `SpeechContext` holds the last
  `CONTEXT_METRICS` metrics per speaker (`speech_memories` keeps one per session): bounded and explainable.
Refused: we/us/our otherwise (a group is not the speaker), mine/yours; a statement whose subject is not the rewritten
person or one thing of theirs ("Nora", "Nora's sister"; the guard against "Nora used to" or "John's friends look"
read as names); a value that is a pronoun, a clause, a prepositional phrase or a degree word ("love it", "love
how ...", "read about ...", "has such a caring heart"); a one-word judgement after a possessive ("your words are
encouraging"); "had ..." and perfect-tense events read as possession ("had a good time", "has built ..."); and
everything `parse_statement` refuses (among them unknown verbs).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

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
    r"fun fact|funny enough|to be honest|for instance|for example|currently|right now)\b[,!.:]?\s+)+", re.I)
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
                         r"seen|met|felt|heard|learnt|taught|brought|thought|set|cut|run|hit|sent|spent|chosen|begun|written)\b")
_PROGRESSIVE = {f"{v.removesuffix('e')}ing": v for v in (*MULTI_VERBS, "work", "live") if v != "have"}
# a value that is a clause or a prepositional phrase, not a thing: "love how it ...", "read about ..."
_NOT_A_VALUE = re.compile(r"^(?:how|what|that|when|where|why|who|whether|about|with|for|on|at|in|into|to|from|of|"
                          r"through|over|around|up|out|off|been|got|gotten|done|made|gone|had|a bit|so|such|very|"
                          r"really)\b", re.I)

CONTEXT_METRICS = 8  # metrics a speaker's pronoun or paraphrase may bind to (the latest of a session)
_WE_MOVE = re.compile(r"^(?:so |and |but |well |actually |yeah |oh )*(?:we|We)(?:'ve| have)? (?=(?:just |recently |"
                      r"finally |now |all )?(?:moved|relocated|live|lived) (?:to|in)\b)")
_WE_LIVE = re.compile(r"^(?:we|We)(?:'re| are) (?:now |currently )?(?:living|based) in\b")
_INVERSE_ROLE = re.compile(r"^(?:.*, )?([A-Z][\w'-]*(?: [A-Z][\w'-]*)?) (?:is|was) (?:now |currently )?"
                           r"my ([a-z]+(?: [a-z]+)??)(?: now)?$")
_ROLE_VERBS = {"manages": "manager", "supervises": "supervisor", "mentors": "mentor", "coaches": "coach",
               "teaches": "teacher", "employs": "employer", "leads": "lead", "tutors": "tutor"}
_ROLE_VERB = re.compile(r"^(?:.*, )?([A-Z][\w'-]*(?: [A-Z][\w'-]*)?) (?:now |currently )?({}) (?:me|us)( now)?$".format(
    "|".join(_ROLE_VERBS)))
_NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_UNITS = {"%": "%", "percent": "%", "ms": "ms", "msec": "ms", "millisecond": "ms", "s": "s", "sec": "s",
          "second": "s", "min": "min", "minute": "min", "h": "h", "hr": "h", "hour": "h", "day": "day",
          "week": "week", "month": "month", "year": "year", "kb": "KB", "kilobyte": "KB", "mb": "MB",
          "megabyte": "MB", "gb": "GB", "gigabyte": "GB", "tb": "TB", "rps": "rps", "req/s": "rps",
          "requests per second": "rps", "qps": "qps",
          "fps": "fps", "x": "x", "k": "k", "user": "users", "key": "keys", "connection": "connections",
          "request": "requests", "node": "nodes", "replica": "replicas", "worker": "workers", "thread": "threads"}
_FAMILY = {**dict.fromkeys(("ms", "s", "min", "h", "day", "week", "month", "year"), "time"),
           **dict.fromkeys(("KB", "MB", "GB", "TB"), "size"), "rps": "rate", "qps": "rate", "%": "%"}
_UNIT = r"(?:\s?(?i:{}))?".format("|".join(sorted((re.escape(u) + ("s?" if u.isalpha() and len(u) > 3 else "")
                                                  for u in _UNITS), key=len, reverse=True)))
_VALUE = rf"(?:about |around |roughly |approximately |~ ?)?(?P<num>{_NUM})(?P<unit>{_UNIT})(?![\w%])"
_CHANGE = (r"increased|decreased|dropped|fallen|fell|reduced|improved|risen|rose|grown|grew|gone (?:up|down)|"
           r"went (?:up|down)|reached|hit|climbed|jumped|moved|changed|shrunk|shrank|come down|came down|"
           r"(?:gotten|got) down|been (?:reduced|cut|raised|increased|lowered|brought down|bumped)")
_METRIC_IS = re.compile(
    rf"^(?P<metric>[A-Za-z][\w'./ -]{{0,60}}?)(?P<conn>(?:'s|'re| (?:has|have)(?: now| already| finally)?"
    rf"(?: been)?| (?:is|are|was|were))?(?: (?:now|currently|finally|already|still))?(?: (?:{_CHANGE}))?"
    rf"(?: (?:down|up))?(?: from (?:{_NUM}){_UNIT})?(?: (?:to|at))?) {_VALUE}(?P<rest>.*)$")
_ACTOR = re.compile(
    rf"^I(?:'ve| have)? (?:(?:just|now|already|finally|successfully) )?(?P<verb>increased|decreased|reduced|raised|"
    rf"lowered|improved|cut|changed|moved|bumped|brought|pushed|dropped|boosted|upped|got|set)"
    rf" (?P<metric>.+?)(?: (?:down|up))?(?: from (?:{_NUM}){_UNIT})? to {_VALUE}(?P<rest>.*)$")
_DOES = re.compile(rf"^(?P<metric>(?:the |my )?[A-Za-z][\w'. -]{{0,40}}?) (?P<verb>responds|loads|takes|runs|"
                   rf"completes|finishes|builds|starts|returns|uses|consumes) (?:in |at )?{_VALUE}(?P<rest>.*)$")
_AFTER_VALUE = r"^\s+(?:with|after|under|for|on|in|and|but|which|per|since|during|at|when|while|now|today|so|" \
               r"because|thanks|compared|across|over|from|by)\b"
_NP = r"(?:the|my|our|an?) (?P<metric>[A-Za-z][\w.-]*(?: [A-Za-z][\w.-]*){0,4}?)"
_SEARCHED = (  # a metric named inside a longer clause: "the salt rounds, which are set to 12", "reducing X to Y"
    re.compile(rf"\b{_NP}(?:'s? [a-z][\w ]{{0,30}}?)?, which (?P<conn>(?:is|are|has been|have been|currently|now| )+"
               rf"(?:set to|at|takes|take|(?:{_CHANGE}) to)?) ?{_VALUE}(?P<rest>.*)$"),
    re.compile(rf"\b(?P<verb>reducing|increasing|cutting|lowering|raising|bringing|dropping|improving|bumping) "
               rf"{_NP}(?: (?:down|up))?(?: from (?:{_NUM}){_UNIT})? to {_VALUE}(?P<rest>.*)$"),
    re.compile(rf"\b(?P<verb>brings|brought|bringing|takes|took|pushes|pushed) {_NP}(?: (?:down|up))? to "
               rf"{_VALUE}(?P<rest>.*)$"),
    re.compile(rf"^I(?:'ve| have)? (?:(?:just|now|already|finally) )?(?P<conn>achieved|reached|hit|got|measured|"
               rf"have|had) {_NP} of {_VALUE}(?P<rest>.*)$"),  # "I've achieved an average latency of 150ms"
)
_SAW_THAT = re.compile(r"^I(?:'ve| have)? (?:(?:just|also|now) )?(?:noticed|found|found out|seen|measured|realized|"
                       r"observed|confirmed|see|notice) that ")
_INTENDED = re.compile(r"\b(?:try|trying|want|wants|wanted|plan|planning|need|needs|aim|aiming|hope|considering|"
                       r"thinking|expect|expecting|goal|target|targeting|should|could|would)\b", re.I)
_METRIC_STOP = frozenset((  # noqa: SIM905
    "i you he she we they which who that and but so if when because with for on in after before "
    "while than then also just there here what how why where its their your our his her me us them "
    "one"
).split())


@dataclass
class SpeechContext:
    """The metrics each speaker stated lately (newest last, `CONTEXT_METRICS` at most), with their unit family:
    what "it's now down to 250 ms" or a shorter name of a metric binds to (module docstring)."""

    metrics: dict[str, list[tuple[str, str]]] = field(default_factory=dict)

    def remember(self, speaker: str, metric: str, family: str) -> None:
        kept = [m for m in self.metrics.get(speaker, []) if m[0] != metric] + [(metric, family)]
        self.metrics[speaker] = kept[-CONTEXT_METRICS:]

    def latest(self, speaker: str, family: str) -> str | None:
        return next((m for m, f in reversed(self.metrics.get(speaker, [])) if f == family), None)

    def paraphrase(self, speaker: str, metric: str, family: str) -> str | None:
        """An earlier metric of the same family holding every word of `metric` (first five letters compared)."""
        def stems(text: str) -> set[str]:
            return {w[:5] for w in text.split()}
        new = stems(metric)
        return next((m for m, f in reversed(self.metrics.get(speaker, []))
                     if f == family and m != metric and new <= stems(m)), None)


def _metric_name(raw: str) -> str | None:
    """A metric as an attribute: lowercase words, no article, possessive or digits; None when not a noun phrase."""
    text = re.sub(r"'s\b", "", raw.lower())
    text = re.sub(r"^(?:the|my|our|your|this|that) ", "", text.strip())
    words = [w for w in re.sub(r"[^a-z ]+", " ", text).split() if w]
    if not words or len(words) > 7 or any(w in _METRIC_STOP for w in words) or words[0] in {"the", "a", "an"}:
        return None
    name = " ".join(words)
    return name if len(name) <= 40 else None


def _value(num: str, unit: str) -> tuple[str, str]:
    """(the canonical value, its unit family): "1,000" → "1000", "400 milliseconds" → "400 ms"."""
    number = num.replace(",", "")
    if "." in number:
        number = number.rstrip("0").rstrip(".")
    u = unit.strip().lower()
    canon = _UNITS.get(u) or _UNITS.get(u.removesuffix("s"), "") if u else ""
    family = _FAMILY.get(canon, f"count {canon}".strip())
    return (f"{number}%" if canon == "%" else f"{number} {canon}".strip()), family


def read_measure(clause: str, speaker: str, context: SpeechContext) -> SpokenStatement | None:
    """A measurement the speaker reports (module docstring), as "Nora's <metric> is <value>", or None."""
    clause = _SAW_THAT.sub("", re.sub(r"[.!]+$", "", clause.strip()))  # "I noticed that the latency is ..."
    for form in (_ACTOR, _METRIC_IS, _DOES, *_SEARCHED):
        found = form.match(clause) if form in (_ACTOR, _METRIC_IS, _DOES, _SEARCHED[3]) else form.search(clause)
        if found is None or re.match(r"^\s*(?:by|times|percent of)\b", found.group("rest")):
            continue  # "reduced it by 20%": a change, not the value
        if _INTENDED.search(clause[found.start() if form is _SEARCHED[0] else 0:found.start("num")]):
            continue  # "I'm trying to ... by increasing the pool size to 25": meant, not done
        if re.match(r"^\s*[A-Za-z]", found.group("rest")) and not re.match(_AFTER_VALUE, found.group("rest")):
            continue  # "moved to 22 February", "is 5 stars": the number is not the whole value
        if form is not _METRIC_IS or re.search(rf"'s|'re|\b(?:is|are|was|were|has|have|{_CHANGE})\b",
                                               found.group("conn") or ""):
            break
    else:
        return None
    groups = found.groupdict()
    value, family = _value(groups["num"], groups["unit"] or "")
    raw = groups["metric"].strip()
    if re.match(r"(?:your|you)\b", raw, re.I):  # the addressee's metric: the second-person rules read it
        return None
    changed = bool(groups.get("verb") or re.search(rf"\b(?:now|from|{_CHANGE})\b", groups.get("conn") or "")
                   or re.search(r" from \d", found.group(0)))
    if re.fullmatch(r"(?:it|that|this)", raw, re.I):
        metric = context.latest(speaker, family)
    elif found.re is _DOES:
        name = _metric_name(f"{raw} {groups['verb']}")
        metric = name and (context.paraphrase(speaker, name, family) or name)
    else:
        name = _metric_name(raw)
        metric = name and (context.paraphrase(speaker, name, family) or name)
    if not metric:
        return None
    sentence = f"{speaker}'s {metric} is {'now ' if changed else ''}{value}"
    got = parse_statement(sentence)
    if got is None or got.subject != speaker:
        return None
    context.remember(speaker, metric, family)
    return SpokenStatement(sentence + ".", got, speaker)


def _updates_in_other_words(clause: str) -> str:
    """A group's move, an inverse role and a role verb, in the words the first-person rules read."""
    clause = _WE_MOVE.sub("I ", re.sub(r"[.!]+$", "", clause))
    clause = _WE_LIVE.sub(lambda m: "I now live in" if " now " in m.group(0) else "I live in", clause)
    role = _ROLE_VERB.match(clause)
    if role:
        return f"My {_ROLE_VERBS[role.group(2)]} is {'now ' if role.group(3) else ''}{role.group(1)}"
    inverse = _INVERSE_ROLE.match(clause)
    if inverse and inverse.group(1) not in ("I", "It", "This", "That", "He", "She", "You", "We", "They"):
        now = " now" in clause or "is now" in clause
        return f"My {inverse.group(2)} is {'now ' if now else ''}{inverse.group(1)}"
    return clause


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
    out = re.sub(rf"^({p} (?:is|was|has|does)) {_ADVERBS} ", r"\1 ", out)
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
    clause = _updates_in_other_words(clause)
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
    purpose = re.match(r"^(.+?) (?:to|in order to|so that|for [a-z]+ing\b)(?: [a-z]+\b)?", got.value)
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


def _each_value(said: SpokenStatement) -> list[SpokenStatement]:
    """"Nora uses Wireshark and Socket.io": two slots (many-valued slots, each part a capitalised name)."""
    st = said.statement
    parts = st.value.split(" and ")
    if st.functional or len(parts) != 2 or not all(p[:1].isupper() for p in parts):
        return [said]
    head = said.sentence[:len(said.sentence) - len(st.value) - 1]
    out = []
    for part in parts:
        got = parse_statement(f"{head}{part}")
        if got is None or got.slot_key.rsplit(" · ", 1)[0] != st.slot_key.rsplit(" · ", 1)[0]:
            return [said]
        out.append(SpokenStatement(f"{head}{part}.", got, said.person))
    return out


def read_turn(text: str, speaker: str, addressee: str | None = None,
              context: SpeechContext | None = None) -> list[SpokenStatement]:
    """Every statement one turn makes, in order (see the module docstring for what is read); `context` carries
    the speaker's metrics from turn to turn (a session's turns share one)."""
    names = [n for n in (speaker, addressee) if n]
    context = context if context is not None else SpeechContext()
    out: list[SpokenStatement] = []
    antecedent: str | None = None
    for clause in _clauses(text, names):
        found = read_measure(clause, speaker, context) or read_clause(clause, speaker, addressee, antecedent)
        if found is None:
            continue
        out += _each_value(found)
        antecedent = None if found.statement.subject in names else found.statement.subject
    return list({s.sentence: s for s in out}.values())
