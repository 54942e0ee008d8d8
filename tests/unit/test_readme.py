"""README.md tells a new user what they need (issue 10, "Docs"): the words it uses, and MCP
client configs that name the workspace instead of relying on the client's working directory."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from lcg.interfaces.serve import with_serve_default

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _configs() -> list[dict[str, Any]]:
    blocks = re.findall(r"```json\n(.*?)```", README, flags=re.DOTALL)
    configs = [json.loads(block) for block in blocks if '"mcpServers"' in block]
    return [server for config in configs for server in config["mcpServers"].values()]


def test_issue_10_the_readme_explains_the_words_it_uses_before_using_them() -> None:
    words = README.split("## What works now", 1)[0]
    for word in ("group", "episode", "entity", "relationship", "WAL", "seq", "hydrated", "pins"):
        assert f"**{word}**" in words, word
    assert "`knowledge_add_episode` stores text" in " ".join(words.split())
    assert "`knowledge_process_chunk` also extracts" in " ".join(words.split())


def test_issue_10_mcp_client_configs_name_the_workspace_not_a_cwd() -> None:
    """The five-minute start's `lambo serve` and `lcg serve --mcp-stdio` entries (issue 26
    item 1), the layered project's `lambo serve --layer general` one (issue 30) and the seed's
    `liminis-context-graph` ones, standalone and attached."""
    servers = [server for server in _configs() if "url" not in server]
    commands = sorted(Path(server["command"]).name for server in servers)
    assert commands == ["lambo", "lambo", "lcg", "liminis-context-graph", "liminis-context-graph"]
    for server in servers:
        assert "cwd" not in server
        args = server["args"]
        assert "--workspace" in args or "--connect" in args, args
        assert with_serve_default(args)[0] == "serve"


def test_m_trn_010_the_http_config_is_a_url_entry_without_a_command() -> None:
    """The URL form of the HTTP transport (ADR 0064): no command beside the url (a client
    refuses a layer holding both), the default address, the bearer header."""
    servers = [server for server in _configs() if "url" in server]
    for server in servers:
        assert "command" not in server
        assert "args" not in server
        assert server["type"] == "http"
    (default,) = [server for server in servers if server["url"].endswith("/mcp")]
    assert default["url"] == "http://127.0.0.1:7700/mcp"
    assert default["headers"]["Authorization"] == "Bearer ${LAMBO_AUTH_TOKEN}"


def test_m_trn_023_the_readme_shows_session_urls() -> None:
    """Several sessions in one serve (ADR 0071): each entry's URL is `/mcp/s/<session>`."""
    urls = [server["url"] for server in _configs() if "/mcp/s/" in server.get("url", "")]
    assert urls == ["http://127.0.0.1:7700/mcp/s/ops", "http://127.0.0.1:7700/mcp/s/docs"]


# An ADR number ("ADR 0059", a link into docs/adr/) or a checklist id (K-WAL-035, M-DER-094,
# P-110, A-17, OQ-3): design detail the README leaves to docs/reference.md (issue 26 item 1).
DESIGN_IDS = re.compile(
    r"\bADR[ -]?\d{2,4}\b|adr/\d{4}|\b(?:K|M|P|A|OQ)-[A-Z]{2,4}-\d{2,3}\b|\b(?:P|A|OQ)-\d{1,3}\b"
)


def test_issue_26_the_readme_names_no_adr_number_and_no_checklist_id() -> None:
    found = [
        f"line {number}: {match.group(0)}"
        for number, line in enumerate(README.splitlines(), start=1)
        for match in DESIGN_IDS.finditer(line)
    ]
    assert found == [], "move these to docs/reference.md: " + ", ".join(found)
    assert DESIGN_IDS.search("see ADR 0059 and M-DER-094, P-110, A-17") is not None
