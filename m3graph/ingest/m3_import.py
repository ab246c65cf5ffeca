"""Importing the research code's memory graphs (``VideoGraph`` pickles) into m3graph.

Why a dedicated importer: the released M3-Agent memories are pickles of ``videograph.VideoGraph`` (reference
§3), and the normal ingestion path does not fit them. `resolve_faces`/`resolve_voices` would re-match the
research entities against each other and against other videos, and `write_memories` would deduplicate
statements the research graph already deduplicated and count every equivalence line as one vote. So the
importer maps the graph as it is:

* **Loading** goes through `safe_unpickle` (allow-listed globals only, size cap): no code from the file runs.
* **Clips**: one `Clip` per distinct memory ``timestamp`` (a clip index), ``[clip_seconds*i, clip_seconds*(i+1))``.
* **Entities**: every ``img`` node becomes a `Face` and every ``voice`` node a `Voice`, with *new* ids from the
  shared entity counter (the research ids live in another id space). Exemplars are the node's embeddings
  (first ``max_*_exemplars``, L2-normalized, quality 1.0: the research code kept no quality); centroid, norm and
  unit come from `identity.EntityState`. Each exemplar is also stored as a `FaceObs`/`Utterance` evidence node
  in the entity's first mentioning clip, which is what lets `delete_video` remove the entities again. An entity
  whose dimension differs from ``identity.face_dim``/``voice_dim`` (released pickles: 512-d ArcFace, 192-d
  ERes2NetV2) is imported **without** ``centroid_unit``: it stays out of the vector index and is never matched
  against this deployment's model, and the summary says so.
* **Crops and ASR**: base64 face crops never enter the graph. With ``save_crops`` they are decoded to files
  under ``data_dir/imports/<video>/faces/``; a `FaceObs` gets the file's URI only when the node's crops line up
  one-to-one with its embeddings (true exactly when the research code never random-sampled the node). ASR
  strings likewise go onto the matching `Utterance` when aligned and are **dropped** otherwise (counted).
* **Memories**: texts are renumbered token-exactly (`tags.renumber`), re-embedded with the given embedder (the
  pickle's 3072-d vectors are unusable with the configured index) and written with their kind and their order in
  ``text_nodes_by_clip``. Ids follow `write_memories`' scheme (``<clip>#e<n>``, ``<clip>#s<sha1>``), so a later
  re-memorization of an imported clip replaces it as usual. A tag naming no face/voice node of the pickle
  becomes ``<face_?>``/``<voice_?>`` rather than silently pointing at an unrelated m3graph entity.
* **Votes**: every ``Equivalence:`` statement gives each (face, voice) pair it names
  ``max(1, round((w + 1) / 2))`` votes, w being the weight of the statement's edge to the voice (else to the
  face; 1 vote without an edge). The research code starts edges at 1 and adds 2 per re-statement (§3.3), so
  this is the number of times the statement was made. Votes are evidence strings of the statement's clip.
* **Idempotency**: importing a video id that already exists is refused with `VideoExistsError`; with
  ``replace=True`` the existing video is deleted first (`MemoryGraph.delete_video`), after the file has been
  parsed and embedded, so a bad file never costs the old data. The write itself is one transaction.

Why this module is over 400 lines: it maps the research code's whole pickle format (nodes, edges, embeddings,
equivalences) to the graph in one place, so the format can be read against the reference in one file.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import logging
import math
import shutil
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError

from m3graph.embedding import TextEmbedder
from m3graph.errors import ConfigError, ImportFormatError, InvalidInputError
from m3graph.graphdb.identity import EntityState
from m3graph.graphdb.imports import ImportRows, VideoExistsError
from m3graph.graphdb.store import MemoryGraph
from m3graph.graphdb.tags import EntityRef, is_equivalence, parse_tags, renumber, substitute
from m3graph.graphdb.types import ClipInfo, ClipRef, clip_key
from m3graph.ingest.safe_unpickle import DEFAULT_MAX_BYTES, StandInVideoGraph, load_videograph
from m3graph.settings import Settings
from m3graph.storage import publish

log = logging.getLogger(__name__)

FORMAT = "m3-agent-videograph-pickle"
MAX_VOTES_PER_STATEMENT = 1000  # bounds the evidence list of one SAME_AS edge against absurd edge weights
_MAX_TEXT = 8000  # MemoryIn's limit
EntityKind = Literal["face", "voice"]
_NODE_KIND: dict[str, EntityKind] = {"img": "face", "voice": "voice"}


class ImportSummary(BaseModel):
    """What one import wrote, and everything it had to drop or degrade (``warnings``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    source_id: str
    source: str
    replaced: bool
    clips: int
    faces: int
    voices: int
    faces_unindexed: int  # imported without centroid_unit (dimension differs from identity.face_dim)
    voices_unindexed: int
    face_dim: int | None
    voice_dim: int | None
    episodic: int
    semantic: int
    equivalences: int  # semantic memories that are equivalence statements
    same_as_pairs: int
    votes: int
    characters: int  # distinct characters over the imported entities
    face_observations: int
    utterances: int
    utterance_texts: int  # ASR strings kept on utterances
    asr_dropped: int  # ASR strings dropped (not aligned with the node's embeddings)
    face_crops: int  # crop files written
    face_crops_linked: int  # of those, referenced by a FaceObs
    skipped_nodes: int
    unresolved_tags: int
    entity_ids: dict[str, int]  # research tag ("face_3") → new entity id
    warnings: list[str]


# ---------------------------------------------------------------------------------------------- parsing


@dataclass
class _Entity:
    kind: EntityKind
    old_id: int
    vectors: np.ndarray  # (n, d) unit rows, capped
    contents: list[Any]
    aligned: bool  # contents[i] belongs to vectors[i]
    clip: int = 0
    new_id: int = -1


@dataclass
class _Text:
    old_id: int
    kind: Literal["episodic", "semantic"]
    text: str
    clip: int
    order: int = 0
    new_text: str = ""


@dataclass
class _Parsed:
    entities: list[_Entity]
    texts: list[_Text]
    edges: dict[tuple[int, int], float]
    clips: list[int]
    warnings: list[str] = field(default_factory=list)
    skipped: int = 0


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating) and math.isfinite(value) and float(value).is_integer():
        return int(value)
    return None


