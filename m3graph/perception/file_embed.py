"""Stored perception files back to vectors: face crops and voice snippets re-embedded for `m3graph reembed`.

Perception writes a crop per face observation and a snippet per utterance; moving a graph to another face or
speaker model re-embeds those files exactly as perception would have embedded the original frame or turn. The
store layer (m3graph/graphdb/reembed.py) only sees the `FileEmbedder` shape (`model`, `dim`, `embed_files`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from m3graph.perception.face_embed import FaceEmbedder
    from m3graph.perception.mtcnn import FaceDetection
    from m3graph.perception.speaker import SpeakerEmbedder

# A crop is the face's clamped box and nothing around it; the face embedder looks a little outside the box
# (dlib's landmarks and chip, ArcFace's alignment), so the crop is embedded inside a replicated border.
CROP_PAD = 0.5


class FaceFileEmbedder:
    """Face crops (JPEG files written by perception) -> unit vectors of the configured face embedder."""

    def __init__(self, spec: str, threads: int = 2, embedder: FaceEmbedder | None = None) -> None:
        from m3graph.perception.face_embed import get_face_embedder

        self.model = spec
        self._embedder = embedder or get_face_embedder(spec, threads)
        self.dim = int(self._embedder.dim)
        probe = np.full((96, 96, 3), 128, np.uint8)
        self._embedder.embed(probe, [self._detection(probe, (0, 0, 96, 96))])  # loads the model now

    @staticmethod
    def _detection(image: np.ndarray, box: tuple[int, int, int, int]) -> FaceDetection:
        from m3graph.perception.face_embed import ARCFACE_TEMPLATE_112
        from m3graph.perception.mtcnn import FaceDetection

        x1, y1, x2, y2 = box
        # The landmarks only matter to the ONNX (ArcFace) embedder: the crop was cut around the detection, so the
        # standard template scaled to the box is where the face's landmarks are (dlib finds its own).
        marks = ARCFACE_TEMPLATE_112 / 112.0 * np.array([x2 - x1, y2 - y1]) + np.array([x1, y1])
        return FaceDetection(box=(float(x1), float(y1), float(x2), float(y2)), score=1.0,
                             landmarks=marks.astype(np.float32))

    def embed_files(self, paths: Sequence[Path]) -> np.ndarray:
        import cv2

        from m3graph.errors import InvalidInputError

        rows = []
        for path in paths:
            bgr = cv2.imread(str(path), cv2.IMREAD_COLOR)
            if bgr is None or bgr.size == 0:
                raise InvalidInputError(f"face crop {path} is not a readable image")
            h, w = bgr.shape[:2]
            py, px = int(round(h * CROP_PAD)), int(round(w * CROP_PAD))
            padded = cv2.copyMakeBorder(bgr, py, py, px, px, cv2.BORDER_REPLICATE)
            rgb = np.ascontiguousarray(cv2.cvtColor(padded, cv2.COLOR_BGR2RGB))
            vectors, _ = self._embedder.embed(rgb, [self._detection(rgb, (px, py, px + w, py + h))])
            rows.append(vectors[0])
        return np.asarray(rows, dtype=np.float64).reshape(len(paths), self.dim)


class VoiceFileEmbedder:
    """Voice snippets (WAV files written by perception) -> unit vectors of the configured speaker embedder, pooled
    over the turn as perception pools them (`perception.voice_turns`)."""

    def __init__(self, name: str, threads: int = 2, turns: str = "pooled",
                 embedder: SpeakerEmbedder | None = None, model_dir: Path | None = None) -> None:
        from m3graph.perception.speaker import speaker_embedder
        from m3graph.perception.vad import SAMPLE_RATE

        self.model = name
        self._embedder = embedder or (speaker_embedder(name, threads, model_dir) if model_dir
                                      else speaker_embedder(name, threads))
        self.dim = int(self._embedder.dim)
        self._turns = turns
        noise = np.random.default_rng(0).standard_normal(2 * SAMPLE_RATE).astype(np.float32) * 0.01
        self._embedder.embed(noise, SAMPLE_RATE)  # loads the model now

    def embed_files(self, paths: Sequence[Path]) -> np.ndarray:
        from m3graph.perception.vad import SAMPLE_RATE, load_audio
        from m3graph.perception.voices import pooled_embedding

        rows = []
        for path in paths:
            wave = load_audio(Path(path))
            rows.append(pooled_embedding(self._embedder, wave) if self._turns == "pooled"
                        else self._embedder.embed(wave, SAMPLE_RATE))
        return np.asarray(rows, dtype=np.float64).reshape(len(paths), self.dim)
