"""A labelled test video of real people (issue 10), and the pipeline's identity scores against its ground truth.

Built offline and deterministically (seeded) with ffmpeg from the shared identity set (``../shared/data/identity``:
real face photos of 13 people, LibriSpeech read speech of 10 speakers). A *person* of the video is a pair: one face
identity (``person_NN``) and one LibriSpeech speaker. The pairing is synthetic (the photos and the voices belong
to different real people); what it gives is a ground truth in which a face and a voice belong to one person, which is
all the identity pipeline can be checked against.

The video is a sequence of 30-s clips (keyframes forced at every boundary, the pipeline's clip length); each clip is
split into equal *segments*, one per person of the clip: that person's photo fills the frame while that person's
speaker reads utterances (whole LibriSpeech files, 0.7 s apart, 0.5 s of silence at each end of a segment). Every
appearance of a person uses another photo of that person, so face identity is tested across photos, and people
recur across clips. Clips with one person are M3-Agent's meta-clips (one face, one voice): the only place where the
perception-only memorizer links a face and a voice into one character.

Photos in which the face detector finds more than one face (measured: img40, img54, img62) are left out, so that the
ground truth "one person on screen" holds.

``evaluate_labelled`` reads what an ingest wrote (the cached per-clip clusters and the graph's label → entity maps,
no new Cypher) and scores it: faces per sampled frame (the largest face; a smaller one is a bystander in the
photo, e.g. img31 shows one behind the person, and is listed apart), voices per 0.1-s frame (pairwise and B-cubed
precision/recall, ``m3graph.perception.calibrate``), and face↔voice agreement per person (are the person's face
entity and voice entity in one character?).

Why this module is over 400 lines: it is development tooling, not product code, and building the labelled video and
scoring the graph against the same labels share one specification of who appears when.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from m3graph.devkit.testmedia import (
    CLIP_SECONDS,
    SR,
    WIDTH,
    Shot,
    TestMediaError,
    VideoSpec,
    _check,
    _locked,
    _photo_size,
    _place,
    _video,
    _write_wav,
)
from m3graph.perception.calibrate import (
    PR,
    bcubed_pr,
    face_identities,
    frame_labels,
    librispeech_files,
    pairwise_pr,
    score_frames,
)

if TYPE_CHECKING:
    from m3graph.graphdb.store import MemoryGraph

BUILDER_VERSION = 1
DEFAULT_IDENTITY = Path("../shared/data/identity")
DEFAULT_OUT = Path(".m3graph/labelled")
# Photos with more than one detected face (MTCNN, default settings; measured on the whole set).
EXCLUDED_PHOTOS = frozenset({"img40.jpg", "img54.jpg", "img62.jpg"})
# Per clip, the people (indices into the chosen pairs) on screen one after the other.
FULL_LAYOUT: tuple[tuple[int, ...], ...] = ((0, 1), (2,), (3, 4), (1,), (0, 2, 4), (3,))  # 180 s, 5 people
SHORT_LAYOUT: tuple[tuple[int, ...], ...] = ((0, 1), (2,), (1, 0))  # 90 s, 3 people
EDGE_S = 0.5  # silence at each end of a segment
GAP_S = 0.7  # pause between two utterances of one segment
MIN_UTTERANCE_S = 2.0


@dataclass
class Utterance:
    file: str  # path relative to the identity set
    speaker: str
    start_s: float
    end_s: float


@dataclass
class Segment:
    start_s: float
    end_s: float
    clip_index: int
    person: str  # "P0".."Pn": the synthetic pair
    face_identity: str  # person_NN of faces/identities.csv
    speaker: str  # LibriSpeech speaker id
    photo: str  # path relative to the identity set
    box: list[int] = field(default_factory=list)  # [x, y, w, h] of the photo in the frame
    utterances: list[Utterance] = field(default_factory=list)


@dataclass
class LabelledVideo:
    source_id: str
    path: str
    duration_s: float
    seed: int
    layout: list[list[int]]
    pairs: dict[str, dict[str, str]]  # person -> {"face_identity", "speaker"}
    segments: list[Segment]
    identity_dir: str
    clip_seconds: float = CLIP_SECONDS
    version: int = BUILDER_VERSION
    fingerprint: str = ""

    def segment_at(self, t: float) -> Segment | None:
        return next((s for s in self.segments if s.start_s <= t < s.end_s), None)

    def meta_clips(self) -> list[tuple[int, str]]:
        """(clip, person) of clips with one person on screen and speaking."""
        return [(c, self.segments_of_clip(c)[0].person) for c in range(len(self.layout))
                if len(self.segments_of_clip(c)) == 1]

    def segments_of_clip(self, clip_index: int) -> list[Segment]:
        return [s for s in self.segments if s.clip_index == clip_index]

    @classmethod
    def load(cls, path: Path) -> LabelledVideo:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        segments = []
        for s in data.pop("segments"):
            s["utterances"] = [Utterance(**u) for u in s["utterances"]]
            segments.append(Segment(**s))
        return cls(segments=segments, **data)


# ---------------------------------------------------------------------------------------------- build


def _decode(path: Path) -> np.ndarray:
    """A FLAC file as 16 kHz mono int16 samples (ffmpeg, no resampling surprises: LibriSpeech is 16 kHz already)."""
    proc = _check(["ffmpeg", "-nostdin", "-v", "error", "-i", str(path), "-ac", "1", "-ar", str(SR), "-f", "s16le",
                   "-"], f"decoding {path.name}")
    return np.frombuffer(proc.stdout, dtype="<i2").astype(np.int16)


def _choose(identity_dir: Path, layout: Sequence[Sequence[int]], seed: int
            ) -> tuple[dict[str, dict[str, str]], dict[str, list[Path]], dict[str, list[Path]]]:
    """Seeded: which face identities and speakers form the pairs, and each one's photo and utterance order."""
    n = max(p for clip in layout for p in clip) + 1
    appearances = Counter(p for clip in layout for p in clip)
    photos: dict[str, list[Path]] = defaultdict(list)
    for path, identity in face_identities(identity_dir / "faces"):
        if path.name not in EXCLUDED_PHOTOS:
            photos[identity].append(path)
    need = max(2, max(appearances.values()))
    eligible = sorted(i for i, ps in photos.items() if len(ps) >= need)
    files: dict[str, list[Path]] = defaultdict(list)
    for path, speaker in librispeech_files(identity_dir / "voices"):
        files[speaker].append(path)
    speakers = sorted(files)
    if len(eligible) < n or len(speakers) < n:
        raise TestMediaError(f"the layout needs {n} people with {need} photos each; the identity set has "
                             f"{len(eligible)} such faces and {len(speakers)} speakers")
    rng = np.random.default_rng(seed)
    faces = [eligible[i] for i in rng.choice(len(eligible), n, replace=False)]
    voices = [speakers[i] for i in rng.choice(len(speakers), n, replace=False)]
    pairs = {f"P{i}": {"face_identity": faces[i], "speaker": voices[i]} for i in range(n)}
    photo_order = {f: [sorted(photos[f])[j] for j in rng.permutation(len(photos[f]))] for f in faces}
    file_order = {s: [sorted(files[s])[j] for j in rng.permutation(len(files[s]))] for s in voices}
    return pairs, photo_order, file_order


