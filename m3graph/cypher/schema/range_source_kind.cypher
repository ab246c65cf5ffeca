// mode: schema
// Migration 17: sources of one kind (every conversation, every notes source) found without a scan.
CREATE INDEX source_kind IF NOT EXISTS FOR (n:Source) ON (n.kind)
