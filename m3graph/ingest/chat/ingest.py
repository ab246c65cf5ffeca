"""Writing a conversation into the memory graph: one Clip per session, one episodic memory per turn.

A conversation and a video share one model. The source is a `Video` node (video_id = source id); each session
is a `Clip` whose `clip_index` is its position in the source and whose `started_at` is the session's date (UTC).
`start_s`/`end_s` place sessions end to end on one timeline of the source: a turn with cue times (subtitles)
keeps them, any other turn counts `chat.turn_seconds` (10 s); so clip lengths stay proportional to what was said and no
30 s window is assumed. Absolute time is `started_at`, never the offsets.

Speakers are persistent `Speaker` entities keyed by (source, name), with ids from the entity counter shared by
faces and voices, each its own `Character` until a vote joins it to another. Turn memories read
``Name <speaker_N>: text`` (plus ``[shares an image: caption]``): the name stays for full-text search and
embeddings (which drop the tag), the tag gives the `MENTIONS` edge and renders as ``<character_K>``.

Text from the file is data, never structure: every ``<face_N>``-like tag a speaker's name, a turn or a model
wrote is escaped (`graphdb.tags.safe_text`: ``‹face_N›``) before anything is embedded, so the only tags a
stored memory carries are the ``<speaker_N>`` tags ingestion itself adds for the speakers of that session. A
turn longer than a memory may hold (`MemoryIn.text`, 8,000 characters) is stored in parts ``id``, ``id#p2``,
... with a warning, instead of refusing the file; a turn of more than `MAX_TURN_PARTS` parts (~128,000
characters: a pasted document, not something said) is refused, naming the turn, before anything is embedded
(issue 37: a 20 MB single-line turn became 2,633 parts and was still embedding after 600 s).

Time expressions are resolved against the session's date (`m3graph.dates.TimeNotes`: "yesterday" in a session
of 8 May 2023 is 7 May 2023) and stored beside the text as the memory's `event_*` properties; the text keeps what
was said and the embedding is of the words alone. A session without a date stores none.

Everything is parsed and validated before the first write, and the first session's vectors are ready and checked;
the embedder then works on the next sessions while each is written (`embed_ahead.py`; `embed_ahead=False`: every
vector first). Each new session is ONE transaction (clip, speakers, memories, characters), so a failure leaves no
partial session, and a session whose key is already in the graph is skipped: re-running an ingest changes
nothing, a grown file appends its new sessions. `times` collects a stage profile (bench/ingest_throughput.py).
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

import numpy as np
from annotated_types import MaxLen
from pydantic import ValidationError

from m3graph.data_files import ClipFiles
from m3graph.dates import TimeNotes
from m3graph.embedding import TextEmbedder
from m3graph.errors import InvalidInputError
from m3graph.graphdb.files import FileLinks
from m3graph.graphdb.store import MemoryGraph
from m3graph.graphdb.tags import safe_text
from m3graph.graphdb.types import ClipInfo, MemoryIn, check_source_id, clip_key
from m3graph.ingest.chat.attachments import FileProblem, SharedFile, drop_unheld, share_all
from m3graph.ingest.chat.embed_ahead import SessionVectors, stage
from m3graph.ingest.chat.model import Conversation, Session, Turn
from m3graph.ingest.chat.photo_names import introduced_name
from m3graph.ingest.chat.speaker_names import introductions, name_fact, speaker_key, tagged_name_fact
from m3graph.ingest.chat.timeline import session_timeline
from m3graph.ingest.chat.turn_parts import MAX_TURN_PARTS, split_turn
from m3graph.observations import FaceCluster, VoiceCluster

MAX_SPEAKER_CHARS = 200  # a longer "name" is not a name; it would leave no room for the turn in a memory
# A memory's text bound (MemoryIn.text), read from the model so the two cannot drift apart.
MEMORY_CHARS = next(m.max_length for m in MemoryIn.model_fields["text"].metadata if isinstance(m, MaxLen))
_TAG_ROOM = len(" <speaker_>: ") + 20  # the speaker tag ingestion adds, with any entity id

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SessionMemory:
    """One memory a memorizer wrote for a session, with speakers written by NAME (the tag is added here)."""

    kind: str  # "episodic" | "semantic"
    text: str
    source_ids: tuple[str, ...] = ()
    turn: Turn | None = None  # a raw turn: only its speaker is tagged, not names said inside it
    file_sha256: str | None = None  # a shared file's surrogate: the file it stands for (attachments.py)
    face_labels: tuple[int, ...] = ()  # a photo's faces (session-wide cluster labels), tagged once resolved
    face_name: str | None = None  # the name the sharing turn gives the photo's one face (photo_names.py)
    voice_label: int | None = None  # an audio file's utterance: the voice saying it (session-wide label)
    named_speaker: str | None = None  # a speaker's name fact (speaker_names.py), tagged once the speaker has an id


def turn_memory(turn: Turn) -> SessionMemory:
    """What ingestion writes for a turn without a model (and a memorizer's fallback)."""
    return SessionMemory("episodic", turn_line(turn), (turn.turn_id,), turn)


class SessionMemorizer(Protocol):
    """Writes a session's memories (e.g. through the configured LLM: `m3graph.ingest.chat.memorize_session`)."""

    def memorize(self, conv: Conversation, session: Session) -> list[SessionMemory]: ...


@dataclass
class ChatIngestSummary:
    source_id: str
    sessions_written: list[int] = field(default_factory=list)  # clip indexes written by this call
    sessions_skipped: int = 0  # already in the graph
    turns: int = 0
    episodic: int = 0
    semantic: int = 0
    speakers_created: int = 0
    files: int = 0  # files stored and described
    files_refused: list[str] = field(default_factory=list)  # one line per refused file (the rest was ingested)
    speaker_names: int = 0  # name facts of new speakers (speaker_names.py), not counted in `semantic`


def turn_line(turn: Turn, tag: str = "") -> str:
    """``Name <speaker_N>: text [shares an image: caption]`` (without `tag`: the text that gets embedded)."""
    body = turn.text
    if turn.caption:
        body = f"{body} [shares an image: {turn.caption}]".strip()
    for f in turn.files:
        body = f"{body} [shares a file: {f.display_name}]".strip()
    return f"{turn.speaker}{tag}: {body}"


_NAME_CACHE: dict[str, re.Pattern[str]] = {}


def tag_speakers(text: str, ids: Mapping[str, int]) -> str:
    """Adds ``<speaker_N>`` after the first whole-word occurrence of each speaker's name (longest names first,
    so "Ann Lee" wins over "Ann"); a memory that names nobody stays as it is."""
    taken: list[tuple[int, int]] = []
    inserts: list[tuple[int, str]] = []
    for name in sorted(ids, key=len, reverse=True):
        pattern = _NAME_CACHE.setdefault(name, re.compile(rf"(?<!\w){re.escape(name)}(?!\w)"))
        for m in pattern.finditer(text):
            if any(a < m.end() and m.start() < b for a, b in taken):
                continue
            if text.startswith(f" <speaker_{ids[name]}>", m.end()):
                break
            taken.append((m.start(), m.end()))
            inserts.append((m.end(), f" <speaker_{ids[name]}>"))
            break
    for pos, tag in sorted(inserts, reverse=True):
        text = text[:pos] + tag + text[pos:]
    return text


@dataclass
class _Planned:
    session: Session
    clip: ClipInfo
    memories: list[SessionMemory]
    embeddings: np.ndarray  # one float32 row per memory: Python float lists only per session, when written
    spans: list[tuple[float, float]]
    files: list[SharedFile] = field(default_factory=list)
    faces: list[FaceCluster] = field(default_factory=list)  # every shared photo's faces, labels unique per session
    voices: list[VoiceCluster] = field(default_factory=list)  # every shared audio file's voices, likewise


def _safe_turns(turns: Sequence[Turn], where: str) -> tuple[Turn, ...]:
    out: list[Turn] = []
    for t in turns:
        speaker = safe_text(t.speaker)
        if len(speaker) > MAX_SPEAKER_CHARS:
            raise InvalidInputError(f"{where}: turn {t.turn_id}: speaker name is {len(speaker)} characters (at most "
                                    f"{MAX_SPEAKER_CHARS}); nothing was written")
        text, caption = safe_text(t.text), safe_text(t.caption) if t.caption else None
        files = tuple(replace(f, name=safe_text(f.display_name)) for f in t.files)
        safe = replace(t, speaker=speaker, text=text, caption=caption, files=files)
        body = turn_line(safe)[len(speaker) + 2:]
        size = MEMORY_CHARS - len(speaker) - _TAG_ROOM
        if len(body) <= size:
            out.append(safe)
            continue
        if len(body) > MAX_TURN_PARTS * size:
            raise InvalidInputError(f"{where}: turn {t.turn_id} is {len(body)} characters, more than the "
                                    f"{MAX_TURN_PARTS * size} a turn may hold ({MAX_TURN_PARTS} memories); share a "
                                    "long text as a file; nothing was written")
        pieces = split_turn(body, size)
        log.warning("%s: turn %s is %d characters, more than a memory holds: stored in %d parts (%s, %s#p2, ...)",
                    where, t.turn_id, len(body), len(pieces), t.turn_id, t.turn_id)
        out.extend(replace(safe, turn_id=t.turn_id if i == 0 else f"{t.turn_id}#p{i + 1}", text=piece, caption=None,
                           files=safe.files if i == 0 else ()) for i, piece in enumerate(pieces))
    return tuple(out)


def safe_conversation(conv: Conversation) -> Conversation:
    """The conversation as it may be stored: tags in names, turns and captions escaped, over-long turns in parts.

    Session keys are kept (they were computed from the file as read), so a re-run still recognises a stored
    session.
    """
    where = conv.path or conv.source_id
    sessions = tuple(replace(s, key=s.session_key, turns=_safe_turns(s.turns, where)) for s in conv.sessions)
    return replace(conv, sessions=sessions, speakers=tuple(dict.fromkeys(safe_text(n) for n in conv.speakers)))


def _check(conv: Conversation) -> None:
    check_source_id(conv.source_id)
    dup = sorted(k for k, n in Counter(s.session_key for s in conv.sessions).items() if n > 1)
    if dup:
        raise InvalidInputError(f"{conv.path or conv.source_id}: sessions {dup} appear twice; nothing was written")
    for s in conv.sessions:
        for t in s.turns:
            if not t.speaker.strip() or not (t.text.strip() or t.caption or t.files):
                raise InvalidInputError(f"{conv.path or conv.source_id}: turn {t.turn_id} has no speaker or text; "
                                        "nothing was written")


def ingest_conversation(graph: MemoryGraph, conv: Conversation, embedder: TextEmbedder,
                        memorizer: SessionMemorizer | None = None, files_root: Path | None = None, *,
                        embed_ahead: bool = True, times: dict[str, float] | None = None) -> ChatIngestSummary:
    """Appends the conversation's sessions that are not in the graph yet; returns what was written.

    Without a memorizer every turn becomes one episodic memory (`source_ids=(turn_id,)`); with one, its
    episodic and semantic memories are written instead. Only turns are ever read: benchmark summaries,
    observations and event lists never reach the graph. Files the turns share are read only under `files_root`
    (`attachments.py`); each becomes a `File` node with surrogate memories, and a refused file is listed in
    `files_refused` while the rest is ingested. `times` (seconds by stage: split, plan, embed, wait, write), when
    given, is added to.
    """
    _check(conv)
    with stage(times, "split"):
        conv = safe_conversation(conv)
    for name in conv.speakers:  # a misconfigured speaker join is refused before anything is written
        speaker_key(graph.settings.chat.same_speakers, conv.source_id, name)
    summary = ChatIngestSummary(source_id=conv.source_id)
    existing = graph.ex.read("chat/source_sessions", source_id=conv.source_id)
    have = {r["session_key"] for r in existing if r["session_key"]}
    new = [s for s in conv.sessions if s.session_key not in have and s.turns]
    summary.sessions_skipped = len(conv.sessions) - len(new)
    if not new:
        return summary
    next_index = max((r["clip_index"] for r in existing), default=-1) + 1
    offset = max((float(r["end_s"] or 0.0) for r in existing), default=0.0)
    stored: list[SharedFile] = []  # copies stored by this call: removed again unless a written session holds them
    try:
        _plan_and_write(graph, conv, embedder, memorizer, files_root, new, next_index, offset, summary, stored,
                        embed_ahead, times)
    except BaseException:
        drop_unheld(graph.ex, graph.settings, stored)
        raise
    return summary


def _plan_and_write(graph: MemoryGraph, conv: Conversation, embedder: TextEmbedder,
                    memorizer: SessionMemorizer | None, files_root: Path | None, new: list[Session], next_index: int,
                    offset: float, summary: ChatIngestSummary, stored: list[SharedFile], embed_ahead: bool,
                    times: dict[str, float] | None) -> None:
    """Plans, embeds and writes the new sessions (`ingest_conversation`), adding every stored file to `stored`."""
    with stage(times, "plan"):
        plans = _plan(graph, conv, memorizer, files_root, new, next_index, offset, summary, stored)
    where = conv.path or conv.source_id
    vectors = SessionVectors(embedder, [[m.text for m in p.memories] for p in plans],
                             [f"{where}: session {p.session.session_key}" for p in plans], ahead=embed_ahead,
                             times=times)
    try:
        for i, p in enumerate(plans):
            p.embeddings = vectors.get(i)
            with stage(times, "write"):
                written = _write_session(graph, conv, p)
            if written is None:
                summary.sessions_skipped += 1  # another run wrote it meanwhile
                drop_unheld(graph.ex, graph.settings, p.files)
                continue
            summary.sessions_written.append(p.clip.clip_index)
            summary.turns += len(p.session.turns)
            summary.episodic += sum(1 for m in p.memories if m.kind == "episodic")
            summary.semantic += sum(1 for m in p.memories if m.kind == "semantic" and m.named_speaker is None)
            summary.speaker_names += sum(1 for m in p.memories if m.named_speaker is not None)
            summary.speakers_created += written
            summary.files += len(p.files)
    finally:
        vectors.close()


def _plan(graph: MemoryGraph, conv: Conversation, memorizer: SessionMemorizer | None, files_root: Path | None,
          new: list[Session], next_index: int, offset: float, summary: ChatIngestSummary,
          stored: list[SharedFile]) -> list[_Planned]:
    """Each new session's clip and memories (files shared, faces and voices labelled), every memory checked
    (`MemoryIn`, but for its vector) so that nothing is embedded or written for a file that would be refused."""
    plans: list[_Planned] = []
    timeline = session_timeline(new, offset, graph.settings.chat.turn_seconds)
    keys = {t.speaker: speaker_key(graph.settings.chat.same_speakers, conv.source_id, t.speaker)
            for s in new for t in s.turns}
    held = {r["key"] for r in graph.ex.read("chat/speakers_by_key", keys=sorted(set(keys.values())))}
    intro = introductions(new, {n for n, k in keys.items() if k in held})  # first: a rename said later wins
    for i, (session, (start, end, spans)) in enumerate(zip(new, timeline, strict=True)):
        clip = ClipInfo(source_id=conv.source_id, clip_index=next_index + i, start_s=start, end_s=end,
                        started_at=session.started_at)
        mems = [SessionMemory("semantic", fact, named_speaker=who)
                for who in intro.get(session.session_key, ()) if (fact := name_fact(who))]
        mems += memorizer.memorize(conv, session) if memorizer else [turn_memory(t) for t in session.turns]
        shared: list[SharedFile] = []
        faces: list[FaceCluster] = []
        voices: list[VoiceCluster] = []
        if any(t.files for t in session.turns):
            where = ClipFiles(graph.settings, conv.source_id, clip.clip_index)
            shared, problems = share_all(graph.settings, files_root, session.turns, session.started_at, where.crops,
                                         start, where.snippets)
            stored += shared
            summary.files_refused += [str(FileProblem(p.turn_id, p.path, p.reason)) for p in problems]
            said = {t.turn_id: t.text for t in session.turns}
            for f in shared:
                labels = tuple(range(len(faces), len(faces) + len(f.faces)))
                faces += [c.model_copy(update={"label": k}) for k, c in zip(labels, f.faces, strict=True)]
                heard = {c.label: len(voices) + i for i, c in enumerate(f.voices)}  # file label -> session label
                voices += [c.model_copy(update={"label": heard[c.label]}) for c in f.voices]
                said_by = [heard.get(v) for v in f.voice_of] if f.voice_of else [None] * len(f.surrogates)
                mems = mems + [SessionMemory("episodic", text, (f.turn_id,), file_sha256=f.sha256,
                                             face_labels=labels, voice_label=v)
                               for text, v in zip(f.surrogates, said_by, strict=True)]
                who = introduced_name(said.get(f.turn_id, ""), conv.speakers) if len(labels) == 1 else None
                if who is not None:  # the one face of the photo, named by its turn: a name fact about the face
                    mems.append(SessionMemory("semantic", f"The person in the photo {f.name} is called {who}.",
                                              (f.turn_id,), face_labels=labels, face_name=who))
        plans.append(_Planned(session, clip, mems, np.zeros((0, 0), dtype=np.float32), spans, shared, faces,
                              voices))
    for p in plans:
        for m in p.memories:  # refused here, before anything is embedded or written (a placeholder vector)
            try:
                MemoryIn(kind=m.kind, text=m.text, embedding=[1.0], source_ids=m.source_ids)
            except ValidationError as exc:
                first = exc.errors()[0]
                raise InvalidInputError(f"{conv.path or conv.source_id}: session {p.session.session_key}: memory "
                                        f"{m.text[:60]!r}: {first['loc'][0]}: {first['msg']}; nothing was written"
                                        ) from None
    return plans


def _write_session(graph: MemoryGraph, conv: Conversation, p: _Planned) -> int | None:
    """One session through the store's single session write; returns the number of speakers created, or None
    when the session is already stored. Memory text is rendered once the speakers' entity ids are known."""
    names = list(dict.fromkeys(t.speaker for t in p.session.turns))
    keys = {n: speaker_key(graph.settings.chat.same_speakers, conv.source_id, n) for n in names}
    turns_by = Counter(t.speaker for t in p.session.turns)
    span_of = {t.turn_id: s for t, s in zip(p.session.turns, p.spans, strict=True)}

    named = {k: m.face_name for m in p.memories if m.face_name for k in m.face_labels}  # label -> name said here
    photo_faces: dict[str, list[int]] = {}  # turn id -> the face labels of the photos it shared
    for m in p.memories:
        if m.file_sha256 is not None and m.face_labels and m.face_name is None:
            photo_faces.setdefault(m.source_ids[0], []).extend(k for k in m.face_labels
                                                               if k not in photo_faces.get(m.source_ids[0], []))

    def render(ids: Mapping[str, int], faces: Mapping[int, int], known: Mapping[int, str],
               voices: Mapping[int, int]) -> list[MemoryIn]:
        # The only entities this session's memories may name: its speakers, the faces of its shared photos and
        # the voices of its shared audio files.
        # `known`: the names facts already give these faces (face entity id -> name); a name said in this
        # session wins, so a photo's surrogate reads "faces: <face_3> (Lena)".
        resolved = ({("speaker", i) for i in ids.values()} | {("face", i) for i in faces.values()}
                    | {("voice", i) for i in voices.values()})
        memories = []
        for m, vec in zip(p.memories, p.embeddings, strict=True):
            spans = [span_of[s] for s in m.source_ids if s in span_of]
            start = min((a for a, _ in spans), default=p.clip.start_s)
            end = max((b for _, b in spans), default=p.clip.end_s)
            text = (turn_line(m.turn, f" <speaker_{ids[m.turn.speaker]}>") if m.turn
                    else tagged_name_fact(m.named_speaker, ids[m.named_speaker]) if m.named_speaker
                    else tag_speakers(safe_text(m.text), ids))
            tags = [f"<face_{faces[k]}>" + (f" ({who})" if (who := named.get(k) or known.get(faces[k])) else "")
                    for k in m.face_labels if k in faces]
            if m.face_name is not None and tags:  # a name fact: its slot is the face's name (facts/character_names)
                text, tags = f"<face_{faces[m.face_labels[0]]}>'s name is {m.face_name}.", []
            if m.turn is not None:  # the sharing turn says who its photo shows, where a name is known
                shown = [f"<face_{faces[k]}> ({who})" for k in photo_faces.get(m.turn.turn_id, ())
                         if k in faces and (who := named.get(k) or known.get(faces[k]))]
                if shown:
                    text = f"{text} [in the photo: {', '.join(shown)}]"
            if tags:
                text = f"{text}; faces: {', '.join(tags)}"
            if m.voice_label is not None and m.voice_label in voices:  # who says this line of an audio file
                text = f"{text}; voice: <voice_{voices[m.voice_label]}>"
            text = safe_text(text, resolved)  # the last gate: nothing reaches MENTIONS that this step did not resolve
            memories.append(MemoryIn(kind=m.kind, text=text, embedding=vec.tolist(), start_s=start, end_s=end,
                                     source_ids=m.source_ids, times=TimeNotes.of(text, p.clip.started_at)))
        return memories

    return graph.write_chat_session(conv.source_id, p.session.session_key, p.clip, keys, turns_by,
                                    len(p.session.turns), render, _file_links(p), p.faces, p.voices)


def _file_links(p: _Planned) -> FileLinks:
    """The session's files, which memories describe them (surrogates) and which share them (the turns' own
    memories), by the ids the session's episodic memories get (``<clip key>#e<order>``)."""
    ckey = clip_key(p.clip.source_id, p.clip.clip_index)
    cites, shares = [], []
    episodic = [m for m in p.memories if m.kind == "episodic"]
    for order, m in enumerate(episodic):
        mid = f"{ckey}#e{order}"
        if m.file_sha256 is not None:
            cites.append({"memory_id": mid, "sha256": m.file_sha256})
            continue
        for f in p.files:
            if f.turn_id in m.source_ids:
                shares.append({"memory_id": mid, "sha256": f.sha256, "name": f.name, "turn_id": f.turn_id})
    faces = [{"uri": o.crop_uri, "sha256": f.sha256} for f in p.files for c in f.faces for o in c.observations
             if o.crop_uri]
    return FileLinks([f.row() for f in p.files], cites, shares, faces)
