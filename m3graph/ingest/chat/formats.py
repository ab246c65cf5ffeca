"""Which loader reads a file: by the requested format, or by extension and content (`auto`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from m3graph.ingest.chat.facts_list import load_facts_list, looks_like_facts
from m3graph.ingest.chat.folder import load_folder, looks_like_folder
from m3graph.ingest.chat.generic_json import load_generic_json
from m3graph.ingest.chat.locomo import load_locomo, looks_like_locomo
from m3graph.ingest.chat.model import ChatFormatError, Conversation, EvidenceQuestion
from m3graph.ingest.chat.parsing import DEFAULT_LIMITS, ReadLimits, read_text
from m3graph.ingest.chat.subtitles import load_subtitles
from m3graph.ingest.chat.transcript import load_transcript

Format = Literal["auto", "locomo", "json", "srt", "vtt", "text", "facts", "folder"]
FORMATS: tuple[str, ...] = ("auto", "locomo", "json", "srt", "vtt", "text", "facts", "folder")


def detect_format(path: str | Path, limits: ReadLimits = DEFAULT_LIMITS) -> str:
    p = Path(path)
    if looks_like_folder(p):  # a session folder per sitting, with the files it shares (ingest/chat/folder.py)
        return "folder"
    suffix = p.suffix.lower()
    if suffix == ".srt":
        return "srt"
    if suffix == ".vtt":
        return "vtt"
    head = read_text(p, limits).lstrip()
    if head.startswith("WEBVTT"):
        return "vtt"
    if suffix == ".json" or head.startswith("{"):
        try:
            return "locomo" if looks_like_locomo(json.loads(head)) else "json"
        except (json.JSONDecodeError, RecursionError):
            return "json"  # the JSON loader reports the line of the syntax error (or the depth)
    if looks_like_facts(head):  # every non-blank line "N. text" (after one "...:" header): never a transcript
        return "facts"
    return "text"


def load_conversation(path: str | Path, fmt: str = "auto", source_id: str | None = None,
                      limits: ReadLimits = DEFAULT_LIMITS) -> tuple[Conversation, list[EvidenceQuestion]]:
    """The whole file parsed and validated (nothing is written); questions only where the format has them.

    Only a regular file within `limits` is read (`ReadLimits.of(settings.chat)`; the default is the settings'
    defaults, for callers without settings)."""
    if fmt not in FORMATS:
        raise ChatFormatError(path, None, f"unknown format {fmt!r} (one of {', '.join(FORMATS)})")
    kind = detect_format(path, limits) if fmt == "auto" else fmt
    if kind == "locomo":
        return load_locomo(path, source_id, limits)
    if kind == "json":
        return load_generic_json(path, source_id, limits), []
    if kind == "folder":
        return load_folder(path, source_id, limits), []
    if kind == "facts":
        return load_facts_list(path, source_id, limits), []
    if kind in ("srt", "vtt"):
        return load_subtitles(path, source_id, vtt=kind == "vtt", limits=limits), []
    return load_transcript(path, source_id, limits), []
