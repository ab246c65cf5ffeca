// mode: read
// params: text
// returns: u, o, v, i, c
// Bloom search phrase "who said $text": utterances containing the words, their voice and its character.
MATCH (u:Utterance)-[o:OF]->(v:Voice)
WHERE toLower(u.text) CONTAINS toLower($text)
OPTIONAL MATCH (v)-[i:IS]->(c:Character)
RETURN u, o, v, i, c
LIMIT 50
