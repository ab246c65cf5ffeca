"""A real S3-compatible server for the storage tests: moto's server mode (the `moto[server]` package, Apache-2.0),
started as a subprocess on a free localhost port. Not a mock of the client: boto3 talks HTTP to it like to any
S3-compatible store."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from m3graph.settings import Settings, StorageConfig

ACCESS_KEY, SECRET_KEY = "m3graph-test-key", "m3graph-test-secret-do-not-log"
REGION = "us-east-1"


@dataclass(frozen=True)
class S3Server:
    endpoint: str

    def client(self) -> Any:
        import boto3

        return boto3.session.Session().client("s3", endpoint_url=self.endpoint, region_name=REGION,
                                              aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY)

    def make_bucket(self, name: str) -> str:
        self.client().create_bucket(Bucket=name)
        return name

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        out: list[str] = []
        for page in self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            out.extend(o["Key"] for o in page.get("Contents", []))
        return sorted(out)

    def config(self, bucket: str, prefix: str = "") -> StorageConfig:
        return StorageConfig(url=f"s3://{bucket}/{prefix}".rstrip("/"), endpoint_url=self.endpoint, region=REGION,
                             access_key_id=ACCESS_KEY, secret_access_key=SECRET_KEY)

    def settings(self, settings: Settings, bucket: str, data_dir: Path, prefix: str = "") -> Settings:
        """`settings` with media in `bucket` (under `prefix`) and `data_dir` as this host's scratch."""
        return settings.model_copy(update={"storage": self.config(bucket, prefix), "data_dir": data_dir})


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def running_moto(log: Path, timeout_s: float = 60.0) -> Iterator[S3Server]:
    """moto's S3 server on 127.0.0.1; stopped (and waited for) on exit, whatever happened."""
    for _attempt in range(3):  # the free port may be taken between the probe and the bind
        port = _free_port()
        with log.open("ab") as out:
            proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                                    stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout_s
        ready = False
        while time.monotonic() < deadline and proc.poll() is None:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                ready = True
                break
            time.sleep(0.2)
        if ready:
            break
        proc.kill()
        proc.wait(timeout=10)
    else:
        raise RuntimeError(f"moto's S3 server did not start; see {log}")
    try:
        yield S3Server(f"http://127.0.0.1:{port}")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
