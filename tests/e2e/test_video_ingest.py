"""Probing, exact cutting, audio, frames, bad-input errors and the live watcher, on small synthetic ffmpeg files.

The sources have sparse keyframes (every 11 s: 0, 11, 22, 33, ...) on purpose. A stream-copy cut like the
reference's starts at the keyframe before the window (a copy of [30, 60) here carries 950 packets from 22 s on,
hidden behind an MP4 edit list that not every reader honours); the checks below show that a clip holds exactly
its window's frames and starts with the frame at the window start.
"""

from __future__ import annotations

import subprocess
import threading
import time
import wave
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from m3graph.errors import InvalidInputError
from m3graph.ingest.live import watch_clips
from m3graph.ingest.video import (
    ClipWindow,
    InvalidVideoError,
    check_resolution,
    cut_clip,
    extract_audio,
    plan_clips,
    probe,
    sample_frames,
)
from m3graph.settings import PerceptionConfig, Settings
from tests.helpers.media import make_video

S = Settings()
FRAME = 1 / 25  # the synthetic sources run at 25 fps


def _durations(path: Path) -> tuple[float, float]:
    """(container duration, video stream duration) as ffprobe reports them."""
    out = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
                          "stream=duration:format=duration", "-of", "default=nw=1:nk=1", str(path)],
                         check=True, capture_output=True, text=True, timeout=60).stdout.split()
    return float(out[1]), float(out[0])


def _video_packets(path: Path) -> int:
    out = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-count_packets", "-show_entries",
                          "stream=nb_read_packets", "-of", "csv=p=0", str(path)],
                         check=True, capture_output=True, text=True, timeout=60).stdout
    return int(out.strip())


@pytest.fixture(scope="module")
def media_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("video")


@pytest.fixture(scope="module")
def video75(media_dir: Path) -> Path:
    return make_video(media_dir / "v75.mp4", 75)


@pytest.fixture(scope="module")
def clips75(video75: Path, media_dir: Path) -> list[Path]:
    return [cut_clip(video75, w, media_dir / f"clip_{w.index}.mp4") for w in plan_clips(75, 30)]


# ---------------------------------------------------------------------------------------------- probe


def test_probe_reports_streams(video75: Path) -> None:
    info = probe(video75, S)
    assert info.duration_s == pytest.approx(75, abs=0.05)
    assert (info.width, info.height) == (320, 240) and info.fps == pytest.approx(25)
    assert info.has_audio and info.video_codec == "h264" and info.audio_codec == "aac"
    assert info.codecs == ("h264", "aac") and "mp4" in info.container
    assert probe(video75) == info  # settings are optional: the defaults apply


def test_probe_silent_video(media_dir: Path) -> None:
    info = probe(make_video(media_dir / "silent.mp4", 3, audio=False))
    assert not info.has_audio and info.audio_codec is None and info.codecs == ("h264",)


# ---------------------------------------------------------------------------------------------- clip plans


def _spans(duration: float, clip: float = 30) -> list[tuple[float, float]]:
    return [(w.start_s, w.end_s) for w in plan_clips(duration, clip)]


def test_plan_clips_exact_windows() -> None:
    assert _spans(75) == [(0, 30), (30, 60), (60, 75)]  # the last clip is shorter
    assert _spans(10) == [(0, 10)]
    assert _spans(61) == [(0, 30), (30, 60), (60, 61)]
    assert [w.index for w in plan_clips(75, 30)] == [0, 1, 2]
    assert plan_clips(75, 30)[2].duration_s == 15


@pytest.mark.parametrize("duration", [30.0, 60.0, 90.0, 3600.0])
def test_multiple_of_clip_length_has_no_empty_trailing_clip(duration: float) -> None:
    spans = _spans(duration)
    assert len(spans) == duration // 30 and spans[-1] == (duration - 30, duration)  # the reference added one more


def test_a_few_milliseconds_over_do_not_make_a_tiny_clip() -> None:
    assert _spans(60.021) == [(0, 30), (30, 60.021)]  # AAC padding: merged into the last clip
    assert _spans(60.6)[-1] == (60, 60.6)  # a real remainder stays its own clip


def test_plan_clips_refuses_nonsense() -> None:
    for bad in (0, -1, float("nan"), float("inf")):
        with pytest.raises(InvalidVideoError, match="zero duration"):
            plan_clips(bad, 30)
    with pytest.raises(InvalidInputError, match="clip_seconds"):
        plan_clips(60, 0)


