"""THE search every front end runs: the CLI, the MCP tools, the explorer, the demo and the controller's tools.

Why one function: the front ends used to build searches by hand and disagreed (one kept `<character_K>` tags in
the full-text query, one ignored them, one dropped the time window). The behaviour chosen is the controller's,
because its figures in docs/evaluation.md were measured that way:

* `<character_K>` tags in the query scope the search to those characters (together with `characters`);
* the full-text (BM25) text is the query without its tags (no text at all when only tags are left);
* the vector is embedded from the query as written;
* results come in the order `MemorySearch.search_clip` / `search_node` return them; no front end reorders them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from m3graph.graphdb.search import MemorySearch
from m3graph.graphdb.tags import TAG
from m3graph.graphdb.types import ClipResult
from m3graph.service.requests import SearchRequest

Embed = Callable[[str], list[float]]  # query text -> its vector


def characters_in(query: str) -> list[int]:
    """The K of every `<character_K>` tag in `query`, sorted, without repeats."""
    return sorted({int(m.group(2)) for m in TAG.finditer(query) if m.group(1).lower() == "character"})


def full_text(query: str) -> str | None:
    """The query as BM25 sees it: without its tags; None when nothing else is left."""
    return TAG.sub(" ", query).strip() or None


def scoped_characters(request: SearchRequest) -> list[int]:
    """The characters a search is scoped to: those given and those tagged in the query."""
    return sorted({*request.characters, *characters_in(request.query)})


def run_search(search: MemorySearch, embed: Embed, request: SearchRequest, exclude: Sequence[str] = ()
               ) -> list[ClipResult]:
    """One search as every front end runs it. `exclude`: clip keys already shown (the controller's paging)."""
    vector = embed(request.query)
    videos = list(request.videos) if request.videos else None
    chars = scoped_characters(request)
    text = full_text(request.query)
    if request.mode == "node":
        return search.search_node(vector, videos, request.before_clip, k=request.k, characters=chars, text=text,
                                  since=request.since, until=request.until, threshold=request.threshold)
    return search.search_clip(vector, videos, request.before_clip, exclude=exclude, k=request.k,
                              threshold=request.threshold, characters=chars, text=text, since=request.since,
                              until=request.until)


__all__ = ["Embed", "characters_in", "full_text", "run_search", "scoped_characters"]
