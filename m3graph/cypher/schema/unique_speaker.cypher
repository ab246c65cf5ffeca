// mode: schema
CREATE CONSTRAINT speaker_key IF NOT EXISTS FOR (n:Speaker) REQUIRE n.speaker_key IS UNIQUE
