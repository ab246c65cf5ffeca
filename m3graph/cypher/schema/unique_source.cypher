// mode: schema
// Migration 17: a source's key; `Video.video_id` keeps its own constraint while the old label is kept.
CREATE CONSTRAINT source_key IF NOT EXISTS FOR (n:Source) REQUIRE n.source_id IS UNIQUE
