"""`m3graph delete clip|video|character`: asks first on a terminal; `--yes` for scripts, `--dry-run` to look.

What a delete would remove is counted first (`MemoryService.lookup.delete_plan`), so an unknown source, clip or
person is refused with the closest known names before anything is asked or deleted. Without a terminal on stdin
and without `--yes` nothing is deleted (exit status 2): a script must say it means it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import click

from m3graph.cli.tables import echo_json, json_option
from m3graph.settings import Settings

DECLINED = 1  # the user answered no at the prompt: nothing was deleted


def interactive() -> bool:
    """Whether a person can answer the question (stdin is a terminal)."""
    return sys.stdin.isatty()


def _options(command: Callable[..., Any]) -> Callable[..., Any]:
    command = json_option(command)
    command = click.option("--dry-run", is_flag=True, help="Say what would be deleted; delete nothing.")(command)
    return click.option("-y", "--yes", is_flag=True, help="Delete without asking (needed without a terminal).")(
        command)


def _run(settings: Settings, build: Callable[[Any], Any], yes: bool, dry_run: bool, as_json: bool) -> Any:
    """Plans the delete, then (unless a dry run) confirms and deletes; returns the service's `Deleted`."""
    from m3graph.cli.session import make_service, open_graph

    with open_graph(settings) as graph:
        service = make_service(settings, graph)
        request = build(service)
        plan = service.lookup.delete_plan(request)
        if dry_run:
            if as_json:
                echo_json({"dry_run": True, **plan.to_json()})
            else:
                click.echo(f"would delete {plan.summary}; nothing was deleted (dry run)")
            return None
        if not yes:
            if not interactive():
                raise click.UsageError(f"not deleting {plan.summary}: stdin is not a terminal, so nobody can "
                                       f"confirm; pass --yes to delete, or --dry-run to see what would go")
            if not click.confirm(f"delete {plan.summary}? This cannot be undone", default=False, err=True):
                click.echo("nothing deleted", err=True)
                sys.exit(DECLINED)
        done = service.delete(request)
    if as_json:
        echo_json(done.to_json())
    return done


@click.group()
def delete() -> None:
    """Delete a clip, a source or a character with everything derived from it (asks first on a terminal)."""


@delete.command("clip")
@click.argument("source_id")
@click.argument("clip_index", type=int)
@_options
@click.pass_obj
def delete_clip(settings: Settings, source_id: str, clip_index: int, yes: bool, dry_run: bool, as_json: bool) -> None:
    """Delete one clip of a source and the memories written from it."""
    from m3graph.service import DeleteRequest

    request = DeleteRequest(kind="clip", video=source_id, clip=clip_index)
    if _run(settings, lambda _: request, yes, dry_run, as_json) is not None and not as_json:
        click.echo(f"deleted clip {clip_index} of {source_id}")


@delete.command("video")
@click.argument("source_id")
@_options
@click.pass_obj
def delete_video(settings: Settings, source_id: str, yes: bool, dry_run: bool, as_json: bool) -> None:
    """Delete a source (video or conversation): its clips, memories, observations and stored files."""
    from m3graph.service import DeleteRequest

    request = DeleteRequest(kind="video", video=source_id)
    done = _run(settings, lambda _: request, yes, dry_run, as_json)
    if done is not None and not as_json:
        click.echo(f"deleted video {source_id} ({done.clips} clips)")


@delete.command("character")
@click.argument("char_id", metavar="NAME|ID")
@_options
@click.pass_obj
def delete_character(settings: Settings, char_id: str, yes: bool, dry_run: bool, as_json: bool) -> None:
    """Delete a person (by id, or by a name only they go by): their faces, voices, crops and snippets."""
    from m3graph.service import DeleteRequest

    def build(service: Any) -> DeleteRequest:
        return DeleteRequest(kind="character", char_id=service.lookup.resolve(char_id))

    done = _run(settings, build, yes, dry_run, as_json)
    if done is not None and not as_json:
        click.echo(f"deleted character {done.char_id}: {done.summary}")
