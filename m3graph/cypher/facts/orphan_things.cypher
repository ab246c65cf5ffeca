// mode: write
// params: video_id
// Named things of a source that no memory is about or names any more (their facts were deleted or rewritten).
MATCH (t:Thing {video_id: $video_id})
WHERE NOT (t)<-[:ABOUT|NAMES]-()
DELETE t
