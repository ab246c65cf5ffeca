"""Plain numbered facts lists ("0. Ann lives in Oslo.", one fact a line, later lines newer).

This is the form MemoryAgentBench's FactConsolidation feeds a memory: an optional header line ending in ":"
("Here is a list of facts:"), then ``N. text`` lines with N strictly increasing; blank lines are allowed and
anything else is refused with its line, so a transcript is never half-read as facts. Detection (`looks_like_
facts`) is as strict as the parser: a "Speaker: text" transcript has no line that starts with a number.

The list is ONE session of one speaker ("Facts"), without a date, and each fact is one turn ``F<N>`` in line
order. The session key is a digest of the content: re-ingesting the same list writes nothing, and a changed or
grown list is a new session (appended after the old one; its facts are newer by event order, so the graph's
supersession still lets the latest statement of a slot win). `FactsMemorizer` stores each fact as one semantic
memory (no model): a fact is a lasting statement, not an event of a conversation.
"""

from __future__ import annotations

import re
from pathlib import Path

from m3graph.ingest.chat.generic_json import session_digest
from m3graph.ingest.chat.ingest import SessionMemory
from m3graph.ingest.chat.model import ChatFormatError, Conversation, Session, Turn
from m3graph.ingest.chat.parsing import DEFAULT_LIMITS, ReadLimits, clean, read_lines

SPEAKER = "Facts"
_FACT = re.compile(r"^\s*(\d{1,9})\.\s+(\S.*?)\s*$")
_HEADER = re.compile(r"^\s*\S.{0,200}:\s*$")


def looks_like_facts(text: str) -> bool:
    """True when the non-blank lines are a numbered list, optionally after one header line ending in ":"."""
    lines = [line for line in text.splitlines() if line.strip()]
    if lines and not _FACT.match(lines[0]) and _HEADER.match(lines[0]):
        lines = lines[1:]
    return bool(lines) and all(_FACT.match(line) for line in lines)


def load_facts_list(path: str | Path, source_id: str | None = None,
                    limits: ReadLimits = DEFAULT_LIMITS) -> Conversation:
    """The list as one session; refused at the first line that is not a fact (or the header), at a number that
    does not increase, and past `limits.max_turns` facts."""
    p = Path(path)
    turns: list[Turn] = []
    last: int | None = None
    seen_content = False
    for number, line in enumerate(read_lines(p, limits), start=1):
        if not line.strip():
            continue
        m = _FACT.match(line)
        if m is None:
            if not seen_content and _HEADER.match(line):
                seen_content = True
                continue
            raise ChatFormatError(p, number, "expected a numbered fact 'N. text' (only the first line may be a "
                                             "header ending in ':')")
        seen_content = True
        n = int(m.group(1))
        if last is not None and n <= last:
            raise ChatFormatError(p, number, f"fact number {n} does not follow {last} (numbers must increase)")
        last = n
        limits.check_turns(p, number, len(turns) + 1)
        turns.append(Turn(turn_id=f"F{n}", speaker=SPEAKER, text=clean(m.group(2))))
    if not turns:
        raise ChatFormatError(p, None, "holds no numbered facts ('N. text' lines)")
    session = Session(index=0, started_at=None, turns=tuple(turns), key=session_digest(tuple(turns)))
    return Conversation(source_id=source_id or p.stem, sessions=(session,), speakers=(SPEAKER,), path=str(p))


class FactsMemorizer:
    """One semantic memory per fact, its text as written and its turn id as evidence (no model, no rewriting:
    the statement parser reads the fact itself)."""

    def memorize(self, conv: Conversation, session: Session) -> list[SessionMemory]:
        return [SessionMemory("semantic", turn.text, (turn.turn_id,)) for turn in session.turns]
