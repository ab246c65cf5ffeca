"""Loading the research code's VideoGraph pickles as data: no code from the file runs, and no file eats the machine.

`pickle.load` calls whatever global a file names, so an untrusted ``.pkl`` is arbitrary code execution
(reference §10). `SafeUnpickler.find_class` therefore resolves only an explicit allow-list: the two research
classes (mapped to inert stand-ins defined here, never to the real ``mmagent`` code), numpy's array/scalar/dtype
reconstruction behind checking wrappers, and plain container types. Any other global is refused with
`ImportFormatError` *before* it is called, so nothing from the file runs.

Allowed globals are still dangerous with hostile arguments (issue 37), so the loader also reads the file as
*data* under limits (`PickleLimits`, documented in docs/reliability.md):

* **Only plain numeric dtypes** (bool, int, uint, float, complex) are ever built. ``numpy.dtype`` is a wrapper
  that refuses anything else, and a dtype's BUILD state must be the canonical state of that numeric dtype: a
  forged state (object fields, forged flags) never reaches ``dtype.__setstate__``, so numpy never reads a pointer
  out of file bytes. ``_frombuffer``, ``scalar`` and an array's BUILD take only such dtypes and exactly as many
  bytes as the declared shape needs.
* **Counted while unpickling**: opcodes and container elements (``max_objects``), bytes built (``max_bytes``),
  MARK nesting (``max_depth``), integer size, and each tuple's size and depth as it is built (a tuple is hashed
  element by element with no cache, so a dict key of shared nested tuples would be exponential work).
* **Bounded when walked**: the result is measured over shared references without expanding them (each object
  once), and refused when it has a cycle, nests deeper than ``max_depth`` or would expand to more than
  ``max_expanded`` values. ``a = [a, a]`` 45 times is 477 bytes and 2^45 values to anything that walks it.

This is the pure-Python unpickler (`pickle._Unpickler`), whose opcodes can be counted and checked one by one; a
research graph is mostly array bytes, read in bulk, so the cost is small. Every way a file can be broken (not a
pickle, corrupt, truncated, hostile, valid but not a VideoGraph) ends in one `ImportFormatError`.

Why this module is over 400 lines: it is one security contract, the allow-list together with the check on every
opcode and wrapper through which an allowed global can be reached; split, a change to one side could not be
reviewed against the other.
"""

from __future__ import annotations

import builtins
import codecs
import collections
import io
import math
import pickle
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from m3graph.errors import ImportFormatError

DEFAULT_MAX_BYTES = 2 * 1024**3  # 2 GiB: the largest released graphs are well below this


@dataclass(frozen=True)
class PickleLimits:
    """What one pickle may build (docs/reliability.md "Hostile pickles"); far above any released research graph."""

    max_objects: int = 20_000_000  # opcodes run plus elements copied by container calls
    max_bytes: int = 3 * 1024**3  # bytes, strings and array data built (a file can copy what it holds)
    max_depth: int = 64  # MARK nesting while unpickling, and nesting of the result (a VideoGraph needs ~8)
    max_expanded: int = 10_000_000  # values met when the result is walked with shared references expanded
    max_tuple: int = 100_000  # values in one tuple, nested tuples expanded (what hashing it costs)
    max_int_bits: int = 4096  # a huge integer key is hashed again at every insert


DEFAULT_LIMITS = PickleLimits()


class PickleLimitError(ImportFormatError):
    """The file declares or builds more than `PickleLimits` allows: refused before it is expanded."""


def _numpy_core(submodule: str) -> Any:
    """numpy ≥ 2 keeps the implementation in ``numpy._core``; 1.x in ``numpy.core`` (which 2.x deprecates)."""
    import importlib

    try:
        return importlib.import_module(f"numpy._core.{submodule}")
    except ImportError:  # pragma: no cover - numpy 1.x without the forward-compatible alias
        return importlib.import_module(f"numpy.core.{submodule}")


