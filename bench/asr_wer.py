"""Word error rate of the packaged ASR models, side by side: `python -m bench.asr_wer [--models packaged,whisper-base]`.

Why: the words Whisper hears become memories, so a stronger recogniser is worth its cost only if it makes fewer
errors on speech whose text is known. Two sets, every model on the same audio in the same run:

* **generated** - every spoken line of the generated test media (`m3graph.devkit.testmedia`; espeak voices), cut
  from the video's own audio track by the manifest's spans (padded by `--pad` s), so the model hears what
  perception hears; the manifest holds each line's true text.
* **phone** - the 13 utterances of the pyannote-audio 4.0.7 sample call (`scripts/fetch_identity_media.sh`), cut by
  the spans of its `sample.stm`, which ships the transcript (two speakers, 8 kHz telephone speech, 0.5-4.4 s).

WER = (substitutions + deletions + insertions) / reference words, summed over a set (corpus-level, as jiwer
computes it), on normalised words: lower case, punctuation removed (an apostrophe inside a word kept), so "Hello?"
and "hello" agree but "note book" against "notebook" costs two errors. Speed is ASR wall seconds per audio second
and CPU seconds per audio second (all threads of this process; steadier than wall time on a loaded machine), for
`transcribe` calls only (the first call, which loads the model, is reported apart), with the load average printed:
the machine is shared, so compare the models within one run only.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.smoke import add_smoke, apply_smoke

REPO = Path(__file__).resolve().parents[1]
SR = 16000
_NON_WORD = re.compile(r"[^a-z0-9' ]+")


def normalise(text: str) -> list[str]:
    """Lower-case words with punctuation removed; apostrophes survive only inside a word ("don't", not "'tis'")."""
    words = _NON_WORD.sub(" ", text.lower().replace("\u2019", "'")).split()
    return [w.strip("'") for w in words if w.strip("'")]


def word_errors(reference: list[str], hypothesis: list[str]) -> int:
    """Minimum substitutions + deletions + insertions turning `reference` into `hypothesis` (Levenshtein on words)."""
    previous = list(range(len(hypothesis) + 1))
    for i, ref_word in enumerate(reference, 1):
        current = [i]
        for j, hyp_word in enumerate(hypothesis, 1):
            current.append(min(previous[j] + 1,  # deletion
                               current[j - 1] + 1,  # insertion
                               previous[j - 1] + (ref_word != hyp_word)))  # substitution or match
        previous = current
    return previous[-1]


def wer(pairs: list[tuple[str, str]]) -> float:
    """Corpus WER of (reference, hypothesis) texts: all errors over all reference words."""
    errors = words = 0
    for reference, hypothesis in pairs:
        ref = normalise(reference)
        errors += word_errors(ref, normalise(hypothesis))
        words += len(ref)
    if words == 0:
        raise ValueError("WER needs at least one reference word")
    return errors / words


@dataclass(frozen=True)
class Utterance:
    set_name: str
    key: str
    text: str
    audio: np.ndarray  # float32 mono 16 kHz


def _audio_of_video(path: Path) -> np.ndarray:
    """The video's audio track as 16 kHz mono float32 (ffmpeg, as perception extracts it)."""
    out = subprocess.run(["ffmpeg", "-v", "error", "-i", str(path), "-vn", "-ac", "1", "-ar", str(SR), "-f", "f32le",
                          "-"], capture_output=True, check=True)
    return np.frombuffer(out.stdout, dtype=np.float32).copy()


def _cut(audio: np.ndarray, start_s: float, end_s: float, pad_s: float) -> np.ndarray:
    lo, hi = max(0, int((start_s - pad_s) * SR)), min(audio.size, int((end_s + pad_s) * SR))
    return audio[lo:hi]


def generated_lines(media_dir: Path, pad_s: float) -> list[Utterance]:
    from m3graph.devkit.testmedia import build_test_media

    manifest = build_test_media(media_dir)
    utterances = []
    for video in manifest.videos:
        if not video.lines:
            continue
        audio = _audio_of_video(Path(video.path))
        for i, line in enumerate(video.lines):
            utterances.append(Utterance("generated", f"{video.source_id}#{i}", line.text,
                                        _cut(audio, line.start_s, line.end_s, pad_s)))
    return utterances


def phone_utterances(sample_dir: Path, pad_s: float) -> list[Utterance]:
    """The sample call's utterances from `sample.stm` (file channel speaker start end text...)."""
    from m3graph.perception.vad import load_audio

    audio = load_audio(sample_dir / "sample.wav")
    utterances = []
    for n, line in enumerate((sample_dir / "sample.stm").read_text().splitlines()):
        fields = line.split(maxsplit=5)
        if len(fields) == 6:
            utterances.append(Utterance("phone", f"{fields[2]}#{n}", fields[5],
                                        _cut(audio, float(fields[3]), float(fields[4]), pad_s)))
    return utterances


