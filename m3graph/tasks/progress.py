"""What the workers are doing right now, per submission: a Redis hash per video, for `m3graph ingest --celery`.

The durable progress of a clip is its state on the `Clip` node (m3graph/graphdb/clip_state.py): the order
check, `m3graph memorize --failed`, MCP and the explorer read that. This hash only adds what the graph cannot
know: which step of the current submission is queued, running, waiting for an earlier clip or being retried,
and the error of a step that failed before anything reached the graph (cut, perception). One field per
(clip, step), so parallel steps never race; it expires after a week.
"""

from __future__ import annotations

import json
import logging
import time
from contextlib import suppress
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import redis

log = logging.getLogger(__name__)

PROGRESS_PREFIX = "m3graph:progress:"
PROGRESS_TTL_S = 7 * 86400
STEPS = ("cut", "faces", "voices", "resolve", "memorize")
ORDERED_STEPS = ("cut", "faces", "voices", "resolve")  # a failure here blocks the video's later clips


def note(client: redis.Redis, source_id: str, index: int, step: str, state: str, **extra: Any) -> None:
    """Records one step of one clip."""
    value = json.dumps({"state": state, "at": time.time(), **extra}, default=str)
    key = PROGRESS_PREFIX + source_id
    with client.pipeline() as pipe:
        pipe.hset(key, f"{index}:{step}", value)
        pipe.expire(key, PROGRESS_TTL_S)
        pipe.execute()


def safe_note(client_of: Any, source_id: str, index: int, step: str, state: str, **extra: Any) -> None:
    """Progress is informational: a Redis hiccup here must not fail (and re-run) a finished step."""
    try:
        note(client_of(), source_id, index, step, state, **extra)
    except Exception:  # noqa: BLE001 - any client error; the step's own result is what matters
        log.warning("could not record progress of %s#%d %s=%s", source_id, index, step, state, exc_info=True)


def reset_progress(client: redis.Redis, source_id: str, indexes: list[int], clip_count: int) -> None:
    """Marks freshly submitted clips as queued, so steps of an earlier submission do not show as current."""
    key = PROGRESS_PREFIX + source_id
    now = time.time()
    with client.pipeline() as pipe:
        fields = [f"{i}:{s}" for i in indexes for s in STEPS]
        if fields:
            pipe.hdel(key, *fields)
        pipe.hset(key, "clip_count", clip_count)
        for i in indexes:
            pipe.hset(key, f"{i}:cut", json.dumps({"state": "queued", "at": now}))
        pipe.expire(key, PROGRESS_TTL_S)
        pipe.execute()


def read_progress(client: redis.Redis, source_id: str) -> tuple[int | None, dict[int, dict[str, dict[str, Any]]]]:
    """(clip count, {clip index: {step: {"state", "at", ...}}}) as recorded by the workers."""
    raw = client.hgetall(PROGRESS_PREFIX + source_id)
    count: int | None = None
    clips: dict[int, dict[str, dict[str, Any]]] = {}
    for k, v in raw.items():
        field = k.decode() if isinstance(k, bytes) else str(k)
        if field == "clip_count":
            count = int(v)
            continue
        index, _, step = field.partition(":")
        with suppress(ValueError):
            clips.setdefault(int(index), {})[step] = json.loads(v)
    return count, clips


def failed_before(client: redis.Redis, source_id: str, pending: list[int]) -> tuple[int, str] | None:
    """The first pending earlier clip whose current submission failed for good before memorizing, with its error."""
    _, clips = read_progress(client, source_id)
    for i in pending:
        for step in ORDERED_STEPS:
            state = clips.get(i, {}).get(step, {})
            if state.get("state") == "failed":
                return i, f"{step}: {state.get('error', '?')}"
    return None
