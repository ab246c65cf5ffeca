"""Voice notes shared in a conversation go through the video path's voices (VAD, the CAM++ speaker embedder,
Whisper ASR) on the real Neo4j with the offline models: the transcript becomes surrogate memories citing the file,
with their times and the voice's tag; two notes in one espeak-ng voice, in two sessions, resolve to one persistent
Voice entity; deleting the conversation deletes the voices and the files. The notes are spoken here (espeak-ng and
sox, as the test videos are: `chat_files_render.write_voice_note`)."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import pytest

from m3graph.devkit.chat_files_render import write_voice_note
from m3graph.embedding import text_embedder
from m3graph.graphdb.store import MemoryGraph
from m3graph.ingest.chat.formats import load_conversation
from m3graph.ingest.chat.ingest import ingest_conversation
from m3graph.reasoning.memory_tools import MemoryTools
from tests.helpers.graph import perception_graph, rows

_VOICE = re.compile(r"voice: <voice_(\d+)>$")
SPOKEN = shutil.which("espeak-ng") is not None and shutil.which("sox") is not None


def _surrogates(g: MemoryGraph, name: str) -> list[str]:
    return [r["text"] for r in rows(g, "MATCH (:Clip)-[h:HAS_FILE {name: $name}]->(f:File)<-[:DESCRIBES]-(m:Memory) "
                                       "RETURN m.text AS text ORDER BY m.start_s", name=name)]


@pytest.mark.skipif(not SPOKEN, reason="espeak-ng and sox (which speak the notes) are not installed")
def test_voice_notes_are_transcribed_and_their_voice_is_one_entity(graph: MemoryGraph, tmp_path: Path) -> None:
    g = perception_graph(graph, tmp_path / "data")
    conv = tmp_path / "conv"
    conv.mkdir()
    write_voice_note(conv / "note-1.wav", ["The picnic on Saturday is at the boathouse.", "Please bring lemonade."])
    write_voice_note(conv / "note-2.wav", ["The dentist moved my appointment to Thursday."])
    (conv / "broken.wav").write_bytes(b"RIFF\x24\x00\x00\x00WAVEfmt " + b"\x00" * 40)  # a WAV header, no audio
    data = {"source_id": "voice-chat", "speakers": ["Ann", "Bob"], "sessions": [
        {"id": "s1", "started_at": "2024-05-01T09:00:00Z", "turns": [
            {"id": "t1", "speaker": "Ann", "text": "Voice note for you", "files": [
                {"path": "note-1.wav", "kind": "audio"}]}]},
        {"id": "s2", "started_at": "2024-05-09T09:00:00Z", "turns": [
            {"id": "t2", "speaker": "Ann", "text": "Another one", "files": ["note-2.wav", "broken.wav"]}]}]}
    (conv / "chat.json").write_text(json.dumps(data), encoding="utf-8")
    loaded, _ = load_conversation(conv / "chat.json")
    embedder = text_embedder(g.settings)
    summary = ingest_conversation(g, loaded, embedder, files_root=conv)
    assert summary.files_refused == [] and summary.files == 3  # undecodable audio is kept, untranscribed

    first, second = _surrogates(g, "note-1.wav"), _surrogates(g, "note-2.wav")
    assert first and second
    assert first[0].startswith("[file note-1.wav, audio, 0:0") and ", shared by Ann" in first[0]
    heard = " ".join(first).lower()
    assert "saturday" in heard and "lemonade" in heard, first  # the ASR's words, not the file name
    assert "thursday" in " ".join(second).lower(), second
    voices = {int(m.group(1)) for t in first + second if (m := _VOICE.search(t))}
    assert len(voices) == 1, (first, second)  # one speaker in two sessions: one persistent Voice
    assert rows(g, "MATCH (v:Voice {entity_id: $id}) RETURN count(v) AS n", id=voices.pop())[0]["n"] == 1
    assert [t.split("] ", 1)[1] for t in _surrogates(g, "broken.wav")] == ["an audio file (audio/wav); not transcribed"]
    snippets = list((g.settings.data_dir / "videos").rglob("*.wav"))
    assert snippets  # the utterances' snippets live with the session clip

    # the reader's file tools see the transcript: the note's passages in full
    tools = MemoryTools(g.search, embedder, g.settings, ["voice-chat"])
    assert "lemonade" in " ".join(tools.run("look_at_file", "note-1.wav").knowledge["CLIP_0"]).lower()
    assert sorted(ln.split()[1] for ln in tools.run("list_files", "audio").knowledge["CLIP_1"]) == ["broken.wav",
                                                                                                    "note-2.wav"]

    g.delete_video("voice-chat")
    assert rows(g, "MATCH (v:Voice) RETURN count(v) AS n")[0]["n"] == 0
    assert rows(g, "MATCH (f:File) RETURN count(f) AS n")[0]["n"] == 0
