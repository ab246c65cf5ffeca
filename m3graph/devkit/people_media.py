"""A street video with a known number of walking people and no usable face (issue 20, item 5), and its scoring.

The pedestrians are real: OpenCV's own sample `samples/data/vtest.avi` (a campus walkway filmed from a first
floor, 768 x 576, 10 fps), which the opencv-python-headless 4.14.0.94 source tarball carries. The tarball is fetched
once with ``pip download`` and pinned by SHA-256 (so is the extracted video); only that member is read, and the
96 MB tarball is deleted after. The background is the per-pixel median of the video's frames (the empty walkway);
each walker is one person cut out of one frame (a fixed box, listed below, minus the background: the largest
connected foreground blob) and slid along a known path at a known scale, so the true number of people in every
frame, their directions and their enter/leave times are known. The people glide (a frozen stride): what is
tested is counting and motion, not gait. Faces stay ~15 px high, under the face detector's minimum (24 px):
this is a clip with people but no usable face.

``score`` compares a `PeopleReport` with the truth: mean absolute count error per sample, the per-clip count
error (people in all), enter/leave timing errors of the matched tracks, and each track's motion phrase.
"""

from __future__ import annotations

import hashlib
import json
import math
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from m3graph.perception.people import PeopleReport, motion

SDIST = "opencv_python_headless-4.14.0.94.tar.gz"
SDIST_SHA256 = "4afa2ea1214453648be88259f035712454faa9039b686de7753569ba8eec1577"
MEMBER = "opencv_python_headless-4.14.0.94/opencv/samples/data/vtest.avi"
VTEST_SHA256 = "45cddc9490be69345cbdab64ca583be65987e864ca408038e648db99e10516cf"
DEFAULT_OUT = Path(".m3graph") / "people-media"
W, H, FPS, DURATION_S = 768, 576, 10, 30.0
# (vtest frame, x, y, w, h): HOG boxes around five isolated walkers (found once with the detector, checked by eye).
SPRITES = [(120, 496, 193, 67, 133), (200, 598, 244, 74, 147), (480, 448, 219, 70, 139),
           (680, 431, 222, 71, 142), (440, 595, 228, 74, 149)]


class PeopleMediaError(RuntimeError):
    """The pedestrian source could not be fetched or verified."""


@dataclass(frozen=True)
class Walker:
    """One person: visible from t_in to t_out (clip seconds); feet centre and scale interpolated linearly between
    (x0, y0, s0) and (x1, y1, s1) over [t0, t1] and held outside it."""

    sprite: int
    t_in: float
    t_out: float
    t0: float
    t1: float
    x0: float
    y0: float
    s0: float
    x1: float
    y1: float
    s1: float
    motion: str  # the phrase `people.motion` must give

    def at(self, t: float) -> tuple[float, float, float]:
        k = min(1.0, max(0.0, (t - self.t0) / (self.t1 - self.t0)))
        return self.x0 + (self.x1 - self.x0) * k, self.y0 + (self.y1 - self.y0) * k, self.s0 + (self.s1 - self.s0) * k


# Walkers crossing the frame enter/leave when their feet centre crosses the frame edge (half the body inside).
WALKERS = [
    Walker(0, 1.0, 13.0, 1.0, 13.0, 0, 470, 1.5, W, 470, 1.5, "walk from left to right"),
    Walker(1, 4.0, 18.0, 4.0, 18.0, 0, 400, 1.4, W, 400, 1.4, "walk from left to right"),
    Walker(2, 12.0, 26.0, 12.0, 26.0, W, 330, 1.3, 0, 330, 1.3, "walk from right to left"),
    Walker(3, 0.0, 30.0, 0.0, 18.0, 300, 300, 1.2, 360, 560, 2.2, "walk towards the camera"),
]


def truth_count(t: float) -> int:
    return sum(1 for w in WALKERS if w.t_in <= t < w.t_out)


def _sha(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fetch_vtest(out: Path = DEFAULT_OUT) -> Path:
    """vtest.avi, downloaded (once) from the pinned source tarball; raises on a failed download or a wrong hash."""
    target = out / "vtest.avi"
    if target.is_file() and _sha(target) == VTEST_SHA256:
        return target
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out, prefix=".download-") as tmp:
        # Build isolation stays on: pip's metadata step needs the tarball's own build requirements (as wheels).
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", "opencv-python-headless",
               "--disable-pip-version-check", "--no-input", "-d", tmp, "opencv-python-headless==4.14.0.94"]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, check=False)
        sdist = Path(tmp) / SDIST
        if not sdist.is_file():
            raise PeopleMediaError(f"could not download {SDIST} with {' '.join(cmd)}:\n{proc.stderr[-1500:]}")
        if _sha(sdist) != SDIST_SHA256:
            raise PeopleMediaError(f"{SDIST} does not match its SHA-256 pin")
        with tarfile.open(sdist) as tar:
            data = tar.extractfile(MEMBER)
            if data is None:
                raise PeopleMediaError(f"{MEMBER} is missing from {SDIST}")
            part = target.with_name("vtest.avi.part")
            part.write_bytes(data.read())
    if _sha(part) != VTEST_SHA256:
        part.unlink()
        raise PeopleMediaError("vtest.avi does not match its SHA-256 pin")
    part.replace(target)
    return target


