"""`lcg portal` alone and the portal mounted by `lcg serve --http` (issue 29): real processes
on real ports. Loopback by default; off loopback it needs the HTTP transport's credential or
refuses to start; with one, a request without the token is 401; a held workspace refuses."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from lcg.interfaces.config import Settings
from lcg.interfaces.service import Service
from tests.helpers.http_serve import HttpServe, refused_start
from tests.helpers.mcp_session import CONSOLE_SCRIPTS
from tests.helpers.portal import RULING, write_story
from tests.helpers.service_process import clean_env, terminate, wait_until

pytestmark = pytest.mark.slow

LISTENING = re.compile(r"lcg portal at (http://\S+)/portal")
TOKEN = "portal-cli-token-0123456789abcdef"  # noqa: S105 (a test token)


def seeded(workspace: Path) -> Path:
    service = Service(Settings(workspace=workspace, embedder="hashing"), command="pytest")
    assert service.start() == "healthy", service.reason
    try:
        write_story(service)
    finally:
        service.close()
    return workspace


@contextmanager
def portal(workspace: Path, *args: str) -> Iterator[str]:
    log = workspace.parent / f"{workspace.name}-portal.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [str(CONSOLE_SCRIPTS / "lcg"), "portal", "--workspace", str(workspace), *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=sink,
            env=clean_env(),
        )
    try:

        def listening() -> str | None:
            assert proc.poll() is None, log.read_text()
            found = LISTENING.search(log.read_text())
            return None if found is None else found.group(1)

        yield wait_until(listening, "lcg portal's line")
    finally:
        assert terminate(proc) == 0, log.read_text()


def test_lcg_portal_serves_the_pages_and_the_api_on_loopback(tmp_path: Path) -> None:
    with portal(seeded(tmp_path / "ws"), "--port", "0") as base:
        assert base.startswith("http://127.0.0.1:")
        page = httpx.get(f"{base}/portal/recall", params={"query": "users table"}, timeout=60)
        assert page.status_code == 200
        assert RULING in page.text
        stats = httpx.get(f"{base}/api/stats", timeout=60).json()
        assert stats["stats"]["concept_count"] == 4
        assert httpx.get(f"{base}/portal/static/cytoscape.min.js").status_code == 200


def test_lcg_portal_off_loopback_without_a_credential_refuses_to_start(tmp_path: Path) -> None:
    refused = refused_start(tmp_path, "portal", "--host", "0.0.0.0", "--port", "0")  # noqa: S104
    assert refused.returncode == 2
    assert "--host: an address other than loopback" in refused.stderr


def test_lcg_portal_off_loopback_with_a_token_answers_401_without_it(tmp_path: Path) -> None:
    workspace = seeded(tmp_path / "ws")
    args = ("--host", "0.0.0.0", "--port", "0", "--auth-token", TOKEN)  # noqa: S104
    with portal(workspace, *args) as base:
        url = base.replace("0.0.0.0", "127.0.0.1")  # noqa: S104
        assert httpx.get(f"{url}/api/stats", timeout=60).status_code == 401
        assert httpx.get(f"{url}/portal", timeout=60).status_code == 401
        bearer = {"Authorization": f"Bearer {TOKEN}"}
        assert httpx.get(f"{url}/api/stats", headers=bearer, timeout=60).status_code == 200


def test_the_http_serve_mounts_the_portal_and_a_held_workspace_refuses_lcg_portal(
    tmp_path: Path,
) -> None:
    workspace = seeded(tmp_path / "ws")
    serve = HttpServe(workspace, "serve", "--http", env={"LCG_AUTH_TOKEN": TOKEN})
    try:
        assert httpx.get(f"{serve.base}/api/overview", timeout=60).status_code == 401
        bearer = {"Authorization": f"Bearer {TOKEN}"}
        overview = httpx.get(f"{serve.base}/api/overview", headers=bearer, timeout=60).json()
        assert overview["sessions"][0]["concept_count"] == 4
        page = httpx.get(f"{serve.base}/portal", cookies={"lcg_portal": TOKEN}, timeout=60)
        assert page.status_code == 200
        refused = refused_start(workspace, "portal", "--port", "0")
        assert refused.returncode == 4
        assert "open the portal of that serve at /portal" in refused.stderr
    finally:
        serve.stop()
