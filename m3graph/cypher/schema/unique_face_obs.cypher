// mode: schema
CREATE CONSTRAINT face_obs_key IF NOT EXISTS FOR (n:FaceObs) REQUIRE n.obs_key IS UNIQUE
