// mode: schema
CREATE FULLTEXT INDEX memory_text IF NOT EXISTS FOR (n:Memory) ON EACH [n.text]
