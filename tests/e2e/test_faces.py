"""Faces: our MTCNN, the dlib and ONNX embedders, and per-clip clustering, on real photos. No Neo4j needed.

Test photos come from two source tarballs on PyPI (MIT/Apache projects): face_recognition 1.3.0 (three photos of
Obama, one of Biden, two partial-face crops) and insightface 2.1 (t1.jpg, six Friends actors; an aligned Tom Hanks
crop). They are downloaded once into `.m3graph/testmedia/sdists` (shared with the test-media builder) and the
session FAILS when they cannot be obtained: skipping would hide that detection was never exercised.
"""

from __future__ import annotations

import io
import itertools
import os
import subprocess
import sys
import tarfile
from pathlib import Path
from urllib.parse import urlparse
from urllib.request import url2pathname

# OpenMP threads that spin while waiting make torch 4-8x slower whenever the 2 cores are shared (another test's
# Neo4j, a parallel session): MTCNN went from ~0.2 s to ~1.2-1.8 s per frame. Only effective if torch is not loaded
# yet; it changes no result.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np
import pytest
from PIL import Image, ImageFilter

from m3graph.devkit.testmedia import ensure_sdists
from m3graph.errors import ConfigError, InvalidInputError
from m3graph.perception.face_embed import (
    ARCFACE_TEMPLATE_112,
    FaceEmbedder,
    OnnxArcFaceEmbedder,
    align_face,
    face_quality,
    get_face_embedder,
    similarity_transform,
)
from m3graph.perception.faces import (
    DLIB_CLUSTER_THRESHOLD,
    DLIB_IDENTITY_THRESHOLD,
    DLIB_MIN_SAFE_THRESHOLD,
    RECOMMENDED_MIN_QUALITY,
    clamp_box,
    cluster_faces,
    detect_faces,
    perceive_faces,
    track_faces,
)
from m3graph.perception.mtcnn import FaceDetection, get_mtcnn, nms
from m3graph.settings import PerceptionConfig, Settings

REPO = Path(__file__).resolve().parents[2]
SDIST_DIR = REPO / ".m3graph" / "testmedia" / "sdists"
SDISTS = {
    "face_recognition-1.3.0.tar.gz": "face_recognition==1.3.0",
    "insightface-2.1.tar.gz": "insightface==2.1",
}
PHOTOS = {
    "obama": ("face_recognition-1.3.0.tar.gz", "face_recognition-1.3.0/tests/test_images/obama.jpg"),
    "obama2": ("face_recognition-1.3.0.tar.gz", "face_recognition-1.3.0/tests/test_images/obama2.jpg"),
    "obama3": ("face_recognition-1.3.0.tar.gz", "face_recognition-1.3.0/tests/test_images/obama3.jpg"),
    "obama_partial": (
        "face_recognition-1.3.0.tar.gz",
        "face_recognition-1.3.0/tests/test_images/obama_partial_face.jpg",
    ),
    "obama_partial2": (
        "face_recognition-1.3.0.tar.gz",
        "face_recognition-1.3.0/tests/test_images/obama_partial_face2.jpg",
    ),
    "biden": ("face_recognition-1.3.0.tar.gz", "face_recognition-1.3.0/tests/test_images/biden.jpg"),
    "t1": ("insightface-2.1.tar.gz", "insightface-2.1/insightface/data/images/t1.jpg"),
    "hanks": ("insightface-2.1.tar.gz", "insightface-2.1/insightface/data/images/Tom_Hanks_54745.png"),
}
# Face rectangles from dlib's HOG detector (an independent detector), full-resolution pixels [x1, y1, x2, y2].
HOG_BOXES = {
    "obama": (349, 142, 617, 409),
    "obama2": (171, 290, 438, 558),
    "obama3": (633, 277, 954, 598),
    "biden": (419, 241, 740, 562),
}


# ---------------------------------------------------------------------------------------------- fixtures


