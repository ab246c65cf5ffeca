"""Loading the research code's VideoGraph pickles without running code from the file.

`pickle.load` calls whatever global a file names, so an untrusted ``.pkl`` is arbitrary code execution
(reference §10). `SafeUnpickler.find_class` therefore resolves only an explicit allow-list: the two research
classes (mapped to inert stand-ins defined here, never to the real ``mmagent`` code), numpy's array/scalar/dtype
reconstruction, and plain container types. Any other global is refused with `ImportFormatError` *before* it is
called, so nothing from the file runs. The file size is capped before reading, and every way a file can be
broken (not a pickle, corrupt, truncated, valid but not a VideoGraph) ends in one `ImportFormatError`.
"""

from __future__ import annotations

import builtins
import codecs
import collections
import io
import pickle
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from m3graph.errors import ImportFormatError

DEFAULT_MAX_BYTES = 2 * 1024**3  # 2 GiB: the largest released graphs are well below this


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


def _safe_encode(text: str, encoding: str = "utf-8") -> bytes:
    """Protocol 2 stores ``bytes`` as ``_codecs.encode(str, 'latin1')``; no other codec is looked up."""
    if encoding not in ("latin1", "latin-1") or not isinstance(text, str):
        raise ImportFormatError(f"forbidden global call in pickle: _codecs.encode(..., {encoding!r})")
    return codecs.encode(text, "latin1")


def _safe_bytes(*args: Any) -> bytes:
    """Protocols 0-1 store ``bytes`` as ``bytes([ints])``; ``bytes(n)`` (n zero bytes) is refused."""
    if not args:
        return b""
    if len(args) == 1 and isinstance(args[0], list | tuple | bytes):
        return bytes(args[0])
    raise ImportFormatError("forbidden global call in pickle: bytes() with a size argument")


def _safe_reconstructor(cls: Any, base: Any, state: Any) -> Any:
    """Protocols 0-1 rebuild plain objects through ``copyreg._reconstructor``; only for our stand-ins."""
    if cls not in (StandInVideoGraph, StandInVideoGraph.Node) or base is not object or state is not None:
        raise ImportFormatError("forbidden global call in pickle: copyreg._reconstructor for a non-VideoGraph class")
    return object.__new__(cls)


class _NdarrayToken:
    """Stands for the global ``numpy.ndarray``: usable only as `_safe_reconstruct`'s first argument.

    Handing out the real class would let a file call ``numpy.ndarray(shape)`` (REDUCE or NEWOBJ) and reserve
    any amount of memory; the token is neither callable nor a type, so the unpickler refuses both.
    """

    __slots__ = ()


_NDARRAY = _NdarrayToken()
_multiarray = _numpy_core("multiarray")
_numeric = _numpy_core("numeric")


def _safe_reconstruct(subtype: Any, shape: Any, typecode: Any) -> np.ndarray:
    """``ndarray.__reduce__`` always emits ``_reconstruct(ndarray, (0,), b'b')`` and fills the data afterwards
    (its ``__setstate__`` checks the data length); any other shape would be an allocation chosen by the file."""
    if subtype is not _NDARRAY or tuple(shape) != (0,) or not isinstance(typecode, bytes | str) or len(typecode) > 4:
        raise ImportFormatError("forbidden numpy _reconstruct call in pickle (only plain empty ndarrays are rebuilt)")
    return np.asarray(_multiarray._reconstruct(np.ndarray, (0,), typecode))


_GRAPH = {"VideoGraph": StandInVideoGraph, "VideoGraph.Node": StandInVideoGraph.Node}
_ARRAYS = {"_reconstruct": _safe_reconstruct, "scalar": _multiarray.scalar}
# Only container types whose constructors are bounded by data already in the file (no ``bytes(10**12)``).
_CONTAINERS = {name: getattr(builtins, name) for name in ("set", "frozenset", "list", "dict", "tuple", "object")}

ALLOWED: dict[tuple[str, str], Any] = {
    **{(mod, name): cls for mod in ("videograph", "mmagent.videograph") for name, cls in _GRAPH.items()},
    **{(mod, name): fn for mod in ("numpy.core.multiarray", "numpy._core.multiarray") for name, fn in _ARRAYS.items()},
    # Protocol-5 pickles rebuild contiguous arrays from an in-band buffer (its size fixes the array's).
    **{(mod, "_frombuffer"): _numeric._frombuffer for mod in ("numpy.core.numeric", "numpy._core.numeric")},
    ("numpy", "ndarray"): _NDARRAY,
    ("numpy", "dtype"): np.dtype,
    **{("builtins", name): obj for name, obj in _CONTAINERS.items()},
    ("builtins", "getattr"): _safe_getattr,
    ("collections", "defaultdict"): collections.defaultdict,
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("_codecs", "encode"): _safe_encode,
    ("builtins", "bytes"): _safe_bytes,
    ("copyreg", "_reconstructor"): _safe_reconstructor,
}
_PY2_MODULES = {"__builtin__": "builtins", "copy_reg": "copyreg"}  # protocol 0-2 spellings of the same modules


class SafeUnpickler(pickle.Unpickler):
    """An unpickler that can only build research VideoGraphs, numpy arrays and plain containers."""

    def find_class(self, module: str, name: str) -> Any:
        key = (_PY2_MODULES.get(module, module), name)
        try:
            return ALLOWED[key]
        except KeyError:
            raise ImportFormatError(
                f"forbidden global {module}.{name} in pickle: only research VideoGraph classes, numpy arrays and "
                "plain containers may be loaded; nothing from the file was executed") from None

    def persistent_load(self, pid: Any) -> Any:
        raise ImportFormatError("pickle uses persistent ids, which a VideoGraph file never contains")


def load_videograph(path: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> StandInVideoGraph:
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
        return loads_videograph(fh, str(path))


def loads_videograph(stream: BinaryIO | bytes, what: str = "pickle") -> StandInVideoGraph:
    """Unpickles with `SafeUnpickler` and checks that the result is a VideoGraph."""
    fh = io.BytesIO(stream) if isinstance(stream, bytes) else stream
    try:
        obj = SafeUnpickler(fh).load()
    except ImportFormatError as exc:
        raise ImportFormatError(f"{what}: {exc}") from None
    except EOFError as exc:
        raise ImportFormatError(f"{what}: the pickle is truncated (ran out of data): {exc}") from exc
    except pickle.UnpicklingError as exc:
        raise ImportFormatError(f"{what}: not a pickle, or a corrupt or truncated one: {exc}") from exc
    except Exception as exc:  # only allow-listed callables ran, so any other failure means bad data
        # Malformed opcodes or arguments surface as ordinary exceptions (ValueError, TypeError, numpy's
        # RuntimeError for object scalars, MemoryError, ...) from the unpickler or the allowed constructors.
        raise ImportFormatError(f"{what}: corrupt pickle ({type(exc).__name__}: {exc})") from exc
    if not isinstance(obj, StandInVideoGraph):
        raise ImportFormatError(
            f"{what}: a valid pickle, but of a {type(obj).__name__}, not a research VideoGraph "
            "(videograph.VideoGraph or mmagent.videograph.VideoGraph)")
    return obj


__all__ = ["ALLOWED", "DEFAULT_MAX_BYTES", "SafeUnpickler", "StandInVideoGraph", "load_videograph",
           "loads_videograph"]
