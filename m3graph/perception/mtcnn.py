"""MTCNN face detector (Zhang et al. 2016), re-implemented here on plain torch + numpy + OpenCV.

Why our own code: the only offline face-detector weights that ship in a registry wheel are the three MTCNN
state dicts inside `facenet-pytorch` (``facenet_pytorch/data/{pnet,rnet,onet}.pt``), but facenet-pytorch's own
detector imports torchvision, and every torchvision wheel on PyPI is a CUDA build that fails to import next to
the CPU torch used here. So we define the three networks with the parameter names of those state dicts, load the
files straight from the installed package directory (without importing the package, whose ``__init__`` would
pull torchvision in), and implement the cascade ourselves:

1. P-Net, fully convolutional, on an image pyramid (scale step ``factor``; the largest scale maps the smallest
   wanted face to the net's 12-px window). Each output cell is a 12x12 window at stride 2; windows above
   ``thresholds[0]`` are kept, NMS'd per scale (IoU 0.5) and then across scales (IoU 0.7), refined by the
   regression outputs and squared.
2. R-Net on 24x24 crops of those candidates: re-score (``thresholds[1]``), NMS 0.7, refine, square.
3. O-Net on 48x48 crops: re-score (``thresholds[2]``), five landmarks (eye centres, nose tip, mouth corners,
   in the order image-left eye, image-right eye, nose, image-left mouth corner, image-right mouth corner),
   refine, and a final NMS on intersection-over-*minimum* (0.7) that removes boxes nested inside others.

Coordinates are continuous pixels: a box is ``[x1, y1, x2, y2)`` in the input image, width ``x2 - x1``. Boxes are
NOT clamped to the image (a face cut by the frame edge gets a box that leaves it); callers clamp, because the
unclamped box is what the landmark/alignment models expect.

The networks were trained on images normalised as ``(pixel - 127.5) / 128`` in RGB order; crops that leave the
image are padded with black (pixel 0) before normalisation, as in the original cascade.

Checked against facenet-pytorch's own detector (run once, outside the project, with a torchvision stub) on the
test photos at <= 1024 px: the same faces with scores >= 0.9 (1 per Obama/Biden photo, 6 in the group photo),
boxes within 1-9 px (faces of 85-290 px), landmarks within 1.3-5 px, and ~10% less time per image.
"""

from __future__ import annotations

import importlib.util
import math
import threading
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
import torch
from torch import nn

from m3graph.errors import ConfigError

__all__ = ["FaceDetection", "MTCNN", "get_mtcnn", "mtcnn_weights_dir", "nms"]

_PIXEL_MEAN = 127.5
_PIXEL_SCALE = 1.0 / 128.0
_PNET_CELL = 12
_PNET_STRIDE = 2


@dataclass(frozen=True)
class FaceDetection:
    """One detected face: unclamped box, O-Net probability and five landmarks (x, y), all in input pixels."""

    box: tuple[float, float, float, float]
    score: float
    landmarks: np.ndarray  # (5, 2) float32: left eye, right eye, nose, left mouth corner, right mouth corner

    @property
    def width(self) -> float:
        return self.box[2] - self.box[0]

    @property
    def height(self) -> float:
        return self.box[3] - self.box[1]


# ---------------------------------------------------------------------------------------------- networks
# Attribute names must match the keys of the shipped state dicts (conv1, prelu1, ..., dense6_3).


