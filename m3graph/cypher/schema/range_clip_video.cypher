// mode: schema
CREATE INDEX clip_video IF NOT EXISTS FOR (n:Clip) ON (n.video_id)
