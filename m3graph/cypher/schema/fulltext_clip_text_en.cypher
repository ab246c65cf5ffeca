// mode: schema
// English-analysed full-text index over each clip's derived search text (its date in words and its memories):
// hybrid search ranks a clip by the BM25 of the clip as one document, beside its best memory.
CREATE FULLTEXT INDEX clip_text_en IF NOT EXISTS FOR (n:Clip) ON EACH [n.search_text]
OPTIONS {indexConfig: {`fulltext.analyzer`: 'english'}}
