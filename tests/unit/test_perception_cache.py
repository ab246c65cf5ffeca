"""A clip's cached perception result is reused only when its vectors have the configured width.

Why: the speaker embedder's default changed (Resemblyzer 256-d -> CAM++ 192-d). A video ingested before the change
keeps `clip_N_voices.json` with the old vectors; reusing it would feed another model's vectors to the new index.
No model runs here: the clip has no audio file, so "perceiving again" gives no voices, which is what shows the
stale cache was not used."""

from __future__ import annotations

from pathlib import Path

from m3graph.ingest.pipeline import _VOICES, ClipWork, VideoPlan, Window, voices_stage
from m3graph.observations import UtteranceObservation, VoiceCluster
from m3graph.settings import Settings


def _cache(settings: Settings, plan: VideoPlan, dim: int) -> Path:
    work = ClipWork(settings, plan.source_id, 0)
    work.voices.parent.mkdir(parents=True, exist_ok=True)
    vector = [1.0] + [0.0] * (dim - 1)
    cluster = VoiceCluster(label=0, utterances=[UtteranceObservation(start_s=1.0, end_s=2.0, embedding=vector)])
    work.voices.write_bytes(_VOICES.dump_json([cluster]))
    return work.voices


def test_cached_voices_of_another_width_are_perceived_again(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    assert settings.identity.voice_dim == 192  # CAM++, the default
    plan = VideoPlan("v", [Window(0, 0.0, 30.0, "/dev/null", 0.0)])
    path = _cache(settings, plan, 256)  # written under Resemblyzer
    assert voices_stage(settings, plan, 0) == []  # no audio: nothing heard, the old vectors are not returned
    assert _VOICES.validate_json(path.read_bytes()) == []  # and the cache now holds the new result


def test_cached_voices_of_the_configured_width_are_reused(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    plan = VideoPlan("v", [Window(0, 0.0, 30.0, "/dev/null", 0.0)])
    _cache(settings, plan, settings.identity.voice_dim)
    (cluster,) = voices_stage(settings, plan, 0)
    assert len(cluster.utterances[0].embedding) == settings.identity.voice_dim
