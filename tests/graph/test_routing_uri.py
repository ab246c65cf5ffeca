"""A `neo4j://` routing URI against the local single-member server: the store works through it unchanged.

Why: docs/scaling.md tells cluster and Aura users to set a routing URI, and the executor sends reads with
routing READ and writes with routing WRITE. A cluster is Enterprise-only and none exists here, but a single
standalone server answers the routing protocol too (one member holding every role), so the driver's routing
path, the executor's read/write split and the product's own queries can be exercised for real.
"""

from __future__ import annotations

from collections.abc import Iterator

import neo4j
import pytest

from m3graph.graphdb.clip_state import ClipState
from m3graph.graphdb.store import MemoryGraph
from m3graph.graphdb.types import ClipInfo
from m3graph.localserver.server import ServerStatus


@pytest.fixture
def routed(graph: MemoryGraph, neo4j_server: ServerStatus | None) -> Iterator[MemoryGraph]:
    """The session's database through a routing URI (the suite's own server: only a local one is known to be a
    single member whose address the test can name)."""
    if neo4j_server is None:
        pytest.skip("NEO4J_URI is set: the routing check is against the suite's local server only")
    uri = neo4j_server.bolt_uri.replace("bolt://", "neo4j://")
    store = MemoryGraph.connect(graph.settings.model_copy(update={"neo4j_uri": uri}), migrate=False)
    yield store
    store.close()


def test_routing_uri_reads_and_writes_through_the_store(graph: MemoryGraph, routed: MemoryGraph,
                                                       neo4j_server: ServerStatus) -> None:
    assert isinstance(routed.ex.driver, neo4j.Neo4jDriver), "a neo4j:// URI must give the routing driver"
    # the server's routing table: one member, holding every role, at the address the URI names
    with routed.ex.driver.session(database=graph.settings.neo4j_database) as session:
        table = session.run("CALL dbms.routing.getRoutingTable({}, $db)", db=graph.settings.neo4j_database).single()
    assert table is not None
    roles = {s["role"]: s["addresses"] for s in table["servers"]}
    port = neo4j_server.bolt_uri.rsplit(":", 1)[1]
    assert set(roles) == {"WRITE", "READ", "ROUTE"}
    assert all(len(a) == 1 and a[0].endswith(f":{port}") for a in roles.values()), roles

    # writes (routing WRITE) and reads (routing READ) of the product's own queries go through the routed driver
    clips = [ClipInfo(source_id="route-v", clip_index=i, start_s=30.0 * i, end_s=30.0 * (i + 1)) for i in range(2)]
    routed.plan_clips(clips, video_name="route-v")
    assert routed.set_clip_state("route-v", 0, ClipState.RESOLVE_FAILED, "routed write")
    first = routed.allocate_entity_ids(2)
    assert routed.allocate_entity_ids(1) == first + 2  # the counter advanced once, on the one writer

    seen = [(p.clip_index, p.state, p.reason) for p in routed.clip_states("route-v")]
    assert seen == [(0, ClipState.RESOLVE_FAILED, "routed write"), (1, ClipState.PLANNED, None)]
    # and the direct (bolt://) connection sees the same committed data
    assert [(p.clip_index, p.state) for p in graph.clip_states("route-v")] == [(0, ClipState.RESOLVE_FAILED),
                                                                              (1, ClipState.PLANNED)]