def test_windows_become_store_clips() -> None:
    info = plan_clips(75, 30)[2].to_clip_info("cam-1", uri="file:///x/2.mp4", offset_s=100)
    assert (info.key, info.start_s, info.end_s, info.uri) == ("cam-1#2", 160, 175, "file:///x/2.mp4")


# ---------------------------------------------------------------------------------------------- cutting


def test_cut_durations_are_exact(clips75: list[Path]) -> None:
    for clip, window in zip(clips75, plan_clips(75, 30), strict=True):
        container, video = _durations(clip)
        assert video == pytest.approx(window.duration_s, abs=FRAME), clip
        assert container == pytest.approx(window.duration_s, abs=FRAME), clip
        assert probe(clip).has_audio
        assert abs(_video_packets(clip) - window.duration_s * 25) <= 1, clip  # no hidden frames before the start


def test_cut_starts_at_the_window_not_at_a_keyframe(video75: Path, clips75: list[Path]) -> None:
    """The first frame of each clip is the source frame at the window start, though 30 s and 60 s are not
    keyframes of the source (22 s and 55 s are the keyframes before them)."""
    source = sample_frames(video75, 25)
    for clip, start in ((clips75[1], 30.0), (clips75[2], 60.0)):
        first = sample_frames(clip, 25)[0][1].astype(np.int16)
        errors = {t: float(np.abs(source[round(t * 25)][1].astype(np.int16) - first).mean())
                  for t in (start - 2 * FRAME, start - FRAME, start, start + FRAME, start + 2 * FRAME)}
        assert min(errors, key=errors.__getitem__) == pytest.approx(start), errors


def test_cut_is_idempotent(video75: Path, clips75: list[Path], media_dir: Path) -> None:
    mtime = clips75[1].stat().st_mtime_ns
    cut_clip(video75, ClipWindow(1, 30, 60), clips75[1])
    assert clips75[1].stat().st_mtime_ns == mtime  # a valid clip is not redone
    broken = media_dir / "broken.mp4"
    broken.write_bytes(b"\0" * 1000)  # e.g. left over by a crash: redone, not trusted
    cut_clip(video75, ClipWindow(0, 0, 5), broken)
    assert _durations(broken)[1] == pytest.approx(5, abs=FRAME)
    assert not list(media_dir.glob("*.part.*"))


def test_cut_past_the_end_fails_with_ffmpeg_detail(video75: Path, tmp_path: Path) -> None:
    with pytest.raises(InvalidVideoError, match=r"clip 3 \[90.000, 120.000\) .*got no video at all instead of 30"):
        cut_clip(video75, ClipWindow(3, 90, 120), tmp_path / "c3.mp4")
    assert not (tmp_path / "c3.mp4").exists()


# ---------------------------------------------------------------------------------------------- audio, frames


def test_extract_audio_is_16k_mono_pcm(clips75: list[Path], tmp_path: Path) -> None:
    wav_path = extract_audio(clips75[0], tmp_path / "a" / "c0.wav")
    assert wav_path == tmp_path / "a" / "c0.wav"
    with wave.open(str(wav_path)) as w:
        assert (w.getnchannels(), w.getsampwidth(), w.getframerate()) == (1, 2, 16000)
        assert w.getnframes() / 16000 == pytest.approx(30, abs=0.05)
        samples = np.frombuffer(w.readframes(16000), dtype="<i2")
    assert np.abs(samples).max() > 1000  # the sine is there, not silence
    assert extract_audio(clips75[0], tmp_path / "c8k.wav", sample_rate=8000) is not None


def test_extract_audio_none_without_audio(media_dir: Path, tmp_path: Path) -> None:
    silent = media_dir / "silent.mp4"
    if not silent.exists():
        make_video(silent, 3, audio=False)
    assert extract_audio(silent, tmp_path / "s.wav") is None
    assert not (tmp_path / "s.wav").exists()


