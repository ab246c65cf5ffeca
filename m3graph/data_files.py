"""Where m3graph keeps files under `settings.data_dir`, and how they are deleted with what they describe.

Media and perception results are files, never graph blobs: per video ``videos/<video>/`` holds the plan, clip
cuts, audio, face crops, voice snippets, perception caches (with face and voice embeddings) and the raw
model outputs; ``imports/<video>/`` holds an imported graph's face crops. Deleting a clip, a video or a person
from the graph must delete these too, or "deleted" biometric data would live on in a cache. The graph
delete commits first; the files go after it, so a failed graph delete never leaves a clip without its media.
Only paths inside the data directory are ever touched.
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from m3graph.settings import Settings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ClipFiles:
    """Where one clip's intermediate files live; pure paths, no I/O."""

    settings: Settings
    video_id: str
    index: int

    @property
    def root(self) -> Path:
        return video_dir(self.settings, self.video_id)

    @property
    def clip(self) -> Path:
        return self.root / "clips" / f"{self.index:05d}.mp4"

    @property
    def cut_lock(self) -> Path:
        return self.root / "clips" / f"{self.index:05d}.lock"

    @property
    def audio(self) -> Path:
        return self.root / "audio" / f"{self.index:05d}.wav"

    @property
    def faces(self) -> Path:
        return self.root / "perception" / f"clip_{self.index}_faces.json"

    @property
    def voices(self) -> Path:
        return self.root / "perception" / f"clip_{self.index}_voices.json"

    @property
    def memory(self) -> Path:
        return self.root / "memory" / f"clip_{self.index}_memory.json"

    @property
    def crops(self) -> Path:
        return self.root / "crops" / f"{self.index:05d}"

    @property
    def snippets(self) -> Path:
        return self.root / "snippets" / f"{self.index:05d}"


def video_dir(settings: Settings, video_id: str) -> Path:
    return settings.data_dir / "videos" / video_id


def import_dir(settings: Settings, video_id: str) -> Path:
    return settings.data_dir / "imports" / video_id


def _inside(settings: Settings, path: Path) -> bool:
    root = settings.data_dir.resolve()
    try:
        return path.resolve().is_relative_to(root) and path.resolve() != root
    except OSError:
        return False


def _remove(settings: Settings, path: Path) -> int:
    """Deletes a file or a folder inside the data directory; returns how many files went."""
    if not _inside(settings, path) or not (path.exists() or path.is_symlink()):
        return 0
    if path.is_dir() and not path.is_symlink():
        n = sum(1 for p in path.rglob("*") if p.is_file())
        shutil.rmtree(path, ignore_errors=True)
        return n
    path.unlink(missing_ok=True)
    return 1


def delete_clip_files(settings: Settings, video_id: str, clip_index: int) -> int:
    """Cut, audio, crops, snippets, perception caches and raw model output of one clip (the plan stays)."""
    f = ClipFiles(settings, video_id, clip_index)
    return sum(_remove(settings, p) for p in (f.clip, f.cut_lock, f.audio, f.faces, f.voices, f.memory, f.crops,
                                              f.snippets))


def delete_video_files(settings: Settings, video_id: str) -> int:
    """Everything kept for the video, its plan included, and an import's face crops."""
    return _remove(settings, video_dir(settings, video_id)) + _remove(settings, import_dir(settings, video_id))


@dataclass(frozen=True)
class PersonEvidence:
    """One observation of a deleted person as the graph recorded it: where its files and cache entries are."""

    video_id: str
    clip_index: int
    kind: str  # "face" or "voice"
    label: int | None  # the perception cluster it came from (None for imported evidence)
    uri: str | None  # its crop or audio snippet


def _path_of(uri: str) -> Path | None:
    parsed = urlparse(uri)
    if parsed.scheme not in ("", "file"):
        return None
    return Path(unquote(parsed.path) if parsed.scheme == "file" else uri)


def _drop_clusters(settings: Settings, cache: Path, labels: set[int], what: str) -> tuple[int, list[str]]:
    """Rewrites a perception cache without the given clusters; returns (clusters dropped, their file URIs)."""
    if not labels or not cache.exists() or not _inside(settings, cache):
        return 0, []
    clusters = json.loads(cache.read_text(encoding="utf-8"))
    kept = [c for c in clusters if c.get("label") not in labels]
    uris = [o.get("crop_uri") or o.get("audio_uri") for c in clusters if c.get("label") in labels
            for o in c.get(what, [])]
    tmp = cache.with_suffix(cache.suffix + ".tmp")
    tmp.write_text(json.dumps(kept), encoding="utf-8")
    tmp.replace(cache)
    return len(clusters) - len(kept), [u for u in uris if u]


def delete_person_files(settings: Settings, evidence: Iterable[PersonEvidence]) -> dict[str, int]:
    """A deleted person's crops and snippets, their clusters in the perception caches (embeddings are biometric
    data), and the raw model outputs of the clips they were in (which describe them). Other people's cache
    entries stay, so those clips can still be memorized again."""
    rows = list(evidence)
    files = caches = 0
    uris = {r.uri for r in rows if r.uri}
    by_clip: dict[tuple[str, int], dict[str, set[int]]] = {}
    for r in rows:
        labels = by_clip.setdefault((r.video_id, r.clip_index), {"face": set(), "voice": set()})
        if r.label is not None:
            labels[r.kind].add(r.label)
    for (video_id, index), labels in by_clip.items():
        f = ClipFiles(settings, video_id, index)
        n, more = _drop_clusters(settings, f.faces, labels["face"], "observations")
        caches += n
        uris.update(more)
        n, more = _drop_clusters(settings, f.voices, labels["voice"], "utterances")
        caches += n
        uris.update(more)
        files += _remove(settings, f.memory)
    for uri in sorted(uris):
        path = _path_of(uri)
        if path is not None:
            files += _remove(settings, path)
    log.info("deleted %d files and %d cached clusters of a deleted person", files, caches)
    return {"files": files, "cached_clusters": caches}
