"""Probing, exact clip cutting, audio extraction and frame sampling, through ffmpeg/ffprobe.

The research code cut clips with ``-c copy``, which snaps to keyframes, so its "30 s" clips were approximate
and a duration that is a multiple of 30 produced an empty last clip (reference §4.1, §10 item 18). Here the
windows come from the probed duration and every clip is re-encoded with accurate seeking, so a clip is exactly
its window and `ClipInfo.start_s`/`end_s` are true times. Bad input fails early, before anything is written,
with an `InvalidVideoError` that names the problem; every subprocess has a timeout, and a failing ffmpeg call
reports the tail of its stderr, because "exit code 1" alone does not tell a user what to fix.
"""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from m3graph.errors import InvalidInputError
from m3graph.graphdb.types import ClipInfo
from m3graph.settings import PerceptionConfig, Settings

log = logging.getLogger(__name__)

PROBE_TIMEOUT_S = 60.0
FFMPEG_TIMEOUT_S = 600.0
# A remainder shorter than this is merged into the previous clip: a container whose audio runs a few
# milliseconds past a multiple of 30 s must not produce a tiny, frameless trailing clip.
MIN_TAIL_S = 0.5
# A source whose video stops this much before the end its header declares is damaged but usable (OpenCV's
# Megamind_bugy.avi ends two frames early): the last clip is ingested as far as it decodes, with a warning. More
# than this is a truncated file, which `probe` already refuses (it decodes a frame a second before the end).
MAX_SHORT_END_S = 1.0
_STDERR_LINES = 5


class InvalidVideoError(InvalidInputError):
    """The file cannot be ingested as a video (missing, not a video, corrupt, empty, absurd size)."""


@dataclass(frozen=True)
class VideoInfo:
    path: Path
    duration_s: float
    fps: float
    width: int
    height: int
    has_audio: bool
    video_codec: str
    audio_codec: str | None
    container: str = ""

    @property
    def codecs(self) -> tuple[str, ...]:
        return (self.video_codec,) if self.audio_codec is None else (self.video_codec, self.audio_codec)


@dataclass(frozen=True)
class ClipWindow:
    """One clip as a half-open window [start_s, end_s) of its source file."""

    index: int
    start_s: float
    end_s: float

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s

    def to_clip_info(self, source_id: str, uri: str | None = None, offset_s: float = 0.0) -> ClipInfo:
        """The store's view of this window; `offset_s` shifts it onto a longer timeline (live mode)."""
        return ClipInfo(source_id=source_id, clip_index=self.index, start_s=offset_s + self.start_s,
                        end_s=offset_s + self.end_s, uri=uri)


# ---------------------------------------------------------------------------------------------- subprocesses


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise InvalidVideoError(f"{name} is not installed (Debian package ffmpeg); it is needed to read videos")
    return path


def _stderr_tail(stderr: bytes) -> str:
    lines = [line.strip() for line in stderr.decode("utf-8", "replace").splitlines() if line.strip()]
    return " | ".join(lines[-_STDERR_LINES:])[-800:]


