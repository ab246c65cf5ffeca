// mode: write
// params: clip_key, video_id, clip_index, observations
MATCH (c:Clip {clip_key: $clip_key})
UNWIND $observations AS o
MATCH (v:Voice {entity_id: o.entity_id})
MERGE (x:Utterance {utt_key: o.obs_key})
SET x.video_id = $video_id, x.clip_index = $clip_index, x.cluster_label = o.label,
    x.start_s = o.start_s, x.end_s = o.end_s, x.text = o.text, x.quality = o.quality,
    x.audio_uri = o.audio_uri, x.embedding = o.embedding, x.candidate = o.candidate,
    x.name = 'voice_' + toString(o.entity_id) + ': ' + left(o.text, 60)
MERGE (x)-[:OF]->(v)
MERGE (x)-[:IN_CLIP]->(c)
