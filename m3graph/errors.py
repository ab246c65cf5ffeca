"""One root exception for everything m3graph raises on purpose.

Callers catch by kind: `RetryableError` is what Celery retries; the `ValueError` mix-ins let plain Python
callers treat bad input as bad input. Driver errors are classified by type, never by message text.
"""

from __future__ import annotations


class M3GraphError(Exception):
    """Root of every error m3graph raises deliberately."""


class ConfigError(M3GraphError, ValueError):
    """A setting is missing or inconsistent (for example an index dimension that differs from the model)."""


class ServerError(M3GraphError):
    """The local Neo4j server could not be built, started, reached or stopped."""


class GraphDBError(M3GraphError):
    """A query failed for a reason that retrying will not fix."""


class RetryableError(M3GraphError):
    """A transient failure (deadlock, leader switch, connection loss): the same step may simply be re-run."""


class SchemaVersionError(M3GraphError):
    """The database schema is newer than this code, or conflicts with the configured dimensions."""


class InvalidInputError(M3GraphError, ValueError):
    """Input that cannot be written as given; nothing was written."""


class NotFoundError(M3GraphError, LookupError):
    """A video, clip, entity or character that does not exist."""


class ImportFormatError(InvalidInputError):
    """A memory-graph file that is not a research-code VideoGraph pickle, or holds forbidden objects."""


class LLMError(M3GraphError):
    """A chat model call failed in a way retrying will not fix (bad request, refused output, missing model)."""


class LLMUnavailableError(RetryableError):
    """A chat model did not answer in time or its server is unreachable; the call may be retried later."""


class ModelFileError(M3GraphError):
    """A packaged model file is missing, incomplete or fails its SHA-256 pin; it is never loaded then."""
