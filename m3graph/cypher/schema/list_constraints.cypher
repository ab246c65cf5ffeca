// mode: read
// returns: name, labels, properties
SHOW CONSTRAINTS YIELD name, labelsOrTypes, properties
RETURN name, labelsOrTypes AS labels, properties
