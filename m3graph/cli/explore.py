"""`m3graph explore`: the analysts' web app over the memory graph, on loopback with a per-launch token.

A non-loopback `--host` needs `--allow-remote` (the token is then all that guards the memory), and the server
answers only to its own address's Host names (DNS rebinding). Ask is offered only when a chat model is
configured for the control role and, for a local model, its file is present.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from m3graph.errors import InvalidInputError
from m3graph.http_guard import allowed_hosts, is_loopback, netloc, port_problem
from m3graph.settings import LLMBackend, Settings


def ask_unavailable(settings: Settings) -> str | None:
    """Why Ask cannot work with these settings (None: it can). Checked without loading the model, so the
    explorer starts fast and never offers a box that can only fail."""
    control = settings.llm.control
    if control.backend == LLMBackend.NONE:
        return "no chat model is configured for the control role (llm.control.backend = none)"
    if control.backend == LLMBackend.LLAMA_CPP:
        from m3graph.reasoning.llm.model_files import PACKAGED_MODELS, model_path

        path = (model_path(control.model, settings.llm.models_dir) if control.model in PACKAGED_MODELS
                else Path(control.model).expanduser())
        if not path.is_file():
            return (f"the control model's file {path} is not there (`m3graph model install {control.model}`)"
                    if control.model in PACKAGED_MODELS else f"the control model's file {path} is not there")
    return None


def check_bind(host: str, port: int, allow_remote: bool) -> None:
    """Refuses, in one line, a port no socket can use and a non-loopback interface without --allow-remote."""
    problem = port_problem(port)
    if problem:
        raise InvalidInputError(f"--port: {problem}")
    if not is_loopback(host) and not allow_remote:
        raise InvalidInputError(f"--host {host}: not a loopback address; add --allow-remote to serve other machines "
                                "(the per-launch token is then all that guards your memory)")


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Interface to listen on; a non-loopback one needs --allow-remote.")
@click.option("--port", default=8765, show_default=True, type=int, help="TCP port, 1-65535.")
@click.option("--allow-remote", is_flag=True, help="Allow --host on a non-loopback interface.")
@click.option("--allow-host", "hosts", multiple=True, metavar="HOST:PORT",
              help="Another Host header value to answer to (repeatable; e.g. the published address in a container).")
@click.option("--build", "build_only", is_flag=True, help="Only build the graph view's assets (npm) and exit.")
@click.option("--no-model", is_flag=True, help="Do not offer `ask` (no chat model is loaded).")
@click.pass_obj
def explore(settings: Settings, host: str, port: int, allow_remote: bool, hosts: tuple[str, ...], build_only: bool,
            no_model: bool) -> None:
    """Browse sources, clips, characters and the graph; search, ask, and correct identities."""
    from m3graph.explore import assets

    if build_only:
        click.echo(f"built {assets.build(force=True)}")
        return
    check_bind(host, port, allow_remote)

    import uvicorn

    from m3graph.cli.session import open_graph
    from m3graph.explore.app import create_app
    from m3graph.explore.security import new_token
    from m3graph.reasoning.control import controller_factory
    from m3graph.service import MemoryService

    assets.build()
    why_not = "--no-model" if no_model else ask_unavailable(settings)
    if why_not:
        click.echo(f"note: Ask is not offered: {why_not}", err=True)
    graph = open_graph(settings)

    def embedder_factory() -> Any:
        from m3graph.embedding import text_embedder

        return text_embedder(settings)

    service = MemoryService(settings, graph, embedder_factory=embedder_factory,
                            controller_factory=None if why_not else controller_factory(settings, graph))
    token = new_token()
    app = create_app(service, token, hosts=allowed_hosts(host, port, hosts), can_ask=not why_not)
    click.echo(f"m3graph explorer: http://{netloc(host, port)}/?token={token}")
    click.echo("(the token is valid for this launch only; Ctrl-C stops the explorer)")
    try:
        uvicorn.run(app, host=host, port=port, log_level="warning")
    finally:
        graph.close()
