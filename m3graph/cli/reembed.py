"""`m3graph reembed`: move a graph to a new embedding model (resumable; `m3graph.service.store.reembed`).

The models are loaded here, before the database is touched, and handed to the store layer as plain objects:
a text embedder, or for faces and voices a `FileEmbedder` that turns a stored face crop (JPEG) or voice snippet
(WAV) back into the vector perception would have produced from it.
"""

from __future__ import annotations

import click

from m3graph.settings import Settings


def _configure(settings: Settings, kind: str, model: str | None) -> tuple[Settings, object]:
    """Settings naming the new model and its dimension, and the loaded model (refuses before the graph is touched)."""
    if kind == "text":
        from m3graph.embedding import model_dimension, text_embedder

        config = settings.text_model.model_copy(update={"model": model}) if model else settings.text_model
        dim = model_dimension(config)  # refuses (ConfigError) before anything is touched
        settings = settings.model_copy(update={"text_model": config,
                                               "memory": settings.memory.model_copy(update={"text_dim": dim})})
        return settings, text_embedder(settings)
    from m3graph.perception.file_embed import FaceFileEmbedder, VoiceFileEmbedder

    cfg = settings.perception
    files: FaceFileEmbedder | VoiceFileEmbedder
    if kind == "face":
        files = FaceFileEmbedder(model or cfg.face_embedder, cfg.threads)
        perception = cfg.model_copy(update={"face_embedder": files.model})
        identity = settings.identity.model_copy(update={"face_dim": files.dim})
    else:
        files = VoiceFileEmbedder(model or cfg.speaker_embedder, cfg.threads, cfg.voice_turns,
                                  model_dir=cfg.campplus_dir)
        perception = cfg.model_copy(update={"speaker_embedder": files.model})
        identity = settings.identity.model_copy(update={"voice_dim": files.dim})
    return settings.model_copy(update={"perception": perception, "identity": identity}), files


@click.command("reembed")
@click.option("--kind", type=click.Choice(["text", "face", "voice"]), default="text", show_default=True,
              help="Which vectors to move: memory text, face entities or voice entities.")
@click.option("--model", default=None,
              help="text: 'packaged' (MiniLM), 'bge-small-en-v1.5-q' or a local sentence-transformers directory; "
                   "face: 'dlib' or 'onnx:PATH'; "
                   "voice: a speaker embedder name (default: the configured one).")
@click.option("--batch-size", type=click.IntRange(min=1), default=None,
              help="Nodes per transaction (default: 256 memories, 32 face/voice entities).")
@click.option("--drop-missing", is_flag=True,
              help="face/voice: re-embed from the observation files that remain instead of refusing when some are "
                   "gone (an entity with none left can no longer be matched; both are counted).")
@click.pass_obj
def reembed(settings: Settings, kind: str, model: str | None, batch_size: int | None, drop_missing: bool) -> None:
    """Re-embed every memory (or face / voice entity) with a model and re-create its vector index at its dimension."""
    from m3graph.localserver.server import ensure_server
    from m3graph.service.store import reembed as run_reembed

    batch = batch_size or (256 if kind == "text" else 32)
    settings, embedder = _configure(settings, kind, model)
    what = "memories" if kind == "text" else f"{kind} entities"
    ensure_server(settings)

    def progress(done: int, total: int) -> None:
        if done % (batch * 10) < batch or done == total:
            click.echo(f"  {done}/{total} {what}")

    summary = run_reembed(settings, kind, embedder, batch_size=batch,  # type: ignore[arg-type]
                          progress=progress, missing="drop" if drop_missing else "refuse")
    how = "re-created" if summary.index_recreated else "kept"
    click.echo(f"{summary.embedded} of {summary.total} {what} embedded by {summary.model} ({summary.dim}-d); "
               f"vector index {how}")
    if kind != "text":
        click.echo(f"{summary.observations} observations re-embedded from their files")
        if summary.dropped_observations or summary.unmatchable:
            click.echo(f"{summary.dropped_observations} observations had no file and were left without a vector; "
                       f"{len(summary.unmatchable)} entities have no vector left and can no longer be matched"
                       + (f": {', '.join(f'{kind}_{i}' for i in summary.unmatchable[:20])}"
                          if summary.unmatchable else ""))
    if model:
        env = {"text": f"M3GRAPH_TEXT_MODEL__MODEL={model} M3GRAPH_MEMORY__TEXT_DIM={summary.dim}",
               "face": f"M3GRAPH_PERCEPTION__FACE_EMBEDDER={model} M3GRAPH_IDENTITY__FACE_DIM={summary.dim}",
               "voice": f"M3GRAPH_PERCEPTION__SPEAKER_EMBEDDER={model} M3GRAPH_IDENTITY__VOICE_DIM={summary.dim}"}
        click.echo(f"use it: {env[kind]} (or the same in m3graph.toml)")
