// mode: schema
CREATE CONSTRAINT face_key IF NOT EXISTS FOR (n:Face) REQUIRE n.entity_id IS UNIQUE