def _ensure_sdists() -> None:
    """The tarballs are fetched once by the test-media builder's downloader; a failure fails, never skips."""
    try:
        ensure_sdists(SDIST_DIR)
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
        pytest.fail(f"could not download the face test photos: {exc}")


@pytest.fixture(scope="session")
def photos() -> dict[str, np.ndarray]:
    """The test photos as RGB uint8 arrays, read straight out of the cached tarballs."""
    _ensure_sdists()
    out: dict[str, np.ndarray] = {}
    for sdist in SDISTS:
        with tarfile.open(SDIST_DIR / sdist) as tar:
            for key, (source, member) in PHOTOS.items():
                if source != sdist:
                    continue
                data = tar.extractfile(member)
                if data is None:
                    pytest.fail(f"{member} is missing from {SDIST_DIR / sdist}")
                out[key] = np.asarray(Image.open(io.BytesIO(data.read())).convert("RGB"))
    return out


@pytest.fixture(scope="session")
def cfg() -> PerceptionConfig:
    return Settings().perception


@pytest.fixture(scope="session")
def face_settings() -> Settings:
    """Settings with the thresholds this module recommends for the dlib embedder."""
    return Settings(
        perception=PerceptionConfig(
            face_cluster_threshold=DLIB_CLUSTER_THRESHOLD, face_min_quality=RECOMMENDED_MIN_QUALITY
        )
    )


def _faces(image: np.ndarray, cfg: PerceptionConfig) -> list[FaceDetection]:
    """Detections that pass the recommended gates (det >= 0.9 and quality >= RECOMMENDED_MIN_QUALITY)."""
    return [
        d
        for d in detect_faces(image, cfg)
        if d.score >= cfg.face_min_det_score and face_quality(image, d.box, d.score) >= RECOMMENDED_MIN_QUALITY
    ]


def _iou(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    iw = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    ih = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = iw * ih
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)


def _fit(image: np.ndarray, width: int, height: int) -> np.ndarray:
    """Letterbox an image into width x height (what a video frame of a photo looks like)."""
    scale = min(width / image.shape[1], height / image.shape[0])
    w, h = max(1, round(image.shape[1] * scale)), max(1, round(image.shape[0] * scale))
    small = np.asarray(Image.fromarray(image).resize((w, h), Image.Resampling.LANCZOS))
    canvas = np.zeros((height, width, 3), np.uint8)
    y, x = (height - h) // 2, (width - w) // 2
    canvas[y : y + h, x : x + w] = small
    return canvas


def _jitter(frame: np.ndarray, k: int) -> np.ndarray:
    """Frame k of a 'video' of a still: shifted a few pixels and slightly brighter or darker, as camera noise."""
    shifted = np.roll(frame, (2 * (k % 3) - 2, 3 * (k % 2)), axis=(0, 1))
    return np.clip(shifted.astype(np.int16) + (k % 5 - 2) * 3, 0, 255).astype(np.uint8)


def _uri_path(uri: str) -> Path:
    return Path(url2pathname(urlparse(uri).path))


# ---------------------------------------------------------------------------------------------- MTCNN


def test_mtcnn_loads_weights_without_torchvision() -> None:
    get_mtcnn()
    assert "torchvision" not in sys.modules
    assert "facenet_pytorch.models" not in sys.modules


@pytest.mark.parametrize("name", ["obama", "obama2", "obama3", "biden"])
def test_mtcnn_finds_the_one_face(photos: dict[str, np.ndarray], cfg: PerceptionConfig, name: str) -> None:
    faces = _faces(photos[name], cfg)
    assert len(faces) == 1
    face = faces[0]
    assert face.score > 0.99
    # Same face as dlib's independent detector (whose boxes are squarer: MTCNN's include forehead and chin).
    hog = HOG_BOXES[name]
    inter = max(0.0, min(face.box[2], hog[2]) - max(face.box[0], hog[0])) * max(
        0.0, min(face.box[3], hog[3]) - max(face.box[1], hog[1])
    )
    assert _iou(face.box, hog) > 0.5 and inter / ((hog[2] - hog[0]) * (hog[3] - hog[1])) > 0.8
    (lex, ley), (rex, rey), (nx, ny), (lmx, lmy), (rmx, rmy) = face.landmarks.tolist()
    x1, y1, x2, y2 = face.box
    assert x1 < lex < nx < rex < x2 and x1 < lmx < rmx < x2  # left to right: eye, nose, eye; mouth corners
    assert y1 < max(ley, rey) < ny < min(lmy, rmy) < y2  # top to bottom: eyes, nose, mouth


