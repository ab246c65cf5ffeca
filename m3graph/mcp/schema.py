"""`graph_schema`: what the memory graph holds, from m3graph's own schema model, not from APOC.

Why not `apoc.meta.schema` (what the Neo4j MCP servers call): it needs APOC, samples the data, and says nothing
about what a node *means*. m3graph owns its model: one primary label per node with a fixed key
(`m3graph.schema.migrations.UNIQUE_KEYS`), the relationship types its named queries write, and the indexes the
migrations create. This module states that model once, with a sentence per label for a model reading it; the
live part (the indexes and constraints the server reports, the applied migrations, the counts) is the service's
`SchemaState` (`MemoryService.evidence.schema_state`).
"""

from __future__ import annotations

from m3graph.schema.migrations import LATEST, MIGRATIONS, VECTOR_INDEXES
from m3graph.service.evidence import SchemaState
from m3graph.service.tool_results import (
    GraphSchema,
    SchemaConstraint,
    SchemaIndex,
    SchemaMigrations,
    SchemaNode,
    SchemaRelationship,
)

# label -> (key property, other properties worth querying, what the node means)
NODES: dict[str, tuple[str, tuple[str, ...], str]] = {
    "Video": ("video_id", ("source_id", "kind", "name", "clip_count", "duration_s", "agent_notes"),
              "A source (also labelled Source, keyed by source_id = video_id): kind 'video', 'conversation' (each "
              "session is one of its clips), 'facts' (a numbered facts list) or 'notes' (agents' notes, "
              "agent_notes; its clips and memories carry agent_note). Video/video_id stay during a deprecation "
              "window."),
    "Clip": ("clip_key", ("video_id", "clip_index", "start_s", "end_s", "started_at", "uri", "state", "name",
                       "agent_note"),
             "One stretch of a source: a 30-second video window or one conversation session. clip_key is "
             "'video_id#clip_index'; started_at is its absolute start time where known."),
    "Memory": ("memory_id", ("kind", "text", "video_id", "clip_index", "order_in_clip", "support", "support_clips",
                             "first_clip", "last_clip", "is_equivalence", "source_ids", "start_s", "end_s",
                             "slot_key", "slot_subject", "slot_attribute", "slot_value", "negated", "current",
                             "superseded_by", "superseded_note", "manual_state", "manual_note", "file_sha256",
                             "agent_note"),
               "One remembered sentence: kind 'episodic' (what happened in a clip) or 'semantic' (a lasting fact, "
               "reinforced by later clips). text holds raw <face_N>/<voice_N>/<speaker_N> tags; tools render them "
               "as <character_K>. The embedding property is a vector and is never returned. A fact has a slot "
               "(slot_key 'subject · attribute'); current is false once a newer fact in its slot superseded it "
               "(superseded_note says when), and manual_state is an analyst's correction."),
    "Face": ("entity_id", ("name", "dim", "exemplar_quality", "exemplar_obs"),
             "A persistent face identity across clips (exemplar vectors and a centroid, never returned)."),
    "Voice": ("entity_id", ("name", "dim", "exemplar_quality", "exemplar_obs"),
              "A persistent voice identity across clips (speaker-embedding exemplars, never returned)."),
    "Speaker": ("speaker_key", ("entity_id", "source_id", "speaker_name", "agent"),
                "A named conversation participant; speaker_key is 'source|name'. Same id space as faces/voices. "
                "agent marks the writer of agents' notes ('Lily (agent)'), never a person."),
    "Character": ("char_id", ("name", "aliases", "size"),
                  "A person: the faces, voices and speakers judged to be the same individual. Ids are stable; "
                  "merged ids stay in aliases."),
    "FaceObs": ("obs_key", ("video_id", "clip_index", "frame_time_s", "bbox", "det_score", "quality", "crop_uri",
                            "file_sha256"),
                "One detected face in one frame: the evidence behind a Face (crop_uri is the face crop image; "
                "file_sha256 names the shared photo it was found in)."),
    "File": ("sha256", ("kind", "mime", "size", "name", "shared_at"),
             "A file shared in a conversation (photo, document, chart, audio), keyed by the SHA-256 of its bytes; "
             "surrogate memories (Memory.file_sha256) stand for it in search. file_text reads them."),
    "Utterance": ("utt_key", ("video_id", "clip_index", "start_s", "end_s", "text", "audio_uri"),
                  "One speech turn heard in a clip: the evidence behind a Voice (text is the transcript)."),
    "IdentityVote": ("vote_id", ("a", "b", "verdict", "note", "source", "created_at", "undone_at"),
                     "A manual judgement that two entities are (verdict 'same') or are not ('different') the same "
                     "person; it overrides model votes and can be undone."),
    "Thing": ("thing_key", ("video_id", "name", "name_key"),
              "A named thing facts are about or name, keyed 'source|normalised name' (e.g. 'demo|apple inc.'); "
              "name_key is the normalised name alone (indexed: the same name across sources)."),
    "Migration": ("version", ("description",), "A schema migration that has been applied (bookkeeping)."),
    "Counter": ("name", ("value",), "An id allocator (bookkeeping)."),
    "Lock": ("name", (), "A write lock (bookkeeping)."),
}

