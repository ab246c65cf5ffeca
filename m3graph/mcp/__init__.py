"""`m3graph mcp`: the memory as tools for agents, over the Model Context Protocol (official SDK, 2.x API).

Why a package of its own: the tools are one front door to the same store, beside the CLI and the explorer, and
must not grow their own queries or their own rules. Every tool builds a request of `m3graph.service.requests`
and calls the application service (`m3graph.service.MemoryService`): search, reads, `ask` (with the controller
injected from `m3graph.reasoning`), votes, deletes and ingestion jobs; the tools' argument types are the request
fields' own, so bounds and schemas are stated once. Arbitrary Cypher goes through the service's guard
(`m3graph.service.guarded`); every tool sends its typed result's `to_json()`, as compact JSON.

Modules: `server` (the read tools' registration: schemas, annotations, descriptions written for a model),
`write_tools` (the tools `--allow-writes` adds), `tooling` (how a function becomes a tool; failures as one-line
tool errors), `answers` (compact JSON, one page of a list under a response budget, `limit`/`cursor`), `asking`
(`ask` as a job: progress while it waits, a job id to poll past a client's timeout), `service` (what only this
front end adds: guarded Cypher, the schema, file-reading writes under the files roots, citable hits),
`security` (bearer token and Origin/Host checks for HTTP), `jobs` (the ingestion runner behind the service's
jobs), `schema` (what the graph holds, from m3graph's own schema model), `output` (re-exports the service's
JSON-safe values).
"""
