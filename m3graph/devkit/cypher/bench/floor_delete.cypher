// mode: write
// params: source_id
// Removes what the commit floor (bench/write_profile.py) wrote: its BenchFloor nodes and its Memory nodes.
CALL () {
  MATCH (n:BenchFloor {video_id: $source_id}) DETACH DELETE n
}
CALL () {
  MATCH (m:Memory {video_id: $source_id}) DETACH DELETE m
}
