// mode: read
// params: clip_key, face_ids, voice_ids
// returns: face_id, voice_id
// SAME_AS pairs among one clip's Face and Voice entities with evidence from other clips: what earlier clips
// already say about who is whom here (the on-screen rule's guard). This clip's own evidence is left out, so
// re-resolving the clip reads the same pairs.
UNWIND $face_ids AS fid
MATCH (f:Face {entity_id: fid})-[r:SAME_AS]->(v:Voice)
WHERE v.entity_id IN $voice_ids AND any(x IN r.evidence WHERE NOT x STARTS WITH $clip_key + '|')
RETURN DISTINCT f.entity_id AS face_id, v.entity_id AS voice_id