def _frames(video: Path) -> list[np.ndarray]:
    import cv2

    cap = cv2.VideoCapture(str(video))
    out = []
    while True:
        ok, f = cap.read()
        if not ok:
            break
        out.append(f)
    cap.release()
    return out


def cut_sprites(frames: list[np.ndarray]) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
    """The empty background (median of every 5th frame) and per SPRITES entry (BGR patch, 0/1 mask)."""
    import cv2

    bg = np.median(np.stack(frames[::5]), axis=0).astype(np.uint8)
    sprites = []
    for i, x, y, w, h in SPRITES:
        crop = frames[i][y:y + h, x:x + w]
        diff = np.abs(crop.astype(np.int16) - bg[y:y + h, x:x + w].astype(np.int16)).max(axis=2)
        m = (diff > 28).astype(np.uint8)
        m = cv2.morphologyEx(m, cv2.MORPH_CLOSE, np.ones((5, 5), np.uint8))
        m = cv2.morphologyEx(m, cv2.MORPH_OPEN, np.ones((3, 3), np.uint8))
        _, lab, stats, _ = cv2.connectedComponentsWithStats(m)
        m = (lab == 1 + int(np.argmax(stats[1:, 4]))).astype(np.uint8)
        ys, xs = np.nonzero(m)
        sprites.append((crop[ys.min():ys.max() + 1, xs.min():xs.max() + 1].copy(),
                        m[ys.min():ys.max() + 1, xs.min():xs.max() + 1].copy()))
    return bg, sprites


def render(bg: np.ndarray, sprites: list[tuple[np.ndarray, np.ndarray]], t: float) -> np.ndarray:
    """One frame at clip time t: the walkers present, nearest the camera (largest feet y) drawn last."""
    import cv2

    frame = bg.copy()
    for w in sorted((w for w in WALKERS if w.t_in <= t < w.t_out), key=lambda w: w.at(t)[1]):
        fx, fy, s = w.at(t)
        patch, mask = sprites[w.sprite]
        ph, pw = max(1, round(patch.shape[0] * s)), max(1, round(patch.shape[1] * s))
        patch = cv2.resize(patch, (pw, ph), interpolation=cv2.INTER_LINEAR)
        mask = cv2.resize(mask, (pw, ph), interpolation=cv2.INTER_NEAREST)
        x0, y0 = round(fx - pw / 2), round(fy - ph)
        xa, ya, xb, yb = max(0, x0), max(0, y0), min(W, x0 + pw), min(H, y0 + ph)
        if xa >= xb or ya >= yb:
            continue
        sub = mask[ya - y0:yb - y0, xa - x0:xb - x0].astype(bool)
        frame[ya:yb, xa:xb][sub] = patch[ya - y0:yb - y0, xa - x0:xb - x0][sub]
    return frame


def build_people_video(out: Path = DEFAULT_OUT) -> Path:
    """The 30-s test clip (H.264 + a silent audio track) and its truth JSON beside it; rebuilt when the walkers
    change (the file name carries a hash of their definition)."""
    key = hashlib.sha256(json.dumps([asdict(w) for w in WALKERS] + [SPRITES]).encode()).hexdigest()[:12]
    video = out / f"people-{key}.mp4"
    if video.is_file():
        return video
    bg, sprites = cut_sprites(_frames(fetch_vtest(out)))
    part = video.with_name(video.name + ".part.mp4")
    cmd = ["ffmpeg", "-nostdin", "-y", "-v", "error", "-f", "rawvideo", "-pix_fmt", "bgr24", "-s", f"{W}x{H}",
           "-r", str(FPS), "-i", "-", "-f", "lavfi", "-i", "anullsrc=r=16000:cl=mono", "-t", f"{DURATION_S}",
           "-c:v", "libx264", "-preset", "veryfast", "-crf", "20", "-pix_fmt", "yuv420p", "-c:a", "aac", str(part)]
    with tempfile.TemporaryFile() as err:  # frames are streamed (300 raw frames would be 400 MB)
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stderr=err)
        assert proc.stdin is not None
        for k in range(round(DURATION_S * FPS)):
            proc.stdin.write(render(bg, sprites, k / FPS).tobytes())
        proc.stdin.close()
        if proc.wait(timeout=300) != 0:
            err.seek(0)
            raise PeopleMediaError(f"ffmpeg failed: {err.read().decode(errors='replace')[-1500:]}")
    part.replace(video)
    return video


@dataclass(frozen=True)
class Score:
    samples: int
    count_mae: float  # mean |found - true| people per sample
    exact_share: float  # share of samples with the exact count
    people_true: int
    people_found: int  # confirmed tracks
    enter_errors_s: list[float]  # per matched walker whose entry is inside the clip
    leave_errors_s: list[float]
    motions: list[tuple[str, str]]  # (true phrase, found phrase) per matched walker
    seconds: float


