"""The application layer: one typed request per operation and one service that every front end calls.

Why a package of its own: the CLI, the MCP server, the explorer, the demo and the controller's tools used to
build searches by hand and disagreed (tags, character scope, time window). Now each front end only builds a
request (`requests`: validated once, with m3graph's own errors) and shows what the service returns.

Modules: `requests` (the frozen request types and every bound), `search` (THE search: tags, scope, the graph's
hybrid ranking), `memory` (`MemoryService`: search, fetch clip, ask, characters, timelines, votes, deletes,
ingestion status), `results` (the typed result of every operation; `to_json()` is what the tools send),
`reads` (the named reads behind those results), `evidence` (the pages' and tools' evidence reads: crops,
snippets, neighbours, shared files, media references, the schema the server reports), `guarded` (read-only
Cypher through the guard), `store` (opening the store for a front end), `jobs` (background ingestion jobs),
`output` (plain JSON values, never an embedding), `lookup` (sources and people by name or id, refused with the
closest known names; delete plans), `citations` (the ids, names and dates that cite a shown memory),
`tool_results` (the results of the agent-only operations: graph schema, notes, chat ingestion, ask jobs).

Front ends (`cli`, `mcp`, `explore`) import this package, never the store (`graphdb`) itself
(tests/unit/test_layers.py).

Dependencies: this package imports the store (`graphdb`), `embedding` and settings, never a front end (`cli`,
`mcp`, `explore`), never `reasoning` (whose tools call `search`) and never `ingest` (which imports the
memorizing model); the controller and the ingestion runner are injected by the front end.
"""

from m3graph.graphdb.types import check_source_id
from m3graph.service.memory import MemoryService
from m3graph.service.requests import (
    AskRequest,
    CharacterRequest,
    CorrectFactRequest,
    DeleteRequest,
    FactsAboutRequest,
    FetchClipRequest,
    HistoryRequest,
    IngestStatusRequest,
    ListVideosRequest,
    SearchRequest,
    StatsRequest,
    TimelineRequest,
    UndoVoteRequest,
    VoteRequest,
)
from m3graph.service.search import run_search

__all__ = ["AskRequest", "CharacterRequest", "CorrectFactRequest", "DeleteRequest", "FactsAboutRequest",
           "FetchClipRequest",
           "HistoryRequest", "IngestStatusRequest",
           "ListVideosRequest", "MemoryService", "SearchRequest", "StatsRequest", "TimelineRequest",
           "UndoVoteRequest", "VoteRequest", "check_source_id", "run_search"]
