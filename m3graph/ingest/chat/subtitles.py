"""SRT and WebVTT transcripts with speaker labels: one file is one session, each labelled line one turn.

Speakers come from WebVTT voice spans (``<v Ann>text</v>``, ``<v.loud Ann>``) or a ``Name:`` prefix (SRT,
and VTT without voice spans; a leading "- " as in two-speaker cues is allowed). A cue without a label
continues the previous speaker; a file whose first cue has no label is refused, since a turn without a
speaker cannot become an identity. Other markup (``<i>``, ``<c.x>``, inline timestamps, ``{\\an8}``) is
dropped. Cue times are kept as the turns' offsets within the session.
"""

from __future__ import annotations

import re
from pathlib import Path

from m3graph.ingest.chat.generic_json import session_digest
from m3graph.ingest.chat.model import ChatFormatError, Conversation, Session, Turn, speakers_in_order
from m3graph.ingest.chat.parsing import DEFAULT_LIMITS, ReadLimits, clean, read_text

_SRT_TIME = re.compile(r"^\s*(\d{1,3}):(\d{2}):(\d{2})[,.](\d{1,3})\s*-->\s*(\d{1,3}):(\d{2}):(\d{2})[,.](\d{1,3})\s*$")
_VTT_TS = r"(?:(\d{1,3}):)?(\d{2}):(\d{2})\.(\d{3})"
_VTT_TIME = re.compile(rf"^\s*{_VTT_TS}\s+-->\s+{_VTT_TS}(?:\s+.*)?$")
_VOICE = re.compile(r"<v(?:\.[\w.-]+)?\s+([^>]+)>(.*?)(?:</v>|$)", re.IGNORECASE)
_MARKUP = re.compile(r"</?[a-z][^>]*>|<\d{2}:[\d:.]+>|\{\\[^}]*\}", re.IGNORECASE)
_LABEL = re.compile(r"^\s*-?\s*([A-Z\u00C0-\u024F][\w.'\- ]{0,40}?)\s*:\s+(.*)$")


def _seconds(h: str | None, m: str, s: str, ms: str) -> float:
    return int(h or 0) * 3600 + int(m) * 60 + int(s) + int(ms.ljust(3, "0")) / 1000


def _cue_lines(path: Path, lines: list[str], first: int, vtt: bool) -> list[tuple[str, str, int]]:
    """(speaker, text, line) for each labelled line of one cue; speaker "" means "the previous speaker"."""
    out: list[tuple[str, str, int]] = []
    for offset, line in enumerate(lines):
        number = first + offset
        voices = _VOICE.findall(line) if vtt else []
        if voices:
            out.extend((clean(name), clean(_MARKUP.sub("", text)), number) for name, text in voices)
            continue
        text = clean(_MARKUP.sub("", line))
        if not text:
            continue
        m = _LABEL.match(text)
        if m:
            out.append((clean(m.group(1)), clean(m.group(2)), number))
        elif out:
            speaker, prev, at = out[-1]
            out[-1] = (speaker, f"{prev} {text}", at)  # a wrapped line continues the cue's turn
        else:
            out.append(("", text, number))
    return out


def load_subtitles(path: str | Path, source_id: str | None = None, vtt: bool | None = None,
                   limits: ReadLimits = DEFAULT_LIMITS) -> Conversation:
    p = Path(path)
    raw = read_text(p, limits)
    lines = raw.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if vtt is None:
        vtt = raw.lstrip().startswith("WEBVTT")
    if vtt and not (lines and lines[0].lstrip("\ufeff").startswith("WEBVTT")):
        raise ChatFormatError(p, 1, "a WebVTT file must start with 'WEBVTT'")
    timing = _VTT_TIME if vtt else _SRT_TIME
    turns: list[Turn] = []
    speaker = ""
    i = 1 if vtt else 0
    cue_no = 0
    seen: set[str] = set()
    while i < len(lines):
        if not lines[i].strip():
            i += 1
            continue
        block_start = i
        block: list[str] = []
        while i < len(lines) and lines[i].strip():
            block.append(lines[i])
            i += 1
        if vtt and block[0].split(maxsplit=1)[0] in ("NOTE", "STYLE", "REGION"):
            continue
        t_at = next((k for k, line in enumerate(block[:2]) if "-->" in line), None)
        if t_at is None:  # the timing belongs after the cue number (SRT) or identifier (VTT), if there is one
            expected = block_start + (2 if len(block) > 1 and (block[0].strip().isdigit() or vtt) else 1)
            raise ChatFormatError(p, expected, "a cue needs a timing line 'start --> end'")
        if not vtt and (t_at != 1 or not block[0].strip().isdigit()):
            raise ChatFormatError(p, block_start + 1, "an SRT cue starts with its number, then its timing line")
        m = timing.match(block[t_at])
        if not m:
            raise ChatFormatError(p, block_start + t_at + 1, f"malformed cue timing {block[t_at].strip()!r}")
        g = m.groups()
        start, end = _seconds(*g[0:4]), _seconds(*g[4:8])
        if end < start:
            raise ChatFormatError(p, block_start + t_at + 1, "cue ends before it starts")
        cue_no += 1
        ident = block[0].strip() if t_at == 1 else str(cue_no)
        if ident in seen:
            raise ChatFormatError(p, block_start + 1, f"cue id {ident!r} appears twice")
        seen.add(ident)
        parts = _cue_lines(p, block[t_at + 1:], block_start + t_at + 2, vtt)
        for n, (who, text, line) in enumerate(parts):
            who = who or speaker
            if not who:
                raise ChatFormatError(p, line, "no speaker label (use '<v Name>' or 'Name: ' on the first cue)")
            speaker = who
            suffix = f".{n + 1}" if len(parts) > 1 else ""
            limits.check_turns(p, line, len(turns) + 1)
            turns.append(Turn(turn_id=f"{p.stem}#{ident}{suffix}", speaker=who, text=text, start_s=start,
                              end_s=end))
    if not turns:
        raise ChatFormatError(p, None, "holds no cues")
    session = Session(index=0, started_at=None, turns=tuple(turns), key=session_digest(tuple(turns)))
    return Conversation(source_id=source_id or p.stem, sessions=(session,),
                        speakers=speakers_in_order((session,)), path=str(p))
