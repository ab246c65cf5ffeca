// mode: schema
CREATE INDEX face_obs_video IF NOT EXISTS FOR (n:FaceObs) ON (n.video_id)
