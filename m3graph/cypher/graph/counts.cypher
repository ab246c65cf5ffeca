// mode: read
// params: source_id
// returns: label, n
// Node and relationship counts for one video (or all when $source_id is null): used by idempotency checks and the CLI.
// Every label gets a row, zero included: the count is aggregated before the constant label is added (a
// constant next to an aggregate is a grouping key, and grouping over no rows returns no row).
CALL () {
  MATCH (c:Clip) WHERE $source_id IS NULL OR c.video_id = $source_id WITH count(c) AS n RETURN 'Clip' AS label, n
  UNION ALL MATCH (m:Memory) WHERE $source_id IS NULL OR m.video_id = $source_id WITH count(m) AS n RETURN 'Memory' AS label, n
  UNION ALL MATCH (o:FaceObs) WHERE $source_id IS NULL OR o.video_id = $source_id WITH count(o) AS n RETURN 'FaceObs' AS label, n
  UNION ALL MATCH (u:Utterance) WHERE $source_id IS NULL OR u.video_id = $source_id WITH count(u) AS n RETURN 'Utterance' AS label, n
  UNION ALL MATCH (f:Face) WITH count(f) AS n RETURN 'Face' AS label, n
  UNION ALL MATCH (v:Voice) WITH count(v) AS n RETURN 'Voice' AS label, n
  UNION ALL MATCH (c:Character) WITH count(c) AS n RETURN 'Character' AS label, n
  UNION ALL MATCH ()-[r:SAME_AS]->() WITH count(r) AS n RETURN 'SAME_AS' AS label, n
  UNION ALL MATCH ()-[r:SAME_AS]->() WITH sum(r.votes) AS n RETURN 'votes' AS label, n
  UNION ALL MATCH ()-[r:MENTIONS]->() WITH count(r) AS n RETURN 'MENTIONS' AS label, n
  UNION ALL MATCH ()-[r:CO_OCCURS]->() WITH count(r) AS n RETURN 'CO_OCCURS' AS label, n
  UNION ALL MATCH ()-[r:IS]->() WITH count(r) AS n RETURN 'IS' AS label, n
}
RETURN label, n
