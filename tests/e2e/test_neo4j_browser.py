"""`m3graph db browser`: Neo4j Browser fetched through Maven (SHA-256 pinned), served on loopback, connects to
the session's real Neo4j over Bolt-on-WebSocket in headless Chromium and runs a query.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, sync_playwright

from m3graph.checksums import file_sha256
from m3graph.localserver import browser as neo4j_browser
from m3graph.localserver.server import ServerStatus
from m3graph.settings import Settings

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / ".m3graph" / "test-artifacts" / "neo4j-browser"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture(scope="module")
def served(settings: Settings, neo4j_server: ServerStatus | None) -> Iterator[neo4j_browser.BrowserServer]:
    server = neo4j_browser.serve(settings, port=0, auth=settings.neo4j_uri is not None or settings.local.auth)
    yield server
    server.stop()


def _login(page: Page, settings: Settings) -> None:
    """With auth on (the default), Browser shows its connect form; it is rendered by script, so wait for it."""
    password = page.locator("input[data-testid='password']")
    password.wait_for(timeout=60_000)
    username = page.locator("input[data-testid='username']")
    if username.count():
        username.fill(settings.neo4j_user)
    password.fill(settings.neo4j_password.get_secret_value())
    page.locator("button[data-testid='connect']").click()


def test_fetch_is_pinned_and_idempotent(settings: Settings) -> None:
    first = neo4j_browser.fetch(settings)
    assert (first / "index.html").is_file()
    assert neo4j_browser.fetch(settings) == first
    jar = neo4j_browser._jar_in_local_repo()
    assert file_sha256(jar) == neo4j_browser.SHA256


def test_browser_connects_and_runs_a_query(served: neo4j_browser.BrowserServer, settings: Settings) -> None:
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(served.url)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        if settings.neo4j_uri is not None or settings.local.auth:
            _login(page, settings)
        try:
            page.get_by_text("Connected to Neo4j").wait_for(timeout=60_000)
        except Exception:
            page.screenshot(path=str(ARTIFACTS / "not-connected.png"))
            raise
        page.locator(".monaco-editor").first.click()
        page.keyboard.type("RETURN 40 + 2 AS answer")
        page.keyboard.press("Enter")
        page.get_by_text("Started streaming 1 records").wait_for(timeout=60_000)
        assert "42" in page.locator("body").inner_text()
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "query.png"))
        browser.close()
