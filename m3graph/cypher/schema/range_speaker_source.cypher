// mode: schema
CREATE INDEX speaker_source IF NOT EXISTS FOR (n:Speaker) ON (n.source_id)
