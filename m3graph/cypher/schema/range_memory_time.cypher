// mode: schema
CREATE INDEX memory_time IF NOT EXISTS FOR (n:Memory) ON (n.video_id, n.clip_index)
