"""The LoCoMo benchmark's conversation files (the dev set under shared/data/conversations).

Only `speaker_a`, `speaker_b`, `session_N`, `session_N_date_time` and `qa` are read. The benchmark authors'
`events_session_N`, `session_N_observation` and `session_N_summary` are never read: they would put the answers
into memory. Image turns keep their `blip_caption`; `img_url` is not reachable and is dropped.
A turn may carry `files` (the generic JSON's list, docs/conversations.md "Files"), read under the files root.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from m3graph.ingest.chat.model import (
    ChatFormatError,
    Conversation,
    EvidenceQuestion,
    Session,
    Turn,
    file_refs,
    speakers_in_order,
)
from m3graph.ingest.chat.parsing import DEFAULT_LIMITS, ReadLimits, clean, item_lines, line_of, load_json, parse_when

_SESSION = re.compile(r"^session_(\d+)$")


def looks_like_locomo(data: Any) -> bool:
    return isinstance(data, dict) and "speaker_a" in data and any(_SESSION.match(k) for k in data)


def _turn(path: Path, line: int | None, key: str, i: int, t: Any) -> Turn:
    def fail(msg: str) -> ChatFormatError:
        return ChatFormatError(path, line, f"{key}[{i}]: {msg}")

    if not isinstance(t, dict):
        raise fail("a turn must be an object")
    for field in ("speaker", "dia_id", "text"):
        if not isinstance(t.get(field), str) or (field != "text" and not t[field].strip()):
            raise fail(f"turn has no string {field!r}")
    caption = t.get("blip_caption")
    if caption is not None and not isinstance(caption, str):
        raise fail("'blip_caption' must be a string")
    try:
        files = file_refs(t.get("files"))
    except ValueError as exc:
        raise fail(str(exc)) from None
    text, caption = clean(t["text"]), clean(caption) if caption else None
    if not text and not caption and not files:
        raise fail("turn has neither text nor an image caption nor files")
    return Turn(turn_id=t["dia_id"].strip(), speaker=clean(t["speaker"]), text=text, caption=caption or None,
                files=files)


def _question(path: Path, line: int | None, i: int, q: Any) -> EvidenceQuestion:
    def fail(msg: str) -> ChatFormatError:
        return ChatFormatError(path, line, f"qa[{i}]: {msg}")

    if not isinstance(q, dict) or not isinstance(q.get("question"), str):
        raise fail("a question must be an object with a string 'question'")
    evidence = q.get("evidence", [])
    if not isinstance(evidence, list) or not all(isinstance(e, str) for e in evidence):
        raise fail("'evidence' must be a list of turn ids")
    if not isinstance(q.get("category"), int):
        raise fail("'category' must be an integer")
    answer = q.get("answer")
    adversarial = q.get("adversarial_answer")
    return EvidenceQuestion(question=q["question"], answer="" if answer is None else str(answer),
                            evidence=tuple(e.strip() for e in evidence), category=q["category"],
                            adversarial_answer=None if adversarial is None else str(adversarial))


def load_locomo(path: str | Path, source_id: str | None = None,
                limits: ReadLimits = DEFAULT_LIMITS) -> tuple[Conversation, list[EvidenceQuestion]]:
    """The conversation (sessions in order, 0-based) and its questions. Raises `ChatFormatError` naming the file
    and line for anything malformed; the source id defaults to the file's stem (`locomo-26`)."""
    p = Path(path)
    raw, data = load_json(p, limits)
    if not looks_like_locomo(data):
        raise ChatFormatError(p, 1, "not a LoCoMo conversation (needs 'speaker_a' and 'session_N' keys)")
    numbers = sorted(int(m.group(1)) for k in data if (m := _SESSION.match(k)))
    limits.check_turns(p, None, sum(len(data[f"session_{n}"]) for n in numbers
                                    if isinstance(data[f"session_{n}"], list)))
    sessions: list[Session] = []
    seen: set[str] = set()
    for n in numbers:
        key = f"session_{n}"
        turns_raw = data[key]
        if not isinstance(turns_raw, list):
            raise ChatFormatError(p, line_of(raw, f'"{key}"'), f"{key} must be a list of turns")
        try:
            started = parse_when(data.get(f"{key}_date_time"))
        except ValueError as exc:
            raise ChatFormatError(p, line_of(raw, f'"{key}_date_time"'), str(exc)) from None
        _, lines = item_lines(raw, key)
        turns = tuple(_turn(p, lines[i] if i < len(lines) else line_of(raw, f'"{key}"'), key, i, t)
                      for i, t in enumerate(turns_raw))
        for i, t in enumerate(turns):
            if t.turn_id in seen:
                raise ChatFormatError(p, lines[i] if i < len(lines) else None, f"duplicate turn id {t.turn_id}")
            seen.add(t.turn_id)
        if turns:
            sessions.append(Session(index=len(sessions), started_at=started, turns=turns, key=key))
    declared = tuple(clean(data[k]) for k in ("speaker_a", "speaker_b") if isinstance(data.get(k), str))
    qa_raw = data.get("qa", [])
    if not isinstance(qa_raw, list):
        raise ChatFormatError(p, line_of(raw, '"qa"'), "'qa' must be a list")
    _, q_lines = item_lines(raw, "qa")
    questions = [_question(p, q_lines[i] if i < len(q_lines) else None, i, q) for i, q in enumerate(qa_raw)]
    conv = Conversation(source_id=source_id or p.stem, sessions=tuple(sessions),
                        speakers=speakers_in_order(tuple(sessions), declared), path=str(p))
    return conv, questions
