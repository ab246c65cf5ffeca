"""Replays chat-qa results through the when-answer check (m3graph/reasoning/grounding.py), no model, no graph.

Why: the check changes an answer only after the reader wrote it, so its effect can be measured on answers already
recorded, apart from the reader's run-to-run variance: every question of a results file (`m3graph eval chat-qa
--out FILE`, or `--oracle`) whose reader answer was kept is checked against the lines its rounds showed, with each
LoCoMo session's date as the reader saw it, and the answer match (`judge.answer_match`) is counted before and
after. A results file written by a controller that already grounds shows its raw reader replies, not its answers,
so this reads the reader's own answer from the answer round's JSON reply. When-questions are also scored by date
interval (`within_gold`): answer match compares words, and "18 July 2023" is right for "The Tuesday before 20 July
2023".

Run: ``.venv/bin/python -m bench.answer_grounding RESULTS.jsonl [...] [--conversations DIR]``.
``--smoke`` (CI) replays a results file it writes itself: for each question of two sessions of one conversation,
the session's date as the reader's answer with the evidence lines shown (no recorded run is needed).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.smoke import add_smoke, conversation_slice, scratch
from m3graph.dates import find_times
from m3graph.devkit.eval.judge import answer_match
from m3graph.ingest.chat.locomo import load_locomo
from m3graph.reasoning.control import parse_reader_reply
from m3graph.reasoning.grounding import asks_when, ground_time

DEV = Path(__file__).resolve().parents[2] / "shared" / "data" / "conversations"


def session_dates(directory: Path) -> dict[str, dict[str, str]]:
    """source -> clip label -> the session's date as the reader's evidence shows it ("8 May 2023")."""
    out: dict[str, dict[str, str]] = {}
    for path in sorted(directory.glob("*.json")):
        conv, _ = load_locomo(path)
        out[conv.source_id] = {f"CLIP_{k}": f"{s.started_at.day} {s.started_at:%B %Y}"
                               for k, s in enumerate(conv.sessions) if s.started_at is not None}
    return out


def reader_answer(row: dict[str, Any]) -> str | None:
    """What the reader itself answered: its last answer round's reply (the answer field may hold a tool's)."""
    for rnd in reversed(row.get("rounds") or []):
        if rnd.get("action") == "answer":
            for raw in reversed(rnd.get("raw") or []):
                parsed = parse_reader_reply(raw)
                if parsed is not None and parsed[0]:
                    return parsed[0]
            return None
    return None


def within_gold(answer: str, gold: str) -> bool:
    """Whether the answer's one time lies inside the gold answer's one time: "18 July 2023" is right for "The
    Tuesday before 20 July 2023", which answer match (words) scores wrong, and "20 July 2023" wrong, which it
    scores right. A gold answer without exactly one time expression (or a stray mark, "3` July") counts as not."""
    told, wanted = find_times(answer), find_times(gold)
    if len(told) != 1 or len(wanted) != 1:
        return False
    return wanted[0].first <= told[0].first and told[0].last <= wanted[0].last


@dataclass
class Replay:
    """Answers checked, right before and after (answer match, and by date interval for when-questions)."""

    checked: int = 0
    before: int = 0
    after: int = 0
    when: int = 0  # when-questions among the checked answers
    dated_before: int = 0
    dated_after: int = 0
    changed: list[str] = field(default_factory=list)


def replay(rows: Sequence[dict[str, Any]], dates: dict[str, dict[str, str]]) -> Replay:
    """Every kept reader answer of `rows` checked again, with one line per changed answer."""
    out = Replay()
    for row in rows:
        if row.get("outcome") not in ("answered", "forced"):
            continue
        raw = reader_answer(row)
        if raw is None:
            continue
        out.checked += 1
        unanswerable = "adversarial" in (row.get("types") or [])
        shown = [(label, line) for rnd in row.get("rounds") or []
                 for label, lines in (rnd.get("knowledge") or {}).items() for line in lines]
        grounded = ground_time(row["question"], raw, shown, dates.get(row.get("source") or "", {}))
        final = grounded.answer if grounded is not None else raw
        was = answer_match(raw, row["gt"], unanswerable) == "yes"
        now = answer_match(final, row["gt"], unanswerable) == "yes"
        out.before, out.after = out.before + was, out.after + now
        if asks_when(row["question"]):
            out.when += 1
            out.dated_before += within_gold(raw, row["gt"])
            out.dated_after += within_gold(final, row["gt"])
        if grounded is not None:
            out.changed.append(f"{row['id']}: {raw[:60]!r} -> {final!r} (gold {row['gt']!r}): "
                               f"{'yes' if was else 'no'} -> {'yes' if now else 'no'}")
    return out


def smoke_results(conversations: Path, out: Path) -> Path:
    """A chat-qa results file for every question of `conversations`: the reader answered with the date of the
    evidence's session, having been shown the evidence turns (what `--smoke` replays)."""
    rows = []
    for path in sorted(conversations.glob("*.json")):
        conv, questions = load_locomo(path)
        turns = {t.turn_id: (k, t) for k, s in enumerate(conv.sessions) for t in s.turns}
        for n, q in enumerate(questions):
            shown = [turns[e] for e in q.evidence if e in turns]
            if not shown:
                continue
            session = conv.sessions[shown[0][0]].started_at
            said = f"{session.day} {session:%B %Y}" if session is not None else "today"
            knowledge: dict[str, list[str]] = {}
            for k, t in shown:
                knowledge.setdefault(f"CLIP_{k}", []).append(f"{t.speaker}: {t.text}")
            reply = json.dumps({"answer": said, "next_query": None})
            rows.append({"id": f"{conv.source_id}#{n}", "source": conv.source_id, "question": q.question,
                         "gt": str(q.answer), "types": ["adversarial"] if q.category == 5 else [],
                         "outcome": "answered",
                         "rounds": [{"action": "answer", "knowledge": knowledge, "raw": [reply]}]})
    out.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="*", type=Path)
    parser.add_argument("--conversations", type=Path, default=DEV)
    add_smoke(parser, "a results file of its own over two sessions of one conversation")
    args = parser.parse_args(argv)
    if args.smoke:
        work = scratch("grounding")
        args.conversations = conversation_slice(work / "conversations", sessions=2, questions=12, files=1,
                                                source=args.conversations)
        args.results = [smoke_results(args.conversations, work / "results.jsonl")]
    if not args.results:
        parser.error("give at least one results file (or --smoke)")
    dates = session_dates(args.conversations)
    for path in args.results:
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        r = replay(rows, dates)
        print(f"{path}: {r.checked} reader answers, {len(r.changed)} changed by the check; "
              f"answer match {r.before} -> {r.after}; when-questions {r.when}, the answer's time inside the gold "
              f"one {r.dated_before} -> {r.dated_after}")
        for line in r.changed:
            print(f"  {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
