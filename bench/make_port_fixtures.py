"""Write the port fixtures with the real tools that own the formats (needs the network once).

    python bench/make_port_fixtures.py mcp-memory SERVER_DIR OUT.jsonl

runs the official MCP memory server (`npm install @modelcontextprotocol/server-memory` in
SERVER_DIR first), drives it over stdio with the `mcp` client (create_entities,
create_relations, add_observations) and copies the JSONL file the server wrote to OUT. The
committed result is fixtures/lcg/fixtures/data/port/mcp-memory-server.jsonl; the tests read it
and never need the network.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

ENTITIES: list[dict[str, Any]] = [
    {
        "name": "Ada Lovelace",
        "entityType": "person",
        "observations": ["Wrote the first published algorithm", "Born 1815 in London"],
    },
    {
        "name": "Charles Babbage",
        "entityType": "person",
        "observations": ["Designed the Analytical Engine"],
    },
    {
        "name": "Analytical Engine",
        "entityType": "machine",
        "observations": ["A general-purpose mechanical computer, never finished"],
    },
    {"name": "London", "entityType": "place", "observations": []},
]
RELATIONS = [
    {"from": "Ada Lovelace", "to": "Analytical Engine", "relationType": "wrote_notes_on"},
    {"from": "Charles Babbage", "to": "Analytical Engine", "relationType": "designed"},
    {"from": "Ada Lovelace", "to": "Charles Babbage", "relationType": "corresponded_with"},
    {"from": "Ada Lovelace", "to": "London", "relationType": "born_in"},
]
OBSERVATIONS = [
    {"entityName": "Ada Lovelace", "contents": ["Daughter of Lord Byron"]},
    {"entityName": "London", "contents": ["Capital of England", "On the Thames"]},
]


async def _drive(server_dir: Path, memory_file: Path) -> None:
    script = server_dir / "node_modules" / "@modelcontextprotocol" / "server-memory" / "dist"
    params = StdioServerParameters(
        command="node",
        args=[str(script / "index.js")],
        env={"MEMORY_FILE_PATH": str(memory_file), "PATH": "/usr/bin:/bin:/usr/local/bin"},
    )
    async with Client(params) as client:
        for tool, arguments in (
            ("create_entities", {"entities": ENTITIES}),
            ("create_relations", {"relations": RELATIONS}),
            ("add_observations", {"observations": OBSERVATIONS}),
        ):
            result = await client.call_tool(tool, arguments)
            if result.is_error:
                raise SystemExit(f"{tool} failed: {result.content}")


def main(argv: list[str]) -> None:
    if len(argv) != 4 or argv[1] != "mcp-memory":
        raise SystemExit(__doc__)
    server_dir, out = Path(argv[2]), Path(argv[3])
    with tempfile.TemporaryDirectory() as scratch:
        memory_file = Path(scratch) / "memory.jsonl"
        asyncio.run(_drive(server_dir, memory_file))
        shutil.copyfile(memory_file, out)
    sys.stdout.write(f"wrote {out}\n")


if __name__ == "__main__":
    main(sys.argv)
