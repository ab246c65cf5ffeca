"""`m3graph mcp`: the memory as tools for agents, over the Model Context Protocol (official SDK, 2.x API).

Why a package of its own: the tools are one front door to the same store, beside the CLI and the explorer, and
must not grow their own queries or their own rules. Every tool builds a request of `m3graph.service.requests`
and calls the application service (`m3graph.service.MemoryService`): search, reads, `ask` (with the controller
injected from `m3graph.reasoning`), votes, deletes and ingestion jobs; the tools' argument types are the request
fields' own, so bounds and schemas are stated once. Arbitrary Cypher goes through the service's guard
(`m3graph.service.guarded`); every tool sends its typed result's `to_json()`.

Modules: `server` (the MCP registration: schemas, annotations, descriptions written for a model, error results),
`service` (what only this front end adds: guarded Cypher, the schema, file-reading writes under the files roots),
`security` (bearer token and Origin/Host checks for HTTP), `jobs` (the ingestion runner behind the service's
jobs), `schema` (what the graph holds, from m3graph's own schema model), `output` (re-exports the service's
JSON-safe values).
"""
