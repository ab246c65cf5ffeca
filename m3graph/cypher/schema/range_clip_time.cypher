// mode: schema
CREATE INDEX clip_time IF NOT EXISTS FOR (n:Clip) ON (n.video_id, n.clip_index)
