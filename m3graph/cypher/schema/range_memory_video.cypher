// mode: schema
CREATE INDEX memory_video IF NOT EXISTS FOR (n:Memory) ON (n.video_id)
