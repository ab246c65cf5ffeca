"""Hostile research pickles (issue 37): read as data, refused quickly, and never a crash of the process.

Every hostile file is built here at run time from pickle opcodes (nothing big is committed). The loads run in a
child process (`_run_cases`) with an address-space cap, so a segfault (exit 139, what numpy did with a forged
dtype before the loader checked dtype states) or an allocation past the cap fails the test instead of killing
pytest. The fuzz part mutates a valid VideoGraph pickle at random bytes with a fixed seed: every mutant must
load or be refused with `ImportFormatError`, nothing else.
"""

from __future__ import annotations

import json
import os
import pickle
import random
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from m3graph.errors import ImportFormatError
from m3graph.ingest.safe_unpickle import DEFAULT_LIMITS, PickleLimitError, PickleLimits, check_shape, loads_videograph
from tests.helpers.m3_pickles import sample_graph

ROOT = Path(__file__).resolve().parents[2]
RSS_CAP = 2 * 1024**3  # the child's address space; numpy + Python need a few hundred MB of it

# The child: loads every file of a folder, one JSON line per file; a crash shows as its exit code. Its peak memory is
# its own VmHWM: getrusage's ru_maxrss in a child also counts the parent's memory at fork time (a large pytest).
_RUNNER = r"""
import json, resource, sys, time
from pathlib import Path
resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[2]), int(sys.argv[2])))
def peak_kb():
    return next(int(l.split()[1]) for l in Path("/proc/self/status").read_text().splitlines() if l.startswith("VmHWM:"))
from m3graph.errors import ImportFormatError
from m3graph.ingest.safe_unpickle import loads_videograph
for path in sorted(Path(sys.argv[1]).iterdir()):
    start = time.perf_counter()
    try:
        loads_videograph(path.read_bytes(), path.name)
        outcome, message = "loaded", ""
    except ImportFormatError as exc:
        outcome, message = "refused", str(exc)[:300]
    except BaseException as exc:
        outcome, message = "ESCAPED " + type(exc).__name__, str(exc)[:300]
    print(json.dumps({"case": path.name, "outcome": outcome, "s": time.perf_counter() - start,
                      "rss_kb": peak_kb(),
                      "message": message}), flush=True)
print(json.dumps({"rss_kb": peak_kb()}), flush=True)
"""


