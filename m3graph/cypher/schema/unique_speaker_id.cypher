// mode: schema
CREATE CONSTRAINT speaker_id IF NOT EXISTS FOR (n:Speaker) REQUIRE n.entity_id IS UNIQUE
