"""`m3graph mcp`: the memory as tools for agents, over the Model Context Protocol (official SDK, 2.x API).

Why a package of its own: the tools are a third front door to the same store, beside the CLI and the explorer,
and must not grow their own queries. Reads reuse the explorer's named reads (`m3graph.explore.reads`), search
and `ask` are the controller's own (`m3graph.reasoning`), arbitrary Cypher goes through the guard
(`m3graph.graphdb.guarded`), and writes are the store's calls (chat ingestion, votes, deletions).

Modules: `service` (the tools as plain Python over one open store, testable without MCP), `server` (their MCP
registration: schemas, annotations, descriptions written for a model, error results), `security` (bearer token
and Origin/Host checks for HTTP), `jobs` (background video ingestion with progress), `schema` (what the graph
holds, from m3graph's own schema model), `output` (JSON-safe values, never an embedding).
"""
