"""`m3graph reembed`: move a graph to a new embedding model (resumable; see m3graph/graphdb/reembed.py).

The models are loaded here, before the database is touched, and handed to the store layer as plain objects:
a text embedder, or for faces and voices a `FileEmbedder` that turns a stored face crop (JPEG) or voice snippet
(WAV) back into the vector perception would have produced from it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click
import numpy as np

from m3graph.settings import Settings

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
                 embedder: SpeakerEmbedder | None = None) -> None:
        from m3graph.perception.speaker import speaker_embedder
        from m3graph.perception.vad import SAMPLE_RATE

        self.model = name
        self._embedder = embedder or speaker_embedder(name, threads)
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


def _configure(settings: Settings, kind: str, model: str | None) -> tuple[Settings, object]:
    """Settings naming the new model and its dimension, and the loaded model (refuses before the graph is touched)."""
    if kind == "text":
        from m3graph.embedding import model_dimension, text_embedder

        config = settings.text_model.model_copy(update={"model": model}) if model else settings.text_model
        dim = model_dimension(config)  # refuses (ConfigError) before anything is touched
        settings = settings.model_copy(update={"text_model": config,
                                               "memory": settings.memory.model_copy(update={"text_dim": dim})})
        return settings, text_embedder(settings)
    cfg = settings.perception
    files: FaceFileEmbedder | VoiceFileEmbedder
    if kind == "face":
        files = FaceFileEmbedder(model or cfg.face_embedder, cfg.threads)
        perception = cfg.model_copy(update={"face_embedder": files.model})
        identity = settings.identity.model_copy(update={"face_dim": files.dim})
    else:
        files = VoiceFileEmbedder(model or cfg.speaker_embedder, cfg.threads, cfg.voice_turns)
        perception = cfg.model_copy(update={"speaker_embedder": files.model})
        identity = settings.identity.model_copy(update={"voice_dim": files.dim})
    return settings.model_copy(update={"perception": perception, "identity": identity}), files


@click.command("reembed")
@click.option("--kind", type=click.Choice(["text", "face", "voice"]), default="text", show_default=True,
              help="Which vectors to move: memory text, face entities or voice entities.")
@click.option("--model", default=None,
              help="text: 'packaged' or a local sentence-transformers directory; face: 'dlib' or 'onnx:PATH'; "
                   "voice: a speaker embedder name (default: the configured one).")
@click.option("--batch-size", type=click.IntRange(min=1), default=None,
              help="Nodes per transaction (default: 256 memories, 32 face/voice entities).")
@click.option("--drop-missing", is_flag=True,
              help="face/voice: re-embed from the observation files that remain instead of refusing when some are "
                   "gone (an entity with none left can no longer be matched; both are counted).")
@click.pass_obj
def reembed(settings: Settings, kind: str, model: str | None, batch_size: int | None, drop_missing: bool) -> None:
    """Re-embed every memory (or face / voice entity) with a model and re-create its vector index at its dimension."""
    from m3graph.graphdb.executor import Executor
    from m3graph.graphdb.reembed import reembed as run_reembed
    from m3graph.graphdb.server import ensure_server
    from m3graph.schema.migrations import apply_migrations

    batch = batch_size or (256 if kind == "text" else 32)
    settings, embedder = _configure(settings, kind, model)
    what = "memories" if kind == "text" else f"{kind} entities"
    ensure_server(settings)
    with Executor.connect(settings) as ex:  # no migrations yet: the old index's dimension would be refused

        def progress(done: int, total: int) -> None:
            if done % (batch * 10) < batch or done == total:
                click.echo(f"  {done}/{total} {what}")

        summary = run_reembed(ex, settings, kind, embedder, batch_size=batch,  # type: ignore[arg-type]
                              progress=progress, missing="drop" if drop_missing else "refuse")
        apply_migrations(ex, settings)
    how = "re-created" if summary.index_recreated else "kept"
    click.echo(f"{summary.embedded} of {summary.total} {what} embedded by {summary.model} ({summary.dim}-d); "
               f"vector index {how}")
    if kind != "text":
        click.echo(f"{summary.observations} observations re-embedded from their files")
        if summary.dropped_observations or summary.unmatchable:
            click.echo(f"{summary.dropped_observations} observations had no file and were left without a vector; "
                       f"{len(summary.unmatchable)} entities have no vector left and can no longer be matched"
                       + (f": {', '.join(f'{kind}_{i}' for i in summary.unmatchable[:20])}"
                          if summary.unmatchable else ""))
    if model:
        env = {"text": f"M3GRAPH_TEXT_MODEL__MODEL={model} M3GRAPH_MEMORY__TEXT_DIM={summary.dim}",
               "face": f"M3GRAPH_PERCEPTION__FACE_EMBEDDER={model} M3GRAPH_IDENTITY__FACE_DIM={summary.dim}",
               "voice": f"M3GRAPH_PERCEPTION__SPEAKER_EMBEDDER={model} M3GRAPH_IDENTITY__VOICE_DIM={summary.dim}"}
        click.echo(f"use it: {env[kind]} (or the same in m3graph.toml)")
