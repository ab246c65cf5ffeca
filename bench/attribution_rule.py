"""Offline measurement of the speaker-attribution rule (m3graph/reasoning/attribution.py) on the LoCoMo dev set.

Why: LoCoMo's adversarial questions (category 5) ask about one speaker a fact the other speaker said about
themself; the tools-mode reader answered all of them from the matching line. Before letting the reader abstain
when an answer rests only on another speaker's lines, we need to know how often that condition holds on the
adversarial questions (true positives) and how often it holds on answerable ones (false abstentions). This needs
no model and no graph: the dataset's `evidence` turns are the lines a perfect retriever would show.

For every question that names exactly one speaker, the evidence turns are rendered as the reader sees them
(``Name <speaker_N>: text``) and four conditions are counted:

* ``by another``: every evidence turn is spoken by someone else (the ceiling of any speaker rule);
* ``other``: ``by another``, and no turn names the person other than to address them ("Thanks, Caroline!" is
  said *to* Caroline; "Caroline's race" is about her);
* ``+addr``: ``other``, and no turn is addressed to the person ("you ..." with no "I/my" in it);
* ``+no-you``: ``other``, and no turn has a second-person word at all (the strictest);
* ``reader``: the rule as the reader applies it (`misattributed`): the answer (category 5: the benchmark's
  ``adversarial_answer``, what a reader says; otherwise the gold answer) against the evidence turns plus the turn
  before and after each (so the shown lines also hold the asked person's own lines, as retrieval does);
* ``reader, no joint``: the same without the joint-line exception (a line saying "we", "us", "our", "together" is
  about both speakers), the rule before that exception.

Run: ``.venv/bin/python -m bench.attribution_rule [conversation.json ...]`` (default: the dev set); ``--smoke``:
the first two sessions of each dev conversation (CI).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from bench.smoke import add_smoke, conversation_slice, scratch
from m3graph.ingest.chat.ingest import turn_line
from m3graph.ingest.chat.locomo import load_locomo
from m3graph.ingest.chat.model import Turn
from m3graph.reasoning.attribution import is_about, misattributed, person_asked, split_speaker

DEV = Path(__file__).resolve().parents[2] / "shared" / "data" / "conversations"
CONDITIONS = ("by another", "other", "+addr", "+no-you", "reader, no joint", "reader")
_YOU = re.compile(r"\b(?:you|your|yours|yourself)\b", re.IGNORECASE)
_IDS = re.compile(r"D\d+:\d+")
CATEGORY = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}


def _conversation(path: Path, fires: Counter[tuple[int, str]], named: Counter[int], total: Counter[int]) -> None:
    conv, questions = load_locomo(path)
    tags = {name: f" <speaker_{i + 1}>" for i, name in enumerate(conv.speakers)}
    order: list[Turn] = [t for s in conv.sessions for t in s.turns]
    at = {t.turn_id: i for i, t in enumerate(order)}
    lines = [turn_line(t, tags[t.speaker]) for t in order]
    for q in questions:
        total[q.category] += 1
        person = person_asked(q.question, conv.speakers)
        ids = [at[e] for ev in q.evidence for e in _IDS.findall(ev) if e in at]
        if person is None or not ids:
            continue
        named[q.category] += 1
        spoken = [split_speaker(lines[i]) for i in ids]
        if any(s.speaker == person for s in spoken):
            continue
        fires[q.category, "by another"] += 1
        if any(is_about(s, person, addressed=False) for s in spoken):
            continue
        fires[q.category, "other"] += 1
        if not any(is_about(s, person, addressed=True) for s in spoken):
            fires[q.category, "+addr"] += 1
        if not any(_YOU.search(s.body) for s in spoken):
            fires[q.category, "+no-you"] += 1
    for q in questions:
        person = person_asked(q.question, conv.speakers)
        ids = [at[e] for ev in q.evidence for e in _IDS.findall(ev) if e in at]
        answer = q.adversarial_answer if q.category == 5 else q.answer
        if person is None or not ids or not answer:
            continue
        shown = sorted({j for i in ids for j in (i - 1, i, i + 1) if 0 <= j < len(order)})
        if misattributed(q.question, answer, [lines[j] for j in shown], shared=False):
            fires[q.category, "reader, no joint"] += 1
        if misattributed(q.question, answer, [lines[j] for j in shown]):
            fires[q.category, "reader"] += 1


def measure(paths: Sequence[Path]) -> tuple[Counter[tuple[int, str]], Counter[int], Counter[int]]:
    """(fires per (category, condition), questions naming one speaker per category, all questions per category)."""
    fires: Counter[tuple[int, str]] = Counter()
    named: Counter[int] = Counter()
    total: Counter[int] = Counter()
    for path in paths:
        _conversation(path, fires, named, total)
    return fires, named, total


def table(fires: Counter[tuple[int, str]], named: Counter[int], total: Counter[int]) -> str:
    head = "| category | questions | naming one speaker | " + " | ".join(CONDITIONS) + " |"
    out = [head, "|" + " --- |" * (3 + len(CONDITIONS))]
    for cat in sorted(total):
        cells = [f"{fires[cat, c]} ({100 * fires[cat, c] / named[cat]:.0f} %)" if named[cat] else "—"
                 for c in CONDITIONS]
        out.append(f"| {cat} {CATEGORY.get(cat, '')} | {total[cat]} | {named[cat]} | " + " | ".join(cells) + " |")
    answerable = [c for c in total if c != 5]
    n = sum(named[c] for c in answerable)
    cells = [f"{sum(fires[c, k] for c in answerable)} ({100 * sum(fires[c, k] for c in answerable) / n:.0f} %)"
             if n else "—" for k in CONDITIONS]
    out.append(f"| 1–4 together | {sum(total[c] for c in answerable)} | {n} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("paths", nargs="*", type=Path, help="LoCoMo conversation files (default: the dev set)")
    add_smoke(parser, "two sessions of each dev conversation")
    args = parser.parse_args(argv)
    paths = args.paths or sorted(DEV.glob("locomo-*.json"))
    if args.smoke:
        paths = sorted(conversation_slice(scratch("attribution"), sessions=2, questions=20, source=DEV).glob("*.json"))
    print(table(*measure(paths)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
