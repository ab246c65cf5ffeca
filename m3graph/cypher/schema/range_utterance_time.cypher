// mode: schema
CREATE INDEX utterance_time IF NOT EXISTS FOR (n:Utterance) ON (n.video_id, n.clip_index)
