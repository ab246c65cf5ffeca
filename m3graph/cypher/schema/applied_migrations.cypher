// mode: read
// returns: version, description, applied_at
MATCH (m:Migration) RETURN m.version AS version, m.description AS description, m.applied_at AS applied_at
ORDER BY version