def _plan(identity_dir: Path, layout: Sequence[Sequence[int]], seed: int
          ) -> tuple[dict[str, dict[str, str]], list[Segment], dict[str, np.ndarray]]:
    """Segments with their photo and utterances placed; the decoded audio of every file used."""
    pairs, photo_order, file_order = _choose(identity_dir, layout, seed)
    audio: dict[str, np.ndarray] = {}
    used: dict[str, int] = Counter()
    shown: dict[str, int] = Counter()
    segments: list[Segment] = []

    def samples(path: Path) -> np.ndarray:
        key = str(path.relative_to(identity_dir))
        if key not in audio:
            audio[key] = _decode(path)
        return audio[key]

    for c, people in enumerate(layout):
        length = CLIP_SECONDS / len(people)
        for j, p in enumerate(people):
            person = f"P{p}"
            face, speaker = pairs[person]["face_identity"], pairs[person]["speaker"]
            start = round(c * CLIP_SECONDS + j * length, 3)
            seg = Segment(start, round(start + length, 3), c, person, face, speaker,
                          str(photo_order[face][shown[face] % len(photo_order[face])].relative_to(identity_dir)))
            shown[face] += 1
            t, stop = start + EDGE_S, start + length - EDGE_S
            queue = file_order[speaker]
            # Fresh files first (in the seeded order), then ones used before; each fits or is passed over.
            for path in sorted(queue, key=lambda f, q=queue: (used[str(f)], q.index(f))):
                dur = samples(path).size / SR
                if dur < MIN_UTTERANCE_S or t + dur > stop:
                    continue
                seg.utterances.append(Utterance(str(path.relative_to(identity_dir)), speaker, round(t, 3),
                                                round(t + dur, 3)))
                used[str(path)] += 1
                t += dur + GAP_S
            if not seg.utterances:
                raise TestMediaError(f"no utterance of speaker {speaker} fits a {length:.1f}-s segment")
            segments.append(seg)
    return pairs, segments, audio


