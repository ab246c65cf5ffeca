// mode: schema
// English-analysed (stemming, stop words) full-text index for hybrid search; `memory_text` keeps exact names.
// `kind` is indexed beside `text` only because Neo4j treats a second index over the same properties as the same
// index; queries name the `text` field.
CREATE FULLTEXT INDEX memory_text_en IF NOT EXISTS FOR (n:Memory) ON EACH [n.text, n.kind]
OPTIONS {indexConfig: {`fulltext.analyzer`: 'english'}}
