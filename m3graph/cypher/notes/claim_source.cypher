// mode: write
// params: source_id, adopt
// returns: notes
// The source an agent's note goes to, claimed as a notes source before the note is written: a new id is created
// as one (with what graph/upsert_clip sets on a new Video), an existing source answers whether it is one. `adopt`
// marks an existing source of that id as notes (only the default 'agent-notes', which held notes before sources
// were marked); any other existing source is left as it was. One MERGE, so two writers cannot both find the id
// free and file it as two kinds of source. A notes source is a `Source` of kind 'notes' (docs/graph-model.md).
MERGE (v:Video {video_id: $source_id})
ON CREATE SET v.created_at = datetime(), v.name = $source_id, v.agent_notes = true
SET v.agent_notes = CASE WHEN $adopt THEN true ELSE v.agent_notes END
SET v:Source, v.source_id = $source_id,
    v.kind = CASE WHEN v.agent_notes THEN 'notes' ELSE coalesce(v.kind, 'video') END
RETURN coalesce(v.agent_notes, false) AS notes
