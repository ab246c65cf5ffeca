// mode: schema
CREATE CONSTRAINT memory_key IF NOT EXISTS FOR (n:Memory) REQUIRE n.memory_id IS UNIQUE
