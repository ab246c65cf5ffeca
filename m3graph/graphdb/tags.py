"""Entity tags in memory text: parsed and rendered token-exactly.

The research code rewrote ``face_1`` by plain substring replacement, so ``<face_12>`` became
``<character_X2>`` depending on set order (reference §6.1, §10.2). Here a tag is only ever the whole token
``<kind_N>``; rendering goes through one regex substitution with a lookup, never through ``str.replace``.

Tags are structure, never text: a tag in text that came from outside (a chat turn, a subtitle cue, a speaker's
name, a model's output) would otherwise become a `MENTIONS` edge to whatever entity has that id, e.g. another
video's ``<face_1>``. `safe_text` is the one gate such text passes before it is stored: every tag the step did
not resolve itself is written with single guillemets, ``<face_1>`` -> ``‹face_1›`` (U+2039/U+203A). The text
still reads the same, `TAG` can never match it (it needs ASCII ``<``/``>``), and nothing maps it back: search,
rendering and embedding only ever rewrite `TAG` matches, and no code unescapes or NFKC-normalizes memory text
(NFKC leaves U+2039/U+203A as they are).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping

TAG = re.compile(r"<(face|voice|speaker|character)_(\d+)>", re.IGNORECASE)
# A speaker (a named participant of a conversation/transcript) is written "Name <speaker_N>": the name stays in
# the text for full-text search and embeddings, the tag carries identity (MENTIONS) and renders as a character.
ENTITY_KINDS = ("face", "voice", "speaker")
_SPEAKER_TAG = re.compile(r"\s*<speaker_\d+>", re.IGNORECASE)
EQUIVALENCE = re.compile(r"^\s*equivalence\s*:", re.IGNORECASE)

EntityRef = tuple[str, int]  # ("face", 12)


def parse_tags(text: str, kinds: tuple[str, ...] = ENTITY_KINDS) -> list[EntityRef]:
    """Distinct tags of the given kinds, in order of first appearance."""
    seen: dict[EntityRef, None] = {}
    for match in TAG.finditer(text):
        kind = match.group(1).lower()
        if kind in kinds:
            seen.setdefault((kind, int(match.group(2))), None)
    return list(seen)


ESCAPE_OPEN, ESCAPE_CLOSE = "\u2039", "\u203a"  # ‹ ›


def safe_text(text: str, allowed: Collection[EntityRef] = ()) -> str:
    """Text from outside -> text safe to store: every tag except those naming an entity in `allowed` is escaped.

    `allowed` holds the (kind, id) pairs this ingestion step resolved itself (e.g. the speakers of the session
    it writes); ``<character_K>`` is never allowed (characters are derived, a memory mentions entities). One
    pass suffices: escaping replaces the brackets of a match by other characters, so it cannot form a new tag.
    """
    permitted = {(k.lower(), int(n)) for k, n in allowed}

    def _one(match: re.Match[str]) -> str:
        ref = (match.group(1).lower(), int(match.group(2)))
        if ref[0] != "character" and ref in permitted:
            return match.group(0)
        return f"{ESCAPE_OPEN}{match.group(0)[1:-1]}{ESCAPE_CLOSE}"

    return TAG.sub(_one, text)


def is_equivalence(text: str) -> bool:
    return bool(EQUIVALENCE.match(text))


def substitute(text: str, replace: Callable[[str, int], str | None]) -> str:
    """Replaces whole tags; `replace` returns the new token, or None to keep the tag as written."""

    def _one(match: re.Match[str]) -> str:
        new = replace(match.group(1).lower(), int(match.group(2)))
        return match.group(0) if new is None else new

    return TAG.sub(_one, text)


def render_characters(text: str, characters: Mapping[EntityRef, int]) -> str:
    """``<face_N>``/``<voice_N>`` → ``<character_K>`` from the structural entity→character map."""

    def _to_char(kind: str, number: int) -> str | None:
        char = characters.get((kind, number))
        return None if char is None or kind == "character" else f"<character_{char}>"

    return substitute(text, _to_char)


def renumber(text: str, mapping: Mapping[EntityRef, int]) -> str:
    """Rewrites entity ids (used when importing graphs whose ids live in another id space)."""

    def _new(kind: str, number: int) -> str | None:
        new = mapping.get((kind, number))
        return None if new is None else f"<{kind}_{new}>"

    return substitute(text, _new)


def neutral_text(text: str) -> str:
    """Text for embedding: tags become a neutral word, since identity is carried by MENTIONS edges, not vectors.
    A speaker tag is dropped: the speaker's name written before it already says who ("Caroline: ...")."""
    text = _SPEAKER_TAG.sub("", text)
    return substitute(text, lambda kind, number: "someone" if kind in ("face", "voice", "character") else None)
