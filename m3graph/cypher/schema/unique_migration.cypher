// mode: schema
CREATE CONSTRAINT migration_key IF NOT EXISTS FOR (n:Migration) REQUIRE n.version IS UNIQUE
