// mode: read
// returns: version, edition
// The server's kernel version and edition, read once per connection to decide which Cypher features to use.
CALL dbms.components() YIELD name, versions, edition
WHERE name = 'Neo4j Kernel'
RETURN versions[0] AS version, edition
