// mode: schema
CREATE CONSTRAINT lock_key IF NOT EXISTS FOR (n:Lock) REQUIRE n.name IS UNIQUE
