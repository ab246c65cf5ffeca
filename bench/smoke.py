"""What the `--smoke` size of the `python -m bench.*` entry points shares: the flag, a server to measure on, and
the smallest slices of the shared data.

Why: a benchmark that nothing runs rots (a query or a product signature changes, the benchmark does not, and the
next person to measure finds a `TypeError` after an hour of loading). Every entry point therefore takes `--smoke`:
the smallest size that still goes through each of its steps end to end, in seconds, printing its normal report;
tests/e2e/test_bench_smoke.py runs each one in CI. A smoke proves that the benchmark runs, not what it measures.

Benchmarks that start a Neo4j of their own also take `--uri`: measure on that running server instead (user,
password and database from NEO4J_USER / NEO4J_PASSWORD / NEO4J_DATABASE, as every m3graph command reads them).
The benchmark writes its data into that database, so point it at a scratch one; the smoke tests pass the test
session's server (whose database the suite owns and wipes).
"""

from __future__ import annotations

import argparse
import atexit
import json
import shutil
import tempfile
import wave
from pathlib import Path
from typing import Any

import numpy as np

from m3graph.settings import LocalServer, Settings

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"
CONVERSATIONS = SHARED / "conversations"
LIBRISPEECH = SHARED / "identity" / "voices" / "librispeech_test-other"
_TURN = "D{session}:"


def add_smoke(parser: argparse.ArgumentParser, what: str) -> None:
    """The `--smoke` flag; `what` says which size it picks (shown in --help)."""
    parser.add_argument("--smoke", action="store_true",
                        help=f"CI size, seconds: {what} (every step still runs; tests/e2e/test_bench_smoke.py)")


def add_uri(parser: argparse.ArgumentParser) -> None:
    """The `--uri` option of a benchmark that otherwise starts its own Neo4j."""
    parser.add_argument("--uri", default=None,
                        help="measure on this running Neo4j instead of starting one (NEO4J_USER, NEO4J_PASSWORD, "
                             "NEO4J_DATABASE from the environment); the benchmark writes its data into that "
                             "database: use a scratch one")


def server_settings(uri: str | None, local: LocalServer, **fields: Any) -> Settings:
    """Settings for the benchmark's own local server, or for the running one at `uri`.

    Without `uri` the URI is None explicitly: an exported NEO4J_URI must not send a benchmark that wipes its
    store to somebody else's server; with it, nothing local is started or stopped."""
    if uri:
        return Settings(neo4j_uri=uri, **fields)
    return Settings(neo4j_uri=None, local=local, **fields)


def scratch(name: str) -> Path:
    """A fresh temporary directory for a smoke's inputs, removed when the process exits."""
    path = Path(tempfile.mkdtemp(prefix=f"m3graph-smoke-{name}-"))
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def conversation_slice(out_dir: Path, sessions: int = 2, questions: int = 8, files: int | None = None,
                       source: Path = CONVERSATIONS) -> Path:
    """LoCoMo-format copies of the dev conversations cut to their first `sessions` sessions and at most `questions`
    of the questions whose evidence lies in them (adversarial ones included), under `out_dir`; returns `out_dir`.

    The copies are named `smoke-<stem>.json`, so their source ids never meet a graph's real conversations. Only
    the turns and the questions are kept (never the authors' summaries, which leak answers)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = sorted(source.glob("*.json"))[:files]
    if not paths:
        raise SystemExit(f"no LoCoMo conversations in {source} (the shared data set)")
    keep_prefixes = tuple(_TURN.format(session=n) for n in range(1, sessions + 1))
    for path in paths:
        raw = json.loads(path.read_text(encoding="utf-8"))
        out: dict[str, Any] = {"speaker_a": raw["speaker_a"], "speaker_b": raw["speaker_b"]}
        for n in range(1, sessions + 1):
            for key in (f"session_{n}_date_time", f"session_{n}"):
                if key in raw:
                    out[key] = raw[key]
        inside = [q for q in raw.get("qa", [])
                  if q.get("evidence") and all(str(e).startswith(keep_prefixes) for e in q["evidence"])]
        out["qa"] = _round_robin(inside, questions)
        (out_dir / f"smoke-{path.name}").write_text(json.dumps(out, indent=1), encoding="utf-8")
    return out_dir


def _round_robin(questions: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    """At most `n` questions taken one category at a time, so a small slice still holds every category it can
    (LoCoMo lists its adversarial questions last), in the file's order within each category."""
    by_category: dict[Any, list[dict[str, Any]]] = {}
    for q in questions:
        by_category.setdefault(q.get("category"), []).append(q)
    picked: list[dict[str, Any]] = []
    while len(picked) < n and any(by_category.values()):
        for queue in by_category.values():
            if queue and len(picked) < n:
                picked.append(queue.pop(0))
    return sorted(picked, key=questions.index)


def two_speaker_call(media_dir: Path, utterances: int = 2, source: Path = LIBRISPEECH) -> Path:
    """A two-person "phone call" laid out as scripts/fetch_identity_media.sh lays out the pyannote sample
    (`pyannote/audio/sample/sample.wav` + `.rttm`), built from LibriSpeech read speech of the shared data: two
    speakers taking `utterances` turns each (their shortest), 0.5 s of silence between turns. Returns `media_dir`.

    Why: the real call is fetched from a registry by a script CI does not run; this one is real speech with exact
    turns, enough to drive VAD, turns, clustering and the scoring once."""
    import soundfile as sf

    from m3graph.perception.vad import SAMPLE_RATE

    speakers = sorted(p for p in source.iterdir() if p.is_dir())[:2]
    if len(speakers) < 2:
        raise SystemExit(f"no LibriSpeech speakers in {source} (the shared data set)")
    files = [sorted(s.glob("*.flac"), key=lambda f: (f.stat().st_size, f.name))[:utterances] for s in speakers]
    gap = np.zeros(SAMPLE_RATE // 2, dtype=np.float32)
    parts, rttm, t = [], [], 0.0
    for k in range(utterances):
        for s, speaker in enumerate(speakers):
            audio, rate = sf.read(files[s][k], dtype="float32")
            if rate != SAMPLE_RATE:
                raise SystemExit(f"{files[s][k]}: {rate} Hz, expected {SAMPLE_RATE}")
            parts += [audio, gap]
            dur = audio.size / SAMPLE_RATE
            rttm.append(f"SPEAKER sample 1 {t:.3f} {dur:.3f} <NA> <NA> {speaker.name} <NA> <NA>")
            t += dur + gap.size / SAMPLE_RATE
    sample = media_dir / "pyannote" / "audio" / "sample"
    sample.mkdir(parents=True, exist_ok=True)
    pcm = (np.clip(np.concatenate(parts), -1.0, 1.0) * 32767).astype("<i2")
    with wave.open(str(sample / "sample.wav"), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SAMPLE_RATE)
        w.writeframes(pcm.tobytes())
    (sample / "sample.rttm").write_text("\n".join(rttm) + "\n", encoding="utf-8")
    return media_dir


def apply_smoke(args: argparse.Namespace, **sizes: Any) -> argparse.Namespace:
    """With `--smoke`, the given sizes replace what the command line said (the smoke is one fixed size)."""
    if getattr(args, "smoke", False):
        for name, value in sizes.items():
            if not hasattr(args, name):
                raise AttributeError(f"--smoke sets {name!r}, which the parser does not define")
            setattr(args, name, value)
    return args