class _StandIn:
    """Inert state holder: accepts what `pickle` hands it (``__setstate__``) and nothing else runs."""

    def __setstate__(self, state: Any) -> None:
        # BUILD passes either the instance dict or (dict, slot dict) when __slots__ were involved.
        if isinstance(state, tuple) and len(state) == 2:
            merged: dict[str, Any] = {}
            for part in state:
                if part is not None and not isinstance(part, dict):
                    raise ImportFormatError(f"{type(self).__name__} state is not a dict: {type(part).__name__}")
                merged.update(part or {})
            state = merged
        if not isinstance(state, dict):
            raise ImportFormatError(f"{type(self).__name__} state is not a dict: {type(state).__name__}")
        # Dunder names are refused: an instance ``__setstate__`` would be called by a second BUILD opcode.
        bad = [k for k in state if not isinstance(k, str) or k.startswith("__")]
        if bad:
            raise ImportFormatError(f"{type(self).__name__} state has forbidden attribute names: {bad[:3]!r}")
        # Plain dict update: no attribute hooks (descriptors, __setattr__) can be reached from the file.
        self.__dict__.update(state)


class StandInVideoGraph(_StandIn):
    """What a research ``videograph.VideoGraph`` unpickles to: its attributes, with none of its methods."""

    class Node(_StandIn):
        """What a research ``VideoGraph.Node`` unpickles to (``id``, ``type``, ``embeddings``, ``metadata``)."""


def _safe_getattr(obj: Any, name: str) -> Any:
    """Protocols 2-3 pickle nested classes as ``getattr(VideoGraph, 'Node')``: only that one lookup is allowed."""
    if obj is StandInVideoGraph and name == "Node":
        return StandInVideoGraph.Node
    raise ImportFormatError(f"forbidden global call in pickle: getattr({getattr(obj, '__name__', obj)!r}, {name!r})")


def _safe_reconstructor(cls: Any, base: Any, state: Any) -> Any:
    """Protocols 0-1 rebuild plain objects through ``copyreg._reconstructor``; only for our stand-ins."""
    if cls not in (StandInVideoGraph, StandInVideoGraph.Node) or base is not object or state is not None:
        raise ImportFormatError("forbidden global call in pickle: copyreg._reconstructor for a non-VideoGraph class")
    return object.__new__(cls)


class _NdarrayToken:
    """Stands for the global ``numpy.ndarray``: usable only as `_reconstruct`'s first argument.

    Handing out the real class would let a file call ``numpy.ndarray(shape)`` (REDUCE or NEWOBJ) and reserve
    any amount of memory; the token is neither callable nor a type, so the unpickler refuses both.
    """

    __slots__ = ()


_NDARRAY = _NdarrayToken()
_multiarray = _numpy_core("multiarray")
_numeric = _numpy_core("numeric")
_NUMERIC_KINDS = "biufc"
_BYTE_ORDERS = ("<", ">", "|", "=")


def plain_numeric(dt: Any) -> np.dtype:
    """`dt` if it is a plain numeric dtype (no fields, sub-arrays, objects or metadata); refused otherwise."""
    if (not isinstance(dt, np.dtype) or dt.kind not in _NUMERIC_KINDS or dt.fields is not None
            or dt.subdtype is not None or dt.hasobject or dt.metadata is not None or dt.itemsize < 1):
        raise ImportFormatError(f"corrupt pickle (a {getattr(dt, 'str', type(dt).__name__)!s} dtype: only plain "
                                "numeric dtypes are read)")
    return dt


def _declared_bytes(shape: Any, dt: np.dtype) -> int:
    """The data size `shape` needs, refusing anything but a short tuple of non-negative ints."""
    if not isinstance(shape, tuple) or len(shape) > 32 or not all(type(n) is int and n >= 0 for n in shape):
        raise ImportFormatError(f"corrupt pickle (array shape {str(shape)[:80]} is not a tuple of sizes)")
    return math.prod(shape) * dt.itemsize


class _Source:
    """The file, never read past its end: a length the file declares cannot make a read allocate more than the
    file holds (a buffered ``read(n)`` reserves n bytes before it reads)."""

    def __init__(self, fh: BinaryIO) -> None:
        self.fh = fh
        start = fh.tell()
        self.size = fh.seek(0, io.SEEK_END)
        fh.seek(start)

    def read(self, n: int = -1) -> bytes:
        left = self.size - self.fh.tell()
        return self.fh.read(left if n < 0 or n > left else n)

    def readline(self) -> bytes:
        return self.fh.readline()


