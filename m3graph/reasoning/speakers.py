"""Who said a quoted line, and how many different people speak: looked up in the graph, shown to the reader.

Why: the graph knows who said what. Every said line is stored with its speaker as structure: ``<voice_8> says:
"..."`` (a video, the voice resolved to a character) or ``Ann <speaker_3>: ...`` (a conversation). A question
such as 'Was the person who said "A" the same person who said "B"?' or "How many different people speak in this
video?" is answered by comparing or counting those speakers, work a small reader does badly from a dozen lines:
the default 1.5B answered "No" to the first with both lines, spoken by the same ``<character_7>``, in front of
it, and "strings" to the second, shown only the best-matching lines of one speaker (generated media, once the
bge embedder changed which lines rank first). So, before the reader's first step, the controller (`control.py`)
looks the speakers up and adds what it found to the first search's results, as a note the reader answers from:

- a question that asks about the person who said a quoted line ("the person who said "...""; "who said "...""):
  each quote is matched to the said lines in scope (the memory full-text index, then a character-level
  similarity of at least `MATCH_FLOOR`, so a transcript's slips, "favorite fruit in a ripe mango", still match)
  and the note names each line's speaker, and whether two or more quotes share one;
- a question that asks how many people (speakers, voices) speak, talk or say something: the note counts the
  distinct speakers of every said line in scope, by character where the voice has one
  (`graphdb.speech.speaker_counts`).

A quote in any other role ('How many people were on screen when someone said "..."?') is a time anchor, not a
question about its speaker, and gets no note. No model is called; the reader still writes the answer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from m3graph.graphdb.executor import Executor
from m3graph.graphdb.speech import Label, Speaker, speaker_counts, who_said, words

QUOTES_CHECKED = 4  # quotes looked up per question
_MIN_WORDS = 3  # a quote of fewer words is a name or a term ("the "Three Little Pigs""), not a said line

_QUOTE = re.compile(r"[\"“]([^\"“”]{3,400})[\"”]")
# The quote is the words of the person the question asks about: "the person who said", "who said", "whoever said".
_ABOUT_SPEAKER = re.compile(r"\b(?:who|whoever|whom)\s+(?:\w+\s+){0,2}?(?:said|says|say|spoke|speaks|asked|asks)"
                            r"\s*[:,]?\s*$", re.IGNORECASE)
_HOW_MANY_SPEAK = re.compile(
    r"\bhow\s+many\s+(?:different\s+|distinct\s+|separate\s+)?(?:"
    r"(?:people|persons|individuals|characters|voices|participants)\s+(?:\w+\s+)?"
    r"(?:speak|spoke|speaks|speaking|talk|talks|talked|talking|say\s+something|said\s+something|have\s+lines)\b"
    r"|speakers\b)", re.IGNORECASE)


def quotes_about_speakers(question: str) -> list[str]:
    """The quoted lines whose speaker the question asks about, in order (at most `QUOTES_CHECKED`)."""
    out: list[str] = []
    for match in _QUOTE.finditer(question):
        quote = match.group(1).strip()
        if len(words(quote).split()) >= _MIN_WORDS and _ABOUT_SPEAKER.search(question[:match.start()]):
            out.append(quote)
    return list(dict.fromkeys(out))[:QUOTES_CHECKED]


def asks_how_many_speak(question: str) -> bool:
    """Whether the question counts the people who speak ("How many different people speak in this video?")."""
    return bool(_HOW_MANY_SPEAK.search(question))


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _quote_note(ex: Executor, quotes: Sequence[str], videos: Sequence[str] | None, before_clip: int | None,
                label: Label) -> list[str]:
    lines: list[str] = []
    speakers: list[set[Speaker]] = []
    names: dict[Speaker, str] = {}
    for quote in quotes:
        found = who_said(ex, quote, videos, before_clip, label)
        if not found:
            lines.append(f'- No remembered line matches "{quote}".')
            continue
        who = list(dict.fromkeys(line.who for line in found))
        where = ", ".join(dict.fromkeys(line.label for line in found))
        lines.append(f'- "{quote}" was said by {" and by ".join(who)} ({where}: "{found[0].body}").')
        speakers.append({line.key for line in found})
        names.update((line.key, line.who) for line in found)
    if len(speakers) >= 2 and len(speakers) == len(quotes) and all(len(s) == 1 for s in speakers):
        keys = [next(iter(s)) for s in speakers]
        if len(set(keys)) == 1:
            lines.append(f"All the quoted lines were said by the same person, {names[keys[0]]}.")
        else:
            lines.append(f"The quoted lines were said by {len(set(keys))} different people.")
    return lines


def speaker_note(ex: Executor, question: str, videos: Sequence[str] | None, before_clip: int | None,
                 label: Label, all_videos: Callable[[], list[str]]) -> str | None:
    """The note the reader is shown with its first search results, or None when the question asks neither."""
    quotes = quotes_about_speakers(question)
    counting = asks_how_many_speak(question)
    if not quotes and not counting:
        return None
    out: list[str] = []
    if quotes:
        out.append("Who said the quoted lines (looked up in memory):")
        out += _quote_note(ex, quotes, videos, before_clip, label)
    if counting:
        scope = list(videos) if videos else all_videos()
        found = speaker_counts(ex, scope, before_clip, label)
        where = ", ".join(scope) if len(scope) <= 3 else f"{len(scope)} sources"
        if not found.lines:
            out.append(f"Who speaks (every line said in {where}): nobody says anything in memory.")
        else:
            listed = ", ".join(f"{found.who[k]} ({_plural(n, 'line')})" for k, n in found.lines.most_common())
            many = f"at least {len(found.lines)}" if found.capped else str(len(found.lines))
            people = ("different person speaks" if len(found.lines) == 1 and not found.capped
                      else "different people speak")
            out.append(f"Who speaks (every line said in {where}): {many} {people}: {listed}.")
    return "\n".join(out)
