// mode: read
// params: uri, source_id, clip_index
// returns: referenced
// Whether a file is one the graph references from this clip (a face crop, a voice snippet, the clip's cut): the
// explorer serves nothing else. Each lookup uses the (video_id, clip_index) index of its label.
RETURN EXISTS { MATCH (o:FaceObs {video_id: $source_id, clip_index: $clip_index}) WHERE o.crop_uri = $uri }
    OR EXISTS { MATCH (u:Utterance {video_id: $source_id, clip_index: $clip_index}) WHERE u.audio_uri = $uri }
    OR EXISTS { MATCH (c:Clip {video_id: $source_id, clip_index: $clip_index}) WHERE c.uri = $uri } AS referenced
