// mode: schema
CREATE INDEX clip_started_at IF NOT EXISTS FOR (n:Clip) ON (n.started_at)
