"""What a clip shows when nobody is in it: a description from the frames alone (issue 10).

No captioning or image-text model ships its weights inside a registry package that was verified offline (see
docs/evaluation.md, "Identity calibration"), so a clip is described by what its pixels allow: the shots (cuts
found by colour-histogram change), per shot its dominant colours, brightness and how much moves. Without this a
clip with no face and no speech left no memory at all; with it, every clip is searchable by what it looks like
("a dark blue scene", "bright, a lot of motion", "3 scene changes").
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

SAMPLE_FPS = 2.0  # enough to see cuts and motion; decoding, not analysis, is the cost
ANALYSIS_SIDE_PX = 160  # frames are shrunk to this long side before any statistic
CUT_DISTANCE = 0.5  # Bhattacharyya distance of HSV histograms between consecutive samples that marks a cut
MIN_SHOT_S = 1.0
# Named colours (RGB) a pixel is assigned to; the words people search with, not a colour science palette.
PALETTE: dict[str, tuple[int, int, int]] = {
    "black": (0, 0, 0), "white": (255, 255, 255), "grey": (128, 128, 128), "red": (200, 30, 30),
    "orange": (240, 140, 20), "yellow": (230, 220, 40), "green": (40, 170, 50), "cyan": (40, 200, 210),
    "blue": (30, 60, 200), "purple": (130, 40, 170), "pink": (240, 120, 180), "brown": (120, 75, 30),
}


@dataclass(frozen=True)
class Shot:
    """A stretch of the clip between cuts (seconds from the clip start) and what its frames look like."""

    start_s: float
    end_s: float
    colours: tuple[str, ...]  # dominant named colours, most frequent first
    brightness: float  # mean luma in [0, 1]
    motion: float  # mean absolute luma change between consecutive samples, in [0, 1]


def iter_frames(path: Path, fps: float, side_px: int, *, enlarge: bool = True
                ) -> Iterator[tuple[float, np.ndarray, float, tuple[int, int]]]:
    """(seconds, BGR frame scaled to `side_px` on its long side, the scale, the native (height, width)) every 1/fps s,
    decoded with OpenCV (grab/retrieve: skipped frames are never decoded). Nothing when the file cannot be opened.
    Shared by the scene description and people detection, which sample the same clip file."""
    import cv2

    cap = cv2.VideoCapture(str(path))
    if not cap.isOpened():
        return
    native = cap.get(cv2.CAP_PROP_FPS) or 25.0
    step = max(1, round(native / fps))
    k = 0
    try:
        while cap.grab():
            if k % step == 0:
                ok, bgr = cap.retrieve()
                if not ok:
                    break
                h, w = bgr.shape[:2]
                scale = side_px / max(h, w)
                if not enlarge:
                    scale = min(1.0, scale)
                small = bgr if scale == 1.0 else cv2.resize(
                    bgr, (max(1, round(w * scale)), max(1, round(h * scale))), interpolation=cv2.INTER_AREA)
                yield k / native, small, scale, (h, w)
            k += 1
    finally:
        cap.release()


def sample_frames(path: Path, fps: float = SAMPLE_FPS) -> list[tuple[float, np.ndarray]]:
    """(seconds, small RGB frame) every 1/fps s, shrunk (or enlarged) to `ANALYSIS_SIDE_PX` on the long side."""
    import cv2

    return [(t, cv2.cvtColor(small, cv2.COLOR_BGR2RGB)) for t, small, _, _ in iter_frames(path, fps, ANALYSIS_SIDE_PX)]


BAR_LUMA = 24  # 0-255: a border row/column darker than this in every sample is a letterbox/pillarbox bar


def crop_bars(frames: list[tuple[float, np.ndarray]]) -> list[tuple[float, np.ndarray]]:
    """The frames without black bars: rows and columns at the edges that stay near-black in every sample.

    A 4:3 picture in a 16:9 frame (or the reverse) would otherwise be described as "mostly black, dark" by
    the bars alone. Bars must be static (all samples), so a dark scene with a dark border is not cut away."""
    if not frames:
        return frames
    peak = np.max(np.stack([f.max(axis=2) for _, f in frames]), axis=0)  # brightest value per pixel over time
    rows = np.flatnonzero(peak.max(axis=1) >= BAR_LUMA)
    cols = np.flatnonzero(peak.max(axis=0) >= BAR_LUMA)
    if rows.size == 0 or cols.size == 0:  # the whole picture is black: nothing to crop
        return frames
    top, bottom, left, right = rows[0], rows[-1] + 1, cols[0], cols[-1] + 1
    return [(t, f[top:bottom, left:right]) for t, f in frames]


def dominant_colours(frames: list[np.ndarray], top: int = 2, min_share: float = 0.15) -> tuple[str, ...]:
    """The named colours covering the most pixels (at least `min_share` each), most frequent first."""
    pixels = np.concatenate([f.reshape(-1, 3) for f in frames]).astype(np.float32)
    names = list(PALETTE)
    centres = np.array([PALETTE[n] for n in names], dtype=np.float32)
    d = ((pixels[:, None, :] - centres[None, :, :]) ** 2).sum(axis=2)
    counts = np.bincount(d.argmin(axis=1), minlength=len(names)) / len(pixels)
    order = np.argsort(-counts)
    picked = tuple(names[i] for i in order[:top] if counts[i] >= min_share)
    return picked or (names[int(order[0])],)


def shots(frames: list[tuple[float, np.ndarray]], duration_s: float) -> list[Shot]:
    """Cut the samples into shots and describe each."""
    import cv2

    if not frames:
        return []
    hists, lumas = [], []
    for _, f in frames:
        hsv = cv2.cvtColor(f, cv2.COLOR_RGB2HSV)
        h = cv2.calcHist([hsv], [0, 1], None, [16, 8], [0, 180, 0, 256])
        hists.append(cv2.normalize(h, h).flatten())
        lumas.append(cv2.cvtColor(f, cv2.COLOR_RGB2GRAY).astype(np.float32) / 255.0)
    bounds = [0]
    for i in range(1, len(frames)):
        dist = cv2.compareHist(hists[i - 1], hists[i], cv2.HISTCMP_BHATTACHARYYA)
        if dist > CUT_DISTANCE and frames[i][0] - frames[bounds[-1]][0] >= MIN_SHOT_S:
            bounds.append(i)
    bounds.append(len(frames))
    out = []
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        seg = lumas[a:b]
        diffs = [float(np.abs(x - y).mean()) for x, y in zip(seg[:-1], seg[1:], strict=True)]
        motion = float(np.mean(diffs)) if diffs else 0.0
        end = frames[b][0] if b < len(frames) else duration_s
        out.append(Shot(round(frames[a][0], 1), round(max(end, frames[a][0]), 1),
                        dominant_colours([f for _, f in frames[a:b]]), float(np.mean([x.mean() for x in seg])),
                        motion))
    return out


def _brightness_word(v: float) -> str:
    return "dark" if v < 0.2 else "dim" if v < 0.4 else "bright" if v > 0.7 else "evenly lit"


def _motion_word(v: float) -> str:
    return "still" if v < 0.01 else "with a little motion" if v < 0.05 else "with a lot of motion"


def describe_shots(found: list[Shot], clip_start_s: float) -> list[tuple[float, str]]:
    """(absolute time, sentence) per shot, plus one line counting the cuts when there are any."""
    lines = []
    for s in found:
        colours = " and ".join(s.colours)
        lines.append((clip_start_s + s.start_s,
                      f"From {clip_start_s + s.start_s:.1f} s to {clip_start_s + s.end_s:.1f} s the scene is mostly "
                      f"{colours}, {_brightness_word(s.brightness)}, {_motion_word(s.motion)}."))
    if len(found) > 1:
        lines.append((clip_start_s, f"The view changes {len(found) - 1} time{'s' if len(found) > 2 else ''} in this "
                                    "clip (scene cuts)."))
    return lines


def describe_clip(path: str | Path | None, clip_start_s: float, duration_s: float) -> list[tuple[float, str]]:
    """Scene lines for a clip file; [] when there is no readable video (an audio-only clip, a missing file)."""
    if path is None or not Path(path).is_file():
        return []
    try:
        frames = sample_frames(Path(path))
    except Exception:  # noqa: BLE001 - a description is extra: never fail memorization over it
        log.warning("could not read frames of %s for a scene description", path, exc_info=True)
        return []
    return describe_shots(shots(crop_bars(frames), duration_s), clip_start_s)
