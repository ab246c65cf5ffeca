"""Accuracy of the statement parser (`m3graph.statements`) on a hand-labelled sample.

Why: a statement's slot decides which older fact it retires, so a wrong slot hides a true fact while a missed
statement (None) only stays free text. The report therefore keeps the two apart: *precision* is the share of
parsed statements whose slot (subject key, attribute key, functional) is right, *coverage* the share of
labelled statements that parse at all. Values, negation and change markers are counted on their own.

The sample (`data/statements.jsonl`) was labelled by hand before the parser was written: 30 lines from
MemoryAgentBench FactConsolidation, the rest chat and video memories in varied wording, plus sentences that
must not parse (`"none": true`). Lines with `"split": "after"` were written after the parser, as a small check
on wording it was not written against.

Speech (`data/speech_statements.jsonl`, `measure_speech`; `m3graph eval statements --data <that file>` picks it
up by its `speaker` field): 220 real sentences, each with its speaker and addressee, read by
`m3graph.speech_statements.read_turn`. 120 from the LoCoMo dev conversations (../shared/data/conversations)
whose sentence holds an I/my/you word (seed 38) and 40 more that start with I/My/I'm/I've (seed 3838), then 60
user sentences of the BEAM dev chats (../shared/data/beam, seed 38); turns that any question cites as
evidence, and messages the BEAM probing questions cite, were left out before sampling. Each line was labelled
by hand (its statements, or none) before the speech rules were written; `split` "dev" lines were looked at while
writing them, "held" lines were scored only at the end. A line may state several things: a parsed statement is
right when its slot matches one of the line's labels (a many-valued slot by its value too).

Updates in other words (issue 38): 120 more BEAM user sentences holding a first-person word and a number or an
update word (messages any probing question cites, and their neighbours, left out), speaker "User", labelled
before scoring. "update-dev" (30 lines of chats 1-5, seed 3839): the measurement and paraphrase rules were tuned on
them. "update-seen" (60 lines, seeds 3839 and 3840): scored once as held-out, then looked at, so no longer held
out. "update-held" (30 lines, seed 3841): labelled before the final rules were scored on them, never tuned on.
`m3graph eval statements --data <the speech sample> --split update-held`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from m3graph.speech_statements import read_turn
from m3graph.statements import normalise_name, parse_statement

SAMPLE = Path(__file__).parent / "data" / "statements.jsonl"
SPEECH_SAMPLE = Path(__file__).parent / "data" / "speech_statements.jsonl"
_KEYS = ("subject", "attribute_key", "value", "functional", "negated", "changed")


@dataclass
class StatementReport:
    expected: int = 0  # labelled statements (a slot is expected)
    parsed: int = 0  # of those, how many parsed
    correct_slot: int = 0  # subject key, attribute key and functional all right
    correct_value: int = 0  # right slot and right value key
    correct_markers: int = 0  # right slot and right negated/changed
    wrong_slot: int = 0  # parsed into a wrong slot (the costly error)
    missed: int = 0  # None where a statement was expected
    none_expected: int = 0
    none_correct: int = 0  # None where None was expected
    false_parse: int = 0  # parsed where None was expected (also a wrong slot)
    errors: list[str] = field(default_factory=list)

    @property
    def precision(self) -> float:
        """Right slots over everything parsed, including sentences that should not have parsed."""
        total = self.parsed + self.false_parse
        return self.correct_slot / total if total else 0.0

    @property
    def coverage(self) -> float:
        return self.parsed / self.expected if self.expected else 0.0


def _load(path: Path) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        if not isinstance(row, dict) or not isinstance(row.get("text"), str):
            raise ValueError(f"{path}:{number}: each line must be an object with a text")
        labels = row.get("statements", [row]) if "speaker" in row else [] if row.get("none") else [row]
        if not isinstance(labels, list) or any(not isinstance(x, dict) or any(k not in x for k in _KEYS)
                                                for x in labels):
            raise ValueError(f"{path}:{number}: a statement needs {', '.join(_KEYS)}")
        rows.append(row)
    return rows


def measure(path: Path | None = None, split: str | None = None) -> StatementReport:
    """Parse every labelled line and count; `split` keeps only lines of that split ("after"). A sample of
    speech (lines with a `speaker`) is measured by `measure_speech`."""
    rows = _load(path or SAMPLE)
    if rows and all("speaker" in r for r in rows):
        return measure_speech(rows, split)
    report = StatementReport()
    for row in rows:
        if split is not None and row.get("split") != split:
            continue
        text = str(row["text"])
        got = parse_statement(text)
        if row.get("none"):
            report.none_expected += 1
            if got is None:
                report.none_correct += 1
            else:
                report.false_parse += 1
                report.errors.append(f"parsed, expected None: {text!r} -> {got.slot_key}")
            continue
        report.expected += 1
        if got is None:
            report.missed += 1
            report.errors.append(f"None, expected a statement: {text!r}")
            continue
        report.parsed += 1
        slot = (normalise_name(str(row["subject"])), row["attribute_key"], row["functional"])
        if (got.subject_key, got.attribute_key, got.functional) != slot:
            report.wrong_slot += 1
            report.errors.append(f"wrong slot: {text!r} -> {got.slot_key} (functional {got.functional})")
            continue
        report.correct_slot += 1
        if got.value_key == normalise_name(str(row["value"])):
            report.correct_value += 1
        else:
            report.errors.append(f"wrong value: {text!r} -> {got.value_key!r}")
        if (got.negated, got.changed) == (row["negated"], row["changed"]):
            report.correct_markers += 1
        else:
            report.errors.append(f"wrong markers: {text!r} -> negated {got.negated}, changed {got.changed}")
    return report


def measure_speech(rows: list[dict[str, object]] | None = None, split: str | None = None) -> StatementReport:
    """Read every sentence as its speaker's turn; `expected` counts labelled statements, `parsed` those found
    in the right slot or found at all (a statement read into a slot no label names is a wrong slot, or a false
    parse on a line labelled with none)."""
    report = StatementReport()
    for row in rows if rows is not None else _load(SPEECH_SAMPLE):
        if split is not None and row.get("split") != split:
            continue
        text, labels = str(row["text"]), list(row.get("statements") or [])  # type: ignore[call-overload]
        addressee = row.get("addressee")
        got = read_turn(text, str(row["speaker"]), str(addressee) if addressee else None)
        if not labels:
            report.none_expected += 1
            report.none_correct += not got
            report.false_parse += len(got)
            report.errors += [f"parsed, expected None: {text!r} -> {g.statement.slot_key}" for g in got]
            continue
        report.expected += len(labels)
        # a many-valued slot is keyed by its value too ("uses Wireshark" and "uses Socket.io" are two slots)
        slots = {(normalise_name(str(x["subject"])), x["attribute_key"], x["functional"],
                  "" if x["functional"] else normalise_name(str(x["value"]))): x for x in labels}
        found = {(g.statement.subject_key, g.statement.attribute_key, g.statement.functional,
                  "" if g.statement.functional else g.statement.value_key): g for g in got}
        report.parsed += min(len(got), len(labels))
        report.missed += max(0, len(labels) - len(got))
        report.false_parse += max(0, len(got) - len(labels))
        for key, g in found.items():
            label = slots.get(key)
            if label is None:
                report.wrong_slot += 1
                report.errors.append(f"wrong slot: {text!r} -> {g.statement.slot_key}")
                continue
            report.correct_slot += 1
            report.correct_value += g.statement.value_key == normalise_name(str(label["value"]))
            report.correct_markers += (g.statement.negated, g.statement.changed) == (label["negated"],
                                                                                    label["changed"])
        if len(got) < len(labels):
            report.errors.append(f"missed {len(labels) - len(got)}: {text!r}")
    return report


def format_report(report: StatementReport) -> str:
    lines = [
        f"statements expected   {report.expected}",
        f"  parsed              {report.parsed}  (coverage {report.coverage:.1%})",
        f"  correct slot        {report.correct_slot}",
        f"  correct value       {report.correct_value}",
        f"  correct markers     {report.correct_markers}",
        f"  wrong slot          {report.wrong_slot}",
        f"  None (missed)       {report.missed}",
        f"None expected         {report.none_expected}",
        f"  None correctly      {report.none_correct}",
        f"  parsed anyway       {report.false_parse}",
        f"slot precision        {report.precision:.1%}  (right slots / everything parsed)",
    ]
    lines += [f"  - {error}" for error in report.errors]
    return "\n".join(lines)