def run_model(name: str, utterances: list[Utterance], threads: int) -> dict[str, object]:
    from m3graph.perception.asr import FasterWhisperASR, resolve_model_dir

    asr = FasterWhisperASR(resolve_model_dir(name), "en", threads)
    t0 = time.perf_counter()
    asr.transcribe(utterances[0].audio, SR)  # loads the model; this first call is not timed below
    load_s = time.perf_counter() - t0
    rows = []
    for u in utterances:
        t0, c0 = time.perf_counter(), time.process_time()
        hypothesis = asr.transcribe(u.audio, SR)
        rows.append({"set": u.set_name, "key": u.key, "reference": u.text, "hypothesis": hypothesis,
                     "audio_s": u.audio.size / SR, "asr_s": time.perf_counter() - t0,
                     "asr_cpu_s": time.process_time() - c0,
                     "errors": word_errors(normalise(u.text), normalise(hypothesis)), "words": len(normalise(u.text))})
    return {"model": name, "model_dir": str(resolve_model_dir(name)), "first_call_s": load_s, "rows": rows}


def summary(result: dict[str, object]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    rows = result["rows"]
    assert isinstance(rows, list)
    for set_name in sorted({r["set"] for r in rows}):
        mine = [r for r in rows if r["set"] == set_name]
        out[set_name] = {"wer": wer([(r["reference"], r["hypothesis"]) for r in mine]),
                         "errors": sum(r["errors"] for r in mine), "words": sum(r["words"] for r in mine),
                         "utterances": len(mine), "audio_s": sum(r["audio_s"] for r in mine),
                         "asr_s_per_audio_s": sum(r["asr_s"] for r in mine) / sum(r["audio_s"] for r in mine),
                         "cpu_s_per_audio_s": sum(r["asr_cpu_s"] for r in mine) / sum(r["audio_s"] for r in mine)}
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default="packaged,whisper-base", help="asr_model values (comma-separated)")
    p.add_argument("--media", type=Path, default=REPO / ".m3graph" / "testmedia", help="generated test media")
    p.add_argument("--phone", type=Path, default=REPO / ".m3graph" / "identity-media" / "pyannote" / "audio" / "sample",
                   help="directory of sample.wav + sample.stm ('' skips the phone call)")
    p.add_argument("--pad", type=float, default=0.2, help="seconds added on each side of a span")
    p.add_argument("--threads", type=int, default=2, help="CTranslate2 threads (perception.threads)")
    p.add_argument("--out", type=Path, default=None, help="JSON with every hypothesis")
    p.add_argument("--show", action="store_true", help="print each hypothesis that has errors")
    p.add_argument("--lines", type=int, default=None, help="only the first N generated lines")
    add_smoke(p, "the packaged model on the first 3 generated lines, no phone call")
    args = apply_smoke(p.parse_args(argv), models="packaged", phone=Path(""), lines=3)
    utterances = generated_lines(args.media, args.pad)[:args.lines]
    if args.phone == Path():  # '' (argparse makes it Path("."), which is Path()): the phone call is skipped
        pass
    elif (args.phone / "sample.stm").is_file():
        utterances += phone_utterances(args.phone, args.pad)
    else:
        print(f"phone call not found in {args.phone}: run scripts/fetch_identity_media.sh", file=sys.stderr)
    load_before = [round(x, 2) for x in os.getloadavg()]
    results = [run_model(name.strip(), utterances, args.threads) for name in args.models.split(",") if name.strip()]
    load_after = [round(x, 2) for x in os.getloadavg()]
    print(f"load average before {load_before}, after {load_after}; {os.cpu_count()} CPUs; threads {args.threads}")
    print("| set | model | WER | errors / words | ASR wall s per audio s | ASR CPU s per audio s | first call s |")
    print("|---|---|---|---|---|---|---|")
    for result in results:
        for set_name, s in summary(result).items():
            print(f"| {set_name} ({s['utterances']:.0f} utts, {s['audio_s']:.1f} s) | {result['model']} | "
                  f"{s['wer']:.1%} | {s['errors']:.0f} / {s['words']:.0f} | {s['asr_s_per_audio_s']:.2f} | "
                  f"{s['cpu_s_per_audio_s']:.2f} | "
                  f"{result['first_call_s']:.1f} |")
    if args.show:
        for result in results:
            for r in result["rows"]:  # type: ignore[attr-defined]
                if r["errors"]:
                    print(f"{result['model']:>13} {r['key']:>10}: {r['reference']!r} -> {r['hypothesis']!r}")
    if args.out:
        args.out.write_text(json.dumps({"load_before": load_before, "load_after": load_after, "results": results},
                                       indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
