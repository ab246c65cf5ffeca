// mode: write
// params: version, description
MERGE (m:Migration {version: $version})
ON CREATE SET m.description = $description, m.applied_at = datetime(), m.name = 'migration ' + toString($version)
