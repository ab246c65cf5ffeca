"""Versioned, idempotent schema migrations (see `migrations.py`)."""

from m3graph.schema.migrations import MIGRATIONS, Migration, apply_migrations, check_schema

__all__ = ["MIGRATIONS", "Migration", "apply_migrations", "check_schema"]
