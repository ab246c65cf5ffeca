// mode: write
// params: cites, shares
// Surrogate memories name the file they stand for (Memory.file_sha256, DESCRIBES); the turns' own memories
// SHARED the file. Both by memory id, after the session's memories are written in the same transaction.
CALL () {
  UNWIND $cites AS c
  MATCH (m:Memory {memory_id: c.memory_id})
  MATCH (x:File {sha256: c.sha256})
  SET m.file_sha256 = c.sha256
  MERGE (m)-[:DESCRIBES]->(x)
}
CALL () {
  UNWIND $shares AS s
  MATCH (m:Memory {memory_id: s.memory_id})
  MATCH (x:File {sha256: s.sha256})
  MERGE (m)-[r:SHARED {turn_id: s.turn_id}]->(x)
  SET r.name = s.name
}