def score(report: PeopleReport) -> Score:
    """Truth against the report. A walker is matched to the track that spans most of its visible samples."""
    errs = [abs(report.count_at(i) - truth_count(t)) for i, t in enumerate(report.times)]
    enter, leave, motions = [], [], []
    overlaps = sorted(((sum(1 for t in report.times if w.t_in <= t < w.t_out and tr.first_s <= t <= tr.last_s), i, j)
                       for i, w in enumerate(WALKERS) for j, tr in enumerate(report.tracks)), reverse=True)
    match: dict[int, int] = {}
    for n_common, i, j in overlaps:  # one track per walker, most shared samples first
        if n_common > 0 and i not in match and j not in match.values():
            match[i] = j
    for i, w in enumerate(WALKERS):
        if i not in match:
            motions.append((w.motion, "missed"))
            continue
        best = report.tracks[match[i]]
        if w.t_in > 0:
            enter.append(round(best.first_s - w.t_in, 2))
        if w.t_out < DURATION_S:
            leave.append(round(best.last_s - w.t_out, 2))
        motions.append((w.motion, motion(best, report.width)))
    n = max(len(errs), 1)
    return Score(len(errs), round(sum(errs) / n, 3), round(sum(e == 0 for e in errs) / n, 3), len(WALKERS),
                 len(report.tracks), enter, leave, motions, round(report.seconds, 2))


def where_it_fails(out: Path = DEFAULT_OUT, side_px: int = 640) -> list[tuple[str, int, int]]:
    """Detection rate of single people on the empty walkway by height (px in the analysis frame), tilt from upright,
    and how much of the body is hidden (a grey bar across it): each of the five sprites at three places."""
    import cv2

    from m3graph.perception.people import _detector, detect

    bg, sprites = cut_sprites(_frames(fetch_vtest(out)))
    hog, k = _detector(), side_px / max(W, H)
    places = [(200, 420), (400, 380), (600, 460)]

    def shown(patch: np.ndarray, mask: np.ndarray, feet: tuple[int, int]) -> bool:
        frame = bg.copy()
        ph, pw = patch.shape[:2]
        x0, y0 = feet[0] - pw // 2, feet[1] - ph
        if x0 < 0 or y0 < 0 or x0 + pw > W or y0 + ph > H:
            return False
        m = mask.astype(bool)
        frame[y0:y0 + ph, x0:x0 + pw][m] = patch[m]
        small = cv2.resize(frame, (round(W * k), round(H * k)), interpolation=cv2.INTER_AREA)
        return any(b.holds(feet[0], feet[1] - ph / 2) for b in detect(hog, small, k))

    rows: list[tuple[str, int, int]] = []
    for height in (60, 80, 100, 120, 160, 220):
        hits = n = 0
        for patch, mask in sprites:
            s = height / k / patch.shape[0]
            p2 = cv2.resize(patch, None, fx=s, fy=s)
            m2 = cv2.resize(mask, None, fx=s, fy=s, interpolation=cv2.INTER_NEAREST)
            for feet in places:
                n += 1
                hits += shown(p2, m2, feet)
        rows.append((f"upright, {height} px tall at {side_px} px", hits, n))
    base = [(cv2.resize(p, None, fx=1.5, fy=1.5), cv2.resize(m, None, fx=1.5, fy=1.5,
                                                              interpolation=cv2.INTER_NEAREST)) for p, m in sprites]
    for angle in (15, 30, 60, 90):
        hits = n = 0
        for patch, mask in base:
            ph, pw = patch.shape[:2]
            side = int(math.hypot(ph, pw)) + 2
            canvas, cmask = np.zeros((side, side, 3), np.uint8), np.zeros((side, side), np.uint8)
            oy, ox = (side - ph) // 2, (side - pw) // 2
            canvas[oy:oy + ph, ox:ox + pw], cmask[oy:oy + ph, ox:ox + pw] = patch, mask
            rot = cv2.getRotationMatrix2D((side / 2, side / 2), angle, 1.0)
            p2 = cv2.warpAffine(canvas, rot, (side, side))
            m2 = cv2.warpAffine(cmask, rot, (side, side), flags=cv2.INTER_NEAREST)
            ys, xs = np.nonzero(m2)
            p2, m2 = p2[ys.min():ys.max() + 1, xs.min():xs.max() + 1], m2[ys.min():ys.max() + 1, xs.min():xs.max() + 1]
            for feet in places:
                n += 1
                hits += shown(p2, m2, feet)
        rows.append((f"tilted {angle} degrees from upright (1.5x)", hits, n))
    for share, where in ((0.25, "lower"), (0.5, "lower"), (0.5, "left")):
        hits = n = 0
        for patch, mask in base:
            p2, m2 = patch.copy(), mask.copy()
            ph, pw = p2.shape[:2]
            if where == "lower":
                p2[ph - round(ph * share):] = 110
                m2[ph - round(ph * share):] = 1
            else:
                p2[:, :round(pw * share)] = 110
                m2[:, :round(pw * share)] = 1
            for feet in places:
                n += 1
                hits += shown(p2, m2, feet)
        rows.append((f"{where} {share:.0%} of the body hidden by a grey bar (1.5x)", hits, n))
    return rows