def _vectors(raw: Any, cap: int, what: str, warnings: list[str]) -> np.ndarray | None:
    """The node's first `cap` embeddings as unit rows of one dimension; unusable rows are dropped with a warning.

    Only the first `cap` are converted: a file can repeat one shared list many times at almost no cost in bytes.
    """
    items: list[Any]
    if isinstance(raw, np.ndarray):
        items = list(raw[:cap]) if raw.ndim == 2 else [raw]
    elif isinstance(raw, list | tuple):
        items = list(raw[:cap])
    else:
        warnings.append(f"{what}: embeddings are a {type(raw).__name__}, not a list; node skipped")
        return None
    rows: list[np.ndarray] = []
    bad = 0
    for item in items:
        try:
            vec = np.asarray(item, dtype=np.float64)
        except (TypeError, ValueError):
            bad += 1
            continue
        norm = float(np.linalg.norm(vec)) if vec.ndim == 1 and vec.size else 0.0
        if vec.ndim != 1 or not np.all(np.isfinite(vec)) or norm == 0.0:
            bad += 1
            continue
        rows.append(vec / norm)
    if rows:
        dims = [r.shape[0] for r in rows]
        dim = max(set(dims), key=lambda d: (dims.count(d), d))
        keep = [r for r in rows if r.shape[0] == dim]
        bad += len(rows) - len(keep)
        rows = keep
    if bad:
        warnings.append(f"{what}: dropped {bad} embedding(s) that were not finite, non-zero, 1-d vectors of one size")
    return np.vstack(rows) if rows else None


def _node_fields(node: Any) -> tuple[str | None, Any, dict[str, Any]]:
    state = getattr(node, "__dict__", {})
    metadata = state.get("metadata")
    kind = state.get("type")  # a list here would make ``kind in _NODE_KIND`` raise: only a str is a type
    return kind if isinstance(kind, str) else None, state.get("embeddings"), metadata if isinstance(metadata,
                                                                                                     dict) else {}


