"""The bad-input corpus (issue 9, point 7; the table is in docs/reliability.md, "Bad inputs").

Every input is generated here (ffmpeg, tiny files), nothing is committed. Each bad input must be refused with an
`M3GraphError` (or, for the pydantic data models, a `ValidationError`) whose message names the input, and must leave
the graph exactly as it was: a small baseline memory is written first and its canonical dump compared after.
Damaged-but-usable media (a stream that ends two frames early, an hour-long sparse video) are not bad inputs: they
are accepted, and the test says so.
"""

from __future__ import annotations

import math
import os
import pickle
import shutil
import struct
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pytest
from pydantic import ValidationError

from m3graph.embedding import TextEmbedder
from m3graph.errors import ConfigError, ImportFormatError, InvalidInputError, M3GraphError
from m3graph.graphdb.search_plan import SearchSpec
from m3graph.graphdb.store import MemoryGraph
from m3graph.graphdb.types import FaceObservation, MemoryIn, check_source_id
from m3graph.ingest.m3_import import import_pickle
from m3graph.ingest.pipeline import ingest_video_inprocess
from m3graph.ingest.safe_unpickle import load_videograph
from m3graph.ingest.video import InvalidVideoError, cut_clip, plan_clips, probe
from m3graph.settings import Settings, load_settings
from tests.helpers.graph import add_clip, canonical_dump, face_cluster, mem, rng, unit, variant, with_settings

if shutil.which("ffmpeg") is None:
    raise RuntimeError("ffmpeg is needed to generate the bad-input media (scripts/setup.sh installs it)")

BASE_VIDEO = "baseline"


# ---------------------------------------------------------------------------------------------- media


def _ffmpeg(*args: str) -> None:
    subprocess.run(["ffmpeg", "-nostdin", "-y", "-v", "error", *args], check=True, capture_output=True, timeout=120)


