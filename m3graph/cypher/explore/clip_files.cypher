// mode: read
// params: source_id, clip_index
// returns: sha256, name, kind, mime, size, turn_id, shared_at, headers, faces
// The files one session shares, in turn order: what the clip page shows inline. `headers` are the first 200
// characters of each surrogate (the page reads image sizes and PDF pages from them); `faces` are the face
// observations found in the photo in this session (FaceObs.file_sha256) with their box, crop and character.
MATCH (c:Clip {clip_key: $source_id + '#' + toString($clip_index)})-[h:HAS_FILE]->(f:File)
RETURN f.sha256 AS sha256, h.name AS name, h.kind AS kind, f.mime AS mime, f.size AS size, h.turn_id AS turn_id,
       h.shared_at AS shared_at,
       COLLECT { MATCH (m:Memory {video_id: $source_id})-[:DESCRIBES]->(f)
                 RETURN left(m.text, 200) AS t ORDER BY m.order_in_clip LIMIT 200 } AS headers,
       COLLECT { MATCH (o:FaceObs {video_id: $source_id, clip_index: $clip_index})-[:OF]->(e:Face)
                 WHERE o.file_sha256 = f.sha256
                 OPTIONAL MATCH (e)-[:IS]->(ch:Character)
                 RETURN {face: e.entity_id, character: ch.char_id, bbox: o.bbox, crop: o.crop_uri} AS x
                 ORDER BY x.face } AS faces
ORDER BY turn_id, name
