// mode: write
// params: source_id
// returns: deleted
// The video node after its clips, with its remaining memories, its named things (facts' subjects and values) and the per-video lock nodes that serialized
// writes to it (`memory:<id>`, `chat:<id>`): they guard nothing once the video is gone.
OPTIONAL MATCH (v:Video {video_id: $source_id})
CALL (v) {
  OPTIONAL MATCH (m:Memory {video_id: $source_id})
  DETACH DELETE m
}
CALL () {
  OPTIONAL MATCH (t:Thing {video_id: $source_id})
  DETACH DELETE t
}
CALL () {
  MATCH (l:Lock) WHERE l.name IN ['memory:' + $source_id, 'chat:' + $source_id]
  DELETE l
}
WITH v WHERE v IS NOT NULL
DETACH DELETE v
RETURN 1 AS deleted
