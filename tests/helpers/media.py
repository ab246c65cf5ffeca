"""Test videos generated with ffmpeg's lavfi sources: no committed media, the same file on every machine."""

from __future__ import annotations

import subprocess
from pathlib import Path


def make_video(path: Path, seconds: float, audio: bool = True, size: str = "320x240", source: str = "testsrc",
               faststart: bool = False) -> Path:
    """A 25-fps H.264 video of `source` (ffmpeg's test pattern by default) with a 440-Hz tone unless `audio` is off;
    keyframes every 11 s, so cutting inside a GOP is exercised."""
    options = f"size={size}:rate=25:d={seconds}"
    lavfi = f"{source}:{options}" if "=" in source else f"{source}={options}"
    cmd = ["ffmpeg", "-nostdin", "-y", "-v", "error", "-f", "lavfi", "-i", lavfi]
    if audio:
        cmd += ["-f", "lavfi", "-i", f"sine=frequency=440:duration={seconds}", "-c:a", "aac"]
    cmd += ["-c:v", "libx264", "-preset", "ultrafast", "-g", "275", "-sc_threshold", "0", "-pix_fmt", "yuv420p",
            "-t", str(seconds)]
    if faststart:
        cmd += ["-movflags", "+faststart"]
    subprocess.run([*cmd, str(path)], check=True, capture_output=True, timeout=120)
    return path
