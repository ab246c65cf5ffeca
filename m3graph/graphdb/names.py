"""People by name: `Character.name` kept current by the write path, and the display names every reader shows.

A character's display name is the current value of a name fact about one of its members ("<face_4>'s name is
Mia."; for a speaker, "Nora <speaker_5>'s name is Nora.", the fact chat ingestion writes when the speaker first
speaks: `m3graph.ingest.chat.speaker_names`), else the name its speaker speaks under; one query derives it
(`facts/character_names`) and one rule picks it (`m3graph.schema.character_names`). Two write paths can change
it, and both call in here inside their own transaction:

* a name slot's versions (`facts.refresh_slots`: a clip's memories, a correction, a restore or undo, a deleted
  clip or person) -> `refresh_name_slots`;
* a character's members (`characters.refresh_characters`: a model or manual vote, its undo, a split, a chat
  speaker attached) -> `refresh_character_names`.

So `Character.name` in Neo4j Browser and Bloom is "Mia", not "character_4", without a reader deriving anything;
a graph written before is named by `m3graph.schema.character_names.backfill_character_names` (a migration).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from m3graph.graphdb.executor import Executor, Tx
from m3graph.graphdb.query_text import lucene_phrase
from m3graph.schema.character_names import known_names, name_rows
from m3graph.statements import normalise_name

_ENTITY_NAME_SLOT = re.compile(r"^(?:face|voice)_(\d+) · name$")
NAME_SLOT_SUFFIX = " · name"  # a one-value name slot: "subject · name" (m3graph.statements: called/named -> name)
NAME_LOOKUP_HITS = 1000  # memories the full-text index gives a name lookup (a speaker's own lines among them)
NameMatch = Literal["name", "former", "mention"]
_RANKS: dict[NameMatch, int] = {"name": 3, "former": 2, "mention": 1}


@dataclass(frozen=True)
class NamedCharacter:
    """One candidate of a name lookup (`people_named`).

    `match`: "name" when the name is the character's current display name; "former" when a name fact (or the
    speaker's own name) gave it that name before a rename; "mention" when memories only mention the character
    beside the name. `name` is the display name now (None: none known, shown as `character_K`); `evidence`: up to
    five ids of the memories that found it; `mentions`: how many did."""

    char_id: int
    match: NameMatch
    name: str | None
    mentions: int
    evidence: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        """``Mia (character_4)``, or ``character_4`` without a name: how a candidate is listed."""
        return f"{self.name} (character_{self.char_id})" if self.name else f"character_{self.char_id}"


def character_names(ex: Executor, char_ids: Sequence[int]) -> dict[int, str]:
    """Display names: char id -> the character's current name fact, else its speaker's name; characters with
    neither are left out (callers show `character_K`). A rename is a newer name fact, so the old name stays in
    `history`."""
    ids = sorted(set(char_ids))
    return known_names(ex.read("facts/character_names", char_ids=ids)) if ids else {}


def refresh_character_names(tx: Tx, char_ids: Iterable[int]) -> int:
    """Sets `Character.name` of these characters to their display name (or ``character_K``), in the caller's
    transaction; returns how many names changed. Characters that no longer exist are skipped."""
    ids = sorted(set(char_ids))
    if not ids:
        return 0
    rows = name_rows(ids, tx.run("facts/character_names", char_ids=ids))
    return int(tx.one("characters/set_names", rows=rows)["changed"]) if rows else 0


def refresh_name_slots(tx: Tx, source_id: str, slot_keys: Iterable[str | None]) -> int:
    """After the versions of these slots of one source were recomputed: renames the characters whose name a name
    slot among them decides (a face's or voice's `face_3 · name`; a speaker's `nora · name`, which names the
    speakers of the source). Returns how many names changed; does nothing without a name slot."""
    keys = [k for k in slot_keys if k and k.endswith(NAME_SLOT_SUFFIX) and k.count(" · ") == 1]
    if not keys:
        return 0
    entities = sorted({int(m.group(1)) for k in keys if (m := _ENTITY_NAME_SLOT.match(k))})
    speakers = any(not _ENTITY_NAME_SLOT.match(k) for k in keys)
    rows = tx.run("facts/name_slot_characters", source_id=source_id, entity_ids=entities, speakers=speakers)
    return refresh_character_names(tx, [r["char_id"] for r in rows])


def people_named(ex: Executor, name: str, videos: Sequence[str] | None = None, before_clip: int | None = None
                 ) -> list[NamedCharacter]:
    """Every character a name may mean, best first: the people whose current name it is (video people by their
    name facts, chat speakers by theirs or by the name they speak under), case-insensitive; then people it named
    before a rename ("former"); then people only mentioned beside it. Several "name" candidates are an ambiguous
    name: list them (`NamedCharacter.label`). Memories after `before_clip` are not read."""
    wanted = " ".join(name.split())
    if not wanted:
        return []
    keys = sorted({normalise_name(wanted), normalise_name(wanted.title())})
    rows = ex.read("search/characters_named", text=lucene_phrase(wanted), name_keys=keys, name_lower=wanted.lower(),
                   videos=list(videos) if videos else None, before_clip=before_clip, limit=NAME_LOOKUP_HITS)
    names = character_names(ex, [r["char_id"] for r in rows])
    out: list[NamedCharacter] = []
    for r in rows:
        shown = names.get(r["char_id"])
        match: NameMatch = "name" if r["rank"] == 3 else "former" if r["rank"] == 2 else "mention"
        if shown is not None and shown.lower() == wanted.lower():
            match = "name"
        elif match == "name" and shown is not None:
            match = "former"  # the fact still holds in its slot, but another member's newer name is shown
        out.append(NamedCharacter(char_id=int(r["char_id"]), match=match, name=shown, mentions=int(r["mentions"]),
                                  evidence=list(r["evidence"])))
    return sorted(out, key=lambda c: -_RANKS[c.match])  # stable: the query's order within a rank