def _call(args: list[str], what: str, timeout: float) -> subprocess.CompletedProcess[bytes]:
    """Runs a command with a timeout; a timeout becomes an `InvalidVideoError`, the exit code is not checked."""
    try:
        return subprocess.run(args, capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        raise InvalidVideoError(f"{what}: {Path(args[0]).name} took longer than {timeout:.0f} s") from exc


def _run(args: list[str], what: str, timeout: float = FFMPEG_TIMEOUT_S) -> subprocess.CompletedProcess[bytes]:
    proc = _call(args, what, timeout)
    if proc.returncode != 0:
        raise InvalidVideoError(f"{what}: {_stderr_tail(proc.stderr) or f'exit code {proc.returncode}'}")
    return proc


def _fps(rate: str | None) -> float:
    try:
        num, _, den = (rate or "0/1").partition("/")
        value = float(num) / float(den or 1)
    except (ValueError, ZeroDivisionError):
        return 0.0
    return value if math.isfinite(value) and value > 0 else 0.0


def _float(value: object) -> float:
    try:
        out = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return 0.0
    return out if math.isfinite(out) else 0.0


# Magic numbers of common video containers: when ffprobe cannot open a file that starts like one of these,
# the file is a damaged video rather than something that never was one.
def _container_kind(path: Path) -> str | None:
    with path.open("rb") as f:
        head = f.read(512)
    if head[4:8] in (b"ftyp", b"moov", b"mdat", b"free", b"wide"):
        return "MP4/QuickTime"
    if head[:4] == b"\x1a\x45\xdf\xa3":
        return "Matroska/WebM"
    if head[:4] == b"RIFF" and head[8:11] == b"AVI":
        return "AVI"
    if head[:3] == b"FLV":
        return "FLV"
    if len(head) > 376 and head[0] == head[188] == head[376] == 0x47:
        return "MPEG-TS"
    return None


# ---------------------------------------------------------------------------------------------- probing


def resolved_source(path: Path) -> str:
    """The absolute path behind `path` (symbolic links followed); a link loop is an `InvalidVideoError`."""
    try:
        return str(Path(path).resolve())
    except (OSError, RuntimeError) as exc:  # RuntimeError: Python 3.11's "Symlink loop from ..."
        raise InvalidVideoError(f"{path}: cannot be resolved ({exc})") from None


def check_resolution(width: int, height: int, limits: PerceptionConfig, where: str = "video") -> None:
    """Refuses a frame size of zero or one whose frames would not fit in memory (`max_resolution_px`)."""
    if width <= 0 or height <= 0:
        raise InvalidVideoError(f"{where}: absurd resolution {width}x{height} (the video stream has no frame size)")
    if width * height > limits.max_resolution_px:
        raise InvalidVideoError(f"{where}: absurd resolution {width}x{height} = {width * height} pixels "
                                f"(limit perception.max_resolution_px = {limits.max_resolution_px})")


def probe(path: Path, settings: Settings | None = None) -> VideoInfo:
    """Duration, frame rate, size, codecs and streams, or an `InvalidVideoError` that says what is wrong.

    Besides reading the header, it decodes one frame near the end: a truncated file with its index at the
    front probes fine, and would otherwise fail only in the middle of an ingestion.
    """
    path = Path(path)
    limits = settings.perception if settings is not None else PerceptionConfig()
    try:
        _check_file(path)
    except OSError as exc:  # a directory on the way that this user may not enter
        raise InvalidVideoError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    proc = _call([_tool("ffprobe"), "-v", "error", "-print_format", "json", "-show_format", "-show_streams",
                  str(path)], f"{path}: probing", PROBE_TIMEOUT_S)
    if proc.returncode != 0:
        detail = _stderr_tail(proc.stderr) or f"ffprobe exit code {proc.returncode}"
        kind = _container_kind(path)
        if kind is not None:
            raise InvalidVideoError(f"{path}: corrupt or truncated {kind} container ({detail})")
        raise InvalidVideoError(f"{path}: not a video file: ffprobe cannot read it as media ({detail})")
    data = json.loads(proc.stdout or b"{}")
    fmt = data.get("format", {})
    streams = data.get("streams", [])
    video = next((s for s in streams if s.get("codec_type") == "video"
                  and not s.get("disposition", {}).get("attached_pic")), None)
    audio = next((s for s in streams if s.get("codec_type") == "audio"), None)
    if video is None:
        kinds = ", ".join(sorted({str(s.get("codec_type", "?")) for s in streams})) or "none"
        raise InvalidVideoError(f"{path}: has no video stream, so it is not a video (streams: {kinds})")
    width, height = int(video.get("width") or 0), int(video.get("height") or 0)
    check_resolution(width, height, limits, str(path))
    container = str(fmt.get("format_name", ""))
    if container == "image2" or container.endswith("_pipe"):
        raise InvalidVideoError(f"{path}: is a still image ({video.get('codec_name')}), not a video")
    duration = _float(fmt.get("duration")) or _float(video.get("duration"))
    if duration <= 0:
        raise InvalidVideoError(f"{path}: zero duration (the video has no frames to cut into clips)")
    fps = _fps(video.get("avg_frame_rate")) or _fps(video.get("r_frame_rate"))
    _check_decodes_near_end(path, _float(video.get("duration")) or duration, fps)
    return VideoInfo(path=path, duration_s=duration, fps=fps, width=width, height=height, has_audio=audio is not None,
                     video_codec=str(video.get("codec_name")), audio_codec=audio.get("codec_name") if audio else None,
                     container=container)


def _check_file(path: Path) -> None:
    if not path.exists():
        raise InvalidVideoError(f"{path}: no such file (or a broken symbolic link)")
    if path.is_dir():
        raise InvalidVideoError(f"{path}: is a directory, not a video file")
    if not path.is_file():
        raise InvalidVideoError(f"{path}: not a regular file")
    if not os.access(path, os.R_OK):
        raise InvalidVideoError(f"{path}: cannot be read (permission denied)")
    if path.stat().st_size == 0:
        raise InvalidVideoError(f"{path}: the file is empty (0 bytes)")


def _check_decodes_near_end(path: Path, video_duration_s: float, fps: float = 0.0) -> None:
    """Decodes one tiny grey frame about a second before the end; none means the file is cut short.

    "About a second" is at least one and a half frame intervals: a sparse video (a frame every 10 s, a time-lapse)
    has no frame in its last second and is not truncated for that.
    """
    tail = max(0.0, video_duration_s - max(1.0, 1.5 / fps if fps > 0 else 0.0))
    proc = _call([_tool("ffmpeg"), "-nostdin", "-v", "error", "-ss", f"{tail:.3f}", "-i", str(path), "-map", "0:v:0",
                  "-frames:v", "1", "-vf", "scale=8:8", "-f", "rawvideo", "-pix_fmt", "gray", "-"],
                 f"{path}: decoding the last second", PROBE_TIMEOUT_S)
    if len(proc.stdout) < 64:
        detail = _stderr_tail(proc.stderr) or "no frame could be decoded"
        raise InvalidVideoError(f"{path}: corrupt or truncated container: no frame decodes near the end "
                                f"at {tail:.1f} s ({detail})")


# ---------------------------------------------------------------------------------------------- clips


def plan_clips(duration_s: float, clip_seconds: float, min_tail_s: float = MIN_TAIL_S) -> list[ClipWindow]:
    """Exact consecutive windows covering [0, duration); the last one is shorter, never empty.

    A duration that is a multiple of `clip_seconds` gives exactly duration/clip_seconds clips (the reference
    added an empty one); a remainder under `min_tail_s` is absorbed by the previous clip.
    """
    if not math.isfinite(duration_s) or duration_s <= 0:
        raise InvalidVideoError(f"zero duration ({duration_s} s): nothing to cut")
    if not math.isfinite(clip_seconds) or clip_seconds <= 0:
        raise InvalidInputError(f"clip_seconds must be positive, got {clip_seconds}")
    count = max(1, math.ceil(duration_s / clip_seconds - 1e-9))
    if count > 1 and duration_s - (count - 1) * clip_seconds < min_tail_s:
        count -= 1
    starts = [i * clip_seconds for i in range(count)]
    return [ClipWindow(i, start, duration_s if i == count - 1 else starts[i + 1]) for i, start in enumerate(starts)]


def _clip_duration(path: Path) -> float | None:
    """The video stream's duration of a finished clip, or None when the file is absent or unreadable."""
    if not path.is_file() or path.stat().st_size == 0:
        return None
    proc = _call([_tool("ffprobe"), "-v", "error", "-select_streams", "v:0", "-show_entries",
                  "stream=duration:format=duration", "-of", "json", str(path)], f"{path}: probing", PROBE_TIMEOUT_S)
    if proc.returncode != 0:
        return None
    data = json.loads(proc.stdout or b"{}")
    streams = data.get("streams") or [{}]
    return _float(streams[0].get("duration")) or _float(data.get("format", {}).get("duration")) or None


def _tolerance(source_fps: float) -> float:
    """One frame of the source (at least 1/60 s), plus a millisecond of rounding."""
    return 1.0 / max(1.0, min(source_fps or 25.0, 60.0)) + 0.001


def _source_fps(source: Path) -> float:
    proc = _call([_tool("ffprobe"), "-v", "error", "-select_streams", "v:0", "-show_entries",
                  "stream=avg_frame_rate,r_frame_rate", "-of", "json", str(source)], f"{source}: probing",
                 PROBE_TIMEOUT_S)
    streams = json.loads(proc.stdout or b"{}").get("streams") or [{}]
    return _fps(streams[0].get("avg_frame_rate")) or _fps(streams[0].get("r_frame_rate")) or 25.0


def cut_clip(source: Path, window: ClipWindow, out_path: Path) -> Path:
    """Re-encodes exactly [start, end) of `source` (H.264 veryfast + AAC); an existing valid clip is kept.

    Seeking before ``-i`` while transcoding is frame-accurate, so the clip starts at the window, and ``-t``
    ends it there. The file is written under a temporary name and renamed, so a crash never leaves a
    half-written clip that a rerun would take for a finished one.
    """
    source, out_path = Path(source), Path(out_path)
    tolerance = _tolerance(_source_fps(source))
    existing = _clip_duration(out_path)
    if existing is not None and (abs(existing - window.duration_s) <= tolerance
                                 or _short_end(source, window, existing, tolerance) is not None):
        return out_path
    out_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_path.with_name(out_path.stem + ".part" + out_path.suffix)
    what = f"cutting clip {window.index} [{window.start_s:.3f}, {window.end_s:.3f}) of {source}"
    _run([_tool("ffmpeg"), "-nostdin", "-y", "-v", "error", "-ss", f"{window.start_s:.3f}", "-i", str(source),
          "-t", f"{window.duration_s:.3f}", "-map", "0:v:0", "-map", "0:a:0?", "-c:v", "libx264", "-preset",
          "veryfast", "-pix_fmt", "yuv420p", "-c:a", "aac", "-ar", "48000", "-movflags", "+faststart", "-f", "mp4",
          str(tmp)], what)
    got = _clip_duration(tmp)
    short = None if got is None else _short_end(source, window, got, tolerance)
    if got is None or (abs(got - window.duration_s) > tolerance and short is None):
        tmp.unlink(missing_ok=True)
        found = "no video at all" if got is None else f"{got:.3f} s of video"
        raise InvalidVideoError(f"{what}: got {found} instead of {window.duration_s:.3f} s "
                                f"(the window lies past the end of the source, or its timestamps are broken)")
    if short is not None:
        log.warning("%s", short)
    tmp.replace(out_path)
    return out_path


def _short_end(source: Path, window: ClipWindow, got_s: float, tolerance: float) -> str | None:
    """What was short, when a cut came out short only because the source's video stops early at its very end.

    Only the last window qualifies (it ends where the source's header says the source ends), and only by at most
    `MAX_SHORT_END_S`; anything else is still an error. None when the cut is not short in that way.
    """
    missing = window.duration_s - got_s
    if missing <= tolerance or missing > MAX_SHORT_END_S + tolerance or got_s <= 0:
        return None
    declared = _clip_duration(source)
    if declared is None or window.end_s < declared - tolerance:
        return None
    return (f"{source}: the video stream stops {missing:.3f} s before the end its header declares "
            f"({window.start_s + got_s:.3f} s of {declared:.3f} s); clip {window.index} is ingested as far as it "
            f"decodes ({got_s:.3f} s instead of {window.duration_s:.3f} s)")


# ---------------------------------------------------------------------------------------------- audio, frames


def has_audio_stream(path: Path) -> bool:
    proc = _run([_tool("ffprobe"), "-v", "error", "-select_streams", "a", "-show_entries", "stream=index", "-of",
                 "csv=p=0", str(path)], f"{path}: probing audio", PROBE_TIMEOUT_S)
    return bool(proc.stdout.strip())


def extract_audio(clip: Path, out_wav: Path, sample_rate: int = 16000) -> Path | None:
    """Mono 16-bit PCM WAV of the first audio stream at `sample_rate`; None (no file) when there is no audio.

    16 kHz mono is what VAD, speaker embedding and ASR expect (reference §4.2).
    """
    clip, out_wav = Path(clip), Path(out_wav)
    if not has_audio_stream(clip):
        return None
    out_wav.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_wav.with_name(out_wav.stem + ".part.wav")
    _run([_tool("ffmpeg"), "-nostdin", "-y", "-v", "error", "-i", str(clip), "-map", "0:a:0", "-ac", "1", "-ar",
          str(sample_rate), "-c:a", "pcm_s16le", "-f", "wav", str(tmp)], f"extracting audio of {clip}")
    tmp.replace(out_wav)
    return out_wav


def _frame_size(clip: Path, limits: PerceptionConfig) -> tuple[int, int, int, int]:
    """(width, height) of the clip and the even-sized (width, height) whose longest side fits the limit."""
    proc = _run([_tool("ffprobe"), "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=width,height",
                 "-of", "json", str(clip)], f"{clip}: probing", PROBE_TIMEOUT_S)
    streams = json.loads(proc.stdout or b"{}").get("streams") or []
    if not streams:
        raise InvalidVideoError(f"{clip}: has no video stream, so there are no frames to sample")
    width, height = int(streams[0].get("width") or 0), int(streams[0].get("height") or 0)
    check_resolution(width, height, limits, str(clip))
    scale = min(1.0, limits.max_frame_side_px / max(width, height))
    return width, height, max(2, round(width * scale / 2) * 2), max(2, round(height * scale / 2) * 2)


def sample_frames(clip: Path, fps: float, settings: Settings | None = None) -> list[tuple[float, np.ndarray]]:
    """RGB uint8 frames at `fps`, as (seconds from the clip start, HxWx3 array).

    Frames are downscaled so the longest side is at most `perception.max_frame_side_px`: detectors do not
    need more, and a 4K clip at 5 fps would otherwise hold gigabytes in memory.
    """
    if not math.isfinite(fps) or fps <= 0:
        raise InvalidInputError(f"fps must be positive, got {fps}")
    clip = Path(clip)
    limits = settings.perception if settings is not None else PerceptionConfig()
    src_w, src_h, width, height = _frame_size(clip, limits)
    scale = "" if (width, height) == (src_w, src_h) else f",scale={width}:{height}:flags=area"
    proc = _run([_tool("ffmpeg"), "-nostdin", "-v", "error", "-i", str(clip), "-map", "0:v:0", "-vf",
                 f"fps={fps}{scale}", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"], f"sampling frames of {clip}")
    frame_bytes = width * height * 3
    count = len(proc.stdout) // frame_bytes
    data = np.frombuffer(proc.stdout, dtype=np.uint8, count=count * frame_bytes).reshape(count, height, width, 3)
    data = data.copy()  # writable: detectors may draw on or normalise frames in place
    return [(i / fps, data[i]) for i in range(count)]
