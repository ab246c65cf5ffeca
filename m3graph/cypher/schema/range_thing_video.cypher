// mode: schema
CREATE INDEX thing_video IF NOT EXISTS FOR (n:Thing) ON (n.video_id)
