"""Names a conversation gives the person in a shared photo ("This is my sister Lena." with her photo).

Why: a later photo of the same person is usually shared without the name ("Look who I ran into!"); its face
resolves to the same persistent Face entity (`graphdb.identity.resolve`), so a name recorded once for the face
answers "who is in this photo" every time after. The name is recorded as an ordinary name fact about the face
(``<face_12>'s name is Lena.``, a semantic memory of the sharing turn: `facts/character_names` reads it as the
character's display name, and a later fact renames), so a face has one name write path, the same as a name a
memorizer or an analyst writes.

Conservative by construction, since a wrong name on a face is worse than none:

* the photo has exactly one detected face (the caller checks), and the turn names exactly one person;
* the name follows an introduction ("this is", "that's", "here is", "meet", "say hi to", "a photo/picture of"),
  optionally through a relation ("this is my sister Lena"); a bare capitalised word is never taken (places,
  shops and months are capitalised too);
* a turn that speaks of the speaker being in the picture ("me", "us", "we", "selfie") names nobody: the one
  face may be the speaker's;
* a conversation's speakers, a second name joined to the first ("Lena and Marco", "Lena, Marco"), a pet or an
  object ("my dog Biscuit") name nobody.
"""

from __future__ import annotations

import re
from collections.abc import Collection

_WORD = r"[A-Z][a-z]+(?:[-'][A-Z]?[a-z]+)?"  # Lena, Anne-Marie, O'Neil
_NAME = rf"{_WORD}(?: {_WORD}){{0,2}}"
_CUE = re.compile(
    r"(?:^|(?<=[\s,.!?;:(\"']))(?:this is|that's|that is|this's|here's|here is|meet|say hi to|"
    r"(?:a |the )?(?:photo|picture|pic|snap|shot) of)\s+"
    rf"(?P<rel>(?:my|our|his|her|their)\s+(?:[a-z'-]+\s+){{0,3}}?)?(?P<name>(?-i:{_NAME}))(?P<rest>.*)$",
    re.IGNORECASE | re.DOTALL)
_SELF = re.compile(r"\b(?:me|us|we|myself|ourselves|selfie|i'm|i am)\b", re.IGNORECASE)
_MORE = re.compile(rf"^\s*(?:,\s*{_WORD}|(?:&|\band\b|\bwith\b)\s*(?:(?:my|our|his|her|their|the)\s+[a-z]|{_WORD}))")
_NOT_PEOPLE = frozenset({
    "dog", "cat", "puppy", "kitten", "pet", "horse", "bird", "rabbit", "hamster", "fish", "car", "bike", "boat",
    "house", "flat", "apartment", "garden", "shop", "store", "restaurant", "cafe", "hotel", "street", "city",
    "town", "village", "team", "band", "company"})
_NOT_NAMES = frozenset({
    "i", "the", "a", "an", "this", "that", "it", "here", "there", "my", "our", "his", "her", "their", "what",
    "who", "where", "when", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
    "january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
    "november", "december", "today", "yesterday", "tomorrow", "christmas", "easter"})


def introduced_name(text: str, speakers: Collection[str]) -> str | None:
    """The one person `text` introduces by name, or None when it introduces nobody, several people, the
    speaker, a conversation's speaker, or something that is not a person."""
    if _SELF.search(text):
        return None
    found: set[str] = set()
    for sentence in re.split(r"(?<=[.!?])\s+", text):
        m = _CUE.search(sentence)
        if m is None:
            continue
        rel = (m.group("rel") or "").lower().split()
        name = m.group("name")
        words = name.split()
        if not name[0].isupper() or any(w.lower() in _NOT_NAMES for w in words):
            return None
        if _NOT_PEOPLE & set(rel) or _MORE.match(m.group("rest")):
            return None
        found.add(name)
    speaking = {s.strip().lower() for s in speakers}
    if len(found) != 1:
        return None
    name = found.pop()
    if name.lower() in speaking or name.split()[0].lower() in speaking:
        return None
    return name
