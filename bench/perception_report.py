"""Markdown tables of a `bench.perception` result file (the ones docs/benchmarks.md quotes)."""

from __future__ import annotations

from typing import Any

from bench.perception import FACE_STAGES, LABELS, STAGES, VOICE_STAGES


def _f(value: Any, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def stage_table(stages: dict[str, Any]) -> str:
    """Wall RTF per stage and variant, with CPU seconds per media second beside it where the run recorded them."""
    names = list(stages)
    has_cpu = all("stages_cpu_rtf" in stages[n] for n in names)
    cols = [f"{n}: wall RTF" for n in names] + ([f"{n}: CPU s / media s" for n in names] if has_cpu else [])
    rows = ["| stage (median over repeats) | " + " | ".join(cols) + " |", "|---|" + "---|" * len(cols)]
    for s in STAGES:
        cells = [_f(stages[n]["stages_rtf"].get(s)) for n in names]
        cells += [_f(stages[n]["stages_cpu_rtf"].get(s)) for n in names] if has_cpu else []
        rows.append(f"| {LABELS[s]} | " + " | ".join(cells) + " |")
    for key, cpu_key, label in (
            ("faces_seq_rtf", None, "**faces total** (frames + " + ", ".join(FACE_STAGES[:3]) + ", …)"),
            ("voices_seq_rtf", None, "**voices total** (" + ", ".join(VOICE_STAGES[1:4]) + ", …)"),
            ("perceive_serial_rtf", None, "faces + voices one after the other (sum of the two above)"),
            ("perceive_parallel_rtf", "perceive_parallel_cpu_rtf",
             "**perception, faces ∥ voices** (as the pipeline runs it)"),
            ("clip_total_rtf", "clip_total_cpu_rtf", "**cut + audio + perception** per clip")):
        rng = key.removesuffix("_rtf") + "_range"
        cells = [f"{_f(stages[n][key])} ({_f(stages[n][rng][0], 2)}–{_f(stages[n][rng][1], 2)})" for n in names]
        if has_cpu:
            cells += [_f(stages[n].get(cpu_key)) if cpu_key else "" for n in names]
        rows.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def per_clip_table(stages: dict[str, Any]) -> str:
    names = list(stages)
    clips = list(stages[names[0]]["perceive_parallel_rtf_per_clip"])
    rows = ["| clip: faces ∥ voices RTF (median) | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for c in clips:
        rows.append(f"| {c} | " + " | ".join(_f(stages[n]["perceive_parallel_rtf_per_clip"].get(c)) for n in names)
                    + " |")
    return "\n".join(rows)


def celery_table(celery: dict[str, Any]) -> str:
    rows = ["| worker concurrency | batch wall s (median) | clips/min | RTF (wall / media s) | throughput vs first | "
            "task seconds cut / faces / voices / commit (median sum per batch) |", "|---|---|---|---|---|---|"]
    ratio = celery.get("throughput_ratio", {})
    for c, run in celery["runs"].items():
        med = run.get("median")
        if med is None:
            continue
        t = med["task_s"]
        rows.append(f"| {c} | {med['wall_s']:.1f} | {med['clips_per_min']:.2f} | {med['rtf']:.2f} | "
                    f"{_f(ratio.get(c), 2)} | {t['cut']:.1f} / {t['faces']:.1f} / {t['voices']:.1f} / "
                    f"{t['commit']:.1f} |")
    return "\n".join(rows)


def print_report(data: dict[str, Any]) -> None:
    meta = data["meta"]
    print(f"command: {meta['command']}\nnproc {meta.get('nproc')}, load average at start {meta.get('loadavg_start')}"
          f", at end {meta.get('loadavg_end')}")
    if "cold_start" in data:
        print(f"cold start (first clip incl. model loading): {data['cold_start']['first_clip_s']:.1f} s")
    if data.get("stages"):
        print()
        print(stage_table(data["stages"]))
        print()
        print(per_clip_table(data["stages"]))
    if data.get("celery", {}).get("runs"):
        print()
        print(celery_table(data["celery"]))
