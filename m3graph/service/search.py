"""THE search every front end runs: the CLI, the MCP tools, the explorer, the demo and the controller's tools.

Why one function: the front ends used to build searches by hand and disagreed (one kept `<character_K>` tags in
the full-text query, one ignored them, one dropped the time window). The behaviour chosen is the controller's,
because its figures in docs/evaluation.md were measured that way:

* `<character_K>` tags in the query scope the search to those characters (together with `characters`);
* the full-text (BM25) text is the query without its tags (no text at all when only tags are left);
* the vector is embedded from the query as written;
* results come in the order `MemorySearch.run` returns them; no front end reorders them.

The request becomes one `SearchSpec` by its field names (`SearchSpec.of`), so a new request field that the spec
also has (a filter) reaches the plan without a line here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from m3graph.errors import NotFoundError
from m3graph.fact_versions import VersionView
from m3graph.graphdb.search import MemorySearch
from m3graph.graphdb.search_plan import SearchSpec
from m3graph.graphdb.tags import TAG
from m3graph.graphdb.types import ClipResult
from m3graph.service.requests import SearchRequest, as_of_point

_BEFORE_NEXT = 1e-3  # seconds
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


def version_view(search: MemorySearch, request: SearchRequest) -> VersionView:
    """Which versions of facts the request shows (`as_of`, `all_versions`; m3graph.fact_versions)."""
    if request.as_of is None:
        return VersionView(all_versions=request.all_versions)
    when, clip = as_of_point(request.as_of)
    if clip is None:
        assert when is not None
        return VersionView(all_versions=request.all_versions, at=when.timestamp())
    end = search.clip_end(*clip)
    if end is None:
        raise NotFoundError(f"as_of: clip {clip[0]}#{clip[1]} does not exist")
    # The clip's own end is where the next clip starts: as of a clip is just before it.
    return VersionView(all_versions=request.all_versions, video=clip[0], order=end - _BEFORE_NEXT)


def run_search(search: MemorySearch, embed: Embed, request: SearchRequest, exclude: Sequence[str] = ()
               ) -> list[ClipResult]:
    """One search as every front end runs it. `exclude`: clip keys already shown (the controller's paging)."""
    view = version_view(search, request)
    spec = SearchSpec.of(dict(request), vector=embed(request.query), text=full_text(request.query),
                         characters=scoped_characters(request), view=view, exclude=exclude)
    return search.run(search.plan(spec))


__all__ = ["Embed", "characters_in", "full_text", "run_search", "scoped_characters", "version_view"]