class SafeUnpickler(pickle._Unpickler):
    """An unpickler that can only build research VideoGraphs, numeric arrays and plain containers, within limits."""

    # The pure-Python unpickler's working state (set by `load`; typeshed does not declare it).
    stack: list[Any]
    metastack: list[list[Any]]
    read: Callable[[int], bytes]
    readinto: Callable[[bytearray], int]
    append: Callable[[Any], None]

    def __init__(self, file: BinaryIO, limits: PickleLimits = DEFAULT_LIMITS) -> None:
        self.source = _Source(file)
        super().__init__(self.source)
        self.limits = limits
        self.objects = 0
        self.built_bytes = 0
        self._tuples: dict[int, tuple[int, int, tuple[Any, ...]]] = {}  # nested ones: id -> (size, depth, the tuple)
        self._allowed = self._allow_list()

    # ------------------------------------------------------------------ budgets

    def count(self, objects: int = 0, nbytes: int = 0) -> None:
        self.objects += objects
        self.built_bytes += nbytes
        if self.objects > self.limits.max_objects:
            raise PickleLimitError(f"the pickle builds more than {self.limits.max_objects} objects (refused before "
                                   "it is expanded; PickleLimits.max_objects)")
        if self.built_bytes > self.limits.max_bytes:
            raise PickleLimitError(f"the pickle builds more than {self.limits.max_bytes} bytes of data "
                                   "(PickleLimits.max_bytes)")

    def tuple_cost(self, t: tuple[Any, ...]) -> tuple[int, int]:
        """(values, depth) of `t` with nested tuples expanded; every tuple is measured once, when it is built."""
        known = self._tuples.get(id(t))
        if known is not None:
            return known[0], known[1]
        size, depth, nested = 1, 1, False
        for item in t:
            if type(item) is tuple:
                s, d = self.tuple_cost(item)
                size, depth, nested = size + s, max(depth, d + 1), True
            else:
                size += 1
        if size > self.limits.max_tuple or depth > self.limits.max_depth:
            raise PickleLimitError(f"a tuple of {size} values nested {depth} deep (more than "
                                   f"{self.limits.max_tuple} / {self.limits.max_depth}: PickleLimits)")
        if nested:  # a flat tuple (an edge key) costs its length, found again without a table entry
            self._tuples[id(t)] = (size, depth, t)
        return size, depth

    def counted(self, make: Callable[..., Any]) -> Callable[..., Any]:
        """A container type as a callable that counts the elements it copies (``list(big)`` K times is K x big)."""

        def build(*args: Any) -> Any:
            self.count(objects=sum(len(a) for a in args if hasattr(a, "__len__")))
            made = make(*args)
            if type(made) is tuple:
                self.tuple_cost(made)
            return made

        build.__name__ = getattr(make, "__name__", "container")
        return build

    # ------------------------------------------------------------------ numpy, as data

    def _dtype(self, spec: Any, align: Any = False, copy: Any = False) -> np.dtype:
        """``numpy.dtype(spec, align, copy)`` for a plain numeric type name only, always a fresh copy (a BUILD
        on numpy's cached singleton would change float64 for the whole process)."""
        if not isinstance(spec, str) or len(spec) > 12 or type(align) is not bool:
            raise ImportFormatError(f"corrupt pickle (numpy dtype {str(spec)[:40]!r}: only plain numeric dtypes "
                                    "are read)")
        try:
            dt = np.dtype(spec, align, True)
        except (TypeError, ValueError) as exc:
            raise ImportFormatError(f"corrupt pickle (numpy dtype {spec!r}: {exc})") from None
        return plain_numeric(dt)

    def _reconstruct(self, subtype: Any, shape: Any, typecode: Any) -> np.ndarray:
        """``ndarray.__reduce__`` always emits ``_reconstruct(ndarray, (0,), b'b')`` and fills the data afterwards
        (BUILD, checked in `load_build`); any other shape would be an allocation chosen by the file."""
        if subtype is not _NDARRAY or shape != (0,) or typecode not in (b"b", "b"):
            raise ImportFormatError("forbidden numpy _reconstruct call in pickle (only plain empty ndarrays are "
                                    "rebuilt)")
        return np.empty((0,), dtype=np.int8)

    def _frombuffer(self, buf: Any, dt: Any, shape: Any, order: Any) -> np.ndarray:
        """Protocol 5's in-band array: a numeric dtype and exactly the bytes its declared shape needs."""
        plain_numeric(dt)
        if not isinstance(buf, bytes | bytearray) or order not in ("C", "F"):
            raise ImportFormatError("corrupt pickle (numpy _frombuffer without an in-band byte buffer)")
        if _declared_bytes(shape, dt) != len(buf):
            raise ImportFormatError(f"corrupt pickle (array of shape {shape} with {len(buf)} bytes of data)")
        self.count(nbytes=len(buf))
        return np.frombuffer(buf, dtype=dt).reshape(shape, order=order)

    def _scalar(self, dt: Any, data: Any = None) -> Any:
        plain_numeric(dt)
        if not isinstance(data, bytes) or len(data) != dt.itemsize:
            raise ImportFormatError(f"corrupt pickle (a numpy {dt.str} scalar with {type(data).__name__} data)")
        return _multiarray.scalar(dt, data)

    def _bytes(self, *args: Any) -> bytes:
        """Protocols 0-1 store ``bytes`` as ``bytes([ints])``; ``bytes(n)`` (n zero bytes) is refused."""
        if not args:
            return b""
        if len(args) == 1 and isinstance(args[0], list | tuple | bytes):
            self.count(objects=len(args[0]), nbytes=len(args[0]))
            return bytes(args[0])
        raise ImportFormatError("forbidden global call in pickle: bytes() with a size argument")

    def _encode(self, text: Any, encoding: Any = "utf-8") -> bytes:
        """Protocol 2 stores ``bytes`` as ``_codecs.encode(str, 'latin1')``; no other codec is looked up."""
        if encoding not in ("latin1", "latin-1") or not isinstance(text, str):
            raise ImportFormatError(f"forbidden global call in pickle: _codecs.encode(..., {encoding!r})")
        self.count(nbytes=len(text))
        return codecs.encode(text, "latin1")

    def _allow_list(self) -> dict[tuple[str, str], Any]:
        graph = {"VideoGraph": StandInVideoGraph, "VideoGraph.Node": StandInVideoGraph.Node}
        arrays = {"_reconstruct": self._reconstruct, "scalar": self._scalar}
        containers = {name: self.counted(getattr(builtins, name)) for name in ("set", "frozenset", "list", "dict",
                                                                               "tuple")}
        return {
            **{(mod, name): cls for mod in ("videograph", "mmagent.videograph") for name, cls in graph.items()},
            **{(mod, name): fn for mod in ("numpy.core.multiarray", "numpy._core.multiarray")
               for name, fn in arrays.items()},
            # Protocol-5 pickles rebuild contiguous arrays from an in-band buffer (its size fixes the array's).
            **{(mod, "_frombuffer"): self._frombuffer for mod in ("numpy.core.numeric", "numpy._core.numeric")},
            ("numpy", "ndarray"): _NDARRAY,
            ("numpy", "dtype"): self._dtype,
            **{("builtins", name): fn for name, fn in containers.items()},
            ("builtins", "object"): object,  # only ever `copyreg._reconstructor`'s base
            ("builtins", "getattr"): _safe_getattr,
            ("collections", "defaultdict"): self.counted(collections.defaultdict),
            ("collections", "OrderedDict"): self.counted(collections.OrderedDict),
            ("_codecs", "encode"): self._encode,
            ("builtins", "bytes"): self._bytes,
            ("copyreg", "_reconstructor"): _safe_reconstructor,
        }

    def find_class(self, module: str, name: str) -> Any:
        key = (_PY2_MODULES.get(module, module), name)
        try:
            return self._allowed[key]
        except KeyError:
            raise ImportFormatError(
                f"forbidden global {module}.{name} in pickle: only research VideoGraph classes, numpy arrays and "
                "plain containers may be loaded; nothing from the file was executed") from None

    def persistent_load(self, pid: Any) -> Any:
        raise ImportFormatError("pickle uses persistent ids, which a VideoGraph file never contains")

    # ------------------------------------------------------------------ checked opcodes

    def load_build(self) -> None:
        """BUILD only on what a VideoGraph holds: a stand-in (its own checks), a numeric dtype (its canonical state
        only) or an array (numeric, and exactly the bytes its shape needs); never on anything else."""
        state = self.stack.pop()
        inst = self.stack[-1]
        if isinstance(inst, _StandIn):
            inst.__setstate__(state)
        elif isinstance(inst, np.dtype):
            _check_dtype_state(inst, state)
            inst.__setstate__(state)  # type: ignore[attr-defined]
        elif type(inst) is np.ndarray:
            self._check_array_state(state)
            inst.__setstate__(state)
        else:
            raise ImportFormatError(f"corrupt pickle (a state for a {type(inst).__name__}, which a VideoGraph "
                                    "never restores)")

    def _check_array_state(self, state: Any) -> None:
        if not isinstance(state, tuple) or len(state) not in (4, 5):
            raise ImportFormatError("corrupt pickle (an array state that is not (version, shape, dtype, fortran, "
                                    "data))")
        shape, dt, fortran, data = state[-4:]
        plain_numeric(dt)
        if not isinstance(data, bytes | bytearray) or type(fortran) is not bool:
            raise ImportFormatError(f"corrupt pickle (array data of type {type(data).__name__})")
        if _declared_bytes(shape, dt) != len(data):
            raise ImportFormatError(f"corrupt pickle (array of shape {str(shape)[:80]} with {len(data)} bytes)")
        self.count(nbytes=len(data))

    def load_mark(self) -> None:
        if len(self.metastack) >= self.limits.max_depth:
            raise PickleLimitError(f"the pickle nests more than {self.limits.max_depth} levels deep "
                                   "(PickleLimits.max_depth)")
        pickle._Unpickler.load_mark(self)  # type: ignore[attr-defined]

    def load_bytearray8(self) -> None:
        """BYTEARRAY8 allocates its declared length before reading: never more than the whole file."""
        (n,) = struct.unpack("<Q", self.read(8))
        if n > self.source.size:
            raise ImportFormatError(f"corrupt pickle (a byte array of {n} bytes in a file of {self.source.size})")
        self.count(nbytes=n)
        buf = bytearray(n)
        self.readinto(buf)
        self.append(buf)

    def load_new_tuple(self) -> None:
        self.tuple_cost(self.stack[-1])

    def load_new_int(self) -> None:
        value = self.stack[-1]
        if isinstance(value, int) and value.bit_length() > self.limits.max_int_bits:
            raise PickleLimitError(f"an integer of {value.bit_length()} bits (more than "
                                   f"{self.limits.max_int_bits}: PickleLimits.max_int_bits)")


