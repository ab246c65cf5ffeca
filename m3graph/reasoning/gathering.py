"""Questions that ask for several things gather evidence across sessions before the reader answers.

"What books has Melanie read?", "Which events has Jon participated in?", "What activities does Melanie partake
in?": the answer is a list whose items were said in different sessions, weeks apart. One search with the question
shows the best-ranked lines, and under the reader's cap of new lines per round (``llm.control_evidence_lines``)
those crowd into the one or two sessions that match best, so the reader answers with the first item it sees
(LoCoMo dev sample, 1.5B reader: all the evidence of a multi-hop question shown for 3 of 20). For such questions
the controller (`control.py`) raises the cap for its first search and adds sub-queries made deterministically
from the question's own content words, one per thing asked about, each with the person the question names: no
model writes a query and none writes Cypher. The reader is then told to list every item the lines give.

What counts as a list question is a small grammar, not a model: a wh-word followed within a few words by a plural
noun ("what books", "which events", "what kinds of"), "what are/were", or "list"/"name all". A question about one
thing ("what is Caroline's favourite book?") is not one.
"""

from __future__ import annotations

import re

from m3graph.reasoning.attribution import content_words

LIST_CAP_FACTOR = 2  # the first search of a list question shows twice the usual number of new lines
MAX_SUBQUERIES = 3
LIST_NOTE = ("The question asks for several things: answer with every one the lines give, separated by commas, "
             "each in the words of the line it comes from.")

_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*")
_WORDS = re.compile(r"[a-z']+")
# Plural-looking words that are not plural nouns ("is", "has", "does", "his", "always", "its").
_NOT_PLURAL = frozenset(_WORDS.findall(
    "is was has does his hers its this us yes always sometimes perhaps unless whereas as was's ours yours theirs "
    "plus less news series species process business focus bus gas lens address class glass dress miss"))
_WH = frozenset(("what", "which"))
# Words that end the noun phrase after the wh-word: "what is ...", "what do sunflowers ..." ask about one thing.
_AUX = frozenset(_WORDS.findall(
    "is was are were do does did has have had can could will would might may should must"))
_LIST_PHRASE = re.compile(r"\b(?:what\s+(?:are|were)\b|what\s+(?:kinds|types|sorts)\s+of|list\b|name\s+(?:all|"
                          r"some|the)\b|in\s+what\s+ways|how\s+many\s+\w+)", re.IGNORECASE)
_QUESTION_STOP = frozenset(_WORDS.findall(
    "what which who whom whose where when why how kind kinds type types sort sorts did does do has have had is are "
    "was were been being the a an of in on at to for from by with about and or her his their them they she he it "
    "its that this those these any some ever also both all might would could likely new got main"))


def _plural(word: str) -> bool:
    w = word.lower().rstrip("'’")
    return len(w) > 3 and w.endswith("s") and not w.endswith("ss") and w not in _NOT_PLURAL


def asks_for_a_list(question: str) -> bool:
    """Whether the question asks for several things (see the module docstring)."""
    if _LIST_PHRASE.search(question):
        return True
    words = _WORD.findall(question)
    for i, word in enumerate(words):
        if word.lower() not in _WH:
            continue
        for w in words[i + 1:i + 4]:  # "what martial arts", "which events", "what musical artists/bands"
            if w.lower() in _AUX or w[0].isupper() or w.endswith(("'s", "’s")):  # a verb or a name ends the phrase
                break
            if _plural(w):
                return True
    return False


def sub_queries(question: str, names: tuple[str, ...] = ()) -> list[str]:
    """Deterministic sub-queries for a list question: each content word of the question that is not a name, with
    the person(s) the question names ("Melanie books", "Melanie read"), at most `MAX_SUBQUERIES`, in question order.
    Each is a narrower search than the question, so its best lines come from other sessions than the question's."""
    named = [n for n in names if re.search(rf"(?<!\w){re.escape(n.split()[0])}(?!\w)", question)]
    name_words = {w.lower() for n in named for w in n.split()}
    who = " ".join(n.split()[0] for n in named)
    out: list[str] = []
    for word in _WORD.findall(question):
        low = re.sub(r"['’]s?$", "", word.lower())
        if low in _QUESTION_STOP or low in name_words or not content_words(low):
            continue
        query = f"{who} {low}".strip()
        if query not in out:
            out.append(query)
        if len(out) == MAX_SUBQUERIES:
            break
    return out