def test_sample_frames_count_times_and_format(clips75: list[Path]) -> None:
    frames = sample_frames(clips75[0], 5, S)
    assert abs(len(frames) - 5 * 30) <= 1
    assert [t for t, _ in frames[:3]] == pytest.approx([0.0, 0.2, 0.4]) and frames[10][0] == pytest.approx(2.0)
    image = frames[0][1]
    assert image.shape == (240, 320, 3) and image.dtype == np.uint8 and image.flags.writeable
    assert abs(len(sample_frames(clips75[2], 5)) - 5 * 15) <= 1
    assert abs(len(sample_frames(clips75[2], 1)) - 15) <= 1


def test_sample_frames_are_rgb_and_downscaled(tmp_path: Path) -> None:
    red = make_video(tmp_path / "red.mp4", 1, audio=False, size="1280x720", source="color=c=red")
    frames = sample_frames(red, 5, Settings(perception=PerceptionConfig(max_frame_side_px=640)))
    image = frames[0][1]
    assert image.shape == (360, 640, 3)  # longest side at the limit, aspect kept
    r, g, b = (float(image[..., i].mean()) for i in range(3))
    assert r > 200 and g < 50 and b < 50
    assert sample_frames(red, 5)[0][1].shape == (576, 1024, 3)  # the default limit is 1024
    assert sample_frames(red, 5, Settings(perception=PerceptionConfig(max_frame_side_px=2000)))[0][1].shape == (
        720, 1280, 3)  # under the limit: untouched
    with pytest.raises(InvalidInputError, match="fps"):
        sample_frames(red, 0)


# ---------------------------------------------------------------------------------------------- bad input


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(InvalidVideoError, match="missing.mp4: no such file"):
        probe(tmp_path / "missing.mp4", S)
    with pytest.raises(InvalidVideoError, match="is a directory, not a video file"):
        probe(tmp_path, S)


def test_files_that_are_not_videos(tmp_path: Path) -> None:
    text = tmp_path / "notes.mp4"
    text.write_text("not a video at all\n" * 100)
    with pytest.raises(InvalidVideoError, match="not a video file: ffprobe cannot read it as media"):
        probe(text, S)
    wav = tmp_path / "tone.wav"
    subprocess.run(["ffmpeg", "-y", "-v", "error", "-f", "lavfi", "-i", "sine=duration=2", str(wav)], check=True)
    with pytest.raises(InvalidVideoError, match=r"has no video stream, so it is not a video \(streams: audio\)"):
        probe(wav, S)
    empty = tmp_path / "empty.mp4"
    empty.write_bytes(b"")
    with pytest.raises(InvalidVideoError, match="the file is empty"):
        probe(empty, S)