def _check_dtype_state(dt: np.dtype, state: Any) -> None:
    """A numeric dtype's pickled state is always ``(3, byteorder, None, None, None, -1, -1, 0)``; anything else
    (names, fields, an item size, flags) is a forged dtype and never reaches ``dtype.__setstate__``."""
    canonical = (None, None, None, -1, -1, 0)
    if (not isinstance(state, tuple) or len(state) not in (8, 9) or type(state[0]) is not int
            or state[0] not in (3, 4) or state[1] not in _BYTE_ORDERS
            or any(type(a) is not type(b) or a != b for a, b in zip(state[2:8], canonical, strict=True))
            or (len(state) == 9 and state[8] is not None)):
        raise ImportFormatError(f"corrupt pickle (a forged {dt.str} dtype state: only plain numeric dtypes are read)")


def _checked(op: Callable[[SafeUnpickler], None], after: Callable[[SafeUnpickler], None] | None = None
             ) -> Callable[[SafeUnpickler], None]:
    def run(self: SafeUnpickler) -> None:
        self.count(objects=1)
        op(self)
        if after is not None:
            after(self)

    return run


class _Opcodes(dict[int, Callable[[SafeUnpickler], None]]):
    def __missing__(self, code: int) -> Callable[[SafeUnpickler], None]:
        raise pickle.UnpicklingError(f"invalid load key, {bytes([code])!r}.")


