"""The query text as the full-text index and the ranking's named things read it, never as Lucene syntax.

Kept apart from `graphdb.search` (which runs the ranking) because the same tokenising is shared by the follow-up
search, the retrieval evaluation and the benchmarks: one stop-word list and one escaping rule for all of them.
"""

from __future__ import annotations

import re

from m3graph.dates import MONTH_NAMES

_LUCENE_SPECIAL = set('+-&|!(){}[]^"~*?:\\/')


def lucene_escape(text: str) -> str:
    return "".join("\\" + ch if ch in _LUCENE_SPECIAL else ch for ch in text)


def lucene_phrase(text: str) -> str:
    """A user string as one exact Lucene phrase: no operator in it can change the query."""
    return '"' + lucene_escape(text.strip()) + '"'


# Function words dropped from hybrid search's full-text query (the English analyser drops only 33 of them):
# a question's "what did ... do" would otherwise match every line of a conversation.
_STOP_WORDS = """
a about above after again against all am an and any are as at be because been before being below between both
but by can could did do does doing down during each few for from further had has have having he her here hers
herself him himself his how i if in into is it its itself just let me more most my myself no nor not now of off
on once only or other our ours ourselves out over own same she should so some such than that the their theirs
them themselves then there these they this those through to too under until up very was we were what when where
which while who whom whose why will with would you your yours yourself yourselves
"""
STOP_WORDS = frozenset(_STOP_WORDS.split())
_WORD = re.compile(r"\w+", re.UNICODE)


def lucene_query_terms(text: str, field: str = "text") -> str | None:
    """A user string as OR-ed, escaped, quoted content words of one field, for BM25 ranking; None when none is left.

    Only word characters survive tokenization and every term is quoted and escaped, so nothing a user (or a
    model) writes can become a Lucene operator, field or wildcard.
    """
    words = [w for w in _WORD.findall(text.lower()) if w not in STOP_WORDS and (len(w) > 1 or w.isdigit())]
    unique = list(dict.fromkeys(words))[:64]
    return f"{field}:(" + " ".join('"' + lucene_escape(w) + '"' for w in unique) + ")" if unique else None


# A month the query names, in full ("May" only capitalised: the verb "may" is not a date), and a year beside it.
_NAMED_MONTH = re.compile(r"\b(?:(?i:" + "|".join(n for n in MONTH_NAMES if n != "May") + r")|May)\b")
_NAMED_YEAR = re.compile(r"\b(1[89]\d\d|2[01]\d\d)\b")


def named_months(text: str) -> tuple[list[int], list[int]]:
    """(months, years) a query names ("in July 2023" -> [7], [2023]): clips dated then rank higher
    (`SearchConfig.date_weight`). Years alone name nothing (a conversation's sessions mostly share one)."""
    months = sorted({MONTH_NAMES.index(m.group(0).capitalize()) + 1 for m in _NAMED_MONTH.finditer(text)})
    years = sorted({int(y) for y in _NAMED_YEAR.findall(text)}) if months else []
    return months, years


def query_words(text: str) -> list[str]:
    """The query's lowercased words (at most 64), to match the names of speakers it mentions."""
    return list(dict.fromkeys(_WORD.findall(text.lower())))[:64]


def lucene_phrase_terms(text: str) -> str:
    """A user string as OR-ed escaped terms (for hybrid ranking), never as Lucene syntax.

    Each term is quoted: escaping alone leaves the bare words AND, OR and NOT as operators ("Lily AND" fails).
    """
    terms = ['"' + lucene_escape(t) + '"' for t in text.split() if t.strip()]
    return " ".join(terms) if terms else '""'


# Words that name a kind or a type of file (list_files' argument and a search question read the same tables).
FILE_KINDS: dict[str, list[str]] = {
    "photo": ["image"], "photos": ["image"], "picture": ["image"], "pictures": ["image"], "image": ["image"],
    "images": ["image"], "chart": ["chart"], "charts": ["chart"], "graph": ["chart"], "document": ["document"],
    "documents": ["document"], "audio": ["audio"], "recording": ["audio"]}
FILE_MIMES: dict[str, list[str]] = {
    "pdf": ["application/pdf"], "pdfs": ["application/pdf"],
    "csv": ["text/csv"], "xlsx": ["application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"],
    "spreadsheet": ["text/csv", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"],
    "excel": ["application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"],
    "docx": ["application/vnd.openxmlformats-officedocument.wordprocessingml.document"],
    "word": ["application/vnd.openxmlformats-officedocument.wordprocessingml.document"],
    "markdown": ["text/markdown"], "md": ["text/markdown"], "svg": ["image/svg+xml"], "png": ["image/png"],
    "jpeg": ["image/jpeg"], "jpg": ["image/jpeg"], "text": ["text/plain"], "txt": ["text/plain"]}
# Too common in questions about anything to name a file type there ("what text", "in a word", "the graph").
_NOT_FILE_WORDS_IN_QUESTIONS = frozenset({"text", "txt", "word", "graph"})
_FILE_PHRASES = {"word document": "docx", "word file": "docx", "voice note": "recording",
                 "voice message": "recording", "voice memo": "recording"}
_FIRST = frozenset({"first", "earliest", "oldest"})
_LAST = frozenset({"last", "latest", "newest", "recent"})


def file_types_of(words: list[str]) -> tuple[list[str], list[str]]:
    """(kinds, mime types) the given words name, each sorted and unique (`FILE_KINDS`, `FILE_MIMES`)."""
    return (sorted({k for w in words for k in FILE_KINDS.get(w, [])}),
            sorted({m for w in words for m in FILE_MIMES.get(w, [])}))


def named_file_types(text: str) -> tuple[list[str], list[str], str]:
    """(kinds, mime types, order) of the files a question names ("the first PDF Ann shared" -> [],
    ["application/pdf"], "first"): the turns that shared such files rank higher, and the first or last of them
    higher still when the question says so (`SearchConfig.file_weight`). Order is "all" when no type is named."""
    lower = " ".join(_WORD.findall(text.lower()))
    words = [w for w in lower.split() if w not in _NOT_FILE_WORDS_IN_QUESTIONS]
    words += [word for phrase, word in _FILE_PHRASES.items() if phrase in lower]
    kinds, mimes = file_types_of(words)
    if not kinds and not mimes:
        return [], [], "all"
    if mimes:  # "the Word document": the type is the narrower name
        kinds = []
    order = "first" if _FIRST & set(words) else "last" if _LAST & set(words) else "all"
    return kinds, mimes, order
