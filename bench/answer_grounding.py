"""Replays chat-qa results through the when-answer check (m3graph/reasoning/grounding.py), no model, no graph.

Why: the check changes an answer only after the reader wrote it, so its effect can be measured on answers already
recorded, apart from the reader's run-to-run variance: every question of a results file (`m3graph eval chat-qa
--out FILE`, or `--oracle`) whose reader answer was kept is checked against the lines its rounds showed, with each
LoCoMo session's date as the reader saw it, and the answer match (`judge.answer_match`) is counted before and
after. A results file written by a controller that already grounds shows its raw reader replies, not its answers,
so this reads the reader's own answer from the answer round's JSON reply.

Run: ``.venv/bin/python -m bench.answer_grounding RESULTS.jsonl [...] [--conversations DIR]``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from m3graph.devkit.eval.judge import answer_match
from m3graph.ingest.chat.locomo import load_locomo
from m3graph.reasoning.control import parse_reader_reply
from m3graph.reasoning.grounding import ground_time

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


def replay(rows: Sequence[dict[str, Any]], dates: dict[str, dict[str, str]]) -> tuple[int, int, int, list[str]]:
    """(answers checked, right before, right after, one line per changed answer)."""
    checked = before = after = 0
    changed: list[str] = []
    for row in rows:
        if row.get("outcome") not in ("answered", "forced"):
            continue
        raw = reader_answer(row)
        if raw is None:
            continue
        checked += 1
        unanswerable = "adversarial" in (row.get("types") or [])
        shown = [(label, line) for rnd in row.get("rounds") or []
                 for label, lines in (rnd.get("knowledge") or {}).items() for line in lines]
        grounded = ground_time(row["question"], raw, shown, dates.get(row.get("source") or "", {}))
        final = grounded.answer if grounded is not None else raw
        was = answer_match(raw, row["gt"], unanswerable) == "yes"
        now = answer_match(final, row["gt"], unanswerable) == "yes"
        before, after = before + was, after + now
        if grounded is not None:
            changed.append(f"{row['id']}: {raw[:60]!r} -> {final!r} (gold {row['gt']!r}): "
                           f"{'yes' if was else 'no'} -> {'yes' if now else 'no'}")
    return checked, before, after, changed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", type=Path)
    parser.add_argument("--conversations", type=Path, default=DEV)
    args = parser.parse_args(argv)
    dates = session_dates(args.conversations)
    for path in args.results:
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        checked, before, after, changed = replay(rows, dates)
        print(f"{path}: {checked} reader answers, {len(changed)} changed by the check; "
              f"answer match {before} -> {after}")
        for line in changed:
            print(f"  {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