def _dispatch() -> dict[int, Callable[[SafeUnpickler], None]]:
    base: dict[int, Callable[[SafeUnpickler], None]] = dict(pickle._Unpickler.dispatch)  # type: ignore[arg-type]
    table = _Opcodes({code: _checked(op) for code, op in base.items()})
    table[pickle.BUILD[0]] = _checked(SafeUnpickler.load_build)
    table[pickle.MARK[0]] = _checked(SafeUnpickler.load_mark)
    table[pickle.BYTEARRAY8[0]] = _checked(SafeUnpickler.load_bytearray8)
    for code in (pickle.TUPLE, pickle.TUPLE1, pickle.TUPLE2, pickle.TUPLE3):
        table[code[0]] = _checked(base[code[0]], SafeUnpickler.load_new_tuple)
    for code in (pickle.INT, pickle.LONG, pickle.LONG1, pickle.LONG4):
        table[code[0]] = _checked(base[code[0]], SafeUnpickler.load_new_int)
    return table


SafeUnpickler.dispatch = _dispatch()  # type: ignore[assignment]
_PY2_MODULES = {"__builtin__": "builtins", "copy_reg": "copyreg"}  # protocol 0-2 spellings of the same modules
ALLOWED = frozenset(SafeUnpickler(io.BytesIO(b""))._allowed)  # the globals a file may name (for docs and tests)


