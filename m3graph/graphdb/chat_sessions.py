"""Writing one conversation session: its clip, speakers, memories, state and characters in one transaction.

The ingestion package decides what a session says (turns, model-written memories, speaker names and how a
name maps to a speaker key); this module owns how that lands in the graph, so a session has exactly one write
path, whoever calls it (`m3graph ingest-chat`, the MCP `remember`/`ingest_chat` tools).
Speaker entity ids are allocated inside the transaction, under a per-source lock, and the memories' text is
rendered only then (`render` receives name -> entity id), because `<speaker_N>` tags need the ids.

Statements from speech (`m3graph.speech_statements`, with `chat.speech_facts` on): each turn memory ("Nora
<speaker_5>: I moved to Porto") also gets one derived SEMANTIC memory per statement it makes ("Nora <speaker_5>
moved to Porto."), written in the same `write_clip_memories` call, so a chat ingested without a model still gets
versioned slots. Why a derived memory and not a slot on the turn itself: a turn may state several things (one memory
holds one slot), and a turn is episodic, never superseded; a superseded turn would hide everything else it said. The
derived memory goes through the one write path every semantic fact takes (slots, named things, dedup against the
source's facts, versions), carries the turn's `source_ids`, times and embedding (the turn's words, which the
statement restates: search finds both), and is supported by the session's clip: re-ingesting skips the stored
session and changes nothing, deleting the clip retracts what it derived and recomputes the slots. The subject is the
speaker's name with the speaker's tag after it, the form a memorizer's facts about a speaker take, so speech and
`--memorize` facts share one slot and `history <source> Nora` finds them (by name, or through the speaker's
character).
A session's turns share one `SpeechContext`, so a pronoun or a shorter name of a metric the speaker stated earlier
in the session binds to it ("the latency is 400 ms" ... "it's now down to 250 ms": one slot, two versions).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from m3graph.graphdb.characters import refresh_characters
from m3graph.graphdb.clip_state import ClipState, set_state_tx
from m3graph.graphdb.executor import Executor, Tx
from m3graph.graphdb.facts import face_names
from m3graph.graphdb.files import FileLinks
from m3graph.graphdb.identity import resolve
from m3graph.graphdb.memories import write_clip_memories
from m3graph.graphdb.types import ClipInfo, MemoryIn, clip_key
from m3graph.observations import FaceCluster, VoiceCluster
from m3graph.settings import Settings
from m3graph.speech_statements import SpeechContext, read_turn

# (speaker name -> entity id, photo face label -> entity id, face entity id -> its known name,
#  audio file voice label -> entity id) -> the memories
RenderMemories = Callable[[Mapping[str, int], Mapping[int, int], Mapping[int, str], Mapping[int, int]],
                          list[MemoryIn]]


_TURN = re.compile(r"^(.+?) <speaker_(\d+)>: (.+)$", re.S)


def speech_memories(memories: Sequence[MemoryIn], ids: Mapping[str, int]) -> list[MemoryIn]:
    """The statements the session's turn memories make, as semantic memories about their speaker (or, with
    exactly two speakers, the addressee); see the module docstring."""
    tags = {name: f"<speaker_{i}>" for name, i in ids.items()}
    context = SpeechContext()  # the session's metrics, for "it's now down to 250 ms" (speech_statements)
    out: list[MemoryIn] = []
    for m in memories:
        turn = _TURN.match(m.text) if m.kind == "episodic" else None
        if turn is None or tags.get(turn.group(1)) != f"<speaker_{turn.group(2)}>":
            continue
        speaker = turn.group(1)
        others = [n for n in ids if n != speaker]
        addressee = others[0] if len(others) == 1 else None
        for said in read_turn(turn.group(3), speaker, addressee, context):
            owner = said.person.split("'s ", 1)[0]  # "Nora's sister" (a pronoun's antecedent) is tagged as Nora's
            tag = tags.get(owner)
            text = said.sentence if tag is None else f"{owner} {tag}{said.sentence[len(owner):]}"
            out.append(m.model_copy(update={"kind": "semantic", "text": text}))
    return out


def write_session(ex: Executor, settings: Settings, source_id: str, session_key: str, clip: ClipInfo,
                  speaker_keys: Mapping[str, str], turns_by_speaker: Mapping[str, int], n_turns: int,
                  render: RenderMemories, files: FileLinks | None = None,
                  faces: Sequence[FaceCluster] = (), voices: Sequence[VoiceCluster] = ()) -> int | None:
    """Writes a session unless it is already stored; returns the number of new speakers, or None if it was.

    Faces of the photos the session shares are resolved like a video clip's (`identity.resolve`: matched to
    persistent Face entities or created), in the same transaction, before the memories are rendered; so are the
    voices of the audio files it shares (persistent Voice entities, as a video clip's voices).

    Why `chat/open_session` (lock, stored check, clip check and speakers in one statement) and not three: the
    statements of a session write are cheap in database work and dear in round trips and per-statement server
    overhead, which is what a chat turn's write costs (bench/session_writes.py measures both paths). Its clip
    check lets the memory write skip reading the source's memories back for a clip this session creates."""

    def work(tx: Tx) -> int | None:
        ckey = clip_key(source_id, clip.clip_index)
        opened = tx.one("chat/open_session", source_id=source_id, session_key=session_key, clip_key=ckey,
                        keys=sorted(set(speaker_keys.values())))
        if opened["stored"]:
            return None
        names = list(speaker_keys)
        by_key = {r["key"]: r["entity_id"] for r in opened["speakers"]}
        missing = sorted(set(speaker_keys.values()) - set(by_key))
        if missing:
            first = tx.one("graph/allocate_ids", counter="entity", n=len(missing))["first"]
            by_key.update({k: first + i for i, k in enumerate(missing)})
        ids = {n: by_key[speaker_keys[n]] for n in names}
        tx.run("graph/upsert_clip", clips=[clip.upsert_params(source_id)])
        face_ids: dict[int, int] = {}
        known: dict[int, str] = {}
        if faces:
            resolved, _ = resolve(tx, settings, "face", source_id, clip.clip_index, faces)
            face_ids = {r.label: r.entity_id for r in resolved}
            known = face_names(tx, face_ids.values())  # a face seen before keeps the name a fact gave it
        voice_ids: dict[int, int] = {}
        if voices:
            heard, _ = resolve(tx, settings, "voice", source_id, clip.clip_index, voices)
            voice_ids = {r.label: r.entity_id for r in heard}
        tx.run("chat/write_session", clip_key=ckey, session_key=session_key,
               turns=n_turns,
               speakers=[{"key": speaker_keys[n], "source": speaker_keys[n].split("|", 1)[0],
                          "name": speaker_keys[n].split("|", 1)[1], "as_name": n, "entity_id": ids[n],
                          "turns": turns_by_speaker.get(n, 0)} for n in names])
        memories = render(ids, face_ids, known, voice_ids)
        derived = speech_memories(memories, ids) if settings.chat.speech_facts else []
        write_clip_memories(tx, settings, source_id, clip.clip_index, [*memories, *derived],
                            new_clip=not opened["clip_exists"])
        if files is not None:  # the files the session shares, linked to its memories (graphdb/files.py)
            files.write(tx, ckey)
        set_state_tx(tx, source_id, clip.clip_index, ClipState.MEMORIZED)
        refresh_characters(tx, settings, sorted({*ids.values(), *face_ids.values(), *voice_ids.values()}))
        return len(missing)

    return ex.write_tx(work, label="ingest_chat_session")
