"""Probing, exact clip cutting, audio extraction and frame sampling, through ffmpeg/ffprobe.

The research code cut clips with ``-c copy``, which snaps to keyframes, so its "30 s" clips were approximate
and a duration that is a multiple of 30 produced an empty last clip (reference §4.1, §10.18). Here clips are
re-encoded with accurate seeking, so a clip is exactly its window, and the windows come from the probed
duration. Bad input fails early with a message that names the problem.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from m3graph.errors import InvalidInputError
from m3graph.settings import Settings

FFMPEG_TIMEOUT_S = 600


class InvalidVideoError(InvalidInputError):
    """The file cannot be ingested as a video (missing, not a video, corrupt, empty, absurd)."""


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


@dataclass(frozen=True)
class ClipWindow:
    index: int
    start_s: float
    end_s: float

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise InvalidVideoError(f"{name} is not installed (Debian package ffmpeg); it is needed to read videos")
    return path


def _run(args: list[str], what: str, timeout: float = FFMPEG_TIMEOUT_S) -> subprocess.CompletedProcess[bytes]:
    try:
        proc = subprocess.run(args, capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        raise InvalidVideoError(f"{what}: ffmpeg took longer than {timeout:.0f} s") from exc
    if proc.returncode != 0:
        tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-5:]
        raise InvalidVideoError(f"{what}: " + (" | ".join(tail) or f"exit code {proc.returncode}"))
    return proc


def _fps(rate: str | None) -> float:
    try:
        num, _, den = (rate or "0/1").partition("/")
        return float(num) / float(den or 1)
    except (ValueError, ZeroDivisionError):
        return 0.0


def probe(path: Path, settings: Settings) -> VideoInfo:
    """Duration, frame rate, size and streams, or an `InvalidVideoError` that says what is wrong."""
    path = Path(path)
    if not path.exists():
        raise InvalidVideoError(f"{path}: no such file")
    if not path.is_file():
        raise InvalidVideoError(f"{path}: is a directory, not a video file")
    if path.stat().st_size == 0:
        raise InvalidVideoError(f"{path}: the file is empty")
    proc = subprocess.run([_tool("ffprobe"), "-v", "error", "-print_format", "json", "-show_format",
                           "-show_streams", str(path)], capture_output=True, timeout=120, check=False)
    if proc.returncode != 0:
        detail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["unreadable"]
        raise InvalidVideoError(f"{path}: not a readable media file, or a corrupt/truncated container ({detail[0]})")
    data = json.loads(proc.stdout or b"{}")
    streams = data.get("streams", [])
    video = next((s for s in streams if s.get("codec_type") == "video"
                  and not s.get("disposition", {}).get("attached_pic")), None)
    audio = next((s for s in streams if s.get("codec_type") == "audio"), None)
    if video is None:
        kinds = sorted({s.get("codec_type", "?") for s in streams}) or ["none"]
        raise InvalidVideoError(f"{path}: has no video stream (streams: {', '.join(kinds)})")
    width, height = int(video.get("width") or 0), int(video.get("height") or 0)
    if width <= 0 or height <= 0 or width * height > settings.perception.max_resolution_px:
        raise InvalidVideoError(f"{path}: absurd resolution {width}x{height} "
                                f"(limit {settings.perception.max_resolution_px} pixels)")
    duration = float(data.get("format", {}).get("duration") or video.get("duration") or 0.0)
    if not math.isfinite(duration) or duration <= 0:
        raise InvalidVideoError(f"{path}: zero or unknown duration")
    _check_decodes(path, duration)
    fps = _fps(video.get("avg_frame_rate")) or _fps(video.get("r_frame_rate"))
    return VideoInfo(path=path, duration_s=duration, fps=fps, width=width, height=height, has_audio=audio is not None,
                     video_codec=str(video.get("codec_name")), audio_codec=audio.get("codec_name") if audio else None)


def _check_decodes(path: Path, duration: float) -> None:
    """A truncated file often probes fine (the header is intact); decoding its last second tells."""
    tail = max(0.0, duration - 1.0)
    proc = subprocess.run([_tool("ffmpeg"), "-v", "error", "-ss", f"{tail:.3f}", "-i", str(path), "-map", "0:v:0",
                           "-frames:v", "1", "-f", "null", "-"], capture_output=True, timeout=120, check=False)
    errors = proc.stderr.decode("utf-8", "replace").strip()
    if proc.returncode != 0 or "Invalid data" in errors or "moov atom not found" in errors:
        raise InvalidVideoError(f"{path}: corrupt or truncated container ({errors.splitlines()[-1:] or 'no frames'})")
    frames = subprocess.run([_tool("ffprobe"), "-v", "error", "-read_intervals", f"{tail:.3f}%+#1", "-select_streams",
                             "v:0", "-show_entries", "frame=pts_time", "-of", "csv=p=0", str(path)],
                            capture_output=True, timeout=120, check=False)
    if not frames.stdout.strip():
        raise InvalidVideoError(f"{path}: corrupt or truncated container (no frames near the end at {tail:.1f} s)")


def plan_clips(duration_s: float, clip_seconds: float) -> list[ClipWindow]:
    """Exact windows; the last one is shorter, and there is never an empty trailing clip."""
    if duration_s <= 0:
        raise InvalidVideoError("zero duration: nothing to cut")
    count = max(1, math.ceil(round(duration_s / clip_seconds, 6)))
    return [ClipWindow(i, i * clip_seconds, min(duration_s, (i + 1) * clip_seconds)) for i in range(count)]


def _valid_clip(path: Path, expected_s: float) -> bool:
    if not path.exists() or path.stat().st_size == 0:
        return False
    proc = subprocess.run([_tool("ffprobe"), "-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0",
                           str(path)], capture_output=True, timeout=60, check=False)
    try:
        return abs(float(proc.stdout.strip() or 0) - expected_s) < 0.25
    except ValueError:
        return False


def cut_clip(source: Path, window: ClipWindow, out_path: Path) -> Path:
    """Re-encodes exactly [start, end) of `source`; an existing valid clip is kept (idempotent)."""
    if _valid_clip(out_path, window.duration_s):
        return out_path
    out_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_path.with_name(out_path.stem + ".part" + out_path.suffix)
    _run([_tool("ffmpeg"), "-y", "-v", "error", "-ss", f"{window.start_s:.3f}", "-i", str(source),
          "-t", f"{window.duration_s:.3f}", "-map", "0:v:0", "-map", "0:a:0?", "-c:v", "libx264", "-preset",
          "veryfast", "-pix_fmt", "yuv420p", "-force_key_frames", "expr:eq(n,0)", "-c:a", "aac", "-ar", "48000",
          "-movflags", "+faststart", str(tmp)], f"cutting clip {window.index} of {source}")
    tmp.replace(out_path)
    return out_path


def extract_audio(clip: Path, out_wav: Path, sample_rate: int = 16000) -> Path | None:
    """16 kHz mono 16-bit WAV of the first audio stream; None when the clip has no audio."""
    proc = subprocess.run([_tool("ffprobe"), "-v", "error", "-select_streams", "a", "-show_entries",
                           "stream=index", "-of", "csv=p=0", str(clip)], capture_output=True, timeout=60, check=False)
    if not proc.stdout.strip():
        return None
    out_wav.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_wav.with_name(out_wav.stem + ".part.wav")
    _run([_tool("ffmpeg"), "-y", "-v", "error", "-i", str(clip), "-map", "0:a:0", "-ac", "1", "-ar", str(sample_rate),
          "-c:a", "pcm_s16le", str(tmp)], f"extracting audio of {clip}")
    tmp.replace(out_wav)
    return out_wav


def sample_frames(clip: Path, fps: float, settings: Settings) -> list[tuple[float, np.ndarray]]:
    """RGB frames at `fps` (times relative to the clip), longest side at most `max_frame_side_px`."""
    info = probe(clip, settings)
    side = settings.perception.max_frame_side_px
    scale = min(1.0, side / max(info.width, info.height))
    width, height = (max(2, int(info.width * scale) // 2 * 2), max(2, int(info.height * scale) // 2 * 2))
    proc = _run([_tool("ffmpeg"), "-v", "error", "-i", str(clip), "-map", "0:v:0",
                 "-vf", f"fps={fps},scale={width}:{height}", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"],
                f"sampling frames of {clip}")
    frame_bytes = width * height * 3
    count = len(proc.stdout) // frame_bytes
    data = np.frombuffer(proc.stdout[: count * frame_bytes], dtype=np.uint8).reshape(count, height, width, 3)
    return [(i / fps, data[i]) for i in range(count)]
