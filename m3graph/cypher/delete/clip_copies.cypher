// mode: read
// params: source_id, clip_index
// returns: refs
// Before a clip (or, with a null clip_index, every clip of a video) is deleted: the stored copies the graph says
// exist and the delete must remove: the clip's cut (once perceived: a planned clip has none yet), its face crops and
// voice snippets (photo faces of a chat session included), and the stored copies of shared files that no other
// clip holds (those go with the last session holding them). Refs are storage keys, or legacy host paths.
MATCH (c:Clip {video_id: $source_id}) WHERE $clip_index IS NULL OR c.clip_index = $clip_index
CALL (c) {
  WITH c WHERE c.state IS NOT NULL AND c.state <> 'planned'
  RETURN c.uri AS ref
  UNION
  MATCH (o)-[:IN_CLIP]->(c) WHERE o:FaceObs OR o:Utterance
  RETURN coalesce(o.crop_uri, o.audio_uri) AS ref
  UNION
  MATCH (c)-[:HAS_FILE]->(f:File)
  WHERE NOT EXISTS { MATCH (f)<-[:HAS_FILE]-(d:Clip)
                     WHERE d.video_id <> $source_id OR ($clip_index IS NOT NULL AND d.clip_index <> $clip_index) }
  RETURN f.stored AS ref
}
WITH ref WHERE ref IS NOT NULL
RETURN collect(DISTINCT ref) AS refs