def build_labelled_video(identity_dir: Path = DEFAULT_IDENTITY, out_dir: Path = DEFAULT_OUT,
                         layout: Sequence[Sequence[int]] = FULL_LAYOUT, seed: int = 0,
                         source_id: str = "labelled-real", force: bool = False) -> LabelledVideo:
    """Builds ``OUT/VIDEO_ID.mp4`` and its manifest ``OUT/VIDEO_ID.json`` (idempotent: an up-to-date pair is
    returned as is). A missing identity set raises FileNotFoundError."""
    for tool in ("ffmpeg", "ffprobe"):
        if shutil.which(tool) is None:
            raise TestMediaError(f"{tool} is needed to build the labelled video (Debian: apt-get install ffmpeg)")
    identity_dir = Path(identity_dir).resolve()
    if not (identity_dir / "faces" / "identities.csv").is_file():
        raise FileNotFoundError(f"the shared identity set is missing: {identity_dir} (see ../shared/data/identity)")
    out_dir = Path(out_dir).resolve()
    layout = [list(clip) for clip in layout]
    with _locked(out_dir):
        definition = {"builder": BUILDER_VERSION, "seed": seed, "layout": layout, "source_id": source_id,
                      "edge": EDGE_S, "gap": GAP_S, "excluded": sorted(EXCLUDED_PHOTOS),
                      "files": sorted((str(p.relative_to(identity_dir)), p.stat().st_size)
                                      for p in identity_dir.rglob("*") if p.suffix in (".jpg", ".flac"))}
        fingerprint = hashlib.sha256(json.dumps(definition, sort_keys=True).encode()).hexdigest()[:16]
        manifest_path, target = out_dir / f"{source_id}.json", out_dir / f"{source_id}.mp4"
        if not force and manifest_path.is_file() and target.is_file():
            try:
                earlier = LabelledVideo.load(manifest_path)
            except (OSError, ValueError, KeyError, TypeError):
                earlier = None
            if earlier is not None and earlier.fingerprint == fingerprint and earlier.path == str(target):
                return earlier
        pairs, segments, audio = _plan(identity_dir, layout, seed)
        duration = len(layout) * CLIP_SECONDS
        track = np.zeros(round(duration * SR), dtype=np.int16)
        for seg in segments:
            for u in seg.utterances:
                speech = audio[u.file]
                a = round(u.start_s * SR)
                track[a:a + speech.size] = speech
        work = out_dir / f"{source_id}-work"
        work.mkdir(parents=True, exist_ok=True)
        wav = work / f"{source_id}.wav"
        _write_wav(wav, track)
        photos = {seg.photo: identity_dir / seg.photo for seg in segments}
        for seg in segments:
            seg.box = _place(_photo_size(photos[seg.photo]), 0, WIDTH)
        spec = VideoSpec(source_id, duration, [Shot(s.start_s, s.end_s, [s.person], [s.photo]) for s in segments], [])
        tmp = target.with_name(target.stem + ".part.mp4")
        _video(spec, photos, wav, tmp, work)
        tmp.replace(target)
        shutil.rmtree(work, ignore_errors=True)
        video = LabelledVideo(source_id, str(target), duration, seed, layout, pairs, segments, str(identity_dir),
                              fingerprint=fingerprint)
        part = manifest_path.with_name(manifest_path.name + ".part")
        part.write_text(json.dumps(asdict(video), indent=2), encoding="utf-8")
        part.replace(manifest_path)
        return video


# ---------------------------------------------------------------------------------------------- evaluate


