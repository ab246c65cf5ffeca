// mode: schema
CREATE INDEX face_obs_time IF NOT EXISTS FOR (n:FaceObs) ON (n.video_id, n.clip_index)
