"""Parsing a shared file in a worker process with a time and a memory budget, so a hostile file costs its budget.

Declared sizes are checked first (`documents.DeclaredLimits`, `files.max_image_pixels`), but a file can stay
inside every declared limit and still be slow or big to parse (a PDF's content streams, a large but legal XML
part). So the reader runs in a fresh interpreter (never a fork of the ingest process, whose models and
address space it would inherit) with ``RLIMIT_AS`` at `ParseBudget.memory_mb` and ``RLIMIT_CPU`` just over
`ParseBudget.seconds`, and the caller waits at most `ParseBudget.seconds`: past the time it is killed, past
the memory its allocation fails; either way the file is refused with the reason and the rest of the
conversation is ingested (issue 37). Passages come back as JSON on stdout.

A photo is decoded here once, under the pixel cap; one of more than `WORK_PIXELS` is also written reduced to
that size (a PNG in a folder the caller owns), and the caller's face detection and description read the reduced
copy: a 6000 x 6000 PNG cost the ingest process 1.1 GB and 22 s at full size, and faces and colours need no
more than 12 MP.

Run as ``python -m m3graph.ingest.chat.file_worker <task> <path> <memory_mb> <seconds>`` with the
`FilesConfig` as JSON on stdin; tasks: ``passages:<parser>`` (`documents.passages`) and ``image:<out.png>``
(a full decode under the pixel cap, `still_image.load_rgb`, answering the size, writing the reduced copy).
"""

from __future__ import annotations

import json
import math
import os
import resource
import signal
import subprocess
import sys
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from m3graph.perception.documents import Passage
from m3graph.perception.file_types import FileRejected
from m3graph.settings import FilesConfig


@dataclass(frozen=True)
class ParseBudget:
    """What parsing one shared file may cost (docs/reliability.md "Hostile files")."""

    seconds: float = 20.0  # wall clock, worker start included
    memory_mb: int = 1024  # the worker's address space (its RSS stays below it)


BUDGET = ParseBudget()
WORK_PIXELS = 12_000_000  # a larger photo is described and searched for faces from a copy reduced to this
_MAX_REPLY = 16 * 2**20  # the passages are bounded by files.max_passages x passage_chars; this is a backstop
# The peak resident memory (kB) each worker reported of itself, newest last (bounded): what a file cost to parse.
# Read from the worker's own /proc/self/status (VmHWM): getrusage's ru_maxrss of a child also counts the parent's
# memory at fork time, so a large parent would hide what the worker itself used.
worker_peaks_kb: deque[int] = deque(maxlen=64)


def in_worker(task: str, path: Path, cfg: FilesConfig, budget: ParseBudget = BUDGET) -> Any:
    """The worker's answer for `task` on `path`; `FileRejected` for a refusal, a timeout or a crash."""
    # One BLAS/OpenMP thread: per-thread buffers would eat the address-space budget on a many-core host.
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",  # noqa: TID251 - passed to a child
           "MKL_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", __name__, task, str(path), str(budget.memory_mb), str(budget.seconds)]
    start = time.monotonic()
    with subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                          start_new_session=True) as proc:
        try:
            out, err = proc.communicate(cfg.model_dump_json().encode(), timeout=budget.seconds)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise FileRejected(f"not parsed within {budget.seconds:g} s (the per-file parse budget): refused "
                               "as too costly") from None
    if proc.returncode != 0 or len(out) > _MAX_REPLY:
        why = (f"killed by signal {-proc.returncode}" if proc.returncode < 0 else f"exit {proc.returncode}")
        if proc.returncode in (-signal.SIGXCPU, -signal.SIGKILL):
            why += f" after {time.monotonic() - start:.1f} s: over the {budget.seconds:g} s parse budget"
        tail = err.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
        raise FileRejected(f"its parser failed ({why}; {tail[0][:160]})")
    reply = json.loads(out)
    if isinstance(reply.get("peak_kb"), int):
        worker_peaks_kb.append(reply["peak_kb"])
    if "refused" in reply:
        raise FileRejected(str(reply["refused"]))
    return reply["result"]


def passages(path: Path, parser: str, cfg: FilesConfig, budget: ParseBudget = BUDGET) -> list[Passage]:
    """`documents.passages(path, parser, cfg)`, run in a budgeted worker."""
    found = in_worker(f"passages:{parser}", path, cfg, budget)
    return [Passage(p["text"], p.get("page"), p.get("section")) for p in found]


def decode_image(path: Path, reduced: Path, cfg: FilesConfig, budget: ParseBudget = BUDGET
                 ) -> tuple[int, int, bool]:
    """(width, height, whether `reduced` was written) once the whole picture decoded in a budgeted worker
    (under `files.max_image_pixels`); a picture over `WORK_PIXELS` is written to `reduced` at that size."""
    width, height, wrote = in_worker(f"image:{reduced}", path, cfg, budget)
    return int(width), int(height), bool(wrote)


def _work(task: str, path: Path, cfg: FilesConfig) -> Any:
    if task.startswith("passages:"):
        from m3graph.perception import documents

        return [{"text": p.text, "page": p.page, "section": p.section}
                for p in documents.passages(path, task.split(":", 1)[1], cfg)]
    if task.startswith("image:"):
        from PIL import Image

        from m3graph.perception.still_image import load_rgb

        rgb = load_rgb(path, cfg.max_image_pixels)
        height, width = int(rgb.shape[0]), int(rgb.shape[1])
        if width * height <= WORK_PIXELS:
            return [width, height, False]
        scale = math.sqrt(WORK_PIXELS / (width * height))
        image = Image.fromarray(rgb)
        del rgb
        image.thumbnail((max(1, int(width * scale)), max(1, int(height * scale))))
        image.save(task.split(":", 1)[1], format="PNG", compress_level=1)
        return [width, height, True]
    raise ValueError(f"unknown task {task!r}")


def main(argv: list[str]) -> int:
    task, path, memory_mb, seconds = argv
    limit = int(memory_mb) * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    cpu = math.ceil(float(seconds)) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    cfg = FilesConfig.model_validate_json(sys.stdin.read())
    try:
        reply: dict[str, Any] = {"result": _work(task, Path(path), cfg)}
    except FileRejected as exc:
        reply = {"refused": str(exc)}
    except MemoryError:
        reply = {"refused": f"needs more than the {memory_mb} MB parse budget to be read: refused as too costly"}
    except Exception as exc:  # a reader's own failure on hostile bytes: reported like the in-process readers did
        reply = {"refused": f"could not be read ({type(exc).__name__}: {str(exc)[:160]})"}
    reply["peak_kb"] = _peak_kb()
    sys.stdout.write(json.dumps(reply))
    return 0


def _peak_kb() -> int | None:
    """This process's peak resident memory in kB (VmHWM), None where /proc does not tell."""
    try:
        for line in Path("/proc/self/status").read_text(encoding="ascii", errors="replace").splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