def _truncate(src: Path, out: Path) -> Path:
    data = src.read_bytes()
    out.write_bytes(data[: len(data) // 2])
    return out


def test_truncated_containers(video75: Path, tmp_path: Path) -> None:
    # Index at the end (ffmpeg's default): half the file has no index at all; ffmpeg's words are passed on.
    with pytest.raises(InvalidVideoError, match="corrupt or truncated MP4/QuickTime container.*moov atom not found"):
        probe(_truncate(video75, tmp_path / "half.mp4"), S)
    # Index at the front (faststart): the header probes fine, the missing second half does not decode.
    faststart = make_video(tmp_path / "fs.mp4", 20, faststart=True)
    assert probe(faststart).duration_s == pytest.approx(20, abs=0.05)
    with pytest.raises(InvalidVideoError, match="corrupt or truncated container: no frame decodes near the end"):
        probe(_truncate(faststart, tmp_path / "fs_half.mp4"), S)


def test_zero_duration_and_still_images(tmp_path: Path) -> None:
    no_frames = tmp_path / "noframes.avi"  # AVI keeps a video stream with zero frames
    subprocess.run(["ffmpeg", "-y", "-v", "error", "-f", "lavfi", "-i", "testsrc=size=320x240:rate=25", "-frames:v",
                    "0", "-c:v", "libx264", str(no_frames)], check=True, capture_output=True, timeout=60)
    with pytest.raises(InvalidVideoError, match="noframes.avi: zero duration"):
        probe(no_frames, S)
    still = tmp_path / "frame.mp4"  # a PNG with a misleading name
    subprocess.run(["ffmpeg", "-y", "-v", "error", "-f", "lavfi", "-i", "testsrc=size=320x240", "-frames:v", "1",
                    "-c:v", "png", "-f", "image2pipe", str(still)], check=True, capture_output=True, timeout=60)
    with pytest.raises(InvalidVideoError, match=r"is a still image \(png\), not a video"):
        probe(still, S)


def test_absurd_resolution(tmp_path: Path) -> None:
    big = make_video(tmp_path / "big.mp4", 1, audio=False, size="640x480")
    with pytest.raises(InvalidVideoError, match=r"absurd resolution 640x480 = 307200 pixels"):
        probe(big, Settings(perception={"max_resolution_px": 100 * 100}))
    limits = PerceptionConfig()
    with pytest.raises(InvalidVideoError, match="absurd resolution 0x480"):
        check_resolution(0, 480, limits)
    with pytest.raises(InvalidVideoError, match="absurd resolution 100000x100000"):
        check_resolution(100_000, 100_000, limits)
    check_resolution(7680, 4320, limits)  # 8K is fine


# ---------------------------------------------------------------------------------------------- live watcher


class _Watcher:
    """Runs `watch_clips` in a thread and records what it yields and when."""

    def __init__(self, directory: Path, settle_s: float = 0.4) -> None:
        self.stop = threading.Event()
        self.seen: list[str] = []
        self._thread = threading.Thread(target=self._run, args=(directory, settle_s), daemon=True)
        self._thread.start()

    def _run(self, directory: Path, settle_s: float) -> None:
        for path in watch_clips(directory, poll_s=0.05, stop_event=self.stop, settle_s=settle_s):
            self.seen.append(path.name)

    def wait_for(self, count: int, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while len(self.seen) < count and time.monotonic() < deadline:
            time.sleep(0.02)

    def close(self) -> float:
        start = time.monotonic()
        self.stop.set()
        self._thread.join(5)
        assert not self._thread.is_alive()
        return time.monotonic() - start


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Path]:
    directory = tmp_path / "live"
    directory.mkdir()
    yield directory


def _write_in_chunks(path: Path, data: bytes, chunks: int, pause_s: float, watcher: _Watcher) -> None:
    step = len(data) // chunks + 1
    with path.open("wb") as f:
        for i in range(0, len(data), step):
            f.write(data[i:i + step])
            f.flush()
            time.sleep(pause_s)
            assert path.name not in watcher.seen  # never taken half-written


def test_live_watcher_waits_for_files_to_settle(live: Path, video75: Path) -> None:
    data = video75.read_bytes()[:200_000]
    watcher = _Watcher(live)
    try:
        _write_in_chunks(live / "seg_001.mp4", data, chunks=5, pause_s=0.2, watcher=watcher)
        (live / "seg_000.part.mp4").write_bytes(data)  # partial names are ignored
        (live / "notes.txt").write_text("not a video")
        (live / ".seg_003.mp4").write_bytes(data)  # hidden temp files too
        watcher.wait_for(1)
        assert watcher.seen == ["seg_001.mp4"]
        (live / "seg_002.mp4").write_bytes(data)
        watcher.wait_for(2)
        time.sleep(0.5)
        assert watcher.seen == ["seg_001.mp4", "seg_002.mp4"]  # each once
        (live / "seg_001.mp4").touch()  # an already-yielded file is not yielded again
        time.sleep(0.6)
    finally:
        assert watcher.close() < 1.0  # a clean, prompt stop
    assert watcher.seen == ["seg_001.mp4", "seg_002.mp4"]


def test_live_watcher_keeps_name_order(live: Path, video75: Path) -> None:
    data = video75.read_bytes()[:100_000]
    watcher = _Watcher(live, settle_s=0.3)
    try:
        (live / "seg_002.mp4").write_bytes(data)  # finished first...
        _write_in_chunks(live / "seg_001.mp4", data, chunks=4, pause_s=0.2, watcher=watcher)
        assert watcher.seen == []  # ...but waits for the earlier segment
        (live / "seg_000.mp4").write_bytes(b"")  # an empty placeholder holds nothing back
        watcher.wait_for(2)
    finally:
        watcher.close()
    assert watcher.seen == ["seg_001.mp4", "seg_002.mp4"]


def test_live_watcher_arguments(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="does not exist"):
        next(watch_clips(tmp_path / "nope", poll_s=0.1))
    with pytest.raises(InvalidInputError, match="poll_s"):
        next(watch_clips(tmp_path, poll_s=0))
    stop = threading.Event()
    stop.set()
    assert list(watch_clips(tmp_path, poll_s=0.1, stop_event=stop)) == []
