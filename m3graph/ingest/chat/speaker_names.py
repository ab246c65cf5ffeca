"""A speaker's name as a fact: what ingestion says about each person the first time they speak in a source.

Why a fact and not only the `Speaker.speaker_name` property: a display name is the current value of a name fact
(`m3graph.graphdb.names`), so a name written as a semantic memory with provenance (the session that introduced
the speaker: its clip, at the clip's start, before anything said in it) is versioned like every other fact: a
later "my name is Mia now" (speech, `m3graph.speech_statements`) or a memorizer's "Nora is now called Mia" lands
in the same slot and supersedes it, an analyst's `correct_fact` marks it, and `history <source> Nora` lists it.
The fact reads ``Nora <speaker_5>'s name is Nora.``: speaker tags leave slot subjects
(`m3graph.fact_versions.statement_of`), so its slot is ``nora · name``, the one every other statement about
Nora's name takes. It cites no turn (`source_ids` is empty): no turn says it, the file's speaker field does; a
turn id would make it one of that turn's lines for whatever reads memories by turn (evidence recall, the
gold-line oracle, citations).

Written once per speaker: in the session that creates the speaker (its first in the source; a speaker the graph
already holds gets none), so a re-run, a grown file or a one-session note adds none, and a newer name is never
overtaken by the old one said again. Not written for the one speaker of a numbered facts list ("Facts", a list,
not a person), for an agent's notes speaker ("agent", "Lily (agent)": the agent itself), nor for a name the
statement rules cannot read as a name (nothing is lost: the display name falls back to the speaker's name).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from m3graph.errors import InvalidInputError
from m3graph.fact_versions import statement_of
from m3graph.ingest.chat.model import Session
from m3graph.schema.sources import FACTS_SPEAKER

# m3graph.service.notes.AGENT and AGENT_MARK (a test keeps them equal; ingestion does not import the service layer).
AGENT_SPEAKER, AGENT_MARK = "agent", " (agent)"


def speaker_key(same_speakers: dict[str, str], source_id: str, name: str) -> str:
    """``source|name``, or the key configuration maps it to (`chat.same_speakers`, followed to its end)."""
    key, seen = f"{source_id}|{name}", set()
    while key in same_speakers and key not in seen:
        seen.add(key)
        key = same_speakers[key]
    if "|" not in key:
        raise InvalidInputError(f"chat.same_speakers maps to {key!r}: write speakers as 'source|name'")
    return key


def name_fact(name: str) -> str | None:
    """The fact ingestion writes for a speaker (untagged; the tag goes after the first name once the speaker's id
    is known: `tagged_name_fact`), or None for a speaker that gets none (see the module docstring)."""
    folded = name.casefold()
    if name == FACTS_SPEAKER or folded == AGENT_SPEAKER or folded.endswith(AGENT_MARK):
        return None
    text = f"{name}'s name is {name}."
    st = statement_of(text)
    if st is None or st.attribute_key != "name" or st.value != name or st.negated:
        return None
    return text


def tagged_name_fact(name: str, entity_id: int) -> str:
    """``Nora <speaker_5>'s name is Nora.``: the subject tagged, the value left as said."""
    return f"{name} <speaker_{entity_id}>'s name is {name}."


def introductions(new: Sequence[Session], known: Collection[str]) -> dict[str, list[str]]:
    """Session key -> the speakers it introduces: each speaker the graph does not hold yet (`known`: the names whose
    speaker already exists) in the first new session they speak in, in order of their first turn."""
    seen = set(known)
    out: dict[str, list[str]] = {}
    for session in new:
        for turn in session.turns:
            if turn.speaker in seen:
                continue
            seen.add(turn.speaker)
            if name_fact(turn.speaker) is not None:
                out.setdefault(session.session_key, []).append(turn.speaker)
    return out
