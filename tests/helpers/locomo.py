"""A small LoCoMo-format conversation written to disk and loaded as the chat ingestion reads it.

Tests that need a dated conversation in the real graph (time notes, the premise check) build one from a few turns
per session: session N is dated 1:05 pm on N May 2023.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from m3graph.ingest.chat.locomo import load_locomo
from m3graph.ingest.chat.model import Conversation


def locomo_conversation(directory: Path, source_id: str, sessions: dict[int, list[dict[str, Any]]],
                        speakers: tuple[str, str] = ("Ann", "Bob")) -> Conversation:
    data: dict[str, Any] = {"speaker_a": speakers[0], "speaker_b": speakers[1]}
    for n, turns in sessions.items():
        data[f"session_{n}_date_time"] = f"1:05 pm on {n} May, 2023"
        data[f"session_{n}"] = turns
    path = directory / f"{source_id}.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    conv, _ = load_locomo(path)
    return replace(conv, source_id=source_id)