def _run_cases(folder: Path, timeout: float = 120) -> tuple[dict[str, dict[str, Any]], int]:
    """(outcome per case, peak RSS in kB) of loading every file in `folder` in a capped child process."""
    proc = subprocess.run([sys.executable, "-c", _RUNNER, str(folder), str(RSS_CAP)], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, f"the loader process died (exit {proc.returncode}): {proc.stderr[-2000:]}"
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    return {r["case"]: r for r in lines if "case" in r}, lines[-1]["rss_kb"]


# ---------------------------------------------------------------------------------------------- opcode helpers


def _get(i: int) -> bytes:
    return pickle.LONG_BINGET + struct.pack("<I", i)


def _put(i: int) -> bytes:
    return pickle.LONG_BINPUT + struct.pack("<I", i)


def _text(s: str) -> bytes:
    raw = s.encode()
    return pickle.SHORT_BINUNICODE + bytes([len(raw)]) + raw


def _global(module: str, name: str) -> bytes:
    return pickle.GLOBAL + f"{module}\n{name}\n".encode()


def _shared_lists(levels: int = 45) -> bytes:
    """``a = [a, a]`` `levels` times: a few hundred bytes, 2**levels values to anything that walks it."""
    a: list[Any] = []
    for _ in range(levels):
        a = [a, a]
    return pickle.dumps(a, protocol=2)


def _in_videograph(payload_ops: bytes) -> bytes:
    """A VideoGraph whose one node's embeddings are the object `payload_ops` pushes (memo slots from 1000)."""
    return (b"\x80\x02" + _global("videograph", "VideoGraph") + pickle.EMPTY_TUPLE + pickle.NEWOBJ
            + pickle.EMPTY_DICT + _text("nodes") + pickle.EMPTY_DICT + pickle.BININT1 + b"\x01"
            + _global("videograph", "VideoGraph.Node") + pickle.EMPTY_TUPLE + pickle.NEWOBJ + pickle.EMPTY_DICT
            + _text("type") + _text("img") + pickle.SETITEM + _text("embeddings") + payload_ops + pickle.SETITEM
            + pickle.BUILD + pickle.SETITEM + pickle.SETITEM + pickle.BUILD + pickle.STOP)


def _deep(levels: int, kind: str) -> bytes:
    ops = [pickle.EMPTY_LIST + _put(0)]
    for i in range(1, levels):
        step = (pickle.EMPTY_LIST + _get(i - 1) + pickle.APPEND if kind == "list"
                else _get(i - 1) + pickle.TUPLE1)
        ops.append(pickle.POP + step + _put(i))
    return b"".join(ops)


def _shared_tuple_key(levels: int = 45) -> bytes:
    """A dict keyed by ``t = (t, t)`` `levels` times: hashing the key walks 2**levels tuples."""
    ops = b"".join(pickle.POP + _get(i - 1) + _get(i - 1) + pickle.TUPLE2 + _put(i) for i in range(1, levels))
    key = pickle.EMPTY_DICT + _get(levels - 1) + pickle.NONE + pickle.SETITEM
    return b"\x80\x02" + pickle.EMPTY_TUPLE + _put(0) + ops + pickle.POP + key + pickle.STOP


def _copies(items: int = 100_000, copies: int = 300) -> bytes:
    """``list(big)`` `copies` times: a few hundred kB that would build `items * copies` references."""
    ops = b"\x80\x02" + pickle.EMPTY_LIST + _put(0) + pickle.MARK + pickle.NONE * items + pickle.APPENDS
    copy = _global("builtins", "list") + _get(0) + pickle.TUPLE1 + pickle.REDUCE + pickle.APPEND
    return ops + pickle.EMPTY_LIST + copy * copies + pickle.STOP


class _Forged:
    """``numpy.dtype(spec)`` restored with a chosen state: object fields with flags saying "no objects"."""

    def __init__(self, spec: str, state: tuple[Any, ...]) -> None:
        self.spec, self.state = spec, state

    def __reduce__(self) -> tuple[Any, ...]:
        return np.dtype, (self.spec, False, True), self.state


class _FromBuffer:
    def __init__(self, dtype: Any, data: bytes, shape: tuple[int, ...]) -> None:
        self.dtype, self.data, self.shape = dtype, data, shape

    def __reduce__(self) -> tuple[Any, ...]:
        from numpy._core.numeric import _frombuffer  # type: ignore[attr-defined]

        return _frombuffer, (bytearray(self.data), self.dtype, self.shape, "C")


_OBJECT_FIELDS = (3, "|", None, ("a",), {"a": (np.dtype("O"), 0)}, 8, 1, 0)  # flags 0: "holds no objects"


def _array_state(shape: tuple[int, ...], data: bytes, dtype: Any = None) -> bytes:
    """``_reconstruct(ndarray, (0,), b'b')`` then BUILD with the given shape and data (float64 by default)."""
    state = pickle.dumps((1, shape, np.dtype("f8") if dtype is None else dtype, False, data), protocol=2)[2:-1]
    return (b"\x80\x02" + _global("numpy.core.multiarray", "_reconstruct") + _global("numpy", "ndarray")
            + pickle.BININT1 + b"\x00" + pickle.TUPLE1 + pickle.SHORT_BINBYTES + b"\x01b" + pickle.TUPLE3
            + pickle.REDUCE + state + pickle.BUILD + pickle.STOP)


def hostile_pickles() -> dict[str, tuple[bytes, str]]:
    """name -> (bytes, what the refusal must say)."""
    return {
        "shared-lists-45": (_shared_lists(), "expand to more than"),
        "shared-lists-in-embeddings": (_in_videograph(_shared_lists()[2:-1]), "expand to more than"),
        "cycle": (b"\x80\x02" + pickle.EMPTY_LIST + _put(0) + _get(0) + pickle.APPEND + pickle.STOP, "cycle"),
        "deep-list-100000": (b"\x80\x02" + _deep(100_000, "list") + pickle.STOP, "nest more than"),
        "deep-tuple-100000": (b"\x80\x02" + _deep(100_000, "tuple") + pickle.STOP, "nested"),
        "deep-marks-100000": (b"\x80\x02" + pickle.MARK * 100_000 + pickle.STOP, "nests more than"),
        "shared-tuple-dict-key": (_shared_tuple_key(), "a tuple of"),
        "list-copies": (_copies(), "more than 20000000 objects"),
        "huge-int": (b"\x80\x02" + pickle.LONG4 + struct.pack("<i", 1 << 20) + b"\x01" * (1 << 20) + pickle.STOP,
                     "an integer of"),
        "forged-object-dtype": (pickle.dumps(_FromBuffer(_Forged("V8", _OBJECT_FIELDS), b"A" * 8, (1,)),
                                             protocol=5), "only plain numeric dtypes"),
        "forged-flags-f8": (pickle.dumps(_FromBuffer(_Forged("f8", (3, "<", None, None, None, -1, -1, 63)),
                                                     b"A" * 8, (1,)), protocol=5), "forged"),
        "object-dtype": (pickle.dumps(_FromBuffer(np.dtype("O"), b"A" * 8, (1,)), protocol=5),
                         "only plain numeric dtypes"),
        "frombuffer-huge-shape": (pickle.dumps(_FromBuffer(np.dtype("f8"), b"A" * 8, (10**12,)), protocol=5),
                                  "bytes of data"),
        "array-huge-shape": (_array_state((10**9, 10**9), b"A" * 8), "array of shape"),
        "array-object-data": (_array_state((1,), b"A" * 8, np.dtype("O")), "only plain numeric dtypes"),
        "bytearray8-declares-1.7GB": (b"\x80\x05" + pickle.BYTEARRAY8 + struct.pack("<Q", 1_778_385_408) + b"x"
                                      + pickle.STOP, "a byte array of"),
        "build-on-a-list": (b"\x80\x02" + pickle.EMPTY_LIST + pickle.EMPTY_DICT + pickle.BUILD + pickle.STOP,
                            "a state for a list"),
    }


# ---------------------------------------------------------------------------------------------- tests


def test_every_hostile_pickle_is_refused_quickly_in_a_capped_process(tmp_path: Path) -> None:
    cases = hostile_pickles()
    for name, (data, _) in cases.items():
        (tmp_path / f"{name}.pkl").write_bytes(data)
    outcomes, rss_kb = _run_cases(tmp_path)
    assert set(outcomes) == {f"{name}.pkl" for name in cases}
    for name, (_, says) in cases.items():
        got = outcomes[f"{name}.pkl"]
        assert got["outcome"] == "refused" and says in got["message"], (name, got)
        assert got["s"] < 5.0, (name, got["s"])
    assert rss_kb < 1024**2, f"peak RSS {rss_kb} kB"  # all of them together within 1 GB
    assert len(cases["shared-lists-45"][0]) < 500  # the 477-byte file


def test_a_valid_graph_still_loads_in_every_protocol_after_the_checks() -> None:
    builder, ids = sample_graph()
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        loaded = loads_videograph(builder.dumps(protocol=protocol))
        node = vars(loaded)["nodes"][ids["alice"]]
        assert isinstance(node.embeddings[0], np.ndarray) and node.embeddings[0].dtype == np.float32
        assert 0 < check_shape(loaded) < DEFAULT_LIMITS.max_expanded


def test_limits_are_the_ones_enforced() -> None:
    """A graph that fits default limits is refused under tighter ones, with the limit's name in the reason."""
    data = sample_graph()[0].dumps()
    for limits, says in ((PickleLimits(max_objects=100), "max_objects"), (PickleLimits(max_expanded=50),
                                                                           "max_expanded"),
                         (PickleLimits(max_depth=3), "max_depth"), (PickleLimits(max_bytes=100), "max_bytes")):
        with pytest.raises(PickleLimitError, match=says):
            loads_videograph(data, limits=limits)


def test_numeric_dtypes_are_restored_as_fresh_copies() -> None:
    """BUILD on numpy's cached float64 would change it for the process; the loader always builds a copy."""
    big_endian = np.arange(3, dtype=">f8")
    before = np.dtype("f8").byteorder
    data = pickle.dumps({"a": big_endian, "s": np.float32(1.5), "i": np.int64(7), "b": np.bool_(True)}, protocol=2)
    with pytest.raises(ImportFormatError, match="not a research VideoGraph"):
        loads_videograph(data)
    assert np.dtype("f8").byteorder == before


def test_random_mutations_of_a_valid_pickle_never_crash_the_loader(tmp_path: Path) -> None:
    """A few hundred mutants (seed 37): flipped, inserted, deleted bytes and truncations of a valid graph in three
    protocols. Each must load or be refused; the child process must exit 0 (no segfault, no memory blow-up)."""
    rng = random.Random(37)
    bases = [sample_graph()[0].dumps(protocol=p) for p in (2, 4, 5)]
    n = 0
    for _ in range(100):
        for base in bases:
            data = bytearray(base)
            for _ in range(rng.randint(1, 4)):
                at = rng.randrange(len(data))
                op = rng.random()
                if op < 0.6:
                    data[at] = rng.randrange(256)
                elif op < 0.8:
                    data[at:at] = bytes([rng.randrange(256)])
                elif op < 0.95:
                    del data[at]
                else:
                    del data[at:]
                    break
            (tmp_path / f"mutant-{n:04d}.pkl").write_bytes(bytes(data))
            n += 1
    start = time.perf_counter()
    outcomes, rss_kb = _run_cases(tmp_path)
    elapsed = time.perf_counter() - start
    assert len(outcomes) == n == 300
    escaped = {k: v for k, v in outcomes.items() if v["outcome"] not in ("loaded", "refused")}
    assert not escaped, escaped
    assert sum(v["outcome"] == "refused" for v in outcomes.values()) > 100  # the mutations do break files
    assert max(v["s"] for v in outcomes.values()) < 5.0 and elapsed < 60
    assert rss_kb < 1024**2
