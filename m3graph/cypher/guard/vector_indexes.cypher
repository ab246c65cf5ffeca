// mode: read
// returns: name, labels, properties
// The guarded Cypher tool widens its fixed list of vector labels and keys with what the server's vector
// indexes declare (m3graph/graphdb/guard_vectors.py).
SHOW VECTOR INDEXES YIELD name, labelsOrTypes, properties
RETURN name, labelsOrTypes AS labels, properties
