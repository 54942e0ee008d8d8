"""Write the port fixtures with the real tools that own the formats (needs the network once).

    python bench/make_port_fixtures.py mcp-memory SERVER_DIR OUT.jsonl
    python bench/make_port_fixtures.py basic-memory BASIC_MEMORY_BIN OUT_DIR

The first runs the official MCP memory server (`npm install @modelcontextprotocol/server-memory`
in SERVER_DIR first), drives it over stdio with the `mcp` client (create_entities,
create_relations, add_observations) and copies the JSONL file the server wrote to OUT. The
second runs `basic-memory mcp` (the `basic-memory` package from PyPI, which needs Python 3.12:
install it in a venv of its own and pass its `basic-memory` script) with HOME in a temporary
directory, writes notes with its write_note tool and copies the Markdown files it wrote to
OUT_DIR. The committed results are under fixtures/lcg/fixtures/data/port/; the tests read them
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


NOTES = [
    (
        "Coffee Brewing Methods",
        "coffee",
        "# Coffee Brewing Methods\n\nNotes on brewing.\n\n## Observations\n"
        "- [method] Pour over gives more clarity #brewing\n"
        "- [tip] Water just off the boil (about 96 C)\n\n## Relations\n"
        "- relates_to [[Coffee Bean Origins]]\n- requires [[Burr Grinder]]\n",
    ),
    (
        "Coffee Bean Origins",
        "coffee",
        "# Coffee Bean Origins\n\n## Observations\n"
        "- [region] Ethiopian beans taste of berries\n- [region] Colombian beans are balanced\n",
    ),
    (
        "Burr Grinder",
        "equipment",
        "# Burr Grinder\n\n## Observations\n- [fact] Grinds evenly (unlike a blade grinder)\n"
        "\n## Relations\n- part_of [[Coffee Brewing Methods]]\n",
    ),
]


async def _write_notes(program: Path, home: Path) -> None:
    params = StdioServerParameters(
        command=str(program), args=["mcp"], env={"HOME": str(home), "PATH": "/usr/bin:/bin"}
    )
    async with Client(params) as client:
        for title, directory, content in NOTES:
            result = await client.call_tool(
                "write_note", {"title": title, "content": content, "directory": directory}
            )
            if result.is_error:
                raise SystemExit(f"write_note {title!r} failed: {result.content}")


def main(argv: list[str]) -> None:
    if len(argv) != 4 or argv[1] not in ("mcp-memory", "basic-memory"):
        raise SystemExit(__doc__)
    tool, out = Path(argv[2]), Path(argv[3])
    with tempfile.TemporaryDirectory() as scratch:
        if argv[1] == "mcp-memory":
            memory_file = Path(scratch) / "memory.jsonl"
            asyncio.run(_drive(tool, memory_file))
            shutil.copyfile(memory_file, out)
        else:
            asyncio.run(_write_notes(tool, Path(scratch)))
            notes = sorted(Path(scratch).rglob("*.md"))
            root = Path(scratch) / "basic-memory"
            for note in notes:
                target = out / note.relative_to(root)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(note, target)
    sys.stdout.write(f"wrote {out}\n")


if __name__ == "__main__":
    main(sys.argv)