# (from, type, to, properties, meaning)
RELATIONSHIPS: tuple[tuple[str, str, str, tuple[str, ...], str], ...] = (
    ("Clip", "OF", "Video", (), "the clip belongs to this source"),
    ("Clip", "NEXT", "Clip", (), "the following clip of the same source"),
    ("Memory", "IN_CLIP", "Clip", (), "the clip the memory was written for"),
    ("Memory", "MENTIONS", "Face|Voice|Speaker", ("weight", "position"), "a tag in the memory's text"),
    ("Face|Voice|Speaker", "IS", "Character", (), "the person this entity belongs to"),
    ("Face", "SAME_AS", "Voice", ("votes", "evidence", "first_clip", "last_clip"),
     "clips voted that this face and voice are one person (evidence: the voting clips)"),
    ("Face", "CO_OCCURS", "Face", ("clips",), "seen in the same frame, so never the same person"),
    ("FaceObs", "OF", "Face", (), "the observation is evidence for this face"),
    ("Utterance", "OF", "Voice", (), "the utterance is evidence for this voice"),
    ("FaceObs|Utterance", "IN_CLIP", "Clip", (), "observed in this clip"),
    ("Speaker", "SPEAKS_IN", "Clip", ("turns",), "the speaker talks in this session"),
    ("Clip", "HAS_FILE", "File", ("turn_id", "name", "kind", "shared_at"), "a turn of this session shared the file"),
    ("Memory", "SHARED", "File", ("turn_id", "name"), "the sharing turn's memory"),
    ("Memory", "DESCRIBES", "File", (), "a surrogate memory: text standing for the file in search"),
    ("IdentityVote", "ABOUT", "Face|Voice|Speaker", (), "an entity the manual vote is about"),
    ("Memory", "ABOUT", "Thing", (), "the subject the fact is about"),
    ("Memory", "NAMES", "Thing", (), "the value the fact states (the next hop of a multi-hop question)"),
    ("Memory", "SUPERSEDES", "Memory", ("event_order", "clip_key", "event_at"),
     "a newer fact in the same slot retired this one (both are kept)"),
    ("Memory", "CONTRADICTS", "Memory", ("event_order", "clip_key"),
     "the source states the same value both ways; both stay current"),
)

TAGS = ("Memory text stores <face_N>, <voice_N> and <speaker_N> tags (entity ids, one id space). Tools show them "
        "as <character_K>: use the K in character(char_id=K) or in a search query to scope it to that person.")


def _on(labels: list[str] | None, properties: list[str] | None) -> str:
    return f"{'|'.join(labels or [])}({', '.join(properties or [])})"


def describe(state: SchemaState) -> GraphSchema:
    """The model, then what the server reports: indexes, constraints, migrations (applied, latest, and any known
    one not applied yet) and counts."""
    constraints = {c.name for c in state.constraints}
    return GraphSchema(
        nodes=[SchemaNode(label=label, key=key, properties=list(props), description=text)
               for label, (key, props, text) in NODES.items()],
        relationships=[SchemaRelationship(from_label=a, type=t, to=b, properties=list(props), description=text)
                       for a, t, b, props, text in RELATIONSHIPS],
        tags=TAGS,
        vector_indexes={name: f"{kind} vectors (cosine); query them only through search_memory"
                        for name, kind in VECTOR_INDEXES.items()},
        indexes=[SchemaIndex(name=i.name, type=i.type, on=_on(i.labels, i.properties),
                             state=None if i.state == "ONLINE" else i.state)
                 for i in state.indexes if i.name not in constraints and i.type != "LOOKUP"],
        constraints=[SchemaConstraint(name=c.name, on=_on(c.labels, c.properties)) for c in state.constraints],
        migrations=SchemaMigrations(applied=state.applied, latest=LATEST,
                                    pending=[f"{m.version}: {m.description}" for m in MIGRATIONS
                                             if m.version not in set(state.applied)]),
        counts=state.counts)
