// mode: read
// params: model
// returns: total, done
MATCH (m:Memory)
RETURN count(m) AS total, count(CASE WHEN m.embedding_model = $model THEN 1 END) AS done
