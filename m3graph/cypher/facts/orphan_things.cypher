// mode: write
// params: source_id
// Named things of a source that no memory is about or names any more (their facts were deleted or rewritten).
MATCH (t:Thing {video_id: $source_id})
WHERE NOT (t)<-[:ABOUT|NAMES]-()
DELETE t