def parse_videograph(graph: StandInVideoGraph, settings: Settings) -> _Parsed:
    """Validates the stand-in graph and extracts what the import needs; no database access.

    Container-level problems (no ``nodes`` dict) make the file unusable and raise `ImportFormatError`;
    a single unusable node is skipped with a warning, as the rest of the video is still worth importing.
    """
    state = graph.__dict__
    nodes = state.get("nodes")
    if not isinstance(nodes, dict):
        raise ImportFormatError(f"VideoGraph has no 'nodes' dict (attributes: {sorted(state)[:10]})")
    raw_edges = state.get("edges", {})
    if not isinstance(raw_edges, dict):
        raise ImportFormatError(f"VideoGraph 'edges' is a {type(raw_edges).__name__}, not a dict")
    by_clip_raw = state.get("text_nodes_by_clip", {})
    by_clip_raw = by_clip_raw if isinstance(by_clip_raw, dict) else {}
    warnings: list[str] = []
    skipped = 0
    caps = {"face": settings.identity.max_face_exemplars, "voice": settings.identity.max_voice_exemplars}

    entities: list[_Entity] = []
    texts: list[_Text] = []
    for raw_id, node in nodes.items():
        node_id = _as_int(raw_id)
        if node_id is None or not isinstance(node, StandInVideoGraph.Node):
            warnings.append(f"node key {repr(raw_id)[:80]}: not an integer id with a VideoGraph.Node; skipped")
            skipped += 1
            continue
        node_type, embeddings, metadata = _node_fields(node)
        contents = metadata.get("contents", [])
        contents = list(contents) if isinstance(contents, list | tuple) else []
        if node_type in _NODE_KIND:
            kind = _NODE_KIND[node_type]
            vecs = _vectors(embeddings, caps[kind], f"{kind} node {node_id}", warnings)
            if vecs is None:
                warnings.append(f"{kind} node {node_id}: no usable embedding; skipped (its tags become <{kind}_?>)")
                skipped += 1
                continue
            # contents[i] belongs to embeddings[i] exactly when the research code never random-sampled the node,
            # i.e. when both lists have the same length (and every embedding was usable).
            if isinstance(embeddings, np.ndarray):
                raw_n = embeddings.shape[0] if embeddings.ndim == 2 else 1
            else:
                raw_n = len(embeddings)
            aligned = len(contents) == raw_n and vecs.shape[0] == min(raw_n, caps[kind])
            entities.append(_Entity(kind, node_id, vecs, contents, aligned))
        elif node_type in ("episodic", "semantic"):
            text = contents[0] if contents else None
            clip = _as_int(metadata.get("timestamp"))
            if not isinstance(text, str) or not text.strip() or clip is None or clip < 0:
                warnings.append(f"{node_type} node {node_id}: missing text or clip timestamp; skipped")
                skipped += 1
                continue
            if len(text) > _MAX_TEXT:
                warnings.append(f"{node_type} node {node_id}: text longer than {_MAX_TEXT} characters; skipped")
                skipped += 1
                continue
            texts.append(_Text(node_id, "episodic" if node_type == "episodic" else "semantic", text, clip))
        else:
            warnings.append(f"node {node_id}: unknown type {node_type!r}; skipped")
            skipped += 1

    # Order within a clip: the position in text_nodes_by_clip; unlisted nodes follow, by node id.
    positions: dict[int, tuple[int, int]] = {}
    for raw_clip, ids in by_clip_raw.items():
        clip = _as_int(raw_clip)
        if clip is None or not isinstance(ids, list | tuple):
            continue
        for pos, raw_id in enumerate(ids):
            nid = _as_int(raw_id)
            if nid is not None:
                positions.setdefault(nid, (clip, pos))
    unlisted = 0
    for t in texts:
        clip_pos = positions.get(t.old_id)
        if clip_pos is None or clip_pos[0] != t.clip:
            unlisted += 1
    if unlisted:
        warnings.append(f"{unlisted} memory node(s) not listed under their clip in text_nodes_by_clip; "
                        "ordered after the listed ones by node id")

    def _order(t: _Text) -> tuple[int, int, int]:
        listed = positions.get(t.old_id)
        return (t.clip, 0, listed[1]) if listed is not None and listed[0] == t.clip else (t.clip, 1, t.old_id)

    texts.sort(key=_order)
    clip_orders: dict[int, int] = {}
    for t in texts:
        t.order = clip_orders.get(t.clip, 0)
        clip_orders[t.clip] = t.order + 1

    edges: dict[tuple[int, int], float] = {}
    for key, weight in raw_edges.items():
        if isinstance(key, tuple) and len(key) == 2:
            a, b = _as_int(key[0]), _as_int(key[1])
            try:
                w = float(weight)
            except (TypeError, ValueError):
                continue
            if a is not None and b is not None and math.isfinite(w):
                edges[(a, b)] = w

    if not texts and not entities:
        raise ImportFormatError(f"the VideoGraph holds no usable memory, face or voice node ({skipped} skipped)")
    clips = sorted({t.clip for t in texts})
    first_mention: dict[EntityRef, int] = {}
    for t in texts:  # sorted by clip, so the first hit is the earliest clip
        for ref in parse_tags(t.text):
            first_mention.setdefault(ref, t.clip)
    if entities and not clips:
        warnings.append("the graph has faces/voices but no memories: their evidence is attached to a clip 0")
        clips = [0]
    for e in entities:
        e.clip = first_mention.get((e.kind, e.old_id), clips[0])
    entities.sort(key=lambda e: e.old_id)
    return _Parsed(entities, texts, edges, clips, warnings, skipped)


