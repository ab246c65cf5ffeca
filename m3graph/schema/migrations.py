"""Numbered schema migrations, applied one at a time on connect.

Every statement is ``IF NOT EXISTS`` DDL or an idempotent backfill, so applying a migration twice (or from two
workers at once) is harmless; the `(:Migration {version})` node records what ran. Vector dimensions come from the
configured models, and a database whose indexes disagree with them is refused with `SchemaVersionError`: silently
mixing 128-d and 512-d face vectors would make every similarity meaningless.

Two text models of the same dimension (MiniLM and bge-small are both 384-d) are told apart by a mark, one
`(:EmbeddingModel {kind: 'text', model})` node naming the model the memory vectors belong to: connecting with
another model is refused the same way. Migration 11 marks a graph from before the mark: memories with vectors and
no `reembed` mark were embedded by the only model there was then (all-MiniLM-L6-v2) when the index is 384-d.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from m3graph.cypher import query
from m3graph.dates import TimeNotes
from m3graph.errors import SchemaVersionError
from m3graph.fact_versions import slot_properties, version_rows
from m3graph.schema.character_names import backfill_character_names
from m3graph.schema.pages import BACKFILL_BATCH, pages
from m3graph.schema.sources import backfill_sources
from m3graph.settings import Settings, text_model_setting
from m3graph.storage.keys import key_of

log = logging.getLogger(__name__)

# Query names are literal strings (grep finds every caller of a .cypher file; tests/test_cypher_files.py checks).
UNIQUE_STATEMENTS = {
    "video": "schema/unique_video", "clip": "schema/unique_clip", "face": "schema/unique_face",
    "voice": "schema/unique_voice", "face_obs": "schema/unique_face_obs", "utterance": "schema/unique_utterance",
    "memory": "schema/unique_memory", "character": "schema/unique_character", "counter": "schema/unique_counter",
    "lock": "schema/unique_lock", "migration": "schema/unique_migration",
}
UNIQUE_KEYS = tuple(UNIQUE_STATEMENTS)
VECTOR_INDEXES = {"face_centroid": "face", "voice_centroid": "voice", "memory_embedding": "text"}
VECTOR_STATEMENTS = {"face_centroid": "schema/vector_face_centroid", "voice_centroid": "schema/vector_voice_centroid",
                     "memory_embedding": "schema/vector_memory_embedding"}


class Executor(Protocol):
    """What migrations need from `m3graph.graphdb.executor.Executor`, so the schema layer does not import the store
    (graphdb -> schema is the one direction: the store applies migrations on connect)."""

    def read(self, name: str, /, **params: Any) -> list[dict[str, Any]]: ...

    def write(self, name: str, /, **params: Any) -> list[dict[str, Any]]: ...

    def schema(self, name: str, /, **params: Any) -> None: ...

    @property
    def capabilities(self) -> Any: ...  # m3graph.graphdb.executor.Capabilities


@dataclass(frozen=True)
class Migration:
    version: int
    description: str
    statements: tuple[str, ...]
    vector: bool = False  # statements take the vector-index parameters
    # A server capability (attribute of executor.capabilities) the migration needs; without it the migration is
    # left unapplied (and unrecorded), so it runs once the server is upgraded.
    requires: str | None = None
    text_mark: bool = False  # a write taking the text model the graph's existing memories were embedded by
    # Data the statements cannot derive (Python code over pages of the graph), run after them; idempotent, so a
    # migration interrupted before it is recorded simply runs again. Returns the number of nodes it changed.
    backfill: Callable[[Executor], int] | None = None
    # The same, for a backfill that needs the settings (where the data directory is).
    settings_backfill: Callable[[Executor, Settings], int] | None = None


def _native(value: Any) -> Any:
    to_native = getattr(value, "to_native", None)
    return to_native() if callable(to_native) else value


def backfill_event_dates(executor: Executor, batch: int = BACKFILL_BATCH) -> int:
    """Migration 12: time notes (`event_*`) for chat memories stored before ingestion wrote them, resolved against
    their session's date. Pages of `batch` memories, each written with one UNWIND; recomputing a memory that
    already has its notes sets the same values."""
    changed = 0
    for page in pages(executor, "schema/event_dates_page", "memory_id", batch):
        rows = []
        for r in page:
            if r["started_at"] is None or not r["text"]:
                continue
            notes = TimeNotes.of(r["text"], _native(r["started_at"]))
            if notes.said:
                rows.append({"memory_id": r["memory_id"], **notes.properties()})
        if rows:
            executor.write("schema/set_event_dates", rows=rows)
            changed += len(rows)
    return changed


def backfill_fact_slots(executor: Executor, batch: int = BACKFILL_BATCH) -> int:
    """Migration 13: slots for semantic statements written before memories had them, then each touched slot's
    versions (the same rules as a write: `m3graph.fact_versions`). Idempotent: a statement gets the same slot and
    a slot the same versions however often it runs."""
    changed = 0
    touched: dict[str, set[str]] = {}
    for page in pages(executor, "schema/slot_page", "memory_id", batch):
        rows = []
        for r in page:
            props = slot_properties(r["source_id"], "semantic", r["text"], False) if r["text"] else None
            if props and props["slot_key"]:
                rows.append({"memory_id": r["memory_id"], "source_id": r["source_id"], **props})
                touched.setdefault(r["source_id"], set()).add(props["slot_key"])
        if rows:
            executor.write("schema/set_slots", rows=rows)
            executor.write("facts/link_things", rows=rows)
            changed += len(rows)
    for source_id, keys in sorted(touched.items()):
        versions = version_rows(executor.read("facts/slot_assertions", source_id=source_id, slot_keys=sorted(keys)))
        if versions:
            executor.write("facts/set_versions", rows=versions)
    return changed


# Migration 15's pages: (read page, write), per property that names a media file.
MEDIA_REFERENCES = (("schema/face_crop_page", "schema/set_face_crop_keys"),
                    ("schema/utterance_audio_page", "schema/set_utterance_audio_keys"),
                    ("schema/clip_uri_page", "schema/set_clip_uri_keys"))


def backfill_media_keys(executor: Executor, settings: Settings, batch: int = BACKFILL_BATCH) -> int:
    """Migration 15: media references (`FaceObs.crop_uri`, `Utterance.audio_uri`, `Clip.uri`) that hold absolute
    host paths or ``file://`` URIs under the data directory become storage-relative keys (m3graph.storage), so
    workers, the explorer and MCP on any host resolve them through the media store. A path outside the data
    directory is left as it was (no reader serves it, as before). Idempotent: a key is no host path."""
    changed = 0
    for page_query, write in MEDIA_REFERENCES:
        for page in pages(executor, page_query, "key", batch):
            rows = [{"key": r["key"], "media_key": k} for r in page
                    if (k := key_of(r["uri"], settings.data_dir)) is not None]
            if rows:
                executor.write(write, rows=rows)
                changed += len(rows)
    return changed


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "uniqueness constraints for every MERGE key", tuple(UNIQUE_STATEMENTS.values())),
    Migration(
        2,
        "range indexes for video/clip/time filters",
        (
            "schema/range_clip_time",
            "schema/range_memory_time",
            "schema/range_face_obs_time",
            "schema/range_utterance_time",
            "schema/range_memory_kind",
            "schema/range_clip_start",
        ),
    ),
    Migration(3, "vector indexes (face, voice, memory text)", tuple(VECTOR_STATEMENTS.values()),
              vector=True),
    Migration(4, "full-text index over memory text", ("schema/fulltext_memory_text",)),
    # The composite (video_id, clip_index) indexes are not used by a filter on video_id alone (no before_clip),
    # which made per-video queries scan every node (measured in docs/benchmarks.md).
    Migration(5, "single-property video_id indexes for per-video filters",
              ("schema/range_memory_video", "schema/range_clip_video", "schema/range_face_obs_video",
               "schema/range_utterance_video")),
    # Conversations: speakers keyed by (source, name) with ids from the entity counter; sessions found by date.
    Migration(6, "speaker constraints and index, clip start-time index",
              ("schema/unique_speaker", "schema/unique_speaker_id", "schema/range_speaker_source",
               "schema/range_clip_started_at")),
    # Neo4j 2026.x: the memory index declares its filter properties for in-index filtering (SEARCH ... WHERE).
    Migration(8, "memory vector index with filter properties (video_id, clip_index, kind, is_equivalence)",
              ("schema/drop_memory_embedding", "schema/vector_memory_embedding_filtered"), vector=True,
              requires="vector_filters"),
    # Hybrid search ranks by BM25 over stemmed words without stop words ("drinks" finds "drink").
    Migration(9, "English-analysed full-text index over memory text", ("schema/fulltext_memory_text_en",)),
    # Hybrid search also ranks whole clips: BM25 over a clip's derived search text (date in words + memories).
    Migration(10, "clip search text and its English-analysed full-text index",
              ("schema/backfill_clip_search_text", "schema/fulltext_clip_text_en")),
    # Same-dimension text models differ: the graph names the one its memory vectors belong to.
    Migration(11, "text embedding model mark", ("schema/mark_text_model",), text_mark=True),
    # Relative dates said in a conversation ("yesterday") resolved against the session's date, stored beside the
    # words (Memory.event_*): memories written before ingestion did it.
    Migration(12, "time notes (event_* dates) on chat memories, resolved against their session's date", (),
              backfill=backfill_event_dates),
    # Facts that change: a statement's slot (subject + attribute), its named things, and which version holds when.
    Migration(13, "fact slots on semantic memories, named things, versions (SUPERSEDES / CONTRADICTS)",
              ("schema/unique_thing", "schema/range_memory_slot", "schema/range_thing_video"),
              backfill=backfill_fact_slots),
    # Files shared in conversations (docs/conversations.md "Files"): one node per content, keyed by SHA-256.
    Migration(14, "File nodes keyed by content (uniqueness on File.sha256)", ("schema/unique_file",)),
    # Media named by storage key, not host path: workers on other hosts and an object store (issue 24).
    Migration(15, "media references as storage-relative keys instead of host paths", (),
              settings_backfill=backfill_media_keys),
    # A relative week or weekend is named from the day it was said ("the week before 9 June 2023"), no longer by
    # its Monday: the notes of memories written before are computed again (the same backfill as migration 12).
    Migration(16, "time notes re-rendered: a relative week or weekend named from the day it was said", (),
              backfill=backfill_event_dates),
    # Sources say what they are (issue 35): `Source` label, `kind` and `source_id` beside `Video`/`video_id`, which
    # stay for a deprecation window (m3graph/schema/sources.py, docs/graph-model.md "Sources").
    Migration(17, "sources named: Source label, kind (video/conversation/facts/notes) and source_id on every source",
              ("schema/unique_source", "schema/range_source_kind"), backfill=backfill_sources),
    # People by name (issue 36): Character.name is the display name (current name fact, else the speaker's name,
    # else character_K), kept current by the write path (m3graph.graphdb.names); graphs written before get it here.
    Migration(18, "Character.name is the person's current name (name facts, speakers' names)", (),
              backfill=backfill_character_names),
    # A named thing found by its name across sources (issue 40): a question that names no source looks its event up
    # with one index seek per name (facts/anchor_versions), not one per source and name.
    Migration(19, "Thing.name_key: a named thing's normalised name, indexed, for lookups across sources",
              ("schema/range_thing_name_key", "schema/backfill_thing_name_key")),
    # Add the next migration here, numbered on (LATEST follows the last entry).
)
LATEST = MIGRATIONS[-1].version
TEXT_MARK_VERSION = 11
# What memories embedded before the mark hold at this dimension: the one text model m3graph had until then.
LEGACY_TEXT_MODEL, LEGACY_TEXT_DIM = "all-minilm-l6-v2", 384


def _dims(settings: Settings) -> dict[str, int]:
    return {"face": settings.identity.face_dim, "voice": settings.identity.voice_dim,
            "text": settings.memory.text_dim}


def memory_index_statement(executor: Executor) -> str:
    """The DDL file that (re-)creates the memory vector index on this server: with filter properties on 2026.x."""
    if executor.capabilities.vector_filters:
        return "schema/vector_memory_embedding_filtered"
    return "schema/vector_memory_embedding"


def applicable(executor: Executor) -> tuple[Migration, ...]:
    """The migrations this server can run (all of them on 2026.x; 5.26 skips the 2026-only ones)."""
    return tuple(m for m in MIGRATIONS if m.requires is None or getattr(executor.capabilities, m.requires))


def _vector_params(settings: Settings, statement: str) -> dict[str, Any]:
    """The configured HNSW options for one vector index DDL file, exactly the parameters it declares (only the
    2026.x memory index takes the search expansion factor; 5.26 does not know the option)."""
    cfg = settings.vector_index
    index = statement.removeprefix("schema/vector_").removesuffix("_filtered")
    options = {"dim": _dims(settings)[VECTOR_INDEXES[index]], "quantization": cfg.quantization,
               "hnsw_m": cfg.hnsw_m, "ef_construction": cfg.ef_construction,
               "search_expansion": cfg.search_expansion}
    declared = set(query(statement).params)
    return {name: value for name, value in options.items() if name in declared}


def graph_text_model(executor: Executor, settings: Settings, applied: set[int] | None = None) -> str | None:
    """The text model the graph's memory vectors belong to: its mark, or for a graph from before the mark the model
    inferred from its memories (None: nothing embedded yet, any model may claim it)."""
    marks = {row["model"] for row in executor.read("schema/text_model_marks")}
    if len(marks) > 1:
        raise SchemaVersionError(f"the graph is marked with several text models ({', '.join(sorted(marks))}); "
                                 "run `m3graph reembed --kind text` to move it to one")
    if marks:
        return marks.pop()
    if applied is None:
        applied = {row["version"] for row in executor.read("schema/applied_migrations")}
    if TEXT_MARK_VERSION in applied:  # marked once, then emptied (a wiped graph): free to claim
        return None
    row = executor.read("schema/stored_text_model")[0]
    if not row["embedded"]:
        return None
    if row["model"]:
        return str(row["model"])
    dims = {int(r["options"]["indexConfig"]["vector.dimensions"]) for r in executor.read("schema/list_indexes")
            if r["name"] == "memory_embedding" and r["type"] == "VECTOR"}
    return LEGACY_TEXT_MODEL if dims == {LEGACY_TEXT_DIM} else settings.text_model.name


def check_schema(executor: Executor, settings: Settings) -> None:
    """Refuses a database that is newer than this code, whose vector dimensions differ from the models, or whose
    memories were embedded by another text model."""
    applied = [row["version"] for row in executor.read("schema/applied_migrations")]
    if applied and max(applied) > LATEST:
        raise SchemaVersionError(
            f"database schema is at version {max(applied)} but this m3graph knows only up to {LATEST}; upgrade m3graph"
        )
    dims = _dims(settings)
    for row in executor.read("schema/list_indexes"):
        if row["type"] != "VECTOR" or row["name"] not in VECTOR_INDEXES:
            continue
        have = int(row["options"]["indexConfig"]["vector.dimensions"])
        kind = VECTOR_INDEXES[row["name"]]
        if have != dims[kind]:
            raise SchemaVersionError(
                f"vector index {row['name']} has {have} dimensions but the configured {kind} model produces "
                f"{dims[kind]}; move the graph to the configured model with `m3graph reembed --kind {kind}`, "
                "or use a separate database"
            )
    have_model, want = graph_text_model(executor, settings, set(applied)), settings.text_model.name
    if have_model is not None and have_model != want:
        raise SchemaVersionError(
            f"the graph's memories were embedded by text model {have_model} but the configured one is {want}; "
            f"move the graph with `m3graph reembed --kind text --model {settings.text_model.model}`, or keep "
            f"{have_model} (text_model.model = \"{text_model_setting(have_model)}\", env "
            f"M3GRAPH_TEXT_MODEL__MODEL={text_model_setting(have_model)}), or use a separate database")


def apply_migrations(executor: Executor, settings: Settings, await_timeout_s: int = 300) -> list[int]:
    """Applies missing migrations in order and waits for new indexes to come online; returns what ran."""
    check_schema(executor, settings)
    applied = {row["version"] for row in executor.read("schema/applied_migrations")}
    ran: list[int] = []
    for migration in applicable(executor):
        if migration.version in applied:
            continue
        for statement in migration.statements:
            if migration.text_mark:
                executor.write(statement, model=graph_text_model(executor, settings) or settings.text_model.name)
                continue
            params = _vector_params(settings, statement) if migration.vector and query(statement).params else {}
            executor.schema(statement, **params)
        changed = None
        if migration.backfill is not None:
            changed = migration.backfill(executor)
        elif migration.settings_backfill is not None:
            changed = migration.settings_backfill(executor, settings)
        if changed is not None:
            log.info("migration %d backfilled %d nodes", migration.version, changed)
        executor.write("schema/record_migration", version=migration.version, description=migration.description)
        log.info("applied schema migration %d: %s", migration.version, migration.description)
        ran.append(migration.version)
    if TEXT_MARK_VERSION in applied and not executor.read("schema/text_model_marks"):
        executor.write("schema/mark_text_model", model=settings.text_model.name)  # an emptied graph: claimed again
    if ran:
        executor.schema("schema/await_indexes", timeout_s=await_timeout_s)
    return ran
