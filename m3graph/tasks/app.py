"""The Celery application, configured from `Settings` by whichever entry point starts it.

Constructing the module does no I/O; `configure()` applies the settings. Delivery is at-least-once
(`acks_late`), which is safe because every task is idempotent and keyed by (video, clip); a worker killed
mid-task is *not* redelivered automatically (`task_reject_on_worker_lost` off) — the workflow can be
re-submitted and skips what is done. Time limits stay below Redis's visibility timeout, so a slow task is
never delivered twice while it still runs.

Settings never travel as text: a JSON dump writes every `SecretStr` as asterisks (a worker then logged in
to Neo4j with "**********"), and task messages carry ids only. The process that configures the app keeps the
`Settings` object itself; prefork children inherit it; a process nobody configured (`celery -A
m3graph.tasks.app worker`) builds its own from its environment and config file, as any entry point does.
"""

from __future__ import annotations

from celery import Celery

from m3graph.settings import Settings, load_settings

QUEUE = "m3graph"
app = Celery("m3graph", include=["m3graph.tasks.ingest"])
_configured: Settings | None = None


def configure(settings: Settings) -> Celery:
    global _configured
    t = settings.tasks
    app.conf.update(
        broker_url=t.redis_url,
        result_backend=t.redis_url,
        broker_transport_options={"visibility_timeout": t.visibility_timeout_s},
        result_backend_transport_options={"visibility_timeout": t.visibility_timeout_s},
        task_acks_late=True,
        task_reject_on_worker_lost=False,
        worker_prefetch_multiplier=1,
        task_soft_time_limit=t.soft_time_limit_s,
        task_time_limit=t.hard_time_limit_s,
        task_default_queue=QUEUE,
        task_create_missing_queues=False,
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        task_track_started=True,
        broker_connection_retry_on_startup=True,
        result_expires=86400,
        task_always_eager=False,
    )
    _configured = settings
    return app


def configured_settings() -> Settings:
    """This process's settings: the configured object (secrets intact), else the environment's and config's."""
    global _configured
    if _configured is None:
        _configured = load_settings()
    return _configured
