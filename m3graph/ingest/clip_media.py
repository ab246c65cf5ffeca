"""A clip's stored perception and media as the pipeline's steps read and write them through the media store.

Perception writes crops and snippets to local scratch and names them by scratch path; these helpers turn such
names (and the paths or file URIs of caches written before storage keys) into storage keys, put the files into the
store, and bring objects back to scratch on whichever host runs a later step (m3graph.storage).
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import suppress
from pathlib import Path

from pydantic import TypeAdapter

from m3graph.data_files import ClipFiles
from m3graph.errors import NotFoundError
from m3graph.graphdb.types import FaceCluster, VoiceCluster
from m3graph.settings import Settings
from m3graph.storage import fetch, key_of, media_store, publish

FACES = TypeAdapter(list[FaceCluster])
VOICES = TypeAdapter(list[VoiceCluster])


def scratch_copy(settings: Settings, key: str) -> Path | None:
    """The object as a local file (fetched from the store when this host has none), or None when not stored."""
    try:
        return fetch(settings, key)
    except NotFoundError:
        return None


def stored_bytes(settings: Settings, key: str) -> bytes | None:
    try:
        return media_store(settings).get_bytes(key)
    except NotFoundError:
        return None


def keyed_faces(settings: Settings, clusters: list[FaceCluster]) -> list[FaceCluster]:
    """Crop references as storage keys (a perception result names its scratch file; an old cache, a path)."""
    return [c.model_copy(update={"observations": [
        o.model_copy(update={"crop_uri": key_of(o.crop_uri, settings.data_dir)}) for o in c.observations]})
        for c in clusters]


def keyed_voices(settings: Settings, clusters: list[VoiceCluster]) -> list[VoiceCluster]:
    return [c.model_copy(update={"utterances": [
        u.model_copy(update={"audio_uri": key_of(u.audio_uri, settings.data_dir)}) for u in c.utterances]})
        for c in clusters]


def publish_folder(settings: Settings, keys: Iterable[str | None], folder: Path) -> None:
    """Puts perception's scratch files (crops or snippets) into the store; with an object store the scratch copies
    go, so every later reader provably reads the store."""
    if media_store(settings).is_local:
        return
    for key in sorted({k for k in keys if k}):
        publish(settings, key, keep=False)
    with suppress(OSError):
        folder.rmdir()


def load_faces(settings: Settings, source_id: str, index: int) -> list[FaceCluster]:
    """A clip's stored face perception (NotFoundError when the clip was not perceived)."""
    return keyed_faces(settings, FACES.validate_json(
        media_store(settings).get_bytes(ClipFiles(settings, source_id, index).faces_key)))


def load_voices(settings: Settings, source_id: str, index: int) -> list[VoiceCluster]:
    return keyed_voices(settings, VOICES.validate_json(
        media_store(settings).get_bytes(ClipFiles(settings, source_id, index).voices_key)))


def local_crops(settings: Settings, clusters: list[FaceCluster]) -> list[FaceCluster]:
    """For a model that sees images: crop keys as local files (fetched to scratch from an object store)."""
    if not settings.llm.memorize.multimodal:
        return clusters

    def local(key: str | None) -> str | None:
        path = scratch_copy(settings, key) if key else None
        return path.resolve().as_uri() if path is not None else None

    return [c.model_copy(update={"observations": [o.model_copy(update={"crop_uri": local(o.crop_uri)})
                                                  for o in c.observations]}) for c in clusters]


