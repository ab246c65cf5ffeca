// mode: read
// params: model
// returns: total, done
MATCH (e:Voice)
RETURN count(e) AS total, count(CASE WHEN e.embedding_model = $model THEN 1 END) AS done
