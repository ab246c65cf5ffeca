// mode: write
// params: rows
// Migration 15: Utterance.audio_uri as a storage-relative key (m3graph.storage.keys), one UNWIND per page; setting
// the same key twice is the same graph.
UNWIND $rows AS r
MATCH (u:Utterance {utt_key: r.key})
SET u.audio_uri = r.media_key