def _short_end_avi(out: Path, work: Path) -> Path:
    """A 9-s MPEG-4 AVI whose header declares 270 frames but whose last two frames are empty chunks: the same
    damage as OpenCV's Megamind_bugy.avi (Debian opencv-doc), where decoded video ends 2 frames early."""
    full = work / "full.avi"
    _ffmpeg("-f", "lavfi", "-i", "testsrc=size=160x120:rate=30", "-t", "9", "-c:v", "mpeg4", "-q:v", "5", str(full))
    data = bytearray(full.read_bytes())
    idx1 = data.rfind(b"idx1")
    movi = data.find(b"movi") - 4  # idx1 offsets count from the 'movi' fourcc
    (size,) = struct.unpack("<I", data[idx1 + 4 : idx1 + 8])
    entries = [idx1 + 8 + 16 * k for k in range(size // 16)]
    video = [e for e in entries if data[e : e + 4] == b"00dc"]
    for entry in video[-2:]:
        (offset,) = struct.unpack("<I", data[entry + 8 : entry + 12])
        chunk = movi + 4 + offset
        assert data[chunk : chunk + 4] == b"00dc"
        data[chunk + 4 : chunk + 8] = struct.pack("<I", 0)  # a zero-length chunk: a dropped frame
        data[entry + 12 : entry + 16] = struct.pack("<I", 0)
    out.write_bytes(bytes(data))
    return out


@pytest.fixture(scope="module")
def media(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("bad-media")
    root.chmod(0o755)  # the unreadable-file case runs as another user, who must reach the directory
    p = {name: root / name for name in (
        "base.mp4", "faststart.mp4", "audio.m4a", "audio.wav", "image.png", "big.mp4", "hour.mp4")}
    src = ["-f", "lavfi", "-i", "testsrc=size=160x120:rate=25", "-f", "lavfi", "-i",
           "sine=frequency=440:sample_rate=16000", "-t", "3", "-c:v", "libx264", "-preset", "ultrafast",
           "-pix_fmt", "yuv420p", "-c:a", "aac"]
    _ffmpeg(*src, str(p["base.mp4"]))
    _ffmpeg(*src, "-movflags", "+faststart", str(p["faststart.mp4"]))
    _ffmpeg("-f", "lavfi", "-i", "sine=frequency=440", "-t", "2", "-c:a", "aac", str(p["audio.m4a"]))
    _ffmpeg("-f", "lavfi", "-i", "sine=frequency=440", "-t", "2", str(p["audio.wav"]))
    _ffmpeg("-f", "lavfi", "-i", "testsrc=size=160x120", "-frames:v", "1", str(p["image.png"]))
    _ffmpeg("-f", "lavfi", "-i", "color=c=gray:s=640x480:r=5", "-t", "1", "-c:v", "libx264", "-preset", "ultrafast",
            "-pix_fmt", "yuv420p", str(p["big.mp4"]))
    # An hour at one frame every 10 s: 6.5 kB, and valid (no frame in the last second is not truncation).
    _ffmpeg("-f", "lavfi", "-i", "color=c=gray:s=64x64:r=1/10", "-t", "3600", "-c:v", "libx264", "-preset",
            "ultrafast", "-pix_fmt", "yuv420p", str(p["hour.mp4"]))
    base = p["base.mp4"].read_bytes()
    fast = p["faststart.mp4"].read_bytes()
    derived = {
        "empty.mp4": b"",
        "text.mp4": b"this is a shopping list, not a video\n",
        "truncated-moov-at-end.mp4": base[: len(base) * 6 // 10],
        "truncated-faststart.mp4": fast[: len(fast) // 2],
        "garbage-header.mp4": bytes(np.random.default_rng(7).integers(0, 256, 4096, dtype=np.uint8)) + base[4096:],
        "wav-named.mp4": p["audio.wav"].read_bytes(),
        "png-named.mp4": p["image.png"].read_bytes(),
        "random.mp4": bytes(np.random.default_rng(8).integers(0, 256, 50_000, dtype=np.uint8)),
    }
    for name, data in derived.items():
        (root / name).write_bytes(data)
        p[name] = root / name
    _ffmpeg("-f", "lavfi", "-i", "testsrc=size=160x120", "-frames:v", "1", str(root / "image.jpg"))
    p["image.jpg"] = root / "image.jpg"
    p["short-end.avi"] = _short_end_avi(root / "short-end.avi", root)
    p["dir.mp4"] = root / "dir.mp4"
    p["dir.mp4"].mkdir()
    p["missing.mp4"] = root / "missing.mp4"
    p["fifo.mp4"] = root / "fifo.mp4"
    os.mkfifo(p["fifo.mp4"])
    p["dangling-link.mp4"] = root / "dangling-link.mp4"
    p["dangling-link.mp4"].symlink_to(root / "nowhere.mp4")
    p["loop-link.mp4"] = root / "loop-link.mp4"
    p["loop-link.mp4"].symlink_to(root / "loop-link.mp4")
    p["link-to-base.mp4"] = root / "link-to-base.mp4"
    p["link-to-base.mp4"].symlink_to(p["base.mp4"])
    p["unreadable.mp4"] = root / "unreadable.mp4"
    shutil.copy(p["base.mp4"], p["unreadable.mp4"])
    p["unreadable.mp4"].chmod(0)
    return p


# ---------------------------------------------------------------------------------------------- the graph


@pytest.fixture
def baseline(graph: MemoryGraph, tmp_path: Path) -> Iterator[tuple[MemoryGraph, list[str]]]:
    """A graph with one clip, face and memory (so "unchanged" means something), data files under tmp_path."""
    g = with_settings(graph, graph.settings.model_copy(update={"data_dir": tmp_path / "data"}))
    gen = rng(3)
    add_clip(g, BASE_VIDEO, 0)
    add_clip(g, BASE_VIDEO, 1)  # registered, not yet resolved
    (face,) = g.resolve_faces(BASE_VIDEO, 0, [face_cluster(0, unit(g.settings.identity.face_dim, gen), gen)])
    g.write_memories(BASE_VIDEO, 0, [mem("episodic", f"<face_{face.entity_id}> waves.",
                                         unit(g.settings.memory.text_dim, gen))])
    before = canonical_dump(g)
    yield g, before
    assert canonical_dump(g) == before, "a refused input changed the graph"


def _refused(call: Callable[[], Any], kind: type[BaseException], *names: str) -> str:
    """Runs `call`, which must raise `kind` with a one-line message naming every one of `names`."""
    with pytest.raises(kind) as err:
        call()
    message = str(err.value)
    for name in names:
        assert name in message, f"{message!r} does not name {name!r}"
    if isinstance(err.value, M3GraphError):
        assert "\n" not in message.strip(), message
    return message


# ---------------------------------------------------------------------------------------------- videos

# file -> what the refusal says (besides naming the file)
BAD_VIDEOS = {
    "empty.mp4": "empty (0 bytes)",
    "text.mp4": "not a video file",
    "random.mp4": "not a video file",
    "truncated-moov-at-end.mp4": "corrupt or truncated MP4",
    "truncated-faststart.mp4": "corrupt or truncated",
    "garbage-header.mp4": "not a video file",
    "audio.m4a": "has no video stream",
    "audio.wav": "has no video stream",
    "wav-named.mp4": "has no video stream",
    "image.png": "still image",
    "image.jpg": "still image",
    "png-named.mp4": "still image",
    "dir.mp4": "is a directory",
    "missing.mp4": "no such file",
    "dangling-link.mp4": "no such file",
    "loop-link.mp4": "cannot be resolved",
    "fifo.mp4": "not a regular file",
}


@pytest.mark.parametrize("name", sorted(BAD_VIDEOS))
def test_bad_video_is_refused_before_anything_is_written(
        name: str, media: dict[str, Path], baseline: tuple[MemoryGraph, list[str]], embedder: TextEmbedder) -> None:
    g, _ = baseline
    vid = "bad-" + name.replace(".", "-")
    _refused(lambda: ingest_video_inprocess(g, embedder, media[name], vid), InvalidVideoError, name,
             BAD_VIDEOS[name])
    assert not (g.settings.data_dir / "videos" / vid).exists()
    assert not list(g.settings.data_dir.rglob(f"*{vid}*")), "no plan, clip or cache file for a refused video"


def test_huge_resolution_is_refused(media: dict[str, Path], baseline: tuple[MemoryGraph, list[str]],
                                    embedder: TextEmbedder) -> None:
    """The limit is `perception.max_resolution_px` (default 8192x8192); lowered here so the file stays tiny."""
    g, _ = baseline
    small = with_settings(g, variant(g.settings, perception={"max_resolution_px": 320 * 240}))
    _refused(lambda: ingest_video_inprocess(small, embedder, media["big.mp4"], "bad-big"), InvalidVideoError,
             "big.mp4", "absurd resolution 640x480")


def test_unreadable_video_is_refused(media: dict[str, Path]) -> None:
    """Mode 000; run as `nobody` when the tests run as root (root reads anything)."""
    code = ("import sys\nfrom m3graph.ingest.video import probe\ntry:\n    probe(sys.argv[1])\n"
            "except Exception as e:\n    print(type(e).__name__, e)\n")
    drop = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"] if os.geteuid() == 0 else []
    out = subprocess.run([*drop, sys.executable, "-c", code, str(media["unreadable.mp4"])], capture_output=True,
                         text=True, timeout=60, cwd=Path(__file__).resolve().parents[2])
    assert out.stdout.startswith("InvalidVideoError"), out.stdout + out.stderr
    assert "unreadable.mp4: cannot be read" in out.stdout


def test_unreadable_directory_on_the_path_is_refused(tmp_path: Path) -> None:
    """A file behind a directory this user may not enter: `stat` itself fails (PermissionError escaped before)."""
    if os.geteuid() == 0:
        code = ("import sys\nfrom m3graph.ingest.video import probe\ntry:\n    probe(sys.argv[1])\n"
                "except Exception as e:\n    print(type(e).__name__, e)\n")
        closed = tmp_path / "closed"
        closed.mkdir(mode=0o700)
        (closed / "v.mp4").write_bytes(b"x")
        os.chmod(tmp_path, 0o755)
        out = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", sys.executable, "-c",
                              code, str(closed / "v.mp4")], capture_output=True, text=True, timeout=60,
                             cwd=Path(__file__).resolve().parents[2])
        assert out.stdout.startswith("InvalidVideoError") and "v.mp4: cannot be read" in out.stdout, out
    else:
        closed = tmp_path / "closed"
        closed.mkdir()
        (closed / "v.mp4").write_bytes(b"x")
        closed.chmod(0)
        try:
            _refused(lambda: probe(closed / "v.mp4"), InvalidVideoError, "v.mp4", "cannot be read")
        finally:
            closed.chmod(0o700)


def test_symlink_to_a_video_is_accepted(media: dict[str, Path]) -> None:
    info = probe(media["link-to-base.mp4"])
    assert info.width == 160 and math.isclose(info.duration_s, 3.0, abs_tol=0.1)


def test_hour_long_sparse_video_is_accepted(media: dict[str, Path], tmp_path: Path) -> None:
    """One frame every 10 s for an hour: 120 clips; the last cuts and samples (it used to fail as 'truncated')."""
    info = probe(media["hour.mp4"])
    windows = plan_clips(info.duration_s, 30.0)
    assert len(windows) == 120 and windows[-1].end_s == pytest.approx(3600.0)
    cut_clip(media["hour.mp4"], windows[-1], tmp_path / "last.mp4")
    assert (tmp_path / "last.mp4").stat().st_size > 0


def test_stream_ending_two_frames_early_is_ingested_with_a_warning(
        media: dict[str, Path], tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Megamind_bugy.avi's damage: it failed at cut with 'got 8.933 s of video instead of 9.000 s'."""
    info = probe(media["short-end.avi"])
    (window,) = plan_clips(info.duration_s, 30.0)
    assert window.end_s == pytest.approx(9.0)
    with caplog.at_level("WARNING", logger="m3graph.ingest.video"):
        out = cut_clip(media["short-end.avi"], window, tmp_path / "clip.mp4")
    assert out.stat().st_size > 0
    (warning,) = [r.getMessage() for r in caplog.records]
    assert "short-end.avi" in warning and "0.067 s before the end" in warning
    assert "8.933 s instead of 9.000 s" in warning
    caplog.clear()
    with caplog.at_level("WARNING", logger="m3graph.ingest.video"):
        cut_clip(media["short-end.avi"], window, tmp_path / "clip.mp4")  # rerun keeps the short clip
    assert not caplog.records


# ---------------------------------------------------------------------------------------------- video ids

BAD_IDS = {
    "quote": "it's",
    "double-quote": 'say "cheese"',
    "cypher-fragment": "v'}) DETACH DELETE x //",
    "cypher-union": "x' OR 1=1 RETURN 1 //",
    "parent-dir": "../escape",
    "slash": "a/b",
    "backslash": "a\\b",
    "unicode-cjk": "视频",
    "unicode-accent": "café",
    "empty": "",
    "space": "my video",
    "newline": "a\nb",
    "too-long": "v" * 129,
    "leading-dash": "-rf",
}


@pytest.mark.parametrize("case", sorted(BAD_IDS))
def test_bad_video_id_is_refused_before_any_file_or_node(
        case: str, media: dict[str, Path], baseline: tuple[MemoryGraph, list[str]], embedder: TextEmbedder) -> None:
    g, _ = baseline
    bad = BAD_IDS[case]
    _refused(lambda: ingest_video_inprocess(g, embedder, media["base.mp4"], bad), InvalidInputError, repr(bad))
    assert not g.settings.data_dir.exists() or not any(g.settings.data_dir.rglob("*")), "nothing written"
    _refused(lambda: check_source_id(bad), InvalidInputError, repr(bad))


@pytest.mark.parametrize("case", ["quote", "cypher-fragment", "cypher-union", "unicode-cjk"])
def test_bad_video_id_in_a_search_finds_nothing(case: str, baseline: tuple[MemoryGraph, list[str]]) -> None:
    """Reading with any id is harmless: ids are query parameters, never Cypher text."""
    g, _ = baseline
    vec = unit(g.settings.memory.text_dim, rng(3)).tolist()
    assert g.search.search(SearchSpec(vec, videos=[BAD_IDS[case]], threshold=-1.0)) == []


def test_bad_video_id_in_an_import_is_refused(baseline: tuple[MemoryGraph, list[str]], tmp_path: Path,
                                              embedder: TextEmbedder) -> None:
    g, _ = baseline
    path = tmp_path / "g.pkl"
    path.write_bytes(pickle.dumps({"nodes": {}}))
    _refused(lambda: import_pickle(g, path, BAD_IDS["cypher-fragment"], embedder), InvalidInputError,
             repr(BAD_IDS["cypher-fragment"]))


# ---------------------------------------------------------------------------------------------- vectors, k, clips


def _search_cases(dim: int) -> dict[str, tuple[dict[str, Any], str]]:
    good = [1.0] + [0.0] * (dim - 1)
    return {
        "nan-vector": ({"query": [math.nan] * dim}, "NaN"),
        "inf-vector": ({"query": [math.inf] + [0.0] * (dim - 1)}, "infinity"),
        "zero-vector": ({"query": [0.0] * dim}, "all zeros"),
        "wrong-dimension": ({"query": [1.0] * 10}, "10 dimensions"),
        "empty-vector": ({"query": []}, "0 dimensions"),
        "k-zero": ({"query": good, "k": 0}, "got 0"),
        "k-negative": ({"query": good, "k": -3}, "got -3"),
        "k-huge": ({"query": good, "k": 10**9}, "got 1000000000"),
        "before-clip-negative": ({"query": good, "before_clip": -1}, "got -1"),
    }


@pytest.mark.parametrize("mode", ["clip", "node"])
@pytest.mark.parametrize("case", sorted(_search_cases(4)))
def test_bad_search_request_is_refused(case: str, mode: Literal["clip", "node"],
                                       baseline: tuple[MemoryGraph, list[str]]) -> None:
    g, _ = baseline
    kwargs, says = _search_cases(g.settings.memory.text_dim)[case]
    vector = kwargs.pop("query")
    _refused(lambda: g.search.search(SearchSpec(vector, mode=mode, videos=[BASE_VIDEO], **kwargs)), InvalidInputError,
             says)


def test_bad_vectors_in_store_input_are_refused(baseline: tuple[MemoryGraph, list[str]]) -> None:
    g, _ = baseline
    dim = g.settings.identity.face_dim
    for vector, says in (([math.nan] * dim, "NaN"), ([0.0] * dim, "all zeros"), ([], "empty")):
        _refused(lambda v=vector: FaceObservation(frame_time_s=0, bbox=(0, 0, 1, 1), det_score=0.9, quality=1.0,
                                                  embedding=v), ValidationError, "embedding", says)
        _refused(lambda v=vector: MemoryIn(kind="episodic", text="x", embedding=v), ValidationError, says)
    gen = rng(4)
    short = face_cluster(0, unit(16, gen), gen)  # 16-d observations for the configured face dimension
    _refused(lambda: g.resolve_faces(BASE_VIDEO, 1, [short]), InvalidInputError, "face cluster 0", f"{dim}-d")
    text_dim = g.settings.memory.text_dim
    _refused(lambda: g.write_memories(BASE_VIDEO, 1, [mem("episodic", "x", unit(8, gen))]), InvalidInputError,
             f"{text_dim}-d", f"{BASE_VIDEO}#1")


# ---------------------------------------------------------------------------------------------- pickles


class _Evil:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return os.system, (f"touch {self.marker}",)


def _pickles(tmp: Path) -> dict[str, tuple[bytes, str]]:
    return {
        "os-system": (pickle.dumps(_Evil(tmp / "pwned")), "forbidden global"),
        "eval": (b"cbuiltins\neval\n(V1+1\ntR.", "forbidden"),
        "subprocess": (b"csubprocess\nPopen\n(VTrue\ntR.", "forbidden"),
        "truncated": (pickle.dumps({"nodes": list(range(100))})[:20], "truncated"),
        "empty": (b"", "empty"),
        "text": (b"not a pickle at all\n", "not a pickle"),
        "plain-dict": (pickle.dumps({"nodes": {}, "edges": {}}), "not a research VideoGraph"),
    }


@pytest.mark.parametrize("case", sorted(_pickles(Path("."))))
def test_bad_pickle_is_refused_without_running_code(case: str, baseline: tuple[MemoryGraph, list[str]],
                                                    tmp_path: Path, embedder: TextEmbedder) -> None:
    g, _ = baseline
    data, says = _pickles(tmp_path)[case]
    path = tmp_path / f"{case}.pkl"
    path.write_bytes(data)
    _refused(lambda: load_videograph(path), ImportFormatError, f"{case}.pkl", says)
    _refused(lambda: import_pickle(g, path, "imported", embedder), ImportFormatError, f"{case}.pkl", says)
    assert not (tmp_path / "pwned").exists()


# ---------------------------------------------------------------------------------------------- settings

BAD_SETTINGS: dict[str, tuple[str | None, dict[str, str], tuple[str, ...]]] = {
    # case: (m3graph.toml text or None, environment, what the message names)
    "toml-syntax": ("fps = [\n", {}, ("m3graph.toml", "not valid TOML")),
    "toml-unknown-key": ("fsp = 5\n", {}, ("fsp", "Extra inputs are not permitted")),
    "toml-wrong-type": ('fps = "fast"\n', {}, ("fps", "'fast'")),
    "toml-nested-wrong-type": ("[local]\nport = -5\n", {}, ("local.port", "-5")),
    "env-wrong-type": (None, {"M3GRAPH_LOCAL__PORT": "abc"}, ("local.port", "'abc'")),
    "env-negative": (None, {"M3GRAPH_FPS": "-1"}, ("fps", "greater than 0")),
    "env-bad-enum": (None, {"M3GRAPH_LLM__MEMORIZE__BACKEND": "telepathy"}, ("llm.memorize.backend", "telepathy")),
    "config-missing": (None, {"M3GRAPH_CONFIG": "{tmp}/nope.toml"}, ("nope.toml", "not a file")),
    "config-directory": (None, {"M3GRAPH_CONFIG": "{tmp}"}, ("not a file",)),
    "env-not-a-number": (None, {"M3GRAPH_LOCAL__HEAP_MB": "lots"}, ("local.heap_mb", "'lots'")),
}


@pytest.mark.parametrize("case", sorted(BAD_SETTINGS))
def test_bad_settings_are_one_config_error(case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    toml, env, names = BAD_SETTINGS[case]
    monkeypatch.chdir(tmp_path)
    for key in [k for k in os.environ if k.startswith("M3GRAPH_") or k.startswith("NEO4J_")]:
        monkeypatch.delenv(key)
    if toml is not None:
        (tmp_path / "m3graph.toml").write_text(toml)
    for key, value in env.items():
        monkeypatch.setenv(key, value.format(tmp=tmp_path))
    message = _refused(load_settings, ConfigError, *names)
    assert "Traceback" not in message


def test_a_secret_is_never_echoed_in_a_settings_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m3graph.toml").write_text('neo4j_password = ["hunter2-secret"]\n')
    message = _refused(load_settings, ConfigError, "NEO4J_PASSWORD")
    assert "hunter2" not in message


def test_settings_object_is_still_a_plain_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The conversion lives in load_settings only: a good configuration loads as before."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m3graph.toml").write_text("fps = 2.5\n")
    assert isinstance(load_settings(), Settings) and load_settings().fps == 2.5


def test_a_file_name_that_is_no_valid_id_still_gives_one() -> None:
    """Without --video-id the id comes from the file name; a unicode or spaced name must not fail at commit."""
    from m3graph.ingest.runner import _video_id

    for name in ("café (1).mp4", "视频.mp4", "_x.mp4", "a" * 300 + ".mp4", "it's.mp4"):
        check_source_id(_video_id(Path(name)))
    assert _video_id(Path("café (1).mp4")) == "caf---1"


# ---------------------------------------------------------------------------------------------- chat files


def _chat_files(root: Path) -> dict[str, Path]:
    """The chat inputs that are no conversation file at all (issue 21): each refused before one byte is parsed."""
    os.mkfifo(root / "fifo.txt")
    (root / "loop-a.txt").symlink_to(root / "loop-b.txt")
    (root / "loop-b.txt").symlink_to(root / "loop-a.txt")
    (root / "dir.txt").mkdir()
    big = root / "big.txt"
    with big.open("w") as f:
        f.write("Ann: hello\n" * (2 * 2**20 // 11 + 1))  # 2 MiB, over the 1 MiB bound below
    many = root / "many.txt"
    many.write_text("Ann: hello\nBob: hi\n" * 60)  # 120 turns, over the 100-turn bound below
    return {"dev-zero": Path("/dev/zero"), "fifo": root / "fifo.txt", "loop-link": root / "loop-a.txt",
            "dir": root / "dir.txt", "missing": root / "nope.txt", "too-big": big, "too-many-turns": many}


# case -> what the refusal says (besides naming the file)
BAD_CHAT_FILES = {
    "dev-zero": "is a character device, not a regular file",
    "fifo": "is a named pipe (FIFO), not a regular file",
    "loop-link": "Too many levels of symbolic links",
    "dir": "is a directory, not a regular file",
    "missing": "No such file or directory",
    "too-big": "larger than 1 MiB (the chat.max_file_mb bound)",
    "too-many-turns": "more than 100 turns (the chat.max_turns bound)",
}


# Non-files and the byte bound are refused before any format reads; the turn bound by the format (text here).
CHAT_CASES = [(c, f) for c in sorted(BAD_CHAT_FILES) for f in ("auto", "text", "json", "srt")
              if c != "too-many-turns" or f in ("auto", "text")]


@pytest.mark.parametrize(("case", "fmt"), CHAT_CASES)
def test_bad_chat_file_is_refused(case: str, fmt: str, baseline: tuple[MemoryGraph, list[str]],
                                  tmp_path: Path) -> None:
    from m3graph.ingest.chat.formats import load_conversation
    from m3graph.ingest.chat.parsing import ReadLimits

    path = _chat_files(tmp_path)[case]
    limits = ReadLimits(max_bytes=2**20, max_turns=100)
    _refused(lambda: load_conversation(path, fmt, limits=limits), InvalidInputError, str(path),
             BAD_CHAT_FILES[case], "nothing was written")
