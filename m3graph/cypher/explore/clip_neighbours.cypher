// mode: read
// params: source_id, clip_index
// returns: previous, next
// The nearest clips before and after one clip of a source (lists of at most one index; empty at either end,
// and gaps left by deleted clips are skipped): the clip page's previous/next links.
RETURN COLLECT { MATCH (p:Clip {video_id: $source_id}) WHERE p.clip_index < $clip_index
                 RETURN p.clip_index ORDER BY p.clip_index DESC LIMIT 1 } AS previous,
       COLLECT { MATCH (n:Clip {video_id: $source_id}) WHERE n.clip_index > $clip_index
                 RETURN n.clip_index ORDER BY n.clip_index LIMIT 1 } AS next
