"""A real portal on a real port for the tests (issue 29): a Service holding a small demo
workspace (a ruling, a concept citing it, a correction contradicting it, the `<script>` text
that must come back escaped), the portal's routes served by uvicorn in a thread."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette

from lcg.interfaces.config import Settings
from lcg.interfaces.http_auth import Credential
from lcg.interfaces.http_server import listen
from lcg.interfaces.portal.reads import PortalReads
from lcg.interfaces.portal.web import routes
from lcg.interfaces.service import Service
from lcg.projections.embedding.choice import EmbedderName

AGENT = "agent-a"
RULING = "user schema owns the users table"
CITING = "logins read the users table"
CORRECTION = "accounts replaced the users table"
SCRIPT = "<script>alert('users table')</script> escaping test"


def derive(service: Service, *concepts: dict[str, Any], agent: str = AGENT) -> None:
    ack = service.call("lambo_derive", {"agent_id": agent, "concepts": list(concepts)})
    receipt = ack["structuredContent"]["receipt"]
    service.call("lambo_stats", {"agent_id": agent, "receipt": receipt, "wait_ms": 10_000})


def concept(content: str, kind: str = "logic", **refs: list[str]) -> dict[str, Any]:
    return {"content": content, "concept_type": kind, **refs}


def write_story(service: Service) -> None:
    derive(service, concept(RULING, "entity"))
    derive(service, concept(CITING, depends_on=[RULING]))
    derive(service, concept(SCRIPT, "observation"))
    derive(service, concept(CORRECTION, "observation", against=[RULING]), agent="agent-c")


@dataclasses.dataclass
class Portal:
    service: Service
    base: str


@contextmanager
def serving(
    workspace: Path,
    credentials: tuple[Credential, ...] = (),
    story: bool = True,
    embedder: EmbedderName = "hashing",
) -> Iterator[Portal]:
    settings = Settings(workspace=workspace, embedder=embedder)
    service = Service(settings, command="pytest portal")
    assert service.start() == "healthy", service.reason
    reads = PortalReads(service)
    try:
        if story:
            write_story(service)
        app = Starlette(routes=routes(reads, credentials))
        sock = listen("127.0.0.1", 0)
        port = sock.getsockname()[1]
        server = uvicorn.Server(uvicorn.Config(app, log_config=None, access_log=False))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.02)
        try:
            yield Portal(service, f"http://127.0.0.1:{port}")
        finally:
            server.should_exit = True
            thread.join(10)
            sock.close()
    finally:
        reads.close()
        service.close()
