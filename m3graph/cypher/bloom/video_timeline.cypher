// mode: read
// params: v
// returns: v, o, c, n, d
// Bloom search phrase "timeline of video $v": the clips of a source in order.
MATCH (c:Clip {video_id: $v})-[o:OF]->(v:Video)
OPTIONAL MATCH (c)-[n:NEXT]->(d:Clip)
RETURN v, o, c, n, d
