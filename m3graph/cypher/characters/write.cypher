// mode: write
// params: groups, retired, revived
// Stable ids: each group keeps the id chosen by the caller. A retired id (merged away) becomes an alias of
// its survivor, together with the aliases it already had, so old ids keep resolving. A revived id (an alias
// given back to a group split off again, e.g. when a merge is undone) stops being its holder's alias. An entity
// moved out of a character remembers that id (prev_char_id), which is how a split finds the id to revive.
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
  FOREACH (moved IN CASE WHEN o IS NULL THEN [] ELSE [o.char_id] END | SET e.prev_char_id = moved)
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
CALL () {
  UNWIND $revived AS r
  MATCH (holder:Character {char_id: r.holder})
  SET holder.aliases = [x IN coalesce(holder.aliases, []) WHERE x <> r.id]
}
