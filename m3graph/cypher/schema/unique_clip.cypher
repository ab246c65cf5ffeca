// mode: schema
CREATE CONSTRAINT clip_key IF NOT EXISTS FOR (n:Clip) REQUIRE n.clip_key IS UNIQUE
