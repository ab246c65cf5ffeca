"""How the `m3graph` command ends: one line on stderr and a documented exit status (docs/cli.md "Exit codes").

Every error a user can cause is an `M3GraphError` subclass whose message names the input; this module turns it,
and the few library errors that can still reach the top (a missing or unreadable file, a pydantic validation
error), into one line and a status from sysexits(3), so a script can tell "fix the input" from "retry later".
Anything else is a bug: one line too, with the traceback only under `m3graph -v`.
"""

from __future__ import annotations

import traceback

import click
from pydantic import ValidationError

from m3graph.errors import (
    ConfigError,
    GraphDBError,
    InvalidInputError,
    LLMError,
    M3GraphError,
    ModelFileError,
    NotFoundError,
    RetryableError,
    SchemaVersionError,
    ServerError,
)

OK = 0
FAILED_ITEMS = 1  # the command ran, but some of its work failed (ingest: a video); printed per item
USAGE = 2  # click: unknown option, missing argument, a path argument that does not exist
DATA = 65  # EX_DATAERR: input that cannot be used as given (a corrupt video, a bad id or vector, a hostile pickle)
NOT_FOUND = 66  # EX_NOINPUT: no such file, video, clip, entity or character
UNAVAILABLE = 69  # EX_UNAVAILABLE: the Neo4j server or the chat model failed in a way retrying will not fix
INTERNAL = 70  # EX_SOFTWARE: a bug (an unexpected exception, a failed query)
IO = 74  # EX_IOERR: a file that exists but cannot be read or written (permissions, a directory, a full disk)
TEMPORARY = 75  # EX_TEMPFAIL: retry later (server busy or unreachable, LLM endpoint down or timing out)
CONFIG = 78  # EX_CONFIG: a bad setting, config file, model file or schema version

# First match wins, so subclasses come before their bases.
_BY_TYPE: tuple[tuple[type[BaseException], int], ...] = (
    (RetryableError, TEMPORARY),
    (NotFoundError, NOT_FOUND),
    (ConfigError, CONFIG),
    (SchemaVersionError, CONFIG),
    (ModelFileError, CONFIG),
    (InvalidInputError, DATA),
    (ServerError, UNAVAILABLE),
    (LLMError, UNAVAILABLE),
    (GraphDBError, INTERNAL),
    (M3GraphError, FAILED_ITEMS),
    (ValidationError, DATA),
    (FileNotFoundError, NOT_FOUND),
    (OSError, IO),
)


def exit_code(exc: BaseException) -> int:
    for kind, code in _BY_TYPE:
        if isinstance(exc, kind):
            return code
    return INTERNAL


def one_line(exc: BaseException) -> str:
    """The message for `exc` on one line, naming the input where the exception knows it."""
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or exc.title
        text = f"invalid {exc.title} {where}: {first['msg']} (got {first.get('input')!r:.80})"
    elif isinstance(exc, OSError) and not isinstance(exc, M3GraphError) and exc.filename is not None:
        text = f"{exc.strerror or type(exc).__name__}: {exc.filename}"
    elif isinstance(exc, M3GraphError | ValidationError | OSError):
        text = str(exc) or type(exc).__name__
    else:
        text = f"internal error {type(exc).__name__}: {exc} (a bug; `m3graph -v ...` shows the traceback)"
    return " ".join(text.split())


def report(exc: BaseException, verbose: bool = False) -> int:
    """Prints `exc` as one line on stderr (plus the traceback under -v) and returns the exit status."""
    if verbose:
        click.echo("".join(traceback.format_exception(exc)).rstrip(), err=True)
    click.echo(f"error: {one_line(exc)}", err=True)
    return exit_code(exc)