def test_mtcnn_finds_six_people(photos: dict[str, np.ndarray], cfg: PerceptionConfig) -> None:
    faces = _faces(photos["t1"], cfg)
    assert len(faces) == 6
    assert all(_iou(a.box, b.box) == 0 for a, b in itertools.combinations(faces, 2))


def test_mtcnn_finds_nothing_in_blank_or_noise() -> None:
    rng = np.random.default_rng(7)
    images = [
        np.zeros((480, 640, 3), np.uint8),
        np.full((480, 640, 3), 200, np.uint8),
        rng.integers(0, 256, (480, 640, 3), dtype=np.uint8),
        rng.normal(128, 40, (720, 1280, 3)).clip(0, 255).astype(np.uint8),
    ]
    for image in images:
        assert get_mtcnn().detect(image) == []


def test_mtcnn_rejects_non_rgb() -> None:
    with pytest.raises(ValueError, match="RGB uint8"):
        get_mtcnn().detect(np.zeros((100, 100), np.uint8))
    with pytest.raises(ValueError, match="min_face_size"):
        get_mtcnn().detect(np.zeros((100, 100, 3), np.uint8), min_face_size=8)


def test_nms_union_and_min() -> None:
    boxes = np.array([[0, 0, 10, 10], [1, 1, 11, 11], [2, 2, 6, 6], [50, 50, 60, 60]], float)
    scores = np.array([0.9, 0.8, 0.7, 0.95])
    assert nms(boxes, scores, 0.5).tolist() == [3, 0, 2]  # IoU(0,1)=0.68 suppressed; the small box overlaps 0.16
    assert nms(boxes, scores, 0.7, mode="min").tolist() == [3, 0]  # the small box lies inside box 0


# ---------------------------------------------------------------------------------------------- clamping


def test_clamp_box() -> None:
    assert clamp_box((10.4, 20.6, 50.5, 60.0), 100, 100) == (10, 21, 51, 60)
    assert clamp_box((-20.0, -5.0, 40.0, 130.0), 100, 100) == (0, 0, 40, 100)
    assert clamp_box((120.0, 10.0, 180.0, 50.0), 100, 100) is None  # entirely right of the frame
    assert clamp_box((10.0, 10.0, 10.2, 50.0), 100, 100) is None  # empty after rounding
    assert clamp_box((float("nan"), 0.0, 10.0, 10.0), 100, 100) is None


def test_face_cut_by_the_frame_edge_is_clamped_and_kept(
    photos: dict[str, np.ndarray], face_settings: Settings, tmp_path: Path
) -> None:
    # Obama's face cut by the top-left corner, next to Biden: the reference would have dropped both faces.
    cut = _fit(np.ascontiguousarray(photos["obama"][160:, 400:]), 480, 540)
    cut = np.ascontiguousarray(cut[:, (cut.sum(axis=(0, 2)) > 0)])  # remove the letterbox left of the cut
    biden = _fit(photos["biden"], 480, 540)
    frame = np.concatenate([cut, biden], axis=1)
    raw = [d for d in detect_faces(frame, face_settings.perception) if d.score > 0.9]
    assert any(d.box[0] < 0 and d.box[1] < 0 for d in raw), "test frame must yield a box leaving the frame"

    clusters = perceive_faces([(0.0, frame), (0.2, _jitter(frame, 1))], face_settings, tmp_path, clip_start_s=30.0)
    assert len(clusters) == 2
    edge = clusters[0].observations[0]  # first appearance, then x: the cut face is leftmost
    assert edge.bbox[0] == 0 and edge.bbox[1] == 0
    crop = Image.open(_uri_path(edge.crop_uri or ""))
    assert crop.size == (edge.bbox[2] - edge.bbox[0], edge.bbox[3] - edge.bbox[1])
    assert all(len(c.observations) == 2 for c in clusters)


