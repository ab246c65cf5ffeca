"""`m3graph explore`: the analysts' web app over the memory graph, on loopback with a per-launch token."""

from __future__ import annotations

import click

from m3graph.settings import Settings


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Interface to listen on; keep loopback unless a proxy adds its own authentication.")
@click.option("--port", default=8765, show_default=True, type=int)
@click.option("--build", "build_only", is_flag=True, help="Only build the graph view's assets (npm) and exit.")
@click.option("--no-model", is_flag=True, help="Do not offer `ask` (no chat model is loaded).")
@click.pass_obj
def explore(settings: Settings, host: str, port: int, build_only: bool, no_model: bool) -> None:
    """Browse sources, clips, characters and the graph; search, ask, and correct identities."""
    import uvicorn

    from m3graph.explore import assets
    from m3graph.explore.app import create_app
    from m3graph.explore.security import new_token
    from m3graph.graphdb.store import MemoryGraph
    from m3graph.localserver.server import ensure_server

    if build_only:
        click.echo(f"built {assets.build(force=True)}")
        return
    assets.build()
    ensure_server(settings)
    graph = MemoryGraph.connect(settings)
    embedder = None
    controller = None

    def embed(text: str) -> list[float]:
        nonlocal embedder
        if embedder is None:
            from m3graph.embedding import text_embedder

            embedder = text_embedder(settings)
        return embedder.embed([text])[0].tolist()

    def answer(question: str, videos: list[str] | None, before_clip: int | None) -> dict[str, object]:
        nonlocal controller
        if controller is None:
            from m3graph.embedding import text_embedder
            from m3graph.reasoning.control import make_controller

            controller = make_controller(settings, graph, text_embedder(settings))
        return controller.answer(question, videos, before_clip).to_dict()

    token = new_token()
    app = create_app(settings, graph, token, answerer=None if no_model else answer, embed=embed)
    click.echo(f"m3graph explorer: http://{host}:{port}/?token={token}")
    click.echo("(the token is valid for this launch only; Ctrl-C stops the explorer)")
    try:
        uvicorn.run(app, host=host, port=port, log_level="warning")
    finally:
        graph.close()