# ---------------------------------------------------------------------------------------------- writing


def _dim_warning(kind: EntityKind, entities: Sequence[_Entity], want: int) -> str | None:
    off = sorted({e.vectors.shape[1] for e in entities if e.kind == kind and e.vectors.shape[1] != want})
    n = sum(1 for e in entities if e.kind == kind and e.vectors.shape[1] != want)
    if not n:
        return None
    return (f"{n} {kind} entit{'y' if n == 1 else 'ies'} with {'/'.join(map(str, off))}-d embeddings, but "
            f"identity.{kind}_dim is {want}: imported without centroid_unit, so they stay out of the {kind} vector "
            "index and are never matched by resolve_" + kind + "s")


def _decode_crop(item: Any) -> tuple[bytes, str] | None:
    """A research crop (base64 JPEG, optionally a data URI) as (bytes, extension), or None if it is not one."""
    if isinstance(item, bytes):
        item = item.decode("ascii", errors="replace")
    if not isinstance(item, str):
        return None
    if item.startswith("data:") and "," in item:
        item = item.split(",", 1)[1]
    try:
        data = base64.b64decode(item.strip(), validate=True)
    except (binascii.Error, ValueError):
        return None
    if data.startswith(b"\xff\xd8\xff"):
        return data, "jpg"
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return data, "png"
    return None


def _write_crops(folder: Path, entities: Sequence[_Entity]) -> tuple[dict[tuple[int, int], str], int, int]:
    """Decodes every face crop into `folder`; returns {(entity id, crop index): file name}, written, invalid."""
    uris: dict[tuple[int, int], str] = {}
    written = invalid = 0
    for e in entities:
        if e.kind != "face":
            continue
        for i, item in enumerate(e.contents):
            crop = _decode_crop(item)
            if crop is None:
                invalid += 1
                continue
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"face_{e.new_id}_{i:04d}.{crop[1]}"
            path.write_bytes(crop[0])
            uris[(e.new_id, i)] = path.name
            written += 1
    return uris, written, invalid


# Speaker embedders m3graph runs whose vectors a research pickle can never hold (its voices are ERes2NetV2), even
# at the same width: CAM++ is 192-d like ERes2NetV2. Resemblyzer (256-d) differs by width already.
SPEAKER_MODELS_NOT_IN_PICKLES = frozenset({"campplus"})


