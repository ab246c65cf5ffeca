// mode: write
// params: clip_key, cites, shares, faces
// Surrogate memories name the file they stand for (Memory.file_sha256, DESCRIBES); the turns' own memories
// SHARED the file. Both by memory id, after the session's memories are written in the same transaction. A
// photo's face observations (this clip's FaceObs, by their crop) name the photo they were found in
// (FaceObs.file_sha256), so the explorer can box them on it and deletion knows whose photo face it was.
CALL () {
  UNWIND $cites AS c
  MATCH (m:Memory {memory_id: c.memory_id})
  MATCH (x:File {sha256: c.sha256})
  SET m.file_sha256 = c.sha256
  MERGE (m)-[:DESCRIBES]->(x)
}
CALL () {
  UNWIND $shares AS s
  MATCH (m:Memory {memory_id: s.memory_id})
  MATCH (x:File {sha256: s.sha256})
  MERGE (m)-[r:SHARED {turn_id: s.turn_id}]->(x)
  SET r.name = s.name
}
CALL () {
  MATCH (c:Clip {clip_key: $clip_key})
  UNWIND $faces AS p
  MATCH (o:FaceObs {video_id: c.video_id, clip_index: c.clip_index})
  WHERE o.crop_uri = p.uri
  SET o.file_sha256 = p.sha256
}
