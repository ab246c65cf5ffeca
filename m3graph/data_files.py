"""Where m3graph keeps media (storage keys, m3graph.storage), and how it is deleted with what it describes.

Media and perception results are stored objects, never graph blobs: under the media store (the data directory by
default, or an S3-compatible bucket: `settings.storage`), per video ``videos/<video>/`` holds the plan, clip
cuts, audio, face crops, voice snippets, perception caches (with face and voice embeddings) and the raw
model outputs; ``imports/<video>/`` holds an imported graph's face crops. Deleting a clip, a video or a person
from the graph must delete these too, or "deleted" biometric data would live on in a cache. The graph
delete commits first; the objects go after it, so a failed graph delete never leaves a clip without its media.
Only keys (and, for scratch copies, paths inside the data directory) are ever touched.
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from m3graph.errors import NotFoundError
from m3graph.settings import Settings
from m3graph.storage import is_key, key_of, media_store
from m3graph.storage.keys import import_prefix, video_prefix

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ClipFiles:
    """Where one clip's intermediate files live: storage keys (`*_key`, the same on every host and in every store)
    and their scratch paths on this host (``data_dir/<key>``); pure, no I/O."""

    settings: Settings
    source_id: str
    index: int

    @property
    def prefix(self) -> str:
        return video_prefix(self.source_id)

    @property
    def clip_key(self) -> str:
        return f"{self.prefix}clips/{self.index:05d}.mp4"

    @property
    def audio_key(self) -> str:
        return f"{self.prefix}audio/{self.index:05d}.wav"

    @property
    def faces_key(self) -> str:
        return f"{self.prefix}perception/clip_{self.index}_faces.json"

    @property
    def voices_key(self) -> str:
        return f"{self.prefix}perception/clip_{self.index}_voices.json"

    @property
    def memory_key(self) -> str:
        return f"{self.prefix}memory/clip_{self.index}_memory.json"

    @property
    def crops_key(self) -> str:
        return f"{self.prefix}crops/{self.index:05d}/"

    @property
    def snippets_key(self) -> str:
        return f"{self.prefix}snippets/{self.index:05d}/"

    def _local(self, key: str) -> Path:
        return self.settings.data_dir / key.rstrip("/")

    @property
    def root(self) -> Path:
        return video_dir(self.settings, self.source_id)

    @property
    def clip(self) -> Path:
        return self._local(self.clip_key)

    @property
    def cut_lock(self) -> Path:
        return self.root / "clips" / f"{self.index:05d}.lock"

    @property
    def audio(self) -> Path:
        return self._local(self.audio_key)

    @property
    def faces(self) -> Path:
        return self._local(self.faces_key)

    @property
    def voices(self) -> Path:
        return self._local(self.voices_key)

    @property
    def memory(self) -> Path:
        return self._local(self.memory_key)

    @property
    def crops(self) -> Path:
        return self._local(self.crops_key)

    @property
    def snippets(self) -> Path:
        return self._local(self.snippets_key)


def video_dir(settings: Settings, source_id: str) -> Path:
    return settings.data_dir / "videos" / source_id


def import_dir(settings: Settings, source_id: str) -> Path:
    return settings.data_dir / "imports" / source_id


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


def delete_clip_files(settings: Settings, source_id: str, clip_index: int) -> int:
    """Cut, audio, crops, snippets, perception caches and raw model output of one clip (the plan stays): the
    stored objects, and this host's scratch copies when the store is not the data directory itself."""
    f = ClipFiles(settings, source_id, clip_index)
    store = media_store(settings)
    if not is_key(f.clip_key):
        return 0
    n = store.delete_keys([f.clip_key, f.audio_key, f.faces_key, f.voices_key, f.memory_key])
    n += store.delete_prefix(f.crops_key) + store.delete_prefix(f.snippets_key)
    if not store.is_local:
        for p in (f.clip, f.cut_lock, f.audio, f.faces, f.voices, f.memory, f.crops, f.snippets):
            _remove(settings, p)
    else:
        _remove(settings, f.cut_lock)
    return n


def delete_video_files(settings: Settings, source_id: str) -> int:
    """Everything kept for the video, its plan included, and an import's face crops."""
    store = media_store(settings)
    if not is_key(video_prefix(source_id).rstrip("/")):  # an id no media could ever be stored under
        return 0
    n = store.delete_prefix(video_prefix(source_id)) + store.delete_prefix(import_prefix(source_id))
    if not store.is_local:
        _remove(settings, video_dir(settings, source_id))
        _remove(settings, import_dir(settings, source_id))
    return n


@dataclass(frozen=True)
class PersonEvidence:
    """One observation of a deleted person as the graph recorded it: where its files and cache entries are."""

    source_id: str
    clip_index: int
    kind: str  # "face" or "voice"
    label: int | None  # the perception cluster it came from (None for imported evidence)
    uri: str | None  # its crop or audio snippet


def _drop_clusters(settings: Settings, key: str, labels: set[int], what: str) -> tuple[int, list[str]]:
    """Rewrites a perception cache without the given clusters; returns (clusters dropped, their media refs)."""
    store = media_store(settings)
    if not labels:
        return 0, []
    try:
        clusters = json.loads(store.get_bytes(key))
    except NotFoundError:
        return 0, []
    kept = [c for c in clusters if c.get("label") not in labels]
    uris = [o.get("crop_uri") or o.get("audio_uri") for c in clusters if c.get("label") in labels
            for o in c.get(what, [])]
    store.put_bytes(key, json.dumps(kept).encode())
    if not store.is_local:
        _remove(settings, settings.data_dir / key)  # a stale scratch copy must not bring them back
    return len(clusters) - len(kept), [u for u in uris if u]


def delete_person_files(settings: Settings, evidence: Iterable[PersonEvidence]) -> dict[str, int]:
    """A deleted person's crops and snippets, their clusters in the perception caches (embeddings are biometric
    data), and the raw model outputs of the clips they were in (which describe them). Other people's cache
    entries stay, so those clips can still be memorized again."""
    rows = list(evidence)
    store = media_store(settings)
    files = caches = 0
    uris = {r.uri for r in rows if r.uri}
    by_clip: dict[tuple[str, int], dict[str, set[int]]] = {}
    for r in rows:
        labels = by_clip.setdefault((r.source_id, r.clip_index), {"face": set(), "voice": set()})
        if r.label is not None:
            labels[r.kind].add(r.label)
    memory_keys = []
    for (source_id, index), labels in by_clip.items():
        f = ClipFiles(settings, source_id, index)
        n, more = _drop_clusters(settings, f.faces_key, labels["face"], "observations")
        caches += n
        uris.update(more)
        n, more = _drop_clusters(settings, f.voices_key, labels["voice"], "utterances")
        caches += n
        uris.update(more)
        memory_keys.append(f.memory_key)
    keys = sorted({k for k in (key_of(u, settings.data_dir) for u in uris) if k is not None})
    files += store.delete_keys([*memory_keys, *keys])
    if not store.is_local:
        for key in [*memory_keys, *keys]:
            _remove(settings, settings.data_dir / key)
    log.info("deleted %d files and %d cached clusters of a deleted person", files, caches)
    return {"files": files, "cached_clusters": caches}
