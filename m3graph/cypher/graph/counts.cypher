// mode: read
// params: video_id
// returns: label, n
// Node and relationship counts for one video (or all when $video_id is null): used by idempotency checks and the CLI.
CALL () {
  MATCH (c:Clip) WHERE $video_id IS NULL OR c.video_id = $video_id RETURN 'Clip' AS label, count(c) AS n
  UNION ALL MATCH (m:Memory) WHERE $video_id IS NULL OR m.video_id = $video_id RETURN 'Memory' AS label, count(m) AS n
  UNION ALL MATCH (o:FaceObs) WHERE $video_id IS NULL OR o.video_id = $video_id RETURN 'FaceObs' AS label, count(o) AS n
  UNION ALL MATCH (u:Utterance) WHERE $video_id IS NULL OR u.video_id = $video_id RETURN 'Utterance' AS label, count(u) AS n
  UNION ALL MATCH (f:Face) RETURN 'Face' AS label, count(f) AS n
  UNION ALL MATCH (v:Voice) RETURN 'Voice' AS label, count(v) AS n
  UNION ALL MATCH (c:Character) RETURN 'Character' AS label, count(c) AS n
  UNION ALL MATCH ()-[r:SAME_AS]->() RETURN 'SAME_AS' AS label, count(r) AS n
  UNION ALL MATCH ()-[r:SAME_AS]->() RETURN 'votes' AS label, sum(r.votes) AS n
  UNION ALL MATCH ()-[r:MENTIONS]->() RETURN 'MENTIONS' AS label, count(r) AS n
  UNION ALL MATCH ()-[r:CO_OCCURS]->() RETURN 'CO_OCCURS' AS label, count(r) AS n
  UNION ALL MATCH ()-[r:IS]->() RETURN 'IS' AS label, count(r) AS n
}
RETURN label, n
