// mode: schema
// Migration 19: a named thing found by its normalised name across every source (`Thing.name_key`), so a lookup
// that names no source seeks once per name instead of once per source and name (facts/anchor_versions).
CREATE INDEX thing_name_key IF NOT EXISTS FOR (n:Thing) ON (n.name_key)
