"""`m3graph reembed`: move a graph to a new embedding model (resumable; see m3graph/graphdb/reembed.py)."""

from __future__ import annotations

import click

from m3graph.settings import Settings


@click.command("reembed")
@click.option("--kind", type=click.Choice(["text", "face", "voice"]), default="text", show_default=True,
              help="Which vectors to move (only text for now).")
@click.option("--model", default=None,
              help="Text model: 'packaged' or a local sentence-transformers directory (default: the configured one).")
@click.option("--batch-size", type=click.IntRange(min=1), default=256, show_default=True)
@click.pass_obj
def reembed(settings: Settings, kind: str, model: str | None, batch_size: int) -> None:
    """Re-embed every memory with the text model and re-create the vector index at its dimension."""
    from m3graph.embedding import model_dimension, text_embedder
    from m3graph.graphdb.executor import Executor
    from m3graph.graphdb.reembed import reembed as run_reembed
    from m3graph.graphdb.server import ensure_server
    from m3graph.schema.migrations import apply_migrations

    if kind == "text":
        config = settings.text_model.model_copy(update={"model": model}) if model else settings.text_model
        dim = model_dimension(config)  # refuses (ConfigError) before anything is touched
        settings = settings.model_copy(update={"text_model": config,
                                               "memory": settings.memory.model_copy(update={"text_dim": dim})})
    ensure_server(settings)
    with Executor.connect(settings) as ex:  # no migrations yet: the old index's dimension would be refused

        def progress(done: int, total: int) -> None:
            if done % (batch_size * 10) < batch_size or done == total:
                click.echo(f"  {done}/{total} memories")

        embedder = text_embedder(settings) if kind == "text" else None  # other kinds are refused before loading
        summary = run_reembed(ex, settings, kind, embedder, batch_size=batch_size,  # type: ignore[arg-type]
                              progress=progress)
        apply_migrations(ex, settings)
    how = "re-created" if summary.index_recreated else "kept"
    click.echo(f"{summary.embedded} of {summary.total} memories embedded by {summary.model} ({summary.dim}-d); "
               f"vector index {how}")
    if model:
        click.echo(f"search with it: M3GRAPH_TEXT_MODEL__MODEL={model} M3GRAPH_MEMORY__TEXT_DIM={summary.dim} "
                   "(or the same in m3graph.toml)")
