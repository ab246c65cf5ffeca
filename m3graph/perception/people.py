"""People seen by body shape when no face is usable (issue 20): how many, where they move, when they come and go.

A street scene of pedestrians whose faces are too small for the face detector left only "the scene is mostly
brown and grey, evenly lit, with a little motion". No captioning model ships its weights in a registry package,
but opencv-python carries a pedestrian detector with no download: Dalal & Triggs' HOG + linear SVM
(`cv2.HOGDescriptor_getDefaultPeopleDetector`). Per sampled frame (`fps`, shrunk to `side_px`) it finds upright
people; overlapping boxes are merged (non-max suppression, plus a box mostly inside a larger one); boxes are
linked across samples into tracks by IoU with the track's predicted box (a walker moves a fraction of a body width
per half second); a track seen in fewer than `MIN_HITS` samples is dropped as a false positive. A track gives the
clip-relative times a person enters and leaves and the motion: the horizontal drift of the box centre (left to
right, right to left) and the change of the box height (towards or away from the camera: perspective).

Where the detector fails (measured in docs/people.md): people smaller than its
64 x 128 window with margins (about 100 px tall in the analysis frame, i.e. under ~1/5 of a 640-px frame are not
seen), people who are not upright (sitting, lying, bending), people cut by the frame edge or hidden behind
another for more than half their body, and crowds (boxes merge). Counts are therefore lower bounds.

Faces come first: a track whose box holds a recognised face (a face observation of the clip, within half a
second, whose box centre lies inside the person's box) is already said by the face lines ("<face_3> is on screen
from ..."), so only the remaining tracks are described, and the text says so ("with no recognised face"): the
lines never claim an identity and never double-count a person who has a face tag.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from m3graph.perception.scene import iter_frames

log = logging.getLogger(__name__)

NMS_IOU = 0.4  # boxes overlapping more than this are one person
CONTAINED = 0.7  # a box with this share of its area inside a larger kept box is a part of that person
MIN_SCORE = 0.3  # SVM margin below which a window is not a person
# A detection continues a track when its centre lies within TRACK_DIST box heights of the track's predicted centre
# and its height is within TRACK_SIZE of the track's (a walker moves ~1/6 of a body height per half second).
TRACK_DIST = 0.45
TRACK_SIZE = 1.4
TRACK_MAX_GAP_S = 3.1  # missed detections a track survives: a walker passing behind another is hidden 2-3 s
# Tracklet stitching: a track that ends and one that starts later where the first, carried on at its own velocity,
# would be (within STITCH_DIST box heights) are one person hidden or missed for up to STITCH_MAX_GAP_S (clutter:
# a lamp post, a tripod, another walker).
STITCH_MAX_GAP_S = 8.0
STITCH_DIST = 0.5
MIN_HITS = 3  # samples a track needs to count as a person (single-frame false positives are common)
EDGE_S = 0.75  # a track seen within this of the clip's first/last sample was there before/after
LATERAL = 0.15  # net horizontal drift (share of the frame width) that makes "walks from left to right"
SCALE_CHANGE = 1.25  # box height ratio last/first that makes "towards the camera" (or its inverse: "away")
MAX_GROUP_DETAIL = 4  # people of one motion group whose times are listed; the rest are counted
NUMBERS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


@dataclass(frozen=True)
class Box:
    """A person's box in the clip's own frame pixels (x, y = top left) and the detector's SVM margin."""

    x: float
    y: float
    w: float
    h: float
    score: float = 0.0

    @property
    def cx(self) -> float:
        return self.x + self.w / 2

    def iou(self, other: Box) -> float:
        ix = max(0.0, min(self.x + self.w, other.x + other.w) - max(self.x, other.x))
        iy = max(0.0, min(self.y + self.h, other.y + other.h) - max(self.y, other.y))
        inter = ix * iy
        union = self.w * self.h + other.w * other.h - inter
        return inter / union if union > 0 else 0.0

    def inside_share(self, other: Box) -> float:
        """How much of this box's area lies inside `other`."""
        ix = max(0.0, min(self.x + self.w, other.x + other.w) - max(self.x, other.x))
        iy = max(0.0, min(self.y + self.h, other.y + other.h) - max(self.y, other.y))
        return ix * iy / (self.w * self.h) if self.w * self.h > 0 else 0.0

    def holds(self, x: float, y: float) -> bool:
        return self.x <= x <= self.x + self.w and self.y <= y <= self.y + self.h


