// mode: schema
CREATE INDEX utterance_video IF NOT EXISTS FOR (n:Utterance) ON (n.video_id)
