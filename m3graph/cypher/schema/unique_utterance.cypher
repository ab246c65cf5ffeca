// mode: schema
CREATE CONSTRAINT utterance_key IF NOT EXISTS FOR (n:Utterance) REQUIRE n.utt_key IS UNIQUE
