"""Named queries of benchmarks and evaluations (`bench/...`, `eval/...`); `m3graph.cypher` loads them by name."""