@dataclass
class Track:
    """One person followed across samples: (clip-relative seconds, box) per sample where it was detected."""

    seen: list[tuple[float, Box]] = field(default_factory=list)

    @property
    def first_s(self) -> float:
        return self.seen[0][0]

    @property
    def last_s(self) -> float:
        return self.seen[-1][0]

    def predict(self, t: float) -> Box:
        """The box expected at `t`: the last box moved by the velocity fitted to the last few detections (robust
        to one jittery box, and what carries a track across an occlusion)."""
        t1, b1 = self.seen[-1]
        recent = self.seen[-4:]
        if len(recent) < 2 or recent[-1][0] <= recent[0][0]:
            return b1
        ts = np.array([s for s, _ in recent])
        vx = float(np.polyfit(ts, [b.cx for _, b in recent], 1)[0])
        vy = float(np.polyfit(ts, [b.y + b.h / 2 for _, b in recent], 1)[0])
        return Box(b1.x + vx * (t - t1), b1.y + vy * (t - t1), b1.w, b1.h)


@dataclass(frozen=True)
class PeopleReport:
    """What the detector and the tracker found in one clip, and what it cost."""

    times: list[float]  # clip-relative seconds of the samples
    detections: list[list[Box]]  # per sample, after suppression
    tracks: list[Track]  # confirmed tracks (>= MIN_HITS samples)
    width: int
    height: int
    seconds: float  # wall time of decoding + detection + tracking

    def count_at(self, i: int) -> int:
        """People present at sample i: confirmed tracks spanning it (a missed detection inside a track counts)."""
        t = self.times[i]
        return sum(1 for tr in self.tracks if tr.first_s - 1e-6 <= t <= tr.last_s + 1e-6)


def suppress(boxes: Sequence[Box], iou: float = NMS_IOU, contained: float = CONTAINED) -> list[Box]:
    """Greedy non-max suppression by score; also drops a box mostly inside a kept one (HOG fires on a person and
    on a window around the same person at a larger scale)."""
    kept: list[Box] = []
    for b in sorted(boxes, key=lambda b: -b.score):
        if all(b.iou(k) <= iou and b.inside_share(k) < contained and k.inside_share(b) < contained for k in kept):
            kept.append(b)
    return kept


def _detector() -> Any:
    import cv2

    hog = cv2.HOGDescriptor()
    # The static method's stub says Sequence[float]; it returns the float32 array setSVMDetector takes (asarray
    # hands that same array back).
    hog.setSVMDetector(np.asarray(cv2.HOGDescriptor.getDefaultPeopleDetector(), dtype=np.float32))
    return hog


def detect(hog: Any, frame: np.ndarray, scale: float) -> list[Box]:
    """Person boxes in one analysis frame, mapped back to clip pixels (÷ `scale`), suppressed."""
    rects, weights = hog.detectMultiScale(frame, winStride=(8, 8), padding=(8, 8), scale=1.08)
    boxes = [Box(x / scale, y / scale, w / scale, h / scale, float(s))
             for (x, y, w, h), s in zip(np.asarray(rects).reshape(-1, 4), np.asarray(weights).ravel(), strict=True)
             if float(s) >= MIN_SCORE]
    return suppress(boxes)


