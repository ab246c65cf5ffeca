// mode: schema
CREATE CONSTRAINT counter_key IF NOT EXISTS FOR (n:Counter) REQUIRE n.name IS UNIQUE
