"""Neo4j Browser for the local server: fetched through Maven, served on loopback, opened on the Bolt port.

Neo4j Browser (`org.neo4j.client:neo4j-browser`) is GPLv3, so it is fetched at setup from Maven Central and
never vendored. The embedded server runs only the Bolt connector; Browser speaks Bolt over a WebSocket on that
same port, so serving Browser's static files from any local HTTP server is enough. The jar is checked against
the SHA-256 pinned here before anything is extracted.
"""

from __future__ import annotations

import http.server
import shutil
import threading
import zipfile
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from urllib.parse import urlencode

from m3graph.checksums import MavenFetchError, fetch_maven_jar, file_sha256, maven_jar_path
from m3graph.errors import ConfigError, ServerError
from m3graph.settings import Settings

GROUP, ARTIFACT = "org.neo4j.client", "neo4j-browser"
VERSION = "5.24.0"  # the newest Browser on Maven Central
SHA256 = "064b3291c4236002c9ea04c89592ebebc80fe1f790eda36642599c9a1ee80bb8"


def _jar_in_local_repo() -> Path:
    return maven_jar_path(GROUP, ARTIFACT, VERSION)


def browser_dir(settings: Settings) -> Path:
    return settings.local.home.parent / "neo4j-browser" / VERSION


def fetch(settings: Settings) -> Path:
    """Fetches and verifies the Browser jar through Maven, extracts its static files; returns their directory."""
    target = browser_dir(settings)
    if (target / "index.html").is_file():
        return target
    try:
        jar = fetch_maven_jar(GROUP, ARTIFACT, VERSION, settings.local.mvn)
    except MavenFetchError as exc:
        raise ServerError(str(exc)) from None
    got = file_sha256(jar)
    if got != SHA256:
        raise ConfigError(f"{jar} has SHA-256 {got}, not the pinned {SHA256}; refusing to serve it")
    tmp = target.with_name(target.name + ".part")
    shutil.rmtree(tmp, ignore_errors=True)
    with zipfile.ZipFile(jar) as archive:
        for member in archive.namelist():
            if member.startswith("browser/") and not member.endswith("/"):
                out = tmp / member.removeprefix("browser/")
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_bytes(archive.read(member))
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)
    return target


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002  (the stdlib's signature)
        pass


@dataclass
class BrowserServer:
    """Browser's static files on a loopback HTTP port; `url` opens it pointed at the local Bolt port."""

    httpd: http.server.ThreadingHTTPServer
    thread: threading.Thread
    url: str

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)


def serve(settings: Settings, port: int = 7475, host: str = "127.0.0.1", auth: bool = False) -> BrowserServer:
    """Serves Browser; `auth` preselects user/password login (the password is typed by the person, never put
    in the URL)."""
    root = fetch(settings)
    handler = partial(_Quiet, directory=str(root))
    httpd = http.server.ThreadingHTTPServer((host, port), handler)
    thread = threading.Thread(target=httpd.serve_forever, name="neo4j-browser", daemon=True)
    thread.start()
    bolt = settings.bolt_uri.replace("neo4j://", "bolt://")
    # Browser 5.24 shows the username/password fields by default but hides them when BASIC is preselected
    # through the URL (seen in headless Chromium), so only "no auth" is preselected.
    query = {"dbms": bolt} if auth else {"dbms": bolt, "preselectAuthMethod": "NO_AUTH"}
    return BrowserServer(httpd, thread, f"http://{host}:{httpd.server_address[1]}/?{urlencode(query)}")
