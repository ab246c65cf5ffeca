// mode: schema
CREATE INDEX memory_slot IF NOT EXISTS FOR (n:Memory) ON (n.slot_key)
