"""End to end: perception and language models, Celery/Redis, a browser, the CLI over real media."""