class _PNet(nn.Module):
    """Proposal net: 12x12 receptive field, stride 2; outputs face probability and box offsets per cell."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 10, 3)
        self.prelu1 = nn.PReLU(10)
        self.pool1 = nn.MaxPool2d(2, 2, ceil_mode=True)
        self.conv2 = nn.Conv2d(10, 16, 3)
        self.prelu2 = nn.PReLU(16)
        self.conv3 = nn.Conv2d(16, 32, 3)
        self.prelu3 = nn.PReLU(32)
        self.conv4_1 = nn.Conv2d(32, 2, 1)
        self.conv4_2 = nn.Conv2d(32, 4, 1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = self.pool1(self.prelu1(self.conv1(x)))
        x = self.prelu3(self.conv3(self.prelu2(self.conv2(x))))
        prob = torch.softmax(self.conv4_1(x), dim=1)[:, 1]
        return prob, self.conv4_2(x)


def _flatten_transposed(x: torch.Tensor) -> torch.Tensor:
    """Flatten conv features in the order the dense layers were trained on: (W, H, C), channel fastest.

    The weights descend from the original Caffe/MATLAB models (column-major images) by way of a channels-last
    TensorFlow port; the convolutions were converted to torch layout but the dense layers were not, so the
    features must be flattened width-major, channels-last. Any other order gives near-random R/O-Net scores
    (checked on face and non-face crops of obama.jpg).
    """
    return x.permute(0, 3, 2, 1).contiguous().flatten(1)


class _RNet(nn.Module):
    """Refinement net on 24x24 crops."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 28, 3)
        self.prelu1 = nn.PReLU(28)
        self.pool1 = nn.MaxPool2d(3, 2, ceil_mode=True)
        self.conv2 = nn.Conv2d(28, 48, 3)
        self.prelu2 = nn.PReLU(48)
        self.pool2 = nn.MaxPool2d(3, 2, ceil_mode=True)
        self.conv3 = nn.Conv2d(48, 64, 2)
        self.prelu3 = nn.PReLU(64)
        self.dense4 = nn.Linear(576, 128)
        self.prelu4 = nn.PReLU(128)
        self.dense5_1 = nn.Linear(128, 2)
        self.dense5_2 = nn.Linear(128, 4)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = self.pool1(self.prelu1(self.conv1(x)))
        x = self.pool2(self.prelu2(self.conv2(x)))
        x = self.prelu3(self.conv3(x))
        x = self.prelu4(self.dense4(_flatten_transposed(x)))
        return torch.softmax(self.dense5_1(x), dim=1)[:, 1], self.dense5_2(x)


