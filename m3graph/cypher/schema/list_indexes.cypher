// mode: read
// returns: name, type, labels, properties, options, state
SHOW INDEXES YIELD name, type, labelsOrTypes, properties, options, state
RETURN name, type, labelsOrTypes AS labels, properties, options, state