@dataclass
class LabelledScore:
    source_id: str
    people: int
    face_observations: int  # frames with a face (the largest one counts)
    faces: PR  # pairwise, one item per frame: the largest face's entity against the person on screen
    faces_bcubed: PR
    face_entities: int
    face_entities_of: dict[str, list[int]]  # person -> face entities seen on that person's segments
    segments_with_face: float  # share of segments in which the person's face was observed at all
    voices: PR  # pairwise, one item per 0.1-s frame both sides label
    voices_bcubed: PR
    voice_entities: int
    voice_entities_of: dict[str, list[int]]  # person -> voice entities heard on that person's utterances
    speech_covered: float  # share of true speech frames the pipeline gave to a voice
    joined: dict[str, bool]  # person -> main face entity and main voice entity share a character
    merged_characters: int  # characters holding entities of more than one person
    meta_clips: list[int] = field(default_factory=list)
    face_by_clip: dict[str, dict[int, list[int]]] = field(default_factory=dict)  # person -> clip -> face entities
    voice_by_clip: dict[str, dict[int, list[int]]] = field(default_factory=dict)  # person -> clip -> voice entities
    bystander_faces: list[int] = field(default_factory=list)  # entities of smaller faces beside the person

    def format(self) -> str:
        def pr(x: PR) -> str:
            return f"{x.precision:.3f} / {x.recall:.3f} / {x.f1:.3f}"

        lines = [
            f"labelled video {self.source_id}: {self.people} people, meta-clips {self.meta_clips}",
            "| modality | items | entities / people | pairwise P / R / F1 | B-cubed P / R / F1 | coverage |",
            "|---|---|---|---|---|---|",
            f"| faces | {self.face_observations} frames | {self.face_entities} / {self.people} | "
            f"{pr(self.faces)} | {pr(self.faces_bcubed)} | {self.segments_with_face:.0%} of segments |",
            f"| voices | 0.1-s frames | {self.voice_entities} / {self.people} | {pr(self.voices)} | "
            f"{pr(self.voices_bcubed)} | {self.speech_covered:.0%} of speech |",
            f"face entities per person, by clip: {self.face_by_clip}; bystander faces: {self.bystander_faces}",
            f"voice entities per person, by clip: {self.voice_by_clip}",
            f"face and voice in one character: {sum(self.joined.values())} of {len(self.joined)} {self.joined}; "
            f"characters mixing people: {self.merged_characters}",
        ]
        return "\n".join(lines)