def _entity_row(e: _Entity, source_id: str, configured_dim: int | None, crop_uri: dict[int, str]
                ) -> dict[str, Any]:
    ckey = clip_key(source_id, e.clip)
    prefix = f"{ckey}#import-{e.kind[0]}{e.old_id}"
    obs = [f"{prefix}#{i:03d}" for i in range(e.vectors.shape[0])]
    state = EntityState(e.new_id, e.vectors, [1.0] * len(obs), obs, created=True)
    row = state.row()
    indexable = configured_dim is not None and e.vectors.shape[1] == configured_dim
    if not indexable:
        row["unit"] = None  # out of the vector index: a different model's space
    observations = []
    for i, key in enumerate(obs):
        o: dict[str, Any] = {"obs_key": key, "index": i, "quality": 1.0, "embedding": e.vectors[i].tolist()}
        if e.kind == "face":
            o["crop_uri"] = crop_uri.get(i) if e.aligned else None
        else:
            text = e.contents[i] if e.aligned and isinstance(e.contents[i], str) else None
            o["text"] = text
        observations.append(o)
    row.update(old_id=e.old_id, clip_key=ckey, clip_index=e.clip, observations=observations,
               reason=None if indexable else f"{e.vectors.shape[1]}-d embeddings from another model")
    return row


def _votes(parsed: _Parsed, mapping: dict[EntityRef, int], source_id: str) -> list[dict[str, Any]]:
    """One row per (face, voice) pair with all its evidence strings (see the module docstring)."""
    pairs: dict[tuple[int, int], dict[str, Any]] = {}
    for t in parsed.texts:
        if t.kind != "semantic" or not is_equivalence(t.text):
            continue
        tags = parse_tags(t.text)
        faces = [n for k, n in tags if k == "face" and ("face", n) in mapping]
        voices = [n for k, n in tags if k == "voice" and ("voice", n) in mapping]
        ckey = clip_key(source_id, t.clip)
        for f in faces:
            for v in voices:
                w = parsed.edges.get((t.old_id, v), parsed.edges.get((t.old_id, f)))
                n = 1 if w is None else max(1, round((w + 1) / 2))
                n = min(n, MAX_VOTES_PER_STATEMENT)
                row = pairs.setdefault((mapping[("face", f)], mapping[("voice", v)]),
                                       {"evidence": [], "clips": []})
                row["evidence"].extend(f"{ckey}|import:{t.old_id}:{k}" for k in range(1, n + 1))
                row["clips"].append(t.clip)
    return [{"face_id": f, "voice_id": v, "evidence": row["evidence"],
             "first_clip": clip_key(source_id, min(row["clips"])), "last_clip": clip_key(source_id, max(row["clips"]))}
            for (f, v), row in sorted(pairs.items())]


def _embed(embedder: TextEmbedder, texts: Sequence[str], dim: int) -> np.ndarray:
    if not texts:
        return np.zeros((0, dim))
    vecs = np.asarray(embedder.embed(list(texts)), dtype=np.float64)
    if vecs.shape != (len(texts), dim):
        raise ConfigError(f"the text embedder returned shape {vecs.shape} for {len(texts)} texts; "
                          f"memory.text_dim is {dim}")
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    if not np.all(np.isfinite(vecs)) or np.any(norms == 0):
        raise ConfigError("the text embedder returned non-finite or all-zero vectors")
    return vecs / norms


