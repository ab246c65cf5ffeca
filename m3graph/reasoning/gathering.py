"""Questions that ask for several things gather evidence across sessions before the reader answers.

"What books has Melanie read?", "Which events has Jon participated in?", "What activities does Melanie partake
in?": the answer is a list whose items were said in different sessions, weeks apart. One search with the question
shows the best-ranked lines, and under the reader's cap of new lines per round (``llm.control_evidence_lines``)
those crowd into the one or two sessions that match best, so the reader answers with the first item it sees
(LoCoMo dev sample, 1.5B reader: all the evidence of a multi-hop question shown for 3 of 20). For such questions
the controller (`control.py`) widens its first search: the question's own search shows three times the cap of new
lines (the next-best lines come from more sessions), and the reader is told to list every item the lines give.
No model writes a query. Measured without a model over the 74 dev multi-hop questions (`bench/gathering_recall.py`:
the first round's lines against the gold evidence turns): all evidence shown 12 → 23 of 74 (twice the cap: 18),
evidence turns 75 → 93 of 184, about 1,800 more characters of prompt per list question. Sub-queries made from the
question's content words with the person it names ("Melanie books", "Melanie read") reached 15 instead of 12
(with twice the cap beside them, 22 against 21 without), so they were left out.

What counts as a list question is a small grammar, not a model: a wh-word followed within a few words by a plural
noun ("what books", "which events", "what kinds of"), "what are/were", or "list"/"name all". A question about one
thing ("what is Caroline's favourite book?") is not one, nor is a count ("how many ...": the note to list items
would mislead it). Only conversation memory is gathered this way (the first hits are lines with a speaker,
``Name <speaker>: text``): video memories have no sessions to spread over, and the generated-media questions
("What colours are the cup and the box?") keep the reader as it was measured on them.
"""

from __future__ import annotations

import re

LIST_CAP_FACTOR = 3  # the first search of a list question shows three times the usual number of new lines
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
                          r"some|the)\b|in\s+what\s+ways)", re.IGNORECASE)


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
