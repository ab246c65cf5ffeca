// mode: write
// Characters left without members are removed.
MATCH (c:Character) WHERE NOT (c)<-[:IS]-()
DETACH DELETE c
