// mode: schema
CREATE CONSTRAINT character_key IF NOT EXISTS FOR (n:Character) REQUIRE n.char_id IS UNIQUE