def _distance(pred: Box, b: Box) -> float:
    """Centre distance in predicted box heights; infinite when the sizes differ too much to be one person."""
    if not 1 / TRACK_SIZE <= b.h / max(pred.h, 1e-6) <= TRACK_SIZE:
        return math.inf
    return math.hypot(b.cx - pred.cx, (b.y + b.h / 2) - (pred.y + pred.h / 2)) / max(pred.h, 1e-6)


def track(times: Sequence[float], detections: Sequence[Sequence[Box]]) -> list[Track]:
    """Greedy matching of each sample's boxes to the open tracks' predicted boxes, nearest first (gated)."""
    open_tracks: list[Track] = []
    closed: list[Track] = []
    for t, boxes in zip(times, detections, strict=True):
        still = [tr for tr in open_tracks if t - tr.last_s <= TRACK_MAX_GAP_S + 1e-6]
        closed += [tr for tr in open_tracks if tr not in still]
        pairs = sorted((_distance(tr.predict(t), b), i, j) for i, tr in enumerate(still) for j, b in enumerate(boxes))
        used_t: set[int] = set()
        used_b: set[int] = set()
        for dist, i, j in pairs:
            if dist > TRACK_DIST:
                break
            if i in used_t or j in used_b:
                continue
            still[i].seen.append((t, boxes[j]))
            used_t.add(i)
            used_b.add(j)
        open_tracks = still + [Track([(t, b)]) for j, b in enumerate(boxes) if j not in used_b]
    return [tr for tr in stitch(closed + open_tracks) if len(tr.seen) >= MIN_HITS]


def stitch(tracks: Sequence[Track]) -> list[Track]:
    """Joins a track to the earliest later one that starts where it was heading (nearest first); a later track
    joins at most one earlier track. Needs >= 2 samples in the earlier track (a velocity) when the gap is long."""
    out = sorted(tracks, key=lambda tr: tr.first_s)
    merged = True
    while merged:
        merged = False
        best: tuple[float, int, int] | None = None
        for i, a in enumerate(out):
            for j, b in enumerate(out):
                gap = b.first_s - a.last_s
                if i == j or gap <= 0 or gap > STITCH_MAX_GAP_S or (gap > TRACK_MAX_GAP_S and len(a.seen) < 2):
                    continue
                d = _distance(a.predict(b.first_s), b.seen[0][1])
                if d <= STITCH_DIST and (best is None or d < best[0]):
                    best = (d, i, j)
        if best is not None:
            _, i, j = best
            out[i].seen.extend(out[j].seen)
            del out[j]
            merged = True
    return out


