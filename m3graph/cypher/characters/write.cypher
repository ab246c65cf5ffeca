// mode: write
// params: groups, retired
// Stable ids: each group keeps the id chosen by the caller. A retired id (merged away) becomes an alias of
// its survivor, together with the aliases it already had, so old ids keep resolving.
CALL () {
  UNWIND $groups AS g
  MERGE (c:Character {char_id: g.char_id})
  ON CREATE SET c.created_at = datetime(), c.name = 'character_' + toString(g.char_id), c.aliases = []
  SET c.size = size(g.members), c.updated_at = datetime()
  WITH c, g
  UNWIND g.members AS id
  CALL (id) {
    MATCH (e:Face {entity_id: id}) RETURN e
    UNION
    MATCH (e:Voice {entity_id: id}) RETURN e
    UNION
    MATCH (e:Speaker {entity_id: id}) RETURN e
  }
  OPTIONAL MATCH (e)-[old:IS]->(o:Character) WHERE o.char_id <> c.char_id
  DELETE old
  MERGE (e)-[:IS]->(c)
}
CALL () {
  UNWIND $retired AS r
  MATCH (old:Character {char_id: r.old})
  MATCH (s:Character {char_id: r.new})
  SET s.aliases = reduce(acc = coalesce(s.aliases, []), x IN [r.old] + coalesce(old.aliases, []) |
                         CASE WHEN x IN acc THEN acc ELSE acc + x END)
  DETACH DELETE old
}