# ---------------------------------------------------------------------------------------------- embeddings


@pytest.fixture(scope="session")
def dlib_vectors(photos: dict[str, np.ndarray], cfg: PerceptionConfig) -> dict[str, np.ndarray]:
    """One dlib vector per face: 5 Obama photos, Biden, Tom Hanks and the 6 people of t1 (left to right)."""
    embedder = get_face_embedder("dlib")
    out: dict[str, np.ndarray] = {}
    for name in ["obama", "obama2", "obama3", "obama_partial", "obama_partial2", "biden", "hanks"]:
        faces = _faces(photos[name], cfg)
        assert len(faces) == 1, name
        vectors, quality = embedder.embed(photos[name], faces)
        assert 0 < quality[0] <= 1
        out[name] = vectors[0]
    group = sorted(_faces(photos["t1"], cfg), key=lambda d: d.box[0])
    vectors, _ = embedder.embed(photos["t1"], group)
    out.update({f"t1_{i}": v for i, v in enumerate(vectors)})
    return out


def _person(name: str) -> str:
    return "obama" if name.startswith("obama") else name


def test_dlib_vectors_are_unit_128d(dlib_vectors: dict[str, np.ndarray]) -> None:
    embedder = get_face_embedder("dlib")
    assert isinstance(embedder, FaceEmbedder) and embedder.dim == 128
    assert get_face_embedder("dlib") is embedder  # cached per process
    for v in dlib_vectors.values():
        assert v.shape == (128,) and v.dtype == np.float32
        assert abs(float(np.linalg.norm(v)) - 1) < 1e-5


def test_dlib_same_person_closer_than_different(dlib_vectors: dict[str, np.ndarray]) -> None:
    same, different = [], []
    for a, b in itertools.combinations(sorted(dlib_vectors), 2):
        cos = float(dlib_vectors[a] @ dlib_vectors[b])
        (same if _person(a) == _person(b) else different).append(cos)
    print(  # the measured distribution, shown with `pytest -s`
        f"\ndlib cosine: same person n={len(same)} min={min(same):.3f} mean={np.mean(same):.3f} max={max(same):.3f}; "
        f"different n={len(different)} min={min(different):.3f} mean={np.mean(different):.3f} "
        f"max={max(different):.3f}"
    )
    assert len(same) == 10 and len(different) == 68
    assert min(same) > max(different)
    for threshold in (DLIB_CLUSTER_THRESHOLD, DLIB_IDENTITY_THRESHOLD):
        assert min(same) >= threshold > max(different)
    assert max(different) <= DLIB_MIN_SAFE_THRESHOLD
    # The ArcFace-scale thresholds of the reference would call every pair here the same person.
    assert min(different) > 0.6


