"""Files shared in a conversation: checked, copied content-addressed, and turned into surrogate memories.

A turn's `FileRef.path` is untrusted. It is resolved under the one directory the caller allows (the files root:
`ingest-chat --files-root`, default the conversation file's directory; the MCP server's `--files-root`), with
symlinks followed *before* the check, so an absolute path, a ``..`` escape or a link pointing out of the root is
refused. Only a regular file within `files.max_file_mb` is read, its type comes from its bytes
(`perception.file_types`), and it is copied once into ``<data_dir>/files/<sha[:2]>/<sha><ext>``: the same bytes
shared twice are one stored copy and one `File` node. Everything after the copy reads the stored copy, which
cannot change under us.

Each file's surrogate is text a search can find, one episodic memory per passage, each starting with where it
comes from: ``[file receipt.pdf, document, page 2, shared by Ann] ...``. All of it passes `safe_text`, like a
chat turn: a ``<face_3>`` written in a PDF or read by OCR is text, never a reference to an entity.

An audio file (a voice note) goes through the video path's voices (`perception.voices.perceive_voices`: voice
activity, the speaker embedder, turns and Whisper ASR): its surrogate is one memory per transcribed utterance,
``[file memo.wav, audio, 0:02-0:06, shared by Ann] the words; voice: <voice_7>``, the voice tagged once the
session resolves it to a persistent Voice entity (as a photo's faces are), and the utterances' snippets are kept
with the session's clip. Without the ASR or speaker models (`files.audio_voices` off, or audio libsndfile cannot
read) the file is kept with a one-line "not transcribed" surrogate, never refused.

A bad file (outside the root, too big, not an allowed type, an image that is not one, a corrupt or
password-protected PDF, a zip bomb) is refused on its own with a one-line reason (`FileProblem`); the turn and
the rest of the conversation are still ingested.

A file costs what its budget allows, never what it declares (issue 37): declared sizes are checked before
parsing (`documents.DeclaredLimits`, the pixel cap from the image header), documents are read in a worker
process with a time and memory budget (`file_worker`), and a photo is decoded there once under the same budget
before the faces and the description read it here (a copy reduced to `file_worker.WORK_PIXELS` when it is
larger: a big photo costs what a 12 MP one does). A hard link is refused like a symlink out of the root (its
other name may be anywhere: the link count says so), and the file read is the one checked (device and inode).
Nothing is left behind by a refusal: the copy is written aside as ``.<sha>.<rand>.part<ext>`` and renamed
into place only once described and published; a copy this call stored for a session that was then not written
is removed again (`drop_unheld`), and ``.part`` copies a killed run left are swept (`sweep_parts`).
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import stat
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from m3graph.graphdb.executor import Executor
from m3graph.graphdb.files import remove_stored
from m3graph.graphdb.tags import safe_text
from m3graph.ingest.chat import file_worker
from m3graph.ingest.chat.model import FileRef, Turn
from m3graph.ingest.clip_media import keyed_faces, keyed_voices, publish_folder
from m3graph.observations import FaceCluster, VoiceCluster
from m3graph.perception import still_image
from m3graph.perception.file_types import FileRejected, FileType, sniff
from m3graph.settings import Settings
from m3graph.storage import publish

log = logging.getLogger(__name__)
FILES_DIR = "files"
_CHUNK = 1 << 20
STALE_PART_S = 600.0  # a .part copy older than this belongs to no running parse (the budget is seconds)


@dataclass(frozen=True)
class SharedFile:
    """One file a turn shared, stored and described; `surrogates` are memory texts (tags already escaped)."""

    turn_id: str
    sha256: str
    kind: str
    mime: str
    size: int
    name: str
    stored: str  # relative to data_dir: files/ab/ab12....pdf
    shared_at: datetime | None
    surrogates: tuple[str, ...]
    faces: tuple[FaceCluster, ...] = ()  # a photo's faces (labels local to the photo), resolved with the session
    voices: tuple[VoiceCluster, ...] = ()  # an audio file's voices (labels local to the file), likewise
    voice_of: tuple[int, ...] = ()  # per surrogate of an audio file: the label of the voice that says it
    fresh: bool = False  # this call wrote the stored copy (removed again if its session is not written)

    def row(self) -> dict[str, object]:
        return {"turn_id": self.turn_id, "sha256": self.sha256, "kind": self.kind, "mime": self.mime,
                "size": self.size, "name": self.name, "stored": self.stored, "shared_at": self.shared_at}


@dataclass(frozen=True)
class FileProblem:
    turn_id: str
    path: str
    reason: str

    def __str__(self) -> str:
        return f"turn {self.turn_id}: file {self.path}: {self.reason}"


def resolve(root: Path, ref: FileRef, max_bytes: int) -> Path:
    """The regular file `ref` names under `root` (symlinks resolved first, hard links refused); raises
    `FileRejected`."""
    raw = Path(ref.path)
    if raw.is_absolute() or ref.path.startswith(("/", "\\")) or (len(ref.path) > 1 and ref.path[1] == ":"):
        raise FileRejected("an absolute path (give it relative to the files root)")
    base = root.resolve()
    target = (base / raw).resolve()
    if not target.is_relative_to(base):
        raise FileRejected(f"outside the allowed files root {base} (after resolving '..' and links)")
    try:
        info = target.stat()
    except OSError:
        raise FileRejected("no such file under the files root") from None
    if not stat.S_ISREG(info.st_mode):
        raise FileRejected("not a regular file")
    if info.st_nlink > 1:  # resolving sees symlinks, not hard links: another name may lie outside the root
        raise FileRejected(f"a file with {info.st_nlink} hard links (one may lead out of the files root); share "
                           "a copy of it instead")
    if info.st_size > max_bytes:
        raise FileRejected(f"{info.st_size / 2**20:.2f} MB, more than the files.max_file_mb cap of "
                           f"{max_bytes / 2**20:.2f} MB")
    return target


def _hash(path: Path, max_bytes: int, checked: os.stat_result | None = None) -> tuple[str, int]:
    """SHA-256 and size of `path`; with `checked`, the file opened must be the one `resolve` checked (same
    device and inode, still one link), so a swap between the check and the read is refused."""
    h, size = hashlib.sha256(), 0
    with path.open("rb") as f:
        if checked is not None:
            now = os.fstat(f.fileno())
            if (now.st_dev, now.st_ino) != (checked.st_dev, checked.st_ino) or now.st_nlink > 1:
                raise FileRejected("the file changed between its check and its read")
        while chunk := f.read(_CHUNK):
            size += len(chunk)
            if size > max_bytes:  # grew since it was checked
                raise FileRejected(f"more than the files.max_file_mb cap of {max_bytes / 2**20:.2f} MB")
            h.update(chunk)
    return h.hexdigest(), size


def stored_path(settings: Settings, sha256: str, ext: str) -> str:
    return f"{FILES_DIR}/{sha256[:2]}/{sha256}{ext}"


def store(settings: Settings, source: Path, sha256: str, ext: str,
          describe: Callable[[Path], list[str]]) -> tuple[list[str], bool]:
    """The content-addressed copy's surrogate texts, and whether this call wrote the copy. The copy is written
    aside, checked against `sha256` and described there; only a file that describes and publishes without error
    stays in place, so a refused file leaves no copy behind. Bytes already stored are described from the stored
    copy."""
    key = stored_path(settings, sha256, ext)
    target = settings.data_dir / key
    if target.is_file():
        return describe(target), False
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{sha256}.{uuid.uuid4().hex[:8]}.part{ext}")  # readers check the extension
    placed = False
    try:
        shutil.copyfile(source, tmp)
        if _hash(tmp, tmp.stat().st_size)[0] != sha256:
            raise FileRejected("the file changed while it was copied")
        texts = describe(tmp)
        os.replace(tmp, target)
        placed = True
        publish(settings, key)  # an object store gets the copy too; this host keeps it as its scratch copy
    except BaseException:
        if placed:  # described, then refused by the store: the copy goes with the refusal
            target.unlink(missing_ok=True)
        raise
    finally:
        tmp.unlink(missing_ok=True)
    return texts, True


def sweep_parts(settings: Settings, older_than_s: float = STALE_PART_S) -> int:
    """Removes ``.part`` copies that a killed run left under ``<data_dir>/files/`` (a live parse's copy is
    younger than `older_than_s`); returns how many went."""
    root = settings.data_dir / FILES_DIR
    if not root.is_dir():
        return 0
    cutoff = time.time() - older_than_s
    removed = 0
    for part in root.glob("*/.*.part*"):
        try:
            if part.is_file() and not part.is_symlink() and part.stat().st_mtime < cutoff:
                part.unlink()
                removed += 1
        except OSError:
            continue
    if removed:
        log.info("removed %d stale .part copies under %s", removed, root)
    return removed


def drop_unheld(ex: Executor, settings: Settings, files: Sequence[SharedFile]) -> int:
    """Removes the stored copies this call wrote (`SharedFile.fresh`) that no session in the graph holds: a file
    whose session was refused, failed or written by another run leaves no copy behind. Best effort: when the
    graph cannot be asked (it may be why the session failed), the copies stay and a warning says so."""
    fresh = {f.sha256: f.stored for f in files if f.fresh}
    if not fresh:
        return 0
    try:
        unheld = [stored for sha, stored in fresh.items() if not ex.read("files/stored", sha256=sha)]
    except Exception as exc:
        log.warning("could not check %d stored file copies after a failed session (%s); they stay", len(fresh), exc)
        return 0
    return remove_stored(settings, unheld) if unheld else 0


def _header(name: str, kind: str, where: str, speaker: str) -> str:
    return f"[file {name}, {kind}{', ' + where if where else ''}, shared by {speaker}]"


def photo_faces(path: Path, settings: Settings, crop_dir: Path | None, start_s: float) -> list[FaceCluster]:
    """The photo's faces through the video path's detector and embedder (`perception.faces.perceive_faces`), as
    one frame: each detection is its own cluster. Without the perception stack (or with `files.photo_faces` off)
    a photo simply has no faces; a model failure is logged, never a refused file."""
    if not settings.files.photo_faces or crop_dir is None:
        return []
    try:
        from m3graph.perception.faces import perceive_faces
    except ImportError as exc:
        log.warning("%s: no face detection (%s); the photo is kept without faces", path.name, exc)
        return []
    rgb = still_image.load_rgb(path, settings.files.max_image_pixels)
    one_frame = settings.model_copy(update={"perception": settings.perception.model_copy(
        update={"face_min_cluster_frames": 1})})
    try:
        found = perceive_faces([(0.0, rgb)], one_frame, crop_dir, start_s)
    except Exception as exc:  # a model that cannot load must not refuse the photo
        log.warning("%s: face detection failed (%s); the photo is kept without faces", path.name, exc)
        return []
    # As for video: the graph names crops by storage key, and an object store gets them (m3graph.storage).
    found = keyed_faces(settings, found)
    publish_folder(settings, (o.crop_uri for c in found for o in c.observations), crop_dir)
    return found


def audio_voices(path: Path, settings: Settings, snippet_dir: Path | None, start_s: float) -> list[VoiceCluster]:
    """An audio file's voices and their transcribed utterances, through the video path's perception (times are
    on the session's timeline: the file starts at `start_s`); [] with a warning when the models or the decoder
    fail, so the file is still kept."""
    try:
        from m3graph.perception.voices import perceive_voices
    except ImportError as exc:
        log.warning("%s: no speech perception (%s); the audio is kept untranscribed", path.name, exc)
        return []
    try:
        found = perceive_voices(path, settings, start_s, snippet_dir)
    except Exception as exc:  # a model that cannot load, or audio the decoder cannot read: this file only
        log.warning("%s: not transcribed (%s: %s)", path.name, type(exc).__name__, str(exc)[:160])
        return []
    found = keyed_voices(settings, found)
    if snippet_dir is not None:
        publish_folder(settings, (u.audio_uri for c in found for u in c.utterances), snippet_dir)
    return found


def _clock(seconds: float) -> str:
    minutes, secs = divmod(max(0, round(seconds)), 60)
    return f"{minutes}:{secs:02d}"


def transcript_lines(name: str, kind: str, speaker: str, voices: list[VoiceCluster], start_s: float,
                     settings: Settings) -> list[tuple[str, int]]:
    """(surrogate text, voice label) per utterance in time order, its time within the file in the header."""
    said = sorted((u.start_s, u.end_s, u.text, c.label) for c in voices for u in c.utterances if u.text.strip())
    cap = settings.files.passage_chars
    return [(f"{_header(name, kind, f'{_clock(a - start_s)}-{_clock(b - start_s)}', speaker)} "
             f"{' '.join(text.split())[:cap]}", label) for a, b, text, label in said]


def surrogate_texts(path: Path, ftype: FileType, kind: str, name: str, speaker: str,
                    settings: Settings, faces: int = 0, size: tuple[int, int] | None = None) -> list[str]:
    """The memory texts that stand for the file in search (before `safe_text`); a photo's face tags are added
    when the session is written, once its faces are resolved to entities."""
    if ftype.parser == "image":
        image = still_image.describe(path, settings)
        width, height = size or (image.width, image.height)  # `size`: the original of a reduced copy
        parts = [f"photo {width}x{height}", f"colours: {', '.join(image.colours)}", image.light]
        if faces:
            parts.append(f"{faces} {'face' if faces == 1 else 'faces'}")
        if image.text:
            parts.append(f'text in image: "{image.text[:settings.files.passage_chars]}"')
        values = image.values()
        if values or kind == "chart":
            parts.append(values or "chart values: the numbers could not be read")
        return [f"{_header(name, kind, '', speaker)} {'; '.join(parts)}"]
    if ftype.parser == "audio":
        return [f"{_header(name, kind, '', speaker)} an audio file ({ftype.mime}); not transcribed"]
    found = file_worker.passages(path, ftype.parser, settings.files)
    if not found:
        return [f"{_header(name, kind, '', speaker)} a {ftype.mime} file with no readable text"]
    return [f"{_header(name, kind, p.where, speaker)} {p.text}" for p in found]


@contextmanager
def work_image(path: Path, settings: Settings, budget: file_worker.ParseBudget = file_worker.BUDGET
               ) -> Iterator[tuple[Path, tuple[int, int]]]:
    """(the picture to read here, its original size): the picture's declared size is checked against
    `files.max_image_pixels` from its header (nothing decoded), then it is decoded once in a budgeted worker, so
    one that is slow or big to decode is refused before this process decodes it; a picture over
    `file_worker.WORK_PIXELS` is read here from a reduced copy, removed afterwards."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as im:
            width, height = im.size
    except Image.DecompressionBombError as exc:  # Pillow's own header check, at twice its pixel limit
        raise FileRejected(f"an image whose header declares a decompression bomb (more than "
                           f"files.max_image_pixels = {settings.files.max_image_pixels}; {exc})") from None
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as exc:
        raise FileRejected(f"an image that cannot be decoded ({type(exc).__name__})") from None
    if width * height > settings.files.max_image_pixels:
        raise FileRejected(f"an image of {width}x{height} pixels (more than files.max_image_pixels = "
                           f"{settings.files.max_image_pixels})")
    with tempfile.TemporaryDirectory(prefix="m3graph-photo-") as folder:
        reduced = Path(folder) / "reduced.png"
        width, height, wrote = file_worker.decode_image(path, reduced, settings.files, budget)
        yield (reduced if wrote else path), (width, height)


def share(settings: Settings, root: Path, turn: Turn, ref: FileRef, shared_at: datetime | None,
          crop_dir: Path | None = None, start_s: float = 0.0, snippet_dir: Path | None = None) -> SharedFile:
    """One file of one turn, checked, stored and described; raises `FileRejected` with the reason. A photo's
    face crops go under `crop_dir`, an audio file's voice snippets under `snippet_dir` (the session clip's,
    deleted with it)."""
    max_bytes = int(settings.files.max_file_mb * 2**20)
    source = resolve(root, ref, max_bytes)
    checked = source.stat()
    name = safe_text(ref.display_name)
    ftype = sniff(source, ref.display_name)
    if ref.kind == "image" and ftype.kind != "image":
        raise FileRejected(f"given as an image but it is not one (its bytes are {ftype.mime})")
    sha, size = _hash(source, max_bytes, checked)
    kind = ref.kind or ftype.kind
    faces: list[FaceCluster] = []

    def describe(path: Path) -> list[str]:
        if ftype.parser != "image":
            return surrogate_texts(path, ftype, kind, name, turn.speaker, settings)
        with work_image(path, settings) as (work, size):
            faces.extend(photo_faces(work, settings, crop_dir / sha[:16] if crop_dir else None, start_s))
            return surrogate_texts(work, ftype, kind, name, turn.speaker, settings, len(faces), size)

    voices: list[VoiceCluster] = []
    voice_of: list[int] = []

    def describe_any(path: Path) -> list[str]:
        if ftype.parser != "audio" or not settings.files.audio_voices:
            return describe(path)
        voices.extend(audio_voices(path, settings, snippet_dir / sha[:16] if snippet_dir else None, start_s))
        lines = transcript_lines(name, kind, turn.speaker, voices, start_s, settings)
        if not lines:
            voices.clear()
            return describe(path)
        voice_of.extend(label for _, label in lines)
        return [text for text, _ in lines]

    texts, fresh = store(settings, source, sha, ftype.ext, describe_any)
    return SharedFile(turn.turn_id, sha, kind, ftype.mime, size, name, stored_path(settings, sha, ftype.ext),
                      shared_at, tuple(safe_text(t) for t in texts), tuple(faces), tuple(voices), tuple(voice_of),
                      fresh)


def share_all(settings: Settings, root: Path | None, turns: tuple[Turn, ...], shared_at: datetime | None,
              crop_dir: Path | None = None, start_s: float = 0.0, snippet_dir: Path | None = None
              ) -> tuple[list[SharedFile], list[FileProblem]]:
    """Every file of `turns`; a refused file is a `FileProblem` (logged), never a failed session."""
    shared: list[SharedFile] = []
    problems: list[FileProblem] = []
    sweep_parts(settings)
    for turn in turns:
        for ref in turn.files:
            try:
                if root is None:
                    raise FileRejected("no files root is allowed for this conversation")
                shared.append(share(settings, root, turn, ref, shared_at, crop_dir, start_s, snippet_dir))
            except FileRejected as exc:
                problems.append(FileProblem(turn.turn_id, ref.path, str(exc)))
            except Exception as exc:  # a parser's own failure on hostile bytes: this file only
                problems.append(FileProblem(turn.turn_id, ref.path, f"could not be read ({type(exc).__name__}: "
                                                                   f"{str(exc)[:160]})"))
    for p in problems:
        log.warning("%s; the rest of the conversation is ingested", p)
    return shared, problems
