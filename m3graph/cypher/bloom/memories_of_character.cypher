// mode: read
// params: id
// returns: c, i, e, m, mem
// Bloom search phrase "memories of character $id": the character, its entities and every memory naming them.
MATCH (c:Character {char_id: toInteger($id)})<-[i:IS]-(e)<-[m:MENTIONS]-(mem:Memory)
RETURN c, i, e, m, mem
