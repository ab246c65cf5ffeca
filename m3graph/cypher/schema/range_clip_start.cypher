// mode: schema
CREATE INDEX clip_start IF NOT EXISTS FOR (n:Clip) ON (n.start_s)
