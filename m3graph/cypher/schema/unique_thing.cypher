// mode: schema
CREATE CONSTRAINT thing_key IF NOT EXISTS FOR (n:Thing) REQUIRE n.thing_key IS UNIQUE