def evaluate_labelled(graph: MemoryGraph, video: LabelledVideo) -> LabelledScore:
    """Scores an ingested labelled video (its perception cache and the graph's resolutions) against the manifest."""
    from m3graph.ingest.pipeline import faces_stage, load_plan, voices_stage

    settings = graph.settings
    plan = load_plan(settings, video.source_id)
    face_pred: list[int] = []
    face_true: list[str] = []
    face_by_clip: dict[str, dict[int, set[int]]] = defaultdict(lambda: defaultdict(set))
    bystanders: set[int] = set()
    seen_segments: set[int] = set()
    voice_turns: list[tuple[float, float, object]] = []
    for clip in range(len(video.layout)):
        face_ids, voice_ids = graph.clip_identities(video.source_id, clip)
        # The person is the largest face of a frame; a smaller one is a bystander in the photo (not labelled).
        frames: dict[float, list[tuple[int, int]]] = defaultdict(list)  # time -> (area, entity)
        for cluster in faces_stage(settings, plan, clip):  # cached by the ingest: nothing is recomputed
            for obs in cluster.observations:
                if cluster.label in face_ids:
                    x1, y1, x2, y2 = obs.bbox
                    frames[round(obs.frame_time_s, 3)].append(((x2 - x1) * (y2 - y1), face_ids[cluster.label]))
        for t, found in sorted(frames.items()):
            seg = video.segment_at(t)
            if seg is None:
                continue
            found.sort(reverse=True)
            entity = found[0][1]
            bystanders.update(e for _, e in found[1:])
            face_pred.append(entity)
            face_true.append(seg.person)
            face_by_clip[seg.person][clip].add(entity)
            seen_segments.add(video.segments.index(seg))
        for vc in voices_stage(settings, plan, clip):
            if vc.label in voice_ids:
                voice_turns.extend((u.start_s, u.end_s, voice_ids[vc.label]) for u in vc.utterances)
    truth_turns = [(u.start_s, u.end_s, s.person) for s in video.segments for u in s.utterances]
    pred_frames = frame_labels(voice_turns, video.duration_s)
    true_frames = frame_labels(truth_turns, video.duration_s)
    voices_pw, voices_b3, covered = score_frames(pred_frames, true_frames)

    face_of: dict[str, Counter[int]] = defaultdict(Counter)
    for p, t in zip(face_pred, face_true, strict=True):
        face_of[t][p] += 1
    voice_of: dict[str, Counter[object]] = defaultdict(Counter)
    voice_by_clip: dict[str, dict[int, set[int]]] = defaultdict(lambda: defaultdict(set))
    for i, (p, t) in enumerate(zip(pred_frames, true_frames, strict=True)):
        if p is not None and t is not None:
            voice_of[str(t)][p] += 1
            voice_by_clip[str(t)][int(i * 0.1 // video.clip_seconds)].add(int(p))  # type: ignore[call-overload]
    main_face = {person: c.most_common(1)[0][0] for person, c in face_of.items()}
    main_voice = {person: int(c.most_common(1)[0][0]) for person, c in voice_of.items()}  # type: ignore[call-overload]
    entities = sorted({*face_pred, *(int(p) for p in pred_frames if p is not None)})  # type: ignore[call-overload]
    chars = graph.characters_of(entities) if entities else {}
    joined = {person: (person in main_face and person in main_voice and main_face[person] in chars
                       and chars.get(main_face[person]) == chars.get(main_voice[person]))
              for person in sorted(video.pairs)}
    people_of_char: dict[int, set[str]] = defaultdict(set)
    for person, c in face_of.items():
        for e in c:
            if e in chars:
                people_of_char[chars[e]].add(person)
    for person, c in voice_of.items():
        for e in c:
            if int(e) in chars:  # type: ignore[call-overload]
                people_of_char[chars[int(e)]].add(person)  # type: ignore[call-overload]
    return LabelledScore(
        video.source_id, len(video.pairs), len(face_pred), pairwise_pr(face_pred, face_true),
        bcubed_pr(face_pred, face_true), len(set(face_pred)),
        {p: sorted(c) for p, c in sorted(face_of.items())}, len(seen_segments) / max(len(video.segments), 1),
        voices_pw, voices_b3, len({p for p in pred_frames if p is not None}),
        {p: sorted(int(e) for e in c) for p, c in sorted(voice_of.items())}, covered,  # type: ignore[call-overload]
        joined, sum(1 for ps in people_of_char.values() if len(ps) > 1), [c for c, _ in video.meta_clips()],
        _plain(face_by_clip), _plain(voice_by_clip), sorted(bystanders - set(face_pred)))


def revote_labelled(graph: MemoryGraph, video: LabelledVideo, on_screen_votes: bool) -> LabelledScore:
    """Re-registers every clip of an ingested video from its cached perception with `memory.on_screen_votes` set
    as given (identities keep their recorded mapping; only the clips' meta-clip/on-screen votes are rewritten),
    then scores it: the two vote rules side by side on the same perception and entities."""
    from m3graph.graphdb.store import MemoryGraph
    from m3graph.ingest.pipeline import clip_infos, faces_stage, load_plan, voices_stage

    memory = graph.settings.memory.model_copy(update={"on_screen_votes": on_screen_votes})
    other = MemoryGraph(graph.ex, graph.settings.model_copy(update={"memory": memory}))
    plan = load_plan(other.settings, video.source_id)
    for w in plan.windows:
        clip = clip_infos(other.settings, plan, [w.index])[0]
        other.register_clip(clip, faces_stage(other.settings, plan, w.index),
                            voices_stage(other.settings, plan, w.index), video_name=plan.source_id)
    return evaluate_labelled(other, video)


def _plain(by_clip: dict[str, dict[int, set[int]]]) -> dict[str, dict[int, list[int]]]:
    return {p: {c: sorted(ids) for c, ids in sorted(clips.items())} for p, clips in sorted(by_clip.items())}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Build the labelled test video of real people and its manifest.")
    parser.add_argument("--identity", type=Path, default=DEFAULT_IDENTITY)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--short", action="store_true", help="the 90-s, 3-person version the tests use")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--force", action="store_true")
    args = parser.parse_args(argv)
    try:
        video = build_labelled_video(args.identity, args.out, SHORT_LAYOUT if args.short else FULL_LAYOUT,
                                     args.seed, "labelled-short" if args.short else "labelled-real", args.force)
    except (TestMediaError, FileNotFoundError, subprocess.SubprocessError) as exc:
        raise SystemExit(f"labelled_media: {exc}") from exc
    print(f"{video.source_id}: {video.path} ({video.duration_s:.0f} s, {len(video.segments)} segments)")
    for person, pair in video.pairs.items():
        print(f"  {person}: face {pair['face_identity']} + speaker {pair['speaker']}")


if __name__ == "__main__":
    main()