def motion(tr: Track, width: int) -> str:
    """The verb phrase for a track: sideways drift first (what a viewer names), then depth, else standing."""
    ts = np.array([t for t, _ in tr.seen])
    cx = np.array([b.cx for _, b in tr.seen])
    hs = np.array([b.h for _, b in tr.seen])
    slope = float(np.polyfit(ts, cx, 1)[0]) if ts[-1] > ts[0] else 0.0
    drift = slope * (ts[-1] - ts[0]) / max(width, 1)
    k = max(1, len(hs) // 3)
    ratio = float(np.median(hs[-k:]) / max(np.median(hs[:k]), 1e-6))
    if drift >= LATERAL:
        return "walk from left to right" if ratio < SCALE_CHANGE else "walk from left to right, towards the camera"
    if drift <= -LATERAL:
        return "walk from right to left" if ratio < SCALE_CHANGE else "walk from right to left, towards the camera"
    if ratio >= SCALE_CHANGE:
        return "walk towards the camera"
    if ratio <= 1 / SCALE_CHANGE:
        return "walk away from the camera"
    return "stay in one place"


def accounted_by_faces(tr: Track, faces: Sequence[tuple[float, tuple[int, int, int, int]]], clip_start_s: float,
                       near_s: float = 0.5) -> bool:
    """True when a recognised face (absolute time, x1 y1 x2 y2) sits inside this person's box at about that time."""
    for t_abs, (x1, y1, x2, y2) in faces:
        t = t_abs - clip_start_s
        fx, fy = (x1 + x2) / 2, (y1 + y2) / 2
        if any(abs(t - ts) <= near_s and b.holds(fx, fy) for ts, b in tr.seen):
            return True
    return False


def _number(n: int) -> str:
    return NUMBERS[n] if n < len(NUMBERS) else str(n)


def _when(tr: Track, start: float, end: float, clip_start_s: float) -> str:
    came = "is there from the start" if tr.first_s <= start + EDGE_S else f"enters at {clip_start_s + tr.first_s:.1f} s"
    went = "stays to the end" if tr.last_s >= end - EDGE_S else f"leaves at {clip_start_s + tr.last_s:.1f} s"
    return f"{came} and {went}"


def describe(report: PeopleReport, clip_start_s: float,
             faces: Sequence[tuple[float, tuple[int, int, int, int]]] = ()) -> list[tuple[float, str]]:
    """(absolute time, sentence) lines for the people no face accounts for; times in video seconds, like every
    other line of the clip's memory (the clip start is added to the clip-relative track times)."""
    if not report.times:
        return []
    unnamed = [tr for tr in report.tracks if not accounted_by_faces(tr, faces, clip_start_s)]
    if not unnamed:
        return []
    start, end = report.times[0], report.times[-1]
    at_once = max(sum(1 for tr in unnamed if tr.first_s <= t <= tr.last_s) for t in report.times)
    n = len(unnamed)
    lines = [(clip_start_s + min(tr.first_s for tr in unnamed),
              f"{_number(n).capitalize()} {'person' if n == 1 else 'people'} with no recognised face "
              f"{'is' if n == 1 else 'are'} seen in this clip"
              + (f", at most {_number(at_once)} at once." if n > 1 else "."))]
    groups: dict[str, list[Track]] = {}
    for tr in sorted(unnamed, key=lambda tr: tr.first_s):
        groups.setdefault(motion(tr, report.width), []).append(tr)
    for verb, members in groups.items():
        k = len(members)
        subject = "One person" if k == 1 else f"{_number(k).capitalize()} people"
        verb_n = verb if k > 1 else verb.replace("walk ", "walks ", 1).replace("stay ", "stays ", 1)
        parts = [_when(tr, start, end, clip_start_s) for tr in members[:MAX_GROUP_DETAIL]]
        detail = parts[0] if k == 1 else "; ".join(f"one {p}" for p in parts)
        if k > MAX_GROUP_DETAIL:
            detail += f"; and {k - MAX_GROUP_DETAIL} more"
        lines.append((clip_start_s + members[0].first_s, f"{subject} {verb_n}: {detail}."))
    return lines


def detect_people(path: Path, fps: float = 1.0, side_px: int = 640) -> PeopleReport:
    """Sample the clip at `fps`, shrink frames to `side_px` on the long side (never enlarged), detect and track."""
    began = time.perf_counter()
    hog = _detector()
    times: list[float] = []
    found: list[list[Box]] = []
    size = (0, 0)
    for t, small, scale, native in iter_frames(path, fps, side_px, enlarge=False):
        times.append(t)
        found.append(detect(hog, small, scale))
        size = native
    height, width = size
    return PeopleReport(times, found, track(times, found), width, height, time.perf_counter() - began)


def describe_people(path: str | Path | None, clip_start_s: float,
                    faces: Sequence[tuple[float, tuple[int, int, int, int]]] = (), fps: float = 1.0,
                    side_px: int = 640) -> list[tuple[float, str]]:
    """People lines for a clip file; [] without a readable video. Never fails memorization (a description is
    extra)."""
    if path is None or not Path(path).is_file():
        return []
    try:
        report = detect_people(Path(path), fps, side_px)
    except Exception:  # noqa: BLE001 - a description is extra: never fail memorization over it
        log.warning("could not detect people in %s", path, exc_info=True)
        return []
    log.debug("people in %s: %d tracks in %.2f s", path, len(report.tracks), report.seconds)
    return describe(report, clip_start_s, faces)
