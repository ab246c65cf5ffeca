// mode: schema
CREATE INDEX memory_kind IF NOT EXISTS FOR (n:Memory) ON (n.kind)
