"""Probing, exact cutting, audio, frames and bad-input errors on small synthetic files made with ffmpeg."""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

import pytest

from m3graph.ingest.live import watch_clips
from m3graph.ingest.video import (
    ClipWindow,
    InvalidVideoError,
    cut_clip,
    extract_audio,
    plan_clips,
    probe,
    sample_frames,
)
from m3graph.settings import Settings

S = Settings()


def _make(path: Path, seconds: float, audio: bool = True, size: str = "320x240") -> Path:
    cmd = ["ffmpeg", "-y", "-v", "error", "-f", "lavfi", "-i", f"testsrc=size={size}:rate=25:duration={seconds}"]
    if audio:
        cmd += ["-f", "lavfi", "-i", f"sine=frequency=440:duration={seconds}", "-c:a", "aac"]
    cmd += ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-shortest", str(path)]
    subprocess.run(cmd, check=True, capture_output=True, timeout=120)
    return path


@pytest.fixture(scope="module")
def video75(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _make(tmp_path_factory.mktemp("v") / "v75.mp4", 75)


def test_probe_reports_streams(video75: Path) -> None:
    info = probe(video75, S)
    assert abs(info.duration_s - 75) < 0.1 and info.width == 320 and info.height == 240
    assert info.has_audio and info.video_codec == "h264" and abs(info.fps - 25) < 0.01


def test_plan_clips_exact_windows() -> None:
    assert [(w.start_s, w.end_s) for w in plan_clips(75, 30)] == [(0, 30), (30, 60), (60, 75)]
    # A multiple of 30 gives no empty trailing clip (the reference's off-by-one).
    assert [(w.start_s, w.end_s) for w in plan_clips(60.0, 30)] == [(0, 30), (30, 60)]
    assert len(plan_clips(10, 30)) == 1
    with pytest.raises(InvalidVideoError, match="zero duration"):
        plan_clips(0, 30)


def test_cut_is_exact_and_idempotent(video75: Path, tmp_path: Path) -> None:
    out = tmp_path / "c1.mp4"
    cut_clip(video75, ClipWindow(1, 30, 60), out)
    assert abs(probe(out, S).duration_s - 30) < 0.1
    mtime = out.stat().st_mtime_ns
    cut_clip(video75, ClipWindow(1, 30, 60), out)
    assert out.stat().st_mtime_ns == mtime  # a valid clip is not redone
    last = tmp_path / "c2.mp4"
    cut_clip(video75, ClipWindow(2, 60, 75), last)
    assert abs(probe(last, S).duration_s - 15) < 0.1


def test_audio_and_frames(video75: Path, tmp_path: Path) -> None:
    clip = cut_clip(video75, ClipWindow(0, 0, 30), tmp_path / "c0.mp4")
    wav = extract_audio(clip, tmp_path / "c0.wav")
    assert wav is not None and wav.stat().st_size > 30 * 16000 * 2 * 0.95
    frames = sample_frames(clip, 5, S)
    assert 148 <= len(frames) <= 151 and frames[0][1].shape == (240, 320, 3)
    assert frames[10][0] == pytest.approx(2.0)
    silent = _make(tmp_path / "silent.mp4", 3, audio=False)
    assert not probe(silent, S).has_audio and extract_audio(silent, tmp_path / "s.wav") is None


def test_bad_inputs_are_named(tmp_path: Path, video75: Path) -> None:
    with pytest.raises(InvalidVideoError, match="no such file"):
        probe(tmp_path / "missing.mp4", S)
    with pytest.raises(InvalidVideoError, match="directory"):
        probe(tmp_path, S)
    text = tmp_path / "notes.mp4"
    text.write_text("not a video at all\n" * 100)
    with pytest.raises(InvalidVideoError, match="not a readable media file"):
        probe(text, S)
    wav = tmp_path / "tone.wav"
    subprocess.run(["ffmpeg", "-y", "-v", "error", "-f", "lavfi", "-i", "sine=duration=2", str(wav)], check=True)
    with pytest.raises(InvalidVideoError, match="no video stream"):
        probe(wav, S)
    truncated = tmp_path / "half.mp4"
    data = video75.read_bytes()
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(InvalidVideoError, match="corrupt or truncated|not a readable"):
        probe(truncated, S)
    empty = tmp_path / "empty.mp4"
    empty.write_bytes(b"")
    with pytest.raises(InvalidVideoError, match="empty"):
        probe(empty, S)
    big = _make(tmp_path / "big.mp4", 1, audio=False, size="640x480")
    with pytest.raises(InvalidVideoError, match="absurd resolution"):
        probe(big, Settings(perception={"max_resolution_px": 100 * 100}))


def test_live_watcher_waits_for_files_to_settle(tmp_path: Path) -> None:
    src = _make(tmp_path / "src.mp4", 2)
    live = tmp_path / "live"
    live.mkdir()
    stop = threading.Event()
    seen: list[str] = []

    def consume() -> None:
        for path in watch_clips(live, poll_s=0.1, stop_event=stop, settle_s=0.3):
            seen.append(path.name)

    thread = threading.Thread(target=consume)
    thread.start()
    data = src.read_bytes()
    with (live / "seg_001.mp4").open("wb") as f:  # written in chunks: must not be taken half-written
        for i in range(0, len(data), len(data) // 4 + 1):
            f.write(data[i:i + len(data) // 4 + 1])
            f.flush()
            time.sleep(0.15)
            assert seen == []
    (live / "seg_000.part.mp4").write_bytes(data)  # partial names are ignored
    time.sleep(1.0)
    (live / "seg_002.mp4").write_bytes(data)
    time.sleep(1.0)
    stop.set()
    thread.join(5)
    assert seen == ["seg_001.mp4", "seg_002.mp4"]
