// mode: schema
CREATE CONSTRAINT voice_key IF NOT EXISTS FOR (n:Voice) REQUIRE n.entity_id IS UNIQUE