def test_face_quality_prefers_sharp_large_faces(photos: dict[str, np.ndarray], cfg: PerceptionConfig) -> None:
    image = photos["obama"]
    face = _faces(image, cfg)[0]
    sharp = face_quality(image, face.box, face.score)
    blurred = np.asarray(Image.fromarray(image).filter(ImageFilter.GaussianBlur(8)))
    small = np.asarray(Image.fromarray(image).resize((image.shape[1] // 8, image.shape[0] // 8)))
    small_box = tuple(v / 8 for v in face.box)
    assert 0.8 < sharp <= 1
    assert face_quality(blurred, face.box, face.score) < 0.5 * sharp
    assert face_quality(small, small_box, face.score) < 0.6 * sharp  # ~30 px face
    assert face_quality(image, face.box, 0.5) == pytest.approx(0.5 * sharp / face.score, rel=1e-6)
    assert face_quality(image, (-50, -50, -10, -10), 1.0) == 0.0


# ---------------------------------------------------------------------------------------------- ONNX path


def test_onnx_embedder_missing_model_is_a_clear_config_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope" / "w600k_r50.onnx"
    with pytest.raises(ConfigError, match=r"does not exist.*face_embedder"):
        get_face_embedder(f"onnx:{missing}")
    with pytest.raises(ConfigError, match="unknown face_embedder"):
        get_face_embedder("arcface")
    with pytest.raises(ConfigError, match="unknown face_embedder"):
        get_face_embedder("onnx:")


def test_similarity_transform_recovers_a_known_transform() -> None:
    angle, scale, shift = np.deg2rad(23.0), 1.7, np.array([31.0, -12.5])
    rot = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    src = ARCFACE_TEMPLATE_112
    dst = src @ (scale * rot).T + shift
    matrix = similarity_transform(src, dst)
    np.testing.assert_allclose(matrix[:, :2], scale * rot, atol=1e-9)
    np.testing.assert_allclose(matrix[:, 2], shift, atol=1e-9)
    # A mirrored point set is fitted by a proper rotation (no reflection), so it cannot match exactly.
    mirrored = src * np.array([-1.0, 1.0])
    fitted = similarity_transform(src, mirrored)
    assert np.linalg.det(fitted[:, :2]) > 0
    with pytest.raises(ValueError):
        similarity_transform(np.zeros((5, 2)), ARCFACE_TEMPLATE_112)


def test_align_face_puts_landmarks_on_the_template() -> None:
    # Paint five dots where a rotated, scaled face would have its landmarks; alignment must bring them back.
    angle, scale, shift = np.deg2rad(-17.0), 2.3, np.array([140.0, 95.0])
    rot = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    landmarks = ARCFACE_TEMPLATE_112 @ (scale * rot).T + shift
    image = np.zeros((480, 640, 3), np.uint8)
    for x, y in landmarks:
        yy, xx = np.ogrid[:480, :640]
        image[(xx - x) ** 2 + (yy - y) ** 2 <= 16] = 255
    aligned = align_face(image, landmarks, 112)
    assert aligned.shape == (112, 112, 3)
    for x, y in ARCFACE_TEMPLATE_112:
        assert aligned[int(round(y)), int(round(x))].min() > 200
    assert aligned.mean() < 20  # and nothing else of the image is white
    big = align_face(image, landmarks, 224)
    for x, y in ARCFACE_TEMPLATE_112 * 2:
        assert big[int(round(y)), int(round(x))].min() > 200


def _onnx_model_bytes() -> bytes:
    """A two-node ONNX model (GlobalAveragePool + Flatten: (N,3,112,112) -> (N,3)), protobuf-encoded by hand.

    The onnx package is not installed; a hand-built model still exercises the real onnxruntime path end to end.
    """

    def varint(n: int) -> bytes:
        out = bytearray()
        while True:
            byte, n = n & 0x7F, n >> 7
            out.append(byte | (0x80 if n else 0))
            if not n:
                return bytes(out)

    def ln(field: int, payload: bytes) -> bytes:
        return varint(field << 3 | 2) + varint(len(payload)) + payload

    def num(field: int, value: int) -> bytes:
        return varint(field << 3) + varint(value)

    def s(field: int, text: str) -> bytes:
        return ln(field, text.encode())

    def value_info(name: str, dims: list[int | str]) -> bytes:
        shape = b"".join(ln(1, s(2, d) if isinstance(d, str) else num(1, d)) for d in dims)
        return s(1, name) + ln(2, ln(1, num(1, 1) + ln(2, shape)))  # TypeProto.tensor_type: FLOAT + shape

    nodes = ln(1, s(1, "data") + s(2, "pooled") + s(3, "gap") + s(4, "GlobalAveragePool")) + ln(
        1, s(1, "pooled") + s(2, "embedding") + s(3, "flat") + s(4, "Flatten")
    )
    graph = (
        nodes
        + s(2, "tiny")
        + ln(11, value_info("data", ["N", 3, 112, 112]))
        + ln(12, value_info("embedding", ["N", 3]))
    )
    return num(1, 8) + s(2, "m3graph-test") + ln(7, graph) + ln(8, num(2, 13))


def test_onnx_embedder_runs_a_model_on_aligned_crops(
    photos: dict[str, np.ndarray], cfg: PerceptionConfig, tmp_path: Path
) -> None:
    model = tmp_path / "tiny.onnx"
    model.write_bytes(_onnx_model_bytes())
    embedder = get_face_embedder(f"onnx:{model}", 2)
    assert isinstance(embedder, OnnxArcFaceEmbedder) and embedder.dim == 3
    image = photos["obama2"]
    faces = _faces(image, cfg)
    vectors, quality = embedder.embed(image, faces)
    crop = (align_face(image, faces[0].landmarks, 112).astype(np.float32) - 127.5) / 127.5
    expected = crop.mean(axis=(0, 1))
    np.testing.assert_allclose(vectors[0], expected / np.linalg.norm(expected), atol=1e-5)
    assert quality[0] == pytest.approx(face_quality(image, faces[0].box, faces[0].score))
    empty_vectors, empty_quality = embedder.embed(image, [])
    assert empty_vectors.shape == (0, 3) and empty_quality.shape == (0,)
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    with pytest.raises(ConfigError, match="cannot load ONNX face model"):
        OnnxArcFaceEmbedder(bad).dim  # noqa: B018


# ---------------------------------------------------------------------------------------------- clustering


def test_cluster_faces_cannot_link_and_no_chaining() -> None:
    e = np.eye(4)
    # Two identical faces in one frame stay apart; a third in another frame joins one of them.
    labels = cluster_faces(np.stack([e[0], e[0], e[0]]), [0, 0, 1], 0.9)
    assert labels[0] != labels[1] and labels[2] in (labels[0], labels[1])
    # A chain a~b~c with cos(a, c) low: average linkage must not put all three together.
    a = np.array([1.0, 0.0])
    b = np.array([np.cos(0.35), np.sin(0.35)])
    c = np.array([np.cos(0.7), np.sin(0.7)])
    labels = cluster_faces(np.stack([a, b, c]), [0, 1, 2], float(a @ b) - 1e-9)
    assert len(set(labels.tolist())) == 2
    assert cluster_faces(np.empty((0, 128)), [], 0.5).shape == (0,)


def _naive_clusters(v: np.ndarray, frames: list[int], threshold: float) -> list[tuple[int, ...]]:
    """Textbook average linkage with the cannot-link, recomputing every pair each step (slow, obviously right)."""
    sim = v @ v.T
    groups = [[i] for i in range(len(frames))]
    while True:
        best: tuple[float, int, int] | None = None
        for a, b in itertools.combinations(range(len(groups)), 2):
            if {frames[i] for i in groups[a]} & {frames[i] for i in groups[b]}:
                continue
            score = float(sim[np.ix_(groups[a], groups[b])].mean())
            if score >= threshold and (best is None or score > best[0]):
                best = (score, a, b)
        if best is None:
            return sorted(tuple(sorted(g)) for g in groups)
        _, a, b = best
        groups[a] += groups.pop(b)


def test_cluster_faces_matches_naive_average_linkage() -> None:
    rng = np.random.default_rng(1)
    for _ in range(30):
        n = int(rng.integers(2, 30))
        centres = rng.normal(size=(4, 8))
        v = centres[rng.integers(0, 4, n)] + rng.uniform(0.2, 1.2) * rng.normal(size=(n, 8))
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        frames = rng.integers(0, max(1, n // 2), n).tolist()
        threshold = float(rng.uniform(0.0, 0.9))
        groups: dict[int, list[int]] = {}
        for i, label in enumerate(cluster_faces(v, frames, threshold).tolist()):
            groups.setdefault(label, []).append(i)
        assert sorted(tuple(g) for g in groups.values()) == _naive_clusters(v, frames, threshold)


def _frames(photos: dict[str, np.ndarray], plan: list[str]) -> list[tuple[float, np.ndarray]]:
    """A 5-fps 'video' of 960x540 frames: 'o' = Obama alone, 'b' = Biden alone, 'ob' = the two side by side."""
    single = {"o": _fit(photos["obama"], 960, 540), "b": _fit(photos["biden"], 960, 540)}
    pair = np.concatenate([_fit(photos["obama"], 480, 540), _fit(photos["biden"], 480, 540)], axis=1)
    return [(k * 0.2, _jitter(pair if p == "ob" else single[p], k)) for k, p in enumerate(plan)]


def test_perceive_faces_two_people(photos: dict[str, np.ndarray], face_settings: Settings, tmp_path: Path) -> None:
    plan = ["o"] * 5 + ["b"] * 2 + ["ob"] * 3
    frames = _frames(photos, plan)
    clusters = perceive_faces(frames, face_settings, tmp_path / "crops", clip_start_s=60.0)
    assert [c.label for c in clusters] == [0, 1]
    obama, biden = clusters
    assert [o.frame_time_s for o in obama.observations] == [60.0, 60.2, 60.4, 60.6, 60.8, 61.4, 61.6, 61.8]
    assert [o.frame_time_s for o in biden.observations] == [61.0, 61.2, 61.4, 61.6, 61.8]
    # Side by side: Obama on the left half, Biden on the right, never in one cluster.
    assert all(o.bbox[2] <= 480 for o in obama.observations if o.frame_time_s >= 61.4)
    assert all(o.bbox[0] >= 480 for o in biden.observations if o.frame_time_s >= 61.4)
    for cluster in clusters:
        times = [o.frame_time_s for o in cluster.observations]
        assert len(times) == len(set(times))
        for o in cluster.observations:
            assert o.det_score >= 0.9 and RECOMMENDED_MIN_QUALITY <= o.quality <= 1
            assert len(o.embedding) == 128 and abs(np.linalg.norm(o.embedding) - 1) < 1e-5
            path = _uri_path(o.crop_uri or "")
            assert path.is_file() and path.parent == (tmp_path / "crops").resolve()
            assert Image.open(path).size == (o.bbox[2] - o.bbox[0], o.bbox[3] - o.bbox[1])
    # Same person across clusters is far apart, within a cluster close together.
    va = np.array([o.embedding for o in obama.observations])
    vb = np.array([o.embedding for o in biden.observations])
    assert (va @ vb.T).max() < DLIB_MIN_SAFE_THRESHOLD < (va @ va.T).min()

    # Idempotent: the same clip again writes the same files and returns the same clusters.
    files = sorted((tmp_path / "crops").iterdir())
    assert len(files) == 13
    stamps = [f.stat().st_mtime_ns for f in files]
    again = perceive_faces(frames, face_settings, tmp_path / "crops", clip_start_s=60.0)
    assert again == clusters
    assert sorted((tmp_path / "crops").iterdir()) == files
    assert [f.stat().st_mtime_ns for f in files] == stamps  # identical bytes are not rewritten


def test_track_faces_follows_overlapping_boxes() -> None:
    # Two people side by side drifting right; the left one is missed in frame 2 (a gap), a third appears later.
    frames = [0, 0, 1, 1, 2, 3, 3, 7]
    boxes = [(0, 0, 100, 100), (300, 0, 400, 100), (10, 0, 110, 100), (310, 0, 410, 100), (320, 0, 420, 100),
             (25, 0, 125, 100), (330, 0, 430, 100), (30, 0, 130, 100)]
    assert track_faces(frames, boxes) == [0, 1, 0, 1, 1, 0, 1, 2]  # frame 7 is past the gap: a new track
    # Greedy by IoU, one face per track per frame: two faces overlapping one track do not both join it.
    assert track_faces([0, 1, 1], [(0, 0, 100, 100), (5, 0, 105, 100), (40, 0, 140, 100)]) == [0, 0, 1]


def test_tracked_embedding_matches_embedding_every_face(
    photos: dict[str, np.ndarray], face_settings: Settings, tmp_path: Path
) -> None:
    """Embedding the 3 best faces per track (and detecting in 2 threads) finds the same people in the same frames
    as embedding every face in one thread, with far fewer embedder calls."""
    frames = _frames(photos, ["o"] * 8 + ["b"] * 4 + ["ob"] * 4)

    class Counting:
        def __init__(self, inner: FaceEmbedder) -> None:
            self.inner, self.faces, self.name = inner, 0, inner.name

        @property
        def dim(self) -> int:
            return self.inner.dim

        def embed(self, image: np.ndarray, dets: list) -> tuple[np.ndarray, np.ndarray]:
            self.faces += len(dets)
            return self.inner.embed(image, dets)

    def run(track: int, workers: int) -> tuple[list, int]:
        cfg = face_settings.perception.model_copy(update={"face_track_embed": track, "face_workers": workers})
        counting = Counting(get_face_embedder("dlib"))
        found = perceive_faces(frames, face_settings.model_copy(update={"perception": cfg}), tmp_path / str(track),
                               clip_start_s=0.0, embedder=counting)
        return [[(o.frame_time_s, o.bbox) for o in c.observations] for c in found], counting.faces

    full, full_calls = run(0, 1)
    tracked, tracked_calls = run(3, 2)
    assert tracked == full and len(full) == 2
    # Obama's track continues into Biden's shot (same place, a cut): the stretch picks see both, so it is embedded
    # face by face; the side-by-side tracks are not.
    assert full_calls == 20 and tracked_calls < full_calls


def test_perceive_faces_keeps_a_person_seen_in_two_frames(
    photos: dict[str, np.ndarray], face_settings: Settings, tmp_path: Path
) -> None:
    frames = _frames(photos, ["o", "o", "o", "b", "b"])
    clusters = perceive_faces(frames, face_settings, tmp_path, clip_start_s=0.0)
    assert [len(c.observations) for c in clusters] == [3, 2]  # HDBSCAN(min_cluster_size=20) would keep neither
    strict = face_settings.model_copy(
        update={"perception": face_settings.perception.model_copy(update={"face_min_cluster_frames": 3})}
    )
    assert [len(c.observations) for c in perceive_faces(frames, strict, tmp_path, clip_start_s=0.0)] == [3]


def test_perceive_faces_edge_cases(face_settings: Settings, tmp_path: Path) -> None:
    blank = np.zeros((240, 320, 3), np.uint8)
    assert perceive_faces([], face_settings, tmp_path, clip_start_s=0.0) == []
    assert perceive_faces([(0.0, blank), (0.2, blank)], face_settings, tmp_path, clip_start_s=0.0) == []
    with pytest.raises(InvalidInputError, match="RGB uint8"):
        perceive_faces([(0.0, blank[:, :, 0])], face_settings, tmp_path, clip_start_s=0.0)
    with pytest.raises(InvalidInputError, match="time"):
        perceive_faces([(-1.0, blank)], face_settings, tmp_path, clip_start_s=0.0)
    with pytest.raises(InvalidInputError, match="clip_start_s"):
        perceive_faces([(0.0, blank)], face_settings, tmp_path, clip_start_s=float("nan"))
    wrong_dim = face_settings.model_copy(
        update={"identity": face_settings.identity.model_copy(update={"face_dim": 512})}
    )
    with pytest.raises(ConfigError, match="face_dim"):
        perceive_faces([(0.0, blank)], wrong_dim, tmp_path, clip_start_s=0.0)
