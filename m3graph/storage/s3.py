"""An S3-compatible object store (AWS S3, or any server speaking its API) through boto3.

Keys live under the configured prefix of one bucket. The client is created once per store and shared by threads
(boto3 clients are thread-safe). Credentials come from the settings as secrets, or boto3's own chain when unset;
they are never logged (the settings hold them as SecretStr).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from m3graph.errors import ConfigError, NotFoundError, RetryableError
from m3graph.settings import StorageConfig
from m3graph.storage.base import CHUNK, MediaStore
from m3graph.storage.keys import check_key

_MISSING = {"404", "NoSuchKey", "NotFound"}


@contextmanager
def _reachable(endpoint: str) -> Iterator[None]:
    """A store that cannot be reached (connection refused or cut, timeouts) is a transient failure: the pipeline's
    steps retry RetryableError with backoff, so a partitioned store delays a clip instead of failing it. botocore
    has already retried the request `max_attempts` times by then. Missing objects and refusals stay as they are."""
    from botocore.exceptions import ConnectionError as StoreConnectionError
    from botocore.exceptions import HTTPClientError

    try:
        yield
    except (StoreConnectionError, HTTPClientError) as exc:
        raise RetryableError(f"object store {endpoint} unreachable ({type(exc).__name__}); "
                             "the step may be re-run") from exc


def _secret(value: Any) -> str | None:
    return value.get_secret_value() if value is not None else None


class S3Store(MediaStore):
    is_local = False

    def __init__(self, config: StorageConfig) -> None:
        try:
            import boto3
            from botocore.config import Config
        except ImportError as exc:  # the `s3` extra
            raise ConfigError("storage.url is s3://... but boto3 is not installed (pip install 'm3graph[s3]')") from exc
        self.bucket, self.prefix = config.bucket, config.prefix
        self.endpoint = config.endpoint_url or "(AWS S3)"
        self.client = boto3.session.Session().client(
            "s3", endpoint_url=config.endpoint_url, region_name=config.region,
            aws_access_key_id=_secret(config.access_key_id),
            aws_secret_access_key=_secret(config.secret_access_key),
            aws_session_token=_secret(config.session_token),
            config=Config(connect_timeout=config.connect_timeout_s, read_timeout=config.read_timeout_s,
                          retries={"max_attempts": config.max_attempts, "mode": "standard"},
                          s3={"addressing_style": "path"} if config.endpoint_url else None))

    def __repr__(self) -> str:
        return f"S3Store(bucket={self.bucket!r}, prefix={self.prefix!r})"

    def _name(self, key: str) -> str:
        key = check_key(key.rstrip("/")) + ("/" if key.endswith("/") else "")
        return f"{self.prefix}/{key}" if self.prefix else key

    def _key(self, name: str) -> str:
        return name[len(self.prefix) + 1:] if self.prefix else name

    @staticmethod
    def _missing(exc: Exception) -> bool:
        code = str(getattr(exc, "response", {}).get("Error", {}).get("Code", ""))
        return code in _MISSING

    def put_file(self, key: str, path: Path) -> None:
        with _reachable(self.endpoint):
            self.client.upload_file(str(path), self.bucket, self._name(key))

    def put_bytes(self, key: str, data: bytes) -> None:
        with _reachable(self.endpoint):
            self.client.put_object(Bucket=self.bucket, Key=self._name(key), Body=data)

    def get_bytes(self, key: str) -> bytes:
        from botocore.exceptions import ClientError

        try:
            with _reachable(self.endpoint):
                body: bytes = self.client.get_object(Bucket=self.bucket, Key=self._name(key))["Body"].read()
        except ClientError as exc:
            if self._missing(exc):
                raise NotFoundError(f"no media object {key}") from None
            raise
        return body

    def get_file(self, key: str, path: Path) -> Path:
        from botocore.exceptions import ClientError

        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.download")
        try:
            with _reachable(self.endpoint):
                self.client.download_file(self.bucket, self._name(key), str(tmp))
        except (ClientError, RetryableError) as exc:
            tmp.unlink(missing_ok=True)
            if isinstance(exc, ClientError) and self._missing(exc):
                raise NotFoundError(f"no media object {key}") from None
            raise
        tmp.replace(path)
        return path

    def size(self, key: str) -> int | None:
        from botocore.exceptions import ClientError

        try:
            with _reachable(self.endpoint):
                return int(self.client.head_object(Bucket=self.bucket, Key=self._name(key))["ContentLength"])
        except ClientError as exc:
            if self._missing(exc):
                return None
            raise

    def list(self, prefix: str) -> list[str]:
        out: list[str] = []
        with _reachable(self.endpoint):
            for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket,
                                                                                Prefix=self._name(prefix)):
                out.extend(self._key(o["Key"]) for o in page.get("Contents", []))
        return sorted(out)

    def delete_keys(self, keys: Iterable[str]) -> int:
        names = sorted({self._name(k) for k in keys})
        n = 0
        for i in range(0, len(names), 1000):  # DeleteObjects takes at most 1000 keys
            batch = [name for name in names[i:i + 1000] if self.size(self._key(name)) is not None]
            if batch:
                with _reachable(self.endpoint):
                    self.client.delete_objects(Bucket=self.bucket,
                                               Delete={"Objects": [{"Key": k} for k in batch], "Quiet": True})
                n += len(batch)
        return n

    def delete_prefix(self, prefix: str) -> int:
        keys = self.list(prefix)
        names = [self._name(k) for k in keys]
        for i in range(0, len(names), 1000):
            with _reachable(self.endpoint):
                self.client.delete_objects(Bucket=self.bucket,
                                           Delete={"Objects": [{"Key": k} for k in names[i:i + 1000]],
                                                   "Quiet": True})
        return len(keys)

    def stream(self, key: str, start: int = 0, end: int | None = None) -> Iterator[bytes]:
        from botocore.exceptions import ClientError

        extra = {"Range": f"bytes={start}-{'' if end is None else end}"} if start or end is not None else {}
        try:
            with _reachable(self.endpoint):
                body = self.client.get_object(Bucket=self.bucket, Key=self._name(key), **extra)["Body"]
        except ClientError as exc:
            if self._missing(exc):
                raise NotFoundError(f"no media object {key}") from None
            raise
        try:
            with _reachable(self.endpoint):
                yield from body.iter_chunks(CHUNK)
        finally:
            body.close()
