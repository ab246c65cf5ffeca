"""Faces of one clip: who was seen when, as per-clip `FaceCluster`s.

The reference (m3-agent-reference §4.3) runs InsightFace on every 5-fps frame, then HDBSCAN(min_cluster_size=20)
per 30-s clip, so anyone seen for less than ~4 s never becomes a face node, and one bad bbox crop drops every face
of its frame (§10 item 10). Here, all offline and per clip:

1. **Detection** with our MTCNN (`mtcnn.py`) on each frame, downscaled first when its long side exceeds
   `max_frame_side_px` (boxes and landmarks are mapped back to frame pixels). Faces smaller than `face_min_size_px`
   are not even searched for (the pyramid starts at that size, at least 20 px).
2. **Clamping, per face**: the box is clamped to the frame; a face whose clamped box is empty is dropped on its own
   and the other faces of the frame are kept.
3. **Gates**: detection score >= `face_min_det_score`, clamped short side >= `face_min_size_px`, quality >=
   `face_min_quality` (quality = det score x sharpness x size, see `face_embed.face_quality`).
4. **Embedding** (`face_embed.py`, dlib by default), unit vectors.
5. **Clustering within the clip**: average-linkage agglomeration on cosine similarity, merging while the mean
   pairwise cosine between two clusters is >= `face_cluster_threshold`, with a cannot-link between faces of the same
   frame (one person is not twice in one frame). Mean pairwise cosine is the score the graph's identity matching
   uses, so a cluster is what matching would accept as one person. Average linkage, unlike connected components,
   does not chain two people together through one ambiguous face.
6. **Filter**: clusters with >= `face_min_cluster_frames` observations (default 2: a person on screen for two
   sampled frames, 0.4 s at 5 fps, is kept; thanks to the cannot-link, observations = distinct frames).
7. **Output**: clusters labelled 0.. in order of first appearance; observations in time order with ABSOLUTE times
   (`clip_start_s` + frame time), the clamped int bbox, det score, quality, unit embedding and a JPEG crop of the
   clamped box written to `crop_dir` under a name derived from the absolute millisecond and the box (deterministic:
   re-running a clip rewrites identical files; use one `crop_dir` per video). The graph stores only the file URI.

Model thresholds: cosines depend on the embedder. With dlib, different people measured 0.78-0.90 cosine on the test
photos and the same person 0.95-0.98 (ArcFace separates near 0.3), so the ArcFace-scale defaults (cluster 0.6,
identity 0.3) merge strangers with dlib; see the `DLIB_*` constants and the warning in `perceive_faces`.

Why this module is over 400 lines: detection, tracking, quality ranking and per-clip clustering run over one frame
loop and share its state (frames, boxes, tracks); the models themselves live in `mtcnn.py` and `face_embed.py`.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import cv2
import numpy as np

from m3graph.errors import ConfigError, InvalidInputError
from m3graph.observations import FaceCluster, FaceObservation
from m3graph.perception.face_embed import FaceEmbedder, face_quality, get_face_embedder
from m3graph.settings import MODEL_THRESHOLDS, PerceptionConfig, Settings

if TYPE_CHECKING:
    from m3graph.perception.mtcnn import FaceDetection

log = logging.getLogger(__name__)

__all__ = [
    "DLIB_CLUSTER_THRESHOLD",
    "DLIB_IDENTITY_THRESHOLD",
    "DLIB_MIN_SAFE_THRESHOLD",
    "RECOMMENDED_MIN_QUALITY",
    "clamp_box",
    "cluster_faces",
    "detect_faces",
    "perceive_faces",
    "track_faces",
]

# dlib cosines on the test photos (tests/e2e/test_faces.py): same person 0.951-0.984 (10 pairs of 5 Obama photos),
# different people 0.776-0.898 (68 pairs: Obama, Biden, 6 Friends actors, Tom Hanks). Below the highest
# different-person cosine a threshold merges strangers; the recommended values sit in the gap, the within-clip one
# higher because consecutive frames of one person agree more than photos taken on different days.
DLIB_MIN_SAFE_THRESHOLD = 0.90
DLIB_CLUSTER_THRESHOLD = 0.93  # recommended perception.face_cluster_threshold for dlib
DLIB_IDENTITY_THRESHOLD = MODEL_THRESHOLDS["dlib"]  # identity.face_threshold for dlib (`m3graph calibrate faces`)
# Recommended perception.face_min_quality: MTCNN's confident false positives on blurred background scored quality
# 0.18-0.26 (det 0.88-0.95) on the test photos, real faces 0.42-0.94 (0.42 = a 37-px face).
RECOMMENDED_MIN_QUALITY = 0.3
MIN_DETECTION_FACE_PX = 20.0  # MTCNN's usual floor: P-Net proposals for smaller faces are mostly noise
JPEG_QUALITY = 90
# Face tracks (perception.face_track_embed > 0): a face continues a track when its box overlaps the track's last
# box by IoU >= TRACK_IOU within TRACK_MAX_GAP sampled frames (0.6 s at 5 fps: a blink of the detector).
TRACK_IOU = 0.3
TRACK_MAX_GAP = 3


@dataclass(frozen=True)
class _Face:
    frame: int  # index into the clip's frames
    t: float  # seconds from the clip start
    bbox: tuple[int, int, int, int]  # clamped, int pixels
    det: FaceDetection


def clamp_box(box: tuple[float, float, float, float], width: int, height: int) -> tuple[int, int, int, int] | None:
    """The box rounded to int pixels and clamped to the frame, or None when nothing of it lies inside.

    MTCNN boxes routinely leave the frame for faces at its edge; the reference cropped them unclamped, got an empty
    crop, and lost every face of that frame. Clamping keeps the visible part (x2/y2 exclusive).
    """
    if not all(math.isfinite(v) for v in box):
        return None
    x1 = min(max(int(math.floor(box[0] + 0.5)), 0), width)
    y1 = min(max(int(math.floor(box[1] + 0.5)), 0), height)
    x2 = min(max(int(math.floor(box[2] + 0.5)), 0), width)
    y2 = min(max(int(math.floor(box[3] + 0.5)), 0), height)
    if x2 - x1 < 1 or y2 - y1 < 1:
        return None
    return x1, y1, x2, y2


def detect_faces(frame_rgb: np.ndarray, config: PerceptionConfig) -> list[FaceDetection]:
    """MTCNN on one frame, downscaled to `max_frame_side_px` if larger; boxes and landmarks in frame pixels."""
    from m3graph.perception.mtcnn import FaceDetection, get_mtcnn  # deferred: torch is imported on first use

    h, w = frame_rgb.shape[:2]
    scale = min(1.0, config.max_frame_side_px / max(h, w))
    image = frame_rgb
    if scale < 1.0:
        image = cv2.resize(
            frame_rgb, (max(1, round(w * scale)), max(1, round(h * scale))), interpolation=cv2.INTER_AREA
        )
    min_face = max(MIN_DETECTION_FACE_PX, config.face_min_size_px * scale)
    found = get_mtcnn().detect(image, min_face_size=min_face)
    if scale == 1.0:
        return found
    sx, sy = w / image.shape[1], h / image.shape[0]
    return [
        FaceDetection(
            box=(d.box[0] * sx, d.box[1] * sy, d.box[2] * sx, d.box[3] * sy),
            score=d.score,
            landmarks=(d.landmarks * np.array([sx, sy], np.float32)).astype(np.float32),
        )
        for d in found
    ]


def cluster_faces(vectors: np.ndarray, frame_ids: Sequence[int], threshold: float) -> np.ndarray:
    """Average-linkage agglomeration with a same-frame cannot-link; returns a cluster id per face (not compacted).

    Merges the pair of clusters with the highest mean pairwise cosine while it is >= threshold and the two share no
    frame. Deterministic: ties go to the lowest index pair. Keeps the n x n linkage matrix and updates only the
    merged row per step: O(n^2) memory and n argmaxes over it, about 0.2 s for 900 faces (30 s at 5 fps with six
    faces in every frame) on 2 cores.
    """
    n = len(frame_ids)
    if n == 0:
        return np.empty(0, dtype=np.int64)
    v = np.asarray(vectors, dtype=np.float64)
    if v.shape[0] != n:
        raise ValueError(f"{v.shape[0]} vectors for {n} frame ids")
    total = v @ v.T  # sums of pairwise cosines between clusters (singletons: the cosines themselves)
    frames = np.asarray(frame_ids)
    conflict = frames[:, None] == frames[None, :]
    size = np.ones(n)
    dead = np.zeros(n, dtype=bool)
    labels = np.arange(n)
    link = total.copy()  # current mean pairwise cosine; -inf where merging is impossible
    link[conflict] = -np.inf  # includes the diagonal
    while True:
        flat = int(np.argmax(link))
        i, j = divmod(flat, n)
        if not link[i, j] >= threshold:  # also stops on -inf (nothing mergeable left)
            break
        i, j = min(i, j), max(i, j)
        total[i, :] += total[j, :]
        total[:, i] = total[i, :]
        conflict[i, :] |= conflict[j, :]
        conflict[:, i] = conflict[i, :]
        size[i] += size[j]
        dead[j] = True
        labels[labels == j] = i
        row = total[i, :] / (size[i] * size)
        row[conflict[i, :] | dead] = -np.inf
        row[i] = -np.inf
        link[i, :] = row
        link[:, i] = row
        link[j, :] = -np.inf
        link[:, j] = -np.inf
    return labels


def _check_frames(frames: Sequence[tuple[float, np.ndarray]], config: PerceptionConfig) -> None:
    for k, (t, frame) in enumerate(frames):
        if not (isinstance(t, int | float) and math.isfinite(t) and t >= 0):
            raise InvalidInputError(f"frame {k}: time {t!r} must be a finite number of seconds >= 0")
        if not isinstance(frame, np.ndarray) or frame.ndim != 3 or frame.shape[2] != 3 or frame.dtype != np.uint8:
            shape = getattr(frame, "shape", None)
            raise InvalidInputError(f"frame {k}: expected an RGB uint8 array (H, W, 3), got {shape}")
        if frame.shape[0] * frame.shape[1] > config.max_resolution_px:
            raise InvalidInputError(f"frame {k}: {frame.shape[1]}x{frame.shape[0]} exceeds max_resolution_px")


def _write_crop(frame: np.ndarray, bbox: tuple[int, int, int, int], abs_time_s: float, crop_dir: Path) -> str:
    """JPEG of the clamped box, written atomically (skipped when identical bytes are there); returns a file URI."""
    x1, y1, x2, y2 = bbox
    ok, buf = cv2.imencode(
        ".jpg",
        cv2.cvtColor(np.ascontiguousarray(frame[y1:y2, x1:x2]), cv2.COLOR_RGB2BGR),
        [cv2.IMWRITE_JPEG_QUALITY, JPEG_QUALITY],
    )
    if not ok:
        raise InvalidInputError(f"could not encode the face crop {bbox} as JPEG")
    data = buf.tobytes()
    path = crop_dir / f"face_{round(abs_time_s * 1000):010d}_{x1}_{y1}_{x2}_{y2}.jpg"
    if not (path.is_file() and path.read_bytes() == data):
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    return path.resolve().as_uri()


def box_iou(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> float:
    """Intersection over union of two (x1, y1, x2, y2) boxes."""
    ix = max(0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def track_faces(frame_ids: Sequence[int], boxes: Sequence[tuple[int, int, int, int]], min_iou: float = TRACK_IOU,
                max_gap: int = TRACK_MAX_GAP) -> list[int]:
    """A track id per face: each face continues the track whose last box (at most `max_gap` frames back) it
    overlaps most (IoU >= `min_iou`, greedy by IoU, one face per track per frame); otherwise it starts a track.

    Faces must be given in frame order.
    """
    tracks: list[tuple[int, tuple[int, int, int, int]]] = []  # last (frame, box) per track
    out = [0] * len(frame_ids)
    i = 0
    while i < len(frame_ids):
        j = i
        while j < len(frame_ids) and frame_ids[j] == frame_ids[i]:
            j += 1
        frame = frame_ids[i]
        live = [t for t in range(len(tracks)) if 0 < frame - tracks[t][0] <= max_gap]
        pairs = sorted(((box_iou(boxes[f], tracks[t][1]), f, t) for f in range(i, j) for t in live), reverse=True)
        taken_f: set[int] = set()
        taken_t: set[int] = set()
        for iou, f, t in pairs:
            if iou < min_iou:
                break
            if f in taken_f or t in taken_t:
                continue
            taken_f.add(f)
            taken_t.add(t)
            out[f] = t
        for f in range(i, j):
            if f not in taken_f:
                tracks.append((frame, boxes[f]))
                out[f] = len(tracks) - 1
            else:
                tracks[out[f]] = (frame, boxes[f])
        i = j
    return out


def _embed_faces(frames: Sequence[tuple[float, np.ndarray]], faces: list[_Face], det_quality: list[float],
                 embedder: FaceEmbedder, cfg: PerceptionConfig) -> tuple[list[np.ndarray], list[float]]:
    """Unit vectors and qualities per face. With `face_track_embed` = K > 0 only K faces of each IoU track (the
    best of each of K equal stretches) are embedded (~70 ms a face, most of perception's time) and the others
    take their track's mean vector; a track whose embedded faces disagree (a cut, two people crossing) is
    embedded face by face."""
    chosen: set[int] = set(range(len(faces)))
    track_of: list[int] = []
    if cfg.face_track_embed > 0:
        track_of = track_faces([f.frame for f in faces], [f.bbox for f in faces])
        members: dict[int, list[int]] = {}
        for i, t in enumerate(track_of):
            members.setdefault(t, []).append(i)
        chosen = set()
        for m in members.values():  # the best face of each of K equal stretches of the track, so a cut or a
            for part in np.array_split(np.asarray(m), min(cfg.face_track_embed, len(m))):  # swap is seen
                chosen.add(int(max(part.tolist(), key=lambda i: (det_quality[i], -i))))
    vectors: dict[int, np.ndarray] = {}
    qualities: dict[int, float] = {}

    def run(idx: list[int]) -> None:
        by_frame: dict[int, list[int]] = {}
        for i in idx:
            by_frame.setdefault(faces[i].frame, []).append(i)
        for k, group in sorted(by_frame.items()):
            vecs, qual = embedder.embed(frames[k][1], [faces[i].det for i in group])
            for i, v, q in zip(group, vecs, qual, strict=True):
                vectors[i], qualities[i] = v, float(q)

    run(sorted(chosen))
    if cfg.face_track_embed > 0:
        members = {}
        for i, t in enumerate(track_of):
            members.setdefault(t, []).append(i)
        redo: list[int] = []
        for m in members.values():
            done = [i for i in m if i in vectors]
            v = np.stack([vectors[i] for i in done])
            if len(done) > 1 and float((v @ v.T).min()) < cfg.face_cluster_threshold:
                redo.extend(i for i in m if i not in vectors)
                continue
            mean = v.mean(axis=0)
            mean = mean / np.linalg.norm(mean)
            for i in m:
                if i not in vectors:
                    vectors[i], qualities[i] = mean.astype(v.dtype), det_quality[i]
        run(redo)
    return [vectors[i] for i in range(len(faces))], [qualities[i] for i in range(len(faces))]


def perceive_faces(
    frames: Sequence[tuple[float, np.ndarray]],
    settings: Settings,
    crop_dir: Path,
    clip_start_s: float,
    *,
    embedder: FaceEmbedder | None = None,
) -> list[FaceCluster]:
    """Per-clip face clusters from RGB uint8 frames given as (seconds from the clip start, frame).

    Writes one JPEG per kept observation to `crop_dir` (created if missing). `embedder` overrides the configured
    one (tests, or a caller that already holds a model).
    """
    if not (math.isfinite(clip_start_s) and clip_start_s >= 0):
        raise InvalidInputError(f"clip_start_s must be a finite number >= 0, got {clip_start_s!r}")
    cfg = settings.perception
    _check_frames(frames, cfg)
    if embedder is None:
        embedder = get_face_embedder(cfg.face_embedder, cfg.threads)
    if embedder.name == "dlib" and cfg.face_cluster_threshold < DLIB_MIN_SAFE_THRESHOLD:
        log.warning(
            "face_cluster_threshold %.2f is an ArcFace-scale value; dlib vectors of different people reach 0.90 "
            "cosine, so clusters will merge people (use >= %.2f, recommended %.2f)",
            cfg.face_cluster_threshold,
            DLIB_MIN_SAFE_THRESHOLD,
            DLIB_CLUSTER_THRESHOLD,
        )
    if settings.identity.face_dim != embedder.dim:
        raise ConfigError(
            f"face embedder {cfg.face_embedder!r} produces {embedder.dim}-d vectors but identity.face_dim is "
            f"{settings.identity.face_dim}"
        )
    import torch  # deferred like the models: importing this module must not pull torch in

    torch.set_num_threads(cfg.threads)

    def gated(k: int) -> list[tuple[tuple[int, int, int, int], FaceDetection, float]]:
        frame = frames[k][1]
        h, w = frame.shape[:2]
        kept = []
        for det in detect_faces(frame, cfg):
            bbox = clamp_box(det.box, w, h)
            if bbox is None:
                log.debug("frame %d: face box %s lies outside the %dx%d frame; dropped", k, det.box, w, h)
                continue
            if det.score < cfg.face_min_det_score or min(bbox[2] - bbox[0], bbox[3] - bbox[1]) < cfg.face_min_size_px:
                continue
            q = face_quality(frame, det.box, det.score)
            if cfg.face_min_quality > 0 and q < cfg.face_min_quality:
                continue
            kept.append((bbox, det, q))
        return kept

    # Detection and gating per frame in a small thread pool: torch releases the GIL in MTCNN's convolutions, and
    # its Python-side pyramid and NMS otherwise leave the second core idle.
    workers = max(1, min(cfg.face_workers, len(frames)))
    if workers > 1:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            per_frame = list(pool.map(gated, range(len(frames))))
    else:
        per_frame = [gated(k) for k in range(len(frames))]
    faces: list[_Face] = []
    det_quality: list[float] = []
    for k, kept in enumerate(per_frame):
        for bbox, det, q in kept:
            faces.append(_Face(frame=k, t=float(frames[k][0]), bbox=bbox, det=det))
            det_quality.append(q)
    if not faces:
        return []
    vectors, qualities = _embed_faces(frames, faces, det_quality, embedder, cfg)

    labels = cluster_faces(np.stack(vectors), [f.frame for f in faces], cfg.face_cluster_threshold)
    members: dict[int, list[int]] = {}
    for idx, label in enumerate(labels):
        members.setdefault(int(label), []).append(idx)
    groups = [m for m in members.values() if len(m) >= cfg.face_min_cluster_frames]
    groups = [sorted(m, key=lambda i: (faces[i].t, faces[i].bbox)) for m in groups]
    groups.sort(key=lambda m: (faces[m[0]].t, faces[m[0]].bbox))

    crop_dir = Path(crop_dir)
    crop_dir.mkdir(parents=True, exist_ok=True)
    clusters: list[FaceCluster] = []
    for label, group in enumerate(groups):
        observations = []
        for i in group:
            f = faces[i]
            abs_t = round(clip_start_s + f.t, 3)
            observations.append(
                FaceObservation(
                    frame_time_s=abs_t,
                    bbox=f.bbox,
                    det_score=round(min(max(f.det.score, 0.0), 1.0), 6),
                    quality=round(qualities[i], 6),
                    embedding=[float(x) for x in vectors[i]],
                    crop_uri=_write_crop(frames[f.frame][1], f.bbox, abs_t, crop_dir),
                )
            )
        clusters.append(FaceCluster(label=label, observations=observations))
    log.info(
        "faces: %d frames, %d faces kept, %d clusters (%d faces in dropped clusters)",
        len(frames),
        len(faces),
        len(clusters),
        len(faces) - sum(len(c.observations) for c in clusters),
    )
    return clusters
