"""Explorer graph view at scale: `python -m bench.explorer [--nodes 500,1000,2000] [--repeat 3]`.

Starts its own local Neo4j (port 7696, a home of its own under .m3graph/bench-explorer), loads one synthetic
source whose neighbourhood has the requested number of drawn nodes (clips, memories, faces, characters),
serves `m3graph explore`'s app on loopback and opens the graph page in headless Chromium (Debian's package,
driven by Playwright). Measured per size, medians of `--repeat` page loads:

- first draw: navigation start to the graph's `ready` (fetch of the JSON, layout, first frame);
- interaction: the median and worst frame time while zooming and panning (20 wheel steps, 20 drags).

The figures are machine-dependent; they go to docs/benchmarks.md ("Explorer") with the load average.
`--uri URI` draws from a running server instead of starting one; `--smoke` is the CI size (60 nodes, one load).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import uvicorn
from playwright.sync_api import sync_playwright

from bench.smoke import add_smoke, add_uri, apply_smoke, server_settings
from m3graph.explore import assets
from m3graph.explore.app import create_app
from m3graph.graphdb.store import MemoryGraph
from m3graph.graphdb.types import ClipInfo, FaceCluster, FaceObservation, MemoryIn
from m3graph.http_guard import allowed_hosts
from m3graph.localserver.server import LocalNeo4j, ensure_server
from m3graph.service import MemoryService
from m3graph.settings import LocalServer

REPO = Path(__file__).resolve().parents[1]
VIDEO = "bench-explorer"
TOKEN = "bench-explorer-token"


def _unit(gen: np.random.Generator, dim: int) -> list[float]:
    v = gen.standard_normal(dim)
    return (v / np.linalg.norm(v)).tolist()


def load(graph: MemoryGraph, clips: int, memories_per_clip: int, seed: int = 0) -> None:
    """One source: `clips` clips, each with one new face and memories that mention it and the previous face."""
    gen = np.random.default_rng(seed)
    face_dim, text_dim = graph.settings.identity.face_dim, graph.settings.memory.text_dim
    previous: int | None = None
    for index in range(clips):
        clip = ClipInfo(source_id=VIDEO, clip_index=index, start_s=30.0 * index, end_s=30.0 * (index + 1))
        face = FaceCluster(label=0, observations=[FaceObservation(
            frame_time_s=30.0 * index, bbox=(0, 0, 10, 10), det_score=0.99, quality=30.0,
            embedding=_unit(gen, face_dim))])
        [res], _ = graph.register_clip(clip, [face], [])
        tags = f"<face_{res.entity_id}>" + (f" and <face_{previous}>" if previous is not None else "")
        graph.write_memories(VIDEO, index, [
            MemoryIn(kind="episodic", text=f"{tags} did thing {j} in clip {index}.", embedding=_unit(gen, text_dim))
            for j in range(memories_per_clip)])
        previous = res.entity_id


def _serve(graph: MemoryGraph) -> tuple[uvicorn.Server, threading.Thread, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    app = create_app(MemoryService(graph.settings, graph), TOKEN, hosts=allowed_hosts("127.0.0.1", port))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    return server, thread, f"http://127.0.0.1:{port}"


FRAME_PROBE = """async () => {
  const cy = document.querySelector('#graph');
  const box = cy.getBoundingClientRect();
  const times = [];
  let last = performance.now();
  let running = true;
  const tick = (t) => { times.push(t - last); last = t; if (running) requestAnimationFrame(tick); };
  requestAnimationFrame(tick);
  const x = box.left + box.width / 2, y = box.top + box.height / 2;
  for (let i = 0; i < 20; i++) {
    cy.dispatchEvent(new WheelEvent('wheel', {deltaY: i % 2 ? 120 : -120, clientX: x, clientY: y, bubbles: true}));
    await new Promise(r => requestAnimationFrame(r));
  }
  for (let i = 0; i < 20; i++) {
    const opts = {clientX: x + i * 5, clientY: y + i * 3, bubbles: true, button: 0, buttons: 1};
    cy.dispatchEvent(new MouseEvent('mousedown', opts));
    cy.dispatchEvent(new MouseEvent('mousemove', {...opts, clientX: x + i * 5 + 20}));
    cy.dispatchEvent(new MouseEvent('mouseup', opts));
    await new Promise(r => requestAnimationFrame(r));
  }
  running = false;
  times.sort((a, b) => a - b);
  return {median: times[Math.floor(times.length / 2)], worst: times[times.length - 1], frames: times.length};
}"""


def measure(base: str, nodes: int, repeat: int) -> dict[str, Any]:
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    draws, medians, worst = [], [], []
    drawn = 0
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
        context = browser.new_context(viewport={"width": 1400, "height": 900})
        page = context.new_page()
        page.goto(f"{base}/?token={TOKEN}")
        for _ in range(repeat):
            started = time.perf_counter()
            page.goto(f"{base}/graph/{VIDEO}?max_nodes={nodes}")
            page.wait_for_function("() => window.m3graphGraphStats !== undefined", timeout=120_000)
            draws.append((time.perf_counter() - started) * 1000)
            drawn = page.evaluate("() => window.m3graphGraphStats.nodes")
            frames = page.evaluate(FRAME_PROBE)
            medians.append(frames["median"])
            worst.append(frames["worst"])
        browser.close()
    return {"requested": nodes, "drawn": drawn, "first_draw_ms_p50": round(statistics.median(draws)),
            "frame_ms_p50": round(statistics.median(medians), 1), "frame_ms_worst": round(max(worst), 1)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.explorer", description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="500,1000,2000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--port", type=int, default=7696)
    add_uri(parser)
    add_smoke(parser, "60 nodes, one page load")
    args = apply_smoke(parser.parse_args(argv), nodes="60", repeat=1)
    sizes = [int(x) for x in args.nodes.split(",")]
    home = REPO / ".m3graph" / "bench-explorer"
    settings = server_settings(args.uri, LocalServer(home=home, port=args.port, heap_mb=1024, pagecache_mb=512,
                                                     build_dir=REPO / ".m3graph" / "launcher-build"),
                               data_dir=home / "data")
    assets.build()
    ensure_server(settings)
    try:
        with MemoryGraph.connect(settings) as graph:
            if graph.counts(VIDEO).get("Clip"):  # a run that died left its source behind
                graph.delete_video(VIDEO)
            # each clip draws 1 clip + 9 memories + 1 face + 1 character = 12 nodes
            load(graph, clips=max(sizes) // 12 + 2, memories_per_clip=9)
            server, thread, base = _serve(graph)
            try:
                rows = [measure(base, n, args.repeat) for n in sizes]
            finally:
                server.should_exit = True
                thread.join(10)
            graph.delete_video(VIDEO)
    finally:
        if settings.uses_local_server:
            LocalNeo4j(settings).stop()
    print(json.dumps({"load_avg": os.getloadavg(), "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
