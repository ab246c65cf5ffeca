"""What a user reads when a chat model's output was partly left out.

Why a module of its own: the memorizers count each dropped line by a reason code (`ParseReport.drop`), which is
what the stored clip record keeps; a log line of those codes (`{'prompt_echo': 3}`) told a user nothing. This
turns the counts into one sentence saying what was left out, why, and what was kept.
"""

from __future__ import annotations

from collections.abc import Mapping

_DROP_REASONS = {
    "prompt_echo": "repeated the instructions instead of describing what happened",
    "duplicate": "repeated a memory already written",
    "too_long": "were longer than a memory may be",
    "too_many": "were past the most memories one clip may keep",
    "not_a_string": "were not text",
    "bad_equivalence": "were equivalence lines that did not pair one face with one voice",
    "malformed_tag": "named someone with a tag that is not m3graph's (like <person_1>)",
    "character_tag": "used <character_K> tags, which only the graph assigns",
    "foreign_tag": "named a face or voice that is not in this clip",
    "foreign_ids": "cited turns that are not in this session",
    "unparseable_output": "could not be read as the JSON asked for",
}


def describe_dropped(where: str, dropped: Mapping[str, int], replay: str | None = None) -> str:
    """A dropped-output report as a sentence a user can act on; `replay` names the command that re-reads the
    stored raw output, where there is one."""
    n = sum(dropped.values())
    why = "; ".join(f"{count} {_DROP_REASONS.get(reason, reason.replace('_', ' '))}"
                    for reason, count in sorted(dropped.items(), key=lambda kv: (-kv[1], kv[0])))
    tail = f"; `{replay}` re-reads it" if replay else ""
    return (f"{where}: {n} of the model's lines were left out and not stored ({why}); the rest were stored, "
            f"and the raw output is kept{tail}")
