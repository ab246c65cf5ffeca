// mode: schema
CREATE CONSTRAINT video_key IF NOT EXISTS FOR (n:Video) REQUIRE n.video_id IS UNIQUE
