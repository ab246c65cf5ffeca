"""What perception observes, as validated values: the contract between perception and the memory graph.

These types sit below both `m3graph.perception` (which produces them) and `m3graph.graphdb` (which resolves and
stores them), so perception never imports the database layer: a perception worker can run, and be tested, with no
driver installed. `m3graph.graphdb.types` re-exports them for callers that think of them as store input.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


def finite_vector(values: list[float]) -> list[float]:
    """Refuses vectors no similarity can be computed on (pydantic validator; the message names the problem)."""
    if not values:
        raise ValueError("embedding is empty")
    if not all(math.isfinite(v) for v in values):
        raise ValueError("embedding contains NaN or infinity")
    if math.fsum(v * v for v in values) == 0.0:
        raise ValueError("embedding is all zeros")
    return values


class FrozenModel(BaseModel):
    """Immutable, strict: an unknown field is a typo, not something to ignore."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class FaceObservation(FrozenModel):
    """One detected face in one frame; the crop is a file referenced by URI, never bytes in the graph."""

    frame_time_s: float = Field(ge=0)
    bbox: tuple[int, int, int, int]
    det_score: float = Field(ge=0, le=1)
    quality: float
    embedding: list[float]
    crop_uri: str | None = None

    _vector = field_validator("embedding")(finite_vector)


class UtteranceObservation(FrozenModel):
    start_s: float = Field(ge=0)
    end_s: float
    text: str = ""
    embedding: list[float]
    quality: float = 1.0  # e.g. segment duration or VAD confidence; ranks exemplars
    audio_uri: str | None = None

    _vector = field_validator("embedding")(finite_vector)

    @model_validator(mode="after")
    def _ordered(self) -> UtteranceObservation:
        if not self.end_s > self.start_s:
            raise ValueError(f"utterance end_s {self.end_s} must be after start_s {self.start_s}")
        return self


class FaceCluster(FrozenModel):
    """All observations of one person within one clip (a per-clip cluster label)."""

    label: int
    observations: list[FaceObservation] = Field(min_length=1)


class VoiceCluster(FrozenModel):
    label: int
    utterances: list[UtteranceObservation] = Field(min_length=1)