def _children(obj: Any) -> list[Any] | None:
    """What the walk descends into; None for a leaf (numbers, strings, arrays, dtypes)."""
    if isinstance(obj, list | tuple | set | frozenset):
        return list(obj)
    if isinstance(obj, dict):
        return [*obj.keys(), *obj.values()]
    if isinstance(obj, _StandIn):
        return [*vars(obj).keys(), *vars(obj).values()]
    return None


def check_shape(root: Any, limits: PickleLimits = DEFAULT_LIMITS) -> int:
    """The number of values a full walk of `root` meets (shared references counted each time they are met),
    computed over each distinct object once; `PickleLimitError` for a cycle, depth or size beyond `limits`."""
    size: dict[int, int] = {}
    on_path: set[int] = set()
    todo: list[tuple[Any, bool]] = [(root, False)]
    while todo:
        obj, done = todo.pop()
        kids = _children(obj)
        key = id(obj)
        if kids is None or (not done and key in size):
            continue
        if done:
            on_path.discard(key)
            total = 1 + sum(size.get(id(k), 1) for k in kids)
            if total > limits.max_expanded:
                raise PickleLimitError(f"the pickle's shared references expand to more than {limits.max_expanded} "
                                       "values (refused before anything walks them; PickleLimits.max_expanded)")
            size[key] = total
            continue
        if key in on_path:
            raise PickleLimitError("the pickle's objects contain themselves (a cycle), which a VideoGraph never does")
        if len(on_path) >= limits.max_depth:
            raise PickleLimitError(f"the pickle's objects nest more than {limits.max_depth} levels deep "
                                   "(PickleLimits.max_depth)")
        on_path.add(key)
        todo.append((obj, True))
        todo.extend((k, False) for k in kids if id(k) not in size)
    return size.get(id(root), 1)


def load_videograph(path: Path, max_bytes: int = DEFAULT_MAX_BYTES,
                    limits: PickleLimits = DEFAULT_LIMITS) -> StandInVideoGraph:
    """The stand-in VideoGraph stored in `path`, or `ImportFormatError` saying why the file cannot be one."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise ImportFormatError(f"{path}: cannot read the file: {exc}") from exc
    if size > max_bytes:
        raise ImportFormatError(f"{path}: {size} bytes exceeds the import size cap of {max_bytes} bytes")
    if size == 0:
        raise ImportFormatError(f"{path}: the file is empty, not a pickle")
    with path.open("rb") as fh:
        return loads_videograph(fh, str(path), limits)


def loads_videograph(stream: BinaryIO | bytes, what: str = "pickle",
                     limits: PickleLimits = DEFAULT_LIMITS) -> StandInVideoGraph:
    """Unpickles with `SafeUnpickler`, measures the result (`check_shape`) and checks that it is a VideoGraph."""
    fh = io.BytesIO(stream) if isinstance(stream, bytes) else stream
    try:
        obj = SafeUnpickler(fh, limits).load()
        check_shape(obj, limits)
    except ImportFormatError as exc:
        raise type(exc)(f"{what}: {exc}") from None
    except EOFError as exc:
        raise ImportFormatError(f"{what}: the pickle is truncated (ran out of data): {exc}") from exc
    except (pickle.UnpicklingError, IndexError) as exc:  # IndexError: an opcode found the stack empty
        raise ImportFormatError(f"{what}: not a pickle, or a corrupt or truncated one: {exc}") from exc
    except Exception as exc:  # only allow-listed callables ran, so any other failure means bad data
        # Malformed opcodes or arguments surface as ordinary exceptions (ValueError, TypeError, KeyError,
        # MemoryError, ...) from the unpickler or the allowed constructors.
        raise ImportFormatError(f"{what}: corrupt pickle ({type(exc).__name__}: {str(exc)[:200]})") from exc
    if not isinstance(obj, StandInVideoGraph):
        raise ImportFormatError(
            f"{what}: a valid pickle, but of a {type(obj).__name__}, not a research VideoGraph "
            "(videograph.VideoGraph or mmagent.videograph.VideoGraph)")
    return obj


__all__ = ["ALLOWED", "DEFAULT_LIMITS", "DEFAULT_MAX_BYTES", "PickleLimitError", "PickleLimits", "SafeUnpickler",
           "StandInVideoGraph", "check_shape", "load_videograph", "loads_videograph"]