def import_pickle(graph: MemoryGraph, path: Path, source_id: str, embedder: TextEmbedder, replace: bool = False, *,
                  max_bytes: int = DEFAULT_MAX_BYTES, save_crops: bool = True) -> ImportSummary:
    """Imports one research ``VideoGraph`` pickle as video `video_id`; see the module docstring for the mapping.

    Raises `ImportFormatError` for a file that is not a safe, well-formed VideoGraph pickle (nothing written),
    `VideoExistsError` when the video exists and `replace` is false, `InvalidInputError` for a bad video id.
    """
    settings = graph.settings
    try:
        ClipRef(source_id=source_id, clip_index=0)
    except ValidationError as exc:
        raise InvalidInputError(f"invalid source id {source_id!r}: {exc.errors()[0]['msg']}") from None
    path = Path(path)
    parsed = parse_videograph(load_videograph(path, max_bytes), settings)
    warnings = list(parsed.warnings)

    exists = graph.video_exists(source_id)
    if exists and not replace:
        raise VideoExistsError(f"video {source_id} already exists; import with replace=True to delete and re-import it")

    # New entity ids first (a failed import only leaves a gap in the counter), then the texts that use them.
    ents = parsed.entities
    first = graph.allocate_entity_ids(len(ents)) if ents else 0
    mapping: dict[EntityRef, int] = {}
    for i, e in enumerate(ents):
        e.new_id = first + i
        mapping[(e.kind, e.old_id)] = e.new_id
    unresolved = 0

    def _unknown(kind: str, number: int) -> str | None:
        nonlocal unresolved
        if kind == "character" or (kind, number) in mapping:
            return None
        unresolved += 1
        return f"<{kind}_?>"

    for t in parsed.texts:
        t.new_text = renumber(substitute(t.text, _unknown), mapping)
    if unresolved:
        warnings.append(f"{unresolved} tag(s) name no face/voice node of the pickle; written as <face_?>/<voice_?>")

    dim = settings.memory.text_dim
    vectors = _embed(embedder, [t.new_text for t in parsed.texts], dim)

    dims: tuple[tuple[EntityKind, int], ...] = (("face", settings.identity.face_dim),
                                                ("voice", settings.identity.voice_dim))
    for kind, want in dims:
        message = _dim_warning(kind, ents, want)
        if message:
            warnings.append(message)

    # Crops go to a private folder first and are moved into place only after the graph write committed.
    # Staged beside (not inside) the video's folder: replacing a video deletes that folder with the old video.
    import_dir = settings.data_dir / "imports" / source_id
    staging = import_dir.parent / f".faces-{source_id}-{uuid.uuid4().hex}"
    crop_uris: dict[tuple[int, int], str] = {}
    crops_written = crops_invalid = 0
    if save_crops:
        crop_uris, crops_written, crops_invalid = _write_crops(staging, ents)
        if crops_invalid:
            warnings.append(f"{crops_invalid} face crop(s) were not base64 JPEG/PNG images; not written")
    final_faces = import_dir / "faces"
    crop_uris = {k: f"imports/{source_id}/faces/{name}" for k, name in crop_uris.items()}  # storage keys

    face_dim, voice_dim = settings.identity.face_dim, settings.identity.voice_dim
    face_rows = [_entity_row(e, source_id, face_dim, {i: crop_uris[(e.new_id, i)] for i in range(len(e.contents))
                                                      if (e.new_id, i) in crop_uris})
                 for e in ents if e.kind == "face"]
    # The research code's voices are ERes2NetV2 (192-d), as wide as CAM++'s but another model's space: with CAM++
    # configured they must stay out of the voice index like any other model's vectors.
    same_voice_model = settings.perception.speaker_embedder not in SPEAKER_MODELS_NOT_IN_PICKLES
    voice_rows = [_entity_row(e, source_id, voice_dim if same_voice_model else None, {})
                  for e in ents if e.kind == "voice"]
    if not same_voice_model and voice_rows:
        warnings.append(f"{len(voice_rows)} voice(s) kept out of the voice index: research pickles hold ERes2NetV2 "
                        f"voices and the configured speaker embedder is {settings.perception.speaker_embedder}")

    memory_rows: list[dict[str, Any]] = []
    seen_ids: set[str] = set()
    episodic_n: dict[int, int] = {}
    duplicates = 0
    for t, vec in zip(parsed.texts, vectors, strict=True):
        ckey = clip_key(source_id, t.clip)
        if t.kind == "episodic":
            memory_id = f"{ckey}#e{episodic_n.get(t.clip, 0)}"
            episodic_n[t.clip] = episodic_n.get(t.clip, 0) + 1
        else:
            memory_id = f"{ckey}#s{hashlib.sha1(t.new_text.encode('utf-8')).hexdigest()[:12]}"
        if memory_id in seen_ids:  # the same statement twice in one clip is one memory, as in write_memories
            duplicates += 1
            continue
        seen_ids.add(memory_id)
        tags = parse_tags(t.new_text)
        memory_rows.append({
            "memory_id": memory_id, "clip_key": ckey, "clip_index": t.clip, "kind": t.kind, "text": t.new_text,
            "order": t.order, "embedding": vec.tolist(), "is_equivalence": is_equivalence(t.new_text),
            "entity_ids": [n for _, n in tags], "old_id": t.old_id,
            "mentions": [{"kind": k, "id": n, "position": i} for i, (k, n) in enumerate(tags)],
        })
    if duplicates:
        warnings.append(f"{duplicates} semantic statement(s) repeated verbatim within a clip were merged")
    vote_rows = _votes(parsed, mapping, source_id)
    clip_infos = [ClipInfo(source_id=source_id, clip_index=c, start_s=settings.clip_seconds * c,
                           end_s=settings.clip_seconds * (c + 1)) for c in parsed.clips]

    rows = ImportRows(source_id=source_id, source=path.name, format=FORMAT, clips=clip_infos, faces=face_rows,
                      voices=voice_rows, memories=memory_rows, votes=vote_rows, entity_ids=[e.new_id for e in ents])

    if exists:
        graph.delete_video(source_id)
        log.info("import of %s: deleted the existing video before re-importing", source_id)
    try:
        graph.write_import(rows)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if staging.exists():
        shutil.rmtree(final_faces, ignore_errors=True)
        final_faces.parent.mkdir(parents=True, exist_ok=True)
        staging.rename(final_faces)
        for key in sorted(set(crop_uris.values())):  # into an object store, when one is configured
            publish(settings, key, keep=False)
    elif exists:
        shutil.rmtree(final_faces, ignore_errors=True)  # crops of the replaced import

    kept_texts = sum(1 for row in voice_rows for o in row["observations"] if o["text"] is not None)
    asr_total = sum(len(e.contents) for e in ents if e.kind == "voice")
    if asr_total > kept_texts:
        warnings.append(f"{asr_total - kept_texts} ASR string(s) dropped: they do not line up one-to-one with their "
                        "voice node's embeddings (the research code random-sampled the node), or exceed the cap")
    linked = sum(1 for r in face_rows for o in r["observations"] if o["crop_uri"] is not None)
    if crops_written > linked:
        warnings.append(f"{crops_written - linked} face crop file(s) written but not linked to a FaceObs: they do "
                        "not line up one-to-one with their face node's embeddings")

    characters = graph.characters_of([e.new_id for e in ents]) if ents else {}
    for message in warnings:
        log.warning("import of %s from %s: %s", source_id, path.name, message)
    voices = [e for e in ents if e.kind == "voice"]
    faces = [e for e in ents if e.kind == "face"]
    return ImportSummary(
        source_id=source_id, source=str(path), replaced=exists, clips=len(clip_infos), faces=len(faces),
        voices=len(voices), faces_unindexed=sum(1 for r in face_rows if r["unit"] is None),
        voices_unindexed=sum(1 for r in voice_rows if r["unit"] is None),
        face_dim=faces[0].vectors.shape[1] if faces else None,
        voice_dim=voices[0].vectors.shape[1] if voices else None,
        episodic=sum(1 for r in memory_rows if r["kind"] == "episodic"),
        semantic=sum(1 for r in memory_rows if r["kind"] == "semantic"),
        equivalences=sum(1 for r in memory_rows if r["is_equivalence"]),
        same_as_pairs=len(vote_rows), votes=sum(len(r["evidence"]) for r in vote_rows),
        characters=len(set(characters.values())),
        face_observations=sum(len(r["observations"]) for r in face_rows),
        utterances=sum(len(r["observations"]) for r in voice_rows),
        utterance_texts=kept_texts, asr_dropped=asr_total - kept_texts,
        face_crops=crops_written, face_crops_linked=linked,
        skipped_nodes=parsed.skipped, unresolved_tags=unresolved,
        entity_ids={f"{e.kind}_{e.old_id}": e.new_id for e in ents}, warnings=warnings)


__all__ = ["FORMAT", "ImportSummary", "VideoExistsError", "import_pickle", "parse_videograph"]
