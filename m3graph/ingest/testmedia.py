"""Generated test videos with real faces and distinct synthetic voices, plus their ground truth.

Nothing is committed: the face photos come from the source tarballs of `face_recognition` 1.3.0 and
`insightface` 2.1 (fetched once with ``pip download``; they ship test photos), the voices from espeak-ng, and
the videos are assembled with ffmpeg. The manifest says who is on screen when, who says which line when,
and which words a transcript must contain, so tests can check identities and ASR against it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

SDISTS = {"face_recognition-1.3.0.tar.gz": "face_recognition==1.3.0", "insightface-2.1.tar.gz": "insightface==2.1"}
PHOTOS = {
    "obama": ("face_recognition-1.3.0.tar.gz", "face_recognition-1.3.0/tests/test_images/obama.jpg"),
    "obama2": ("face_recognition-1.3.0.tar.gz", "face_recognition-1.3.0/tests/test_images/obama2.jpg"),
    "biden": ("face_recognition-1.3.0.tar.gz", "face_recognition-1.3.0/tests/test_images/biden.jpg"),
}
VOICES = {  # espeak-ng voice, pitch, speed: three voices Resemblyzer separates
    "A": ("en-us+m3", 30, 160),
    "B": ("en-us+f3", 75, 170),
}
PERSON_OF_VOICE = {"A": "obama", "B": "biden"}
SR = 16000
WIDTH, HEIGHT = 640, 480


@dataclass
class Line:
    voice: str
    start_s: float
    text: str
    keywords: list[str]
    end_s: float = 0.0
    person: str = ""


@dataclass
class Shot:
    start_s: float
    end_s: float
    people: list[str]  # photo keys on screen, left to right
    photos: list[str] = field(default_factory=list)


@dataclass
class VideoSpec:
    video_id: str
    duration_s: float
    shots: list[Shot]
    lines: list[Line]
    audio: bool = True
    path: str = ""


def _specs() -> list[VideoSpec]:
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

    def video(self, video_id: str) -> VideoSpec:
        return next(v for v in self.videos if v.video_id == video_id)

    def path(self, video_id: str) -> Path:
        return Path(self.video(video_id).path)

    @staticmethod
    def person(photo: str) -> str:
        return "obama" if photo.startswith("obama") else photo


def ensure_sdists(cache: Path) -> Path:
    """Downloads the two source tarballs once (no build step runs: only the archives are fetched)."""
    missing = [spec for name, spec in SDISTS.items() if not (cache / name).is_file()]
    if missing:
        cache.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=cache.parent, prefix=".sdists-") as tmp:
            cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                   "--no-build-isolation", "--disable-pip-version-check", "-d", tmp, *missing]
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, check=False)
            for name in SDISTS:
                got = Path(tmp) / name
                if got.is_file():
                    got.replace(cache / name)
            if any(not (cache / name).is_file() for name in SDISTS):
                raise RuntimeError(f"could not download the test photos with {' '.join(cmd)}:\n{proc.stderr[-2000:]}")
    return cache


def extract_photos(cache: Path, out: Path) -> dict[str, Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    for key, (sdist, member) in PHOTOS.items():
        target = out / f"{key}{Path(member).suffix}"
        if not target.exists():
            with tarfile.open(cache / sdist) as tar:
                data = tar.extractfile(member)
                if data is None:
                    raise RuntimeError(f"{member} is missing from {sdist}")
                target.write_bytes(data.read())
        paths[key] = target
    return paths


def _speak(line: Line, out: Path) -> np.ndarray:
    import soundfile

    voice, pitch, speed = VOICES[line.voice]
    raw = out.with_suffix(".raw.wav")
    subprocess.run(["espeak-ng", "-v", voice, "-p", str(pitch), "-s", str(speed), "-w", str(raw), line.text],
                   check=True, capture_output=True, timeout=60)
    subprocess.run(["sox", str(raw), "-r", str(SR), "-c", "1", "-b", "16", str(out)], check=True,
                   capture_output=True, timeout=60)
    raw.unlink()
    wave, _ = soundfile.read(out, dtype="float32")
    nonzero = np.flatnonzero(np.abs(wave) > 1e-3)  # espeak pads with silence; keep the truth tight
    return wave[: nonzero[-1] + 1] if nonzero.size else wave


def _track(spec: VideoSpec, work: Path) -> Path:
    import soundfile

    track = np.zeros(int(spec.duration_s * SR), dtype=np.float32)
    for i, line in enumerate(spec.lines):
        wave = _speak(line, work / f"{spec.video_id}_{i}.wav")
        start = int(line.start_s * SR)
        track[start:start + len(wave)] += wave[: len(track) - start]
        line.end_s = round(line.start_s + len(wave) / SR, 3)
        line.person = PERSON_OF_VOICE[line.voice]
    path = work / f"{spec.video_id}.wav"
    soundfile.write(path, track, SR, subtype="PCM_16")
    return path


def _video(spec: VideoSpec, photos: dict[str, Path], audio: Path | None, out: Path) -> None:
    inputs: list[str] = []
    filters: list[str] = []
    for i, shot in enumerate(spec.shots):
        parts = []
        cell = WIDTH // len(shot.people)
        for j, person in enumerate(shot.people):
            inputs += ["-loop", "1", "-t", f"{shot.end_s - shot.start_s}", "-i", str(photos[person])]
            idx = len(inputs) // 6 - 1
            filters.append(f"[{idx}:v]scale={cell}:{HEIGHT}:force_original_aspect_ratio=decrease,"
                           f"pad={cell}:{HEIGHT}:(ow-iw)/2:(oh-ih)/2,setsar=1,fps=25[s{i}p{j}]")
            parts.append(f"[s{i}p{j}]")
        stack = f"{''.join(parts)}hstack=inputs={len(parts)}" if len(parts) > 1 else f"{parts[0]}null"
        filters.append(f"{stack}[s{i}]")
        shot.photos = list(shot.people)
        shot.people = [Manifest.person(p) for p in shot.people]
    filters.append(f"{''.join(f'[s{i}]' for i in range(len(spec.shots)))}concat=n={len(spec.shots)}:v=1:a=0[v]")
    cmd = ["ffmpeg", "-y", "-v", "error", *inputs]
    if audio is not None:
        cmd += ["-i", str(audio)]
    cmd += ["-filter_complex", ";".join(filters), "-map", "[v]"]
    if audio is not None:
        cmd += ["-map", f"{len(inputs) // 6}:a", "-c:a", "aac", "-b:a", "96k"]
    cmd += ["-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p", "-force_key_frames",
            "expr:gte(t,n_forced*30)", "-t", f"{spec.duration_s}", str(out)]
    subprocess.run(cmd, check=True, capture_output=True, timeout=600)


def build_test_media(out_dir: Path = Path(".m3graph/testmedia")) -> Manifest:
    """Builds every video (skipping ones that exist) and writes manifest.json; returns the manifest."""
    for tool in ("ffmpeg", "espeak-ng", "sox"):
        if shutil.which(tool) is None:
            raise RuntimeError(f"{tool} is needed to build the test media (Debian package {tool})")
    out_dir = out_dir.resolve()
    photos = extract_photos(ensure_sdists(out_dir / "sdists"), out_dir / "photos")
    work = out_dir / "work"
    work.mkdir(parents=True, exist_ok=True)
    specs = _specs()
    for spec in specs:
        target = out_dir / f"{spec.video_id}.mp4"
        audio = _track(spec, work) if spec.audio else None  # also fills in the true line end times
        if not target.exists():
            tmp = target.with_name(target.stem + ".part.mp4")
            _video(spec, photos, audio, tmp)
            tmp.replace(target)
        else:
            for shot in spec.shots:
                shot.photos, shot.people = list(shot.people), [Manifest.person(p) for p in shot.people]
        spec.path = str(target)
    manifest = Manifest(root=str(out_dir), videos=specs)
    (out_dir / "manifest.json").write_text(json.dumps(asdict(manifest), indent=2), encoding="utf-8")
    return manifest


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(".m3graph/testmedia")
    manifest = build_test_media(out)
    for video in manifest.videos:
        print(f"{video.video_id}: {video.path} ({video.duration_s:.0f} s, {len(video.lines)} lines)")


if __name__ == "__main__":
    main()
