// mode: read
// params: id
// returns: c, i, e, s, x
// Bloom search phrase "faces and voices of character $id": members and the equivalence votes around them.
MATCH (c:Character {char_id: toInteger($id)})<-[i:IS]-(e)
OPTIONAL MATCH (e)-[s:SAME_AS]-(x)
RETURN c, i, e, s, x
