// mode: read
// returns: name, value
// Vector index settings as the server lists them (internal ones may be hidden): were the launcher's in effect?
SHOW SETTINGS YIELD name, value WHERE name CONTAINS 'index.vector'
RETURN name, value
ORDER BY name