class _ONet(nn.Module):
    """Output net on 48x48 crops: score, box offsets and 5 landmarks (5 x's then 5 y's, relative to the crop)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, 3)
        self.prelu1 = nn.PReLU(32)
        self.pool1 = nn.MaxPool2d(3, 2, ceil_mode=True)
        self.conv2 = nn.Conv2d(32, 64, 3)
        self.prelu2 = nn.PReLU(64)
        self.pool2 = nn.MaxPool2d(3, 2, ceil_mode=True)
        self.conv3 = nn.Conv2d(64, 64, 3)
        self.prelu3 = nn.PReLU(64)
        self.pool3 = nn.MaxPool2d(2, 2, ceil_mode=True)
        self.conv4 = nn.Conv2d(64, 128, 2)
        self.prelu4 = nn.PReLU(128)
        self.dense5 = nn.Linear(1152, 256)
        self.prelu5 = nn.PReLU(256)
        self.dense6_1 = nn.Linear(256, 2)
        self.dense6_2 = nn.Linear(256, 4)
        self.dense6_3 = nn.Linear(256, 10)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        x = self.pool1(self.prelu1(self.conv1(x)))
        x = self.pool2(self.prelu2(self.conv2(x)))
        x = self.pool3(self.prelu3(self.conv3(x)))
        x = self.prelu4(self.conv4(x))
        x = self.prelu5(self.dense5(_flatten_transposed(x)))
        return torch.softmax(self.dense6_1(x), dim=1)[:, 1], self.dense6_2(x), self.dense6_3(x)


# ---------------------------------------------------------------------------------------------- box helpers


def nms(boxes: np.ndarray, scores: np.ndarray, threshold: float, mode: str = "union") -> np.ndarray:
    """Greedy non-maximum suppression; returns kept indices, best score first.

    ``mode="union"`` is IoU; ``mode="min"`` divides the overlap by the smaller area, which also suppresses a box
    lying inside a larger one (O-Net's last step uses it). Ties keep the lower index, so results are stable.
    """
    if len(boxes) == 0:
        return np.empty(0, dtype=np.int64)
    x1, y1, x2, y2 = (boxes[:, i].astype(np.float64) for i in range(4))
    areas = np.maximum(x2 - x1, 0.0) * np.maximum(y2 - y1, 0.0)
    order = np.argsort(-scores, kind="stable")
    keep: list[int] = []
    while order.size:
        i = int(order[0])
        keep.append(i)
        rest = order[1:]
        iw = np.maximum(np.minimum(x2[i], x2[rest]) - np.maximum(x1[i], x1[rest]), 0.0)
        ih = np.maximum(np.minimum(y2[i], y2[rest]) - np.maximum(y1[i], y1[rest]), 0.0)
        inter = iw * ih
        denom = np.minimum(areas[i], areas[rest]) if mode == "min" else areas[i] + areas[rest] - inter
        overlap = np.divide(inter, denom, out=np.zeros_like(inter), where=denom > 0)
        order = rest[overlap <= threshold]
    return np.asarray(keep, dtype=np.int64)


def _regress(boxes: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Apply the nets' box regression: each edge moves by its offset times the box width/height."""
    w = (boxes[:, 2] - boxes[:, 0])[:, None]
    h = (boxes[:, 3] - boxes[:, 1])[:, None]
    return boxes[:, :4] + offsets * np.hstack([w, h, w, h])


def _square(boxes: np.ndarray) -> np.ndarray:
    """Grow each box to a square around its centre: the refinement nets take square crops."""
    w = boxes[:, 2] - boxes[:, 0]
    h = boxes[:, 3] - boxes[:, 1]
    side = np.maximum(w, h)
    cx = boxes[:, 0] + w / 2
    cy = boxes[:, 1] + h / 2
    return np.stack([cx - side / 2, cy - side / 2, cx + side / 2, cy + side / 2], axis=1)


def _crops(image: np.ndarray, boxes: np.ndarray, size: int) -> torch.Tensor:
    """Cut each (rounded) box out of the image, black-padding what lies outside, resized to size x size."""
    h, w = image.shape[:2]
    out = np.empty((len(boxes), size, size, 3), dtype=np.uint8)
    for k, (bx1, by1, bx2, by2) in enumerate(np.rint(boxes[:, :4]).astype(np.int64)):
        bw, bh = max(int(bx2 - bx1), 1), max(int(by2 - by1), 1)
        patch = np.zeros((bh, bw, 3), dtype=np.uint8)
        sx1, sy1 = max(int(bx1), 0), max(int(by1), 0)
        sx2, sy2 = min(int(bx1) + bw, w), min(int(by1) + bh, h)
        if sx2 > sx1 and sy2 > sy1:
            patch[sy1 - by1 : sy2 - by1, sx1 - bx1 : sx2 - bx1] = image[sy1:sy2, sx1:sx2]
        out[k] = cv2.resize(patch, (size, size), interpolation=cv2.INTER_AREA)
    return _to_input(out)


def _to_input(batch_hwc: np.ndarray) -> torch.Tensor:
    """uint8 NHWC RGB -> normalised float NCHW (done in numpy: a strided torch cast of a big frame is slower)."""
    x = (batch_hwc.astype(np.float32) - np.float32(_PIXEL_MEAN)) * np.float32(_PIXEL_SCALE)
    return torch.from_numpy(np.ascontiguousarray(x.transpose(0, 3, 1, 2)))


# ---------------------------------------------------------------------------------------------- detector


def mtcnn_weights_dir() -> Path:
    """The ``data`` folder of the installed facenet-pytorch, found without importing the package.

    ``find_spec`` on a top-level package only locates it; importing it would run its ``__init__``, which imports
    torchvision (absent here, and broken with a CPU torch when present).
    """
    spec = importlib.util.find_spec("facenet_pytorch")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(
            "the MTCNN face detector loads its weights from facenet-pytorch; install it without its pinned "
            "dependencies: pip install --no-deps facenet-pytorch==2.6.0"
        )
    for location in spec.submodule_search_locations:
        data = Path(location) / "data"
        if all((data / f"{name}.pt").is_file() for name in ("pnet", "rnet", "onet")):
            return data
    raise ConfigError(f"facenet-pytorch is installed but ships no pnet/rnet/onet.pt under {spec.origin}")


class MTCNN:
    """The three-stage cascade. Thread-safe for concurrent ``detect`` calls (inference only, no state)."""

    def __init__(
        self,
        weights_dir: Path | None = None,
        thresholds: tuple[float, float, float] = (0.6, 0.7, 0.7),
        factor: float = 0.709,
    ) -> None:
        if not 0.0 < factor < 1.0:
            raise ValueError(f"pyramid factor must be in (0, 1), got {factor}")
        self.thresholds = thresholds
        self.factor = factor
        data = weights_dir or mtcnn_weights_dir()
        self.pnet, self.rnet, self.onet = _PNet(), _RNet(), _ONet()
        for net, name in ((self.pnet, "pnet"), (self.rnet, "rnet"), (self.onet, "onet")):
            state = torch.load(data / f"{name}.pt", map_location="cpu", weights_only=True)
            net.load_state_dict(state)
            net.eval()
            for p in net.parameters():
                p.requires_grad_(False)

    def scales(self, height: int, width: int, min_face_size: float = 20.0) -> list[float]:
        """Pyramid scales: the first maps a min_face_size face to 12 px, then x factor while the image >= 12 px.

        The first (largest) scale dominates the cost, so a larger min_face_size is the main speed knob.
        """
        if min_face_size < _PNET_CELL:
            raise ValueError(f"min_face_size must be >= {_PNET_CELL} px (the P-Net window), got {min_face_size}")
        scale = _PNET_CELL / min_face_size
        side = min(height, width) * scale
        out: list[float] = []
        while side >= _PNET_CELL:
            out.append(scale)
            scale *= self.factor
            side *= self.factor
        return out

    @torch.inference_mode()
    def detect(self, image_rgb: np.ndarray, min_face_size: float = 20.0) -> list[FaceDetection]:
        """All faces of at least ~min_face_size px in one RGB uint8 image (H, W, 3), best score first."""
        if image_rgb.ndim != 3 or image_rgb.shape[2] != 3 or image_rgb.dtype != np.uint8:
            raise ValueError(f"expected an RGB uint8 image (H, W, 3), got {image_rgb.dtype} {image_rgb.shape}")
        image = np.ascontiguousarray(image_rgb)
        boxes = self._stage1(image, min_face_size)
        if len(boxes):
            boxes = self._stage2(image, boxes)
        if not len(boxes):
            return []
        return self._stage3(image, boxes)

    def _stage1(self, image: np.ndarray, min_face_size: float) -> np.ndarray:
        h, w = image.shape[:2]
        found: list[np.ndarray] = []
        for scale in self.scales(h, w, min_face_size):
            sh, sw = math.ceil(h * scale), math.ceil(w * scale)
            scaled = cv2.resize(image, (sw, sh), interpolation=cv2.INTER_AREA)
            prob, reg = self.pnet(_to_input(scaled[None]))
            prob_np, reg_np = prob[0].numpy(), reg[0].numpy()
            rows, cols = np.nonzero(prob_np >= self.thresholds[0])
            if rows.size == 0:
                continue
            x1 = cols * _PNET_STRIDE / scale
            y1 = rows * _PNET_STRIDE / scale
            cell = _PNET_CELL / scale
            cand = np.column_stack([x1, y1, x1 + cell, y1 + cell, prob_np[rows, cols], reg_np[:, rows, cols].T]).astype(
                np.float64
            )
            found.append(cand[nms(cand[:, :4], cand[:, 4], 0.5)])
        if not found:
            return np.empty((0, 5))
        cand = np.concatenate(found)
        cand = cand[nms(cand[:, :4], cand[:, 4], 0.7)]
        return np.column_stack([_square(_regress(cand[:, :4], cand[:, 5:9])), cand[:, 4]])

    def _stage2(self, image: np.ndarray, boxes: np.ndarray) -> np.ndarray:
        prob, reg = self.rnet(_crops(image, boxes, 24))
        score, offsets = prob.numpy(), reg.numpy()
        ok = score > self.thresholds[1]
        boxes, score, offsets = boxes[ok], score[ok], offsets[ok]
        keep = nms(boxes, score, 0.7)
        boxes, score, offsets = boxes[keep], score[keep], offsets[keep]
        return np.column_stack([_square(_regress(boxes, offsets)), score])

    def _stage3(self, image: np.ndarray, boxes: np.ndarray) -> list[FaceDetection]:
        prob, reg, marks = self.onet(_crops(image, boxes, 48))
        score, offsets, marks_np = prob.numpy(), reg.numpy(), marks.numpy()
        ok = score > self.thresholds[2]
        boxes, score, offsets, marks_np = boxes[ok], score[ok], offsets[ok], marks_np[ok]
        if not len(boxes):
            return []
        w = (boxes[:, 2] - boxes[:, 0])[:, None]
        h = (boxes[:, 3] - boxes[:, 1])[:, None]
        lx = boxes[:, 0:1] + w * marks_np[:, 0:5]
        ly = boxes[:, 1:2] + h * marks_np[:, 5:10]
        refined = _regress(boxes, offsets)
        keep = nms(refined, score, 0.7, mode="min")
        return [
            FaceDetection(
                box=(float(refined[i, 0]), float(refined[i, 1]), float(refined[i, 2]), float(refined[i, 3])),
                score=float(score[i]),
                landmarks=np.stack([lx[i], ly[i]], axis=1).astype(np.float32),
            )
            for i in keep
        ]


_CACHE: dict[tuple[tuple[float, float, float], float], MTCNN] = {}
_CACHE_LOCK = threading.Lock()


def get_mtcnn(thresholds: tuple[float, float, float] = (0.6, 0.7, 0.7), factor: float = 0.709) -> MTCNN:
    """A process-wide detector per parameter set: the weights (2 MB) load once, on first use, never at import."""
    key = ((float(thresholds[0]), float(thresholds[1]), float(thresholds[2])), float(factor))
    with _CACHE_LOCK:
        det = _CACHE.get(key)
        if det is None:
            det = MTCNN(thresholds=thresholds, factor=factor)
            _CACHE[key] = det
        return det
