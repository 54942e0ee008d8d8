"""Writes docs/tools/<family>.md, a page per tool family, from the operation table.

`python -m lcg.interfaces.tool_docs [DIR]` writes the pages (DIR defaults to docs/tools);
`--check` writes nothing and exits 1 naming the pages that differ. A family is the module of
`lcg.interfaces.tools` a tool function lives in (graph, episodes, search, admin, curation,
memory). Each tool gets its description, a parameter table from its params model's schema, an
example call and the result that call really returns: run in a fresh temporary workspace
holding a small story, with the deterministic hashing embedder the tests use, ids minted by a
counter and a clock that starts at 2026-01-01 and moves one second per reading, so the pages
come out the same on every run. Nothing imports this module; it is not on any command's import path.
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import sys
import tempfile
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from lcg.interfaces import operations, schema_text
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.operations import AnyOperation
from lcg.interfaces.service import RECOVER, RECOVER_FULL, Service
from lcg.interfaces.settings_file import Tuning
from lcg.interfaces.tool_doc_files import CORRECTIONS_EXAMPLE, ONTOLOGY_EXAMPLE
from lcg.interfaces.workspace import Workspace
from lcg.projections.embedding.hashing import HashingEmbedder
from lcg.projections.extraction.classify import Kind, Menu, OneAtATime

Params = dict[str, Any]

DEFAULT_DIR = Path("docs/tools")
WORKSPACE = "<workspace>"  # the temporary workspace's path, in results that show it
VARIES = "<varies>"  # a value that differs from one run or machine to the next
_TIMED = "apply_ms_p50 apply_ms_p90 apply_ms_max serial_items_per_sec items_per_sec"
_TIMED += " probe_serial_items_per_sec probe_optimism"  # timings and rates vary (ADR 0101)
VARYING_KEYS = frozenset(  # an SQLite file's size depends on its library; timings vary
    ("byte_size", "duration_seconds", "job_id", "start_time", "elapsed_seconds", "epoch")
).union(f"write_queue_{key}" for key in _TIMED.split())
STAMP = re.compile(r"\.(recovered|replaced)-\d{8}T\d{6}\.\d{6}Z")  # when a file was set aside
RECEIPT = re.compile(r"lwr1\.[0-9a-f]{16}\.[0-9a-f]+\.")  # random epoch, issue time: varies
MEMORY_STORY = {
    "content": "user schema",
    "concept_type": "entity",
}  # derived before memory examples
SCORE_PLACES = 4  # scores are rounded: the last bits of a float sum vary across CPUs
# Calls run after STORY and before the example, for examples that need something to exist.
BEFORE: dict[str, tuple[tuple[str, Params], ...]] = {
    "knowledge_merge_entities": (
        ("knowledge_assert_entity", {"name": "Countess of Lovelace", "labels": ["Person"]}),
        (
            "knowledge_assert_relationship",
            {
                "source_name": "Countess of Lovelace",
                "predicate": "WROTE_NOTES_ON",
                "target_name": "Analytical Engine",
            },
        ),
    ),
    "knowledge_reprocess_entity_types": (
        (
            "knowledge_assert_entity",
            {"name": "Charles Babbage", "summary": "Designed the Analytical Engine."},
        ),
    ),
    "knowledge_wal_mark_list": (("knowledge_wal_mark_create", {"name": "before-cleanup"}),),
    "knowledge_wal_mark_delete": (("knowledge_wal_mark_create", {"name": "before-cleanup"}),),
    "knowledge_rebuild_status": (
        ("knowledge_rebuild_from_wal", {"group_id": "liminis", "force_clear": True}),
    ),
    # an edge whose foreign end was unbound when added, then the entity it names
    "knowledge_rebind_pointers": (
        (
            "knowledge_add_cross_group_edge",
            {
                "name": "CORRESPONDED_WITH",
                "source": {"uuid": "00000000-0000-4000-8000-000000000001"},
                "target": {"source_group_id": "people", "endpoint_name": "charles babbage"},
                "fact": "Ada Lovelace corresponded with Charles Babbage.",
            },
        ),
        ("knowledge_assert_entity", {"name": "Charles Babbage", "group_id": "people"}),
    ),
    "knowledge_add_cross_group_edge": (
        ("knowledge_assert_entity", {"name": "Charles Babbage", "group_id": "people"}),
    ),
}
# lambo_derive_image's example: a 4-d hashing space accepting client vectors (the page says so)
IMAGE_CONTRACT = {"kind": "hashing", "model": "lcg-hashing-v1", "dim": 4}
SERVICE_METHODS = frozenset({RECOVER, RECOVER_FULL})  # run through a Service, not in process
JOB_ID = "<the job_id knowledge_rebuild_from_wal returned>"  # replaced by the real one

# Files written into the workspace before the example (the corrections tools read one).
TYPING_TOOLS = (
    "knowledge_canonicalize_relations",
    "knowledge_backfill_relation_types",
    "knowledge_reprocess_relation_types",
    "knowledge_reprocess_entity_types",
)
FILES: dict[str, dict[str, str]] = {
    "knowledge_validate_corrections": {"knowledge-corrections.yaml": CORRECTIONS_EXAMPLE},
    "knowledge_apply_corrections": {"knowledge-corrections.yaml": CORRECTIONS_EXAMPLE},
    **{tool: {".lcg/ontology.yaml": ONTOLOGY_EXAMPLE} for tool in TYPING_TOOLS},
}
# What the typing examples' stand-in for the LLM endpoint answers: the first type whose word
# the text holds (the real tools ask the configured [extraction] endpoint: ADR 0042).
STAND_IN_VERDICTS = (("wrote", "AUTHORED"), ("designed", "DESIGNED"), ("Babbage", "Person"))


class _StandInClassifier(OneAtATime):
    """A scripted classifier for the pages (a page cannot call a remote model)."""

    name = "stand-in"
    model = "scripted"

    def classify(self, kind: Kind, text: str, menu: Menu) -> str | None:
        names = {name for name, _ in menu}
        return next((t for word, t in STAND_IN_VERDICTS if word in text and t in names), None)


# families split over modules: ingestion and source deletion are episode tools
FAMILY_OF = {
    "memory_read": "memory",
    "memory_recall": "memory",
    "memory_image": "memory",
    "ingest": "episodes",
    "cypher": "search",  # the seed files knowledge_query_cypher under Search
    "relation_typing": "typing",
}

# What every example runs against: the same small story, written before the example call.
STORY: tuple[tuple[str, Params], ...] = (
    (
        "knowledge_assert_entity",
        {
            "name": "Ada Lovelace",
            "labels": ["Person"],
            "summary": "Mathematician who wrote the first published program.",
        },
    ),
    (
        "knowledge_assert_entity",
        {
            "name": "Analytical Engine",
            "labels": ["Machine"],
            "summary": "Charles Babbage's design for a mechanical general-purpose computer.",
        },
    ),
    (
        "knowledge_assert_relationship",
        {
            "source_name": "Ada Lovelace",
            "predicate": "WROTE_NOTES_ON",
            "target_name": "Analytical Engine",
            "fact": "Ada Lovelace wrote the notes on the Analytical Engine.",
        },
    ),
    (
        "knowledge_add_episode",
        {
            "name": "notes-1843",
            "episode_body": "In 1843 Ada Lovelace published her notes on the Analytical "
            "Engine; note G holds the first program, which computes Bernoulli numbers.",
            "source_description": "letters/1843.txt",
        },
    ),
)


def _story_id(index: int) -> str:
    """The id the `index`-th minted id gets (1-based): the counter's, as a v4-shaped uuid."""
    return f"00000000-0000-4000-8000-{index:012d}"


ADA, ENGINE, EDGE, EPISODE = (_story_id(index) for index in range(1, 5))

# One example call per tool of the table, run after STORY.
EXAMPLES: dict[str, Params] = {
    "knowledge_status": {},
    "knowledge_add_episode": {
        "name": "meeting-2026-01-05",
        "episode_body": "We chose SQLite for the event log because it is one file.",
        "source": "text",
        "source_description": "notes/meetings.md",
        "group_id": "liminis",
    },
    "knowledge_assert_entity": {
        "name": "Charles Babbage",
        "labels": ["Person"],
        "summary": "Designed the Analytical Engine.",
        "attributes": {"born": 1791},
    },
    "knowledge_assert_relationship": {
        "source_name": "Ada Lovelace",
        "predicate": "DESCRIBED",
        "target_name": "Analytical Engine",
        "valid_at": "1843-09-01",
        "attributes": {"source": "Sketch of the Analytical Engine"},
    },
    "knowledge_get_episodes": {"group_id": "liminis", "last_n": 5},
    "knowledge_get_nodes_by_group": {"group_ids": ["liminis"]},
    "knowledge_get_edges_by_group": {"group_ids": ["liminis"]},
    "knowledge_get_edges_by_uuids": {"uuids": [EDGE]},
    "knowledge_list_entities": {"num_results": 10},
    "knowledge_list_relationships": {"num_results": 10},
    "knowledge_get_entity_neighbors": {"entity_uuid": ADA},
    "knowledge_delete_episode": {"episode_uuid": EPISODE},
    "knowledge_process_chunk": {
        "chunk_text": "Charles Babbage designed the Analytical Engine in London. "
        "Ada Lovelace met Charles Babbage in 1833.",
        "chunk_id": "babbage-0001",
        "source_file": "letters/babbage.md",
    },
    "knowledge_delete_by_source": {"source_file": "letters/1843.txt", "group_ids": ["liminis"]},
    "knowledge_delete_chunk_episode": {"chunk_id": "notes-1843", "group_ids": ["liminis"]},
    "knowledge_delete_by_group": {"group_ids": ["liminis"], "dry_run": True},
    "knowledge_clear_all": {"confirm": True, "preserve_wal": True},
    "knowledge_rebuild_from_wal": {"group_id": "liminis", "to_seq": 2, "force_clear": True},
    "knowledge_close": {},
    "knowledge_prepare_checkpoint": {},
    "knowledge_rebuild_status": {"job_id": JOB_ID},
    "knowledge_recover": {"strategy": "rebuild_from_workspace_wal"},
    "knowledge_recover_full": {},
    "knowledge_find_entities": {"query": "first program", "num_results": 3},
    "knowledge_find_relationships": {"query": "notes on the engine", "num_results": 3},
    "knowledge_search_passages": {"query": "Bernoulli numbers", "num_results": 3},
    "knowledge_get_entities_by_source": {"source": "letters/1843.txt"},
    "knowledge_query_cypher": {
        "query": "MATCH (a:Entity)-[r:RELATES]->(b:Entity) WHERE a.name = 'Ada Lovelace'"
        " RETURN a.name AS source, r.name AS predicate, r.fact AS fact, b.labels AS labels"
    },
    "knowledge_backfill_summary_embeddings": {"group_id": "liminis", "dry_run": True},
    "knowledge_build_indices": {},
    "knowledge_merge_entities": {
        "canonical_name": "Ada Lovelace",
        "alias_names": ["Countess of Lovelace"],
    },
    "knowledge_validate_corrections": {},
    "knowledge_apply_corrections": {"dry_run": False},
    "knowledge_canonicalize_relations": {"group_id": "liminis"},
    "knowledge_backfill_relation_types": {"group_id": "liminis", "dry_run": True},
    "knowledge_reprocess_relation_types": {"group_id": "liminis", "scope": "all", "dry_run": True},
    "knowledge_reprocess_entity_types": {"group_id": "liminis"},
    "knowledge_dump_wal": {"target_dir": "backups/2026-01-01", "group_ids": ["liminis"]},
    "knowledge_wal_mark_create": {"name": "before-cleanup", "group_id": "liminis"},
    "knowledge_wal_mark_list": {"group_id": "liminis"},
    "knowledge_wal_mark_delete": {"name": "before-cleanup", "group_id": "liminis"},
    "knowledge_add_cross_group_edge": {
        "name": "CORRESPONDED_WITH",
        "source": {"uuid": ADA},
        "target": {"source_group_id": "people", "endpoint_name": "charles babbage"},
        "fact": "Ada Lovelace corresponded with Charles Babbage.",
        "group_id": "liminis",
    },
    "knowledge_rebind_pointers": {"source_group_id": "people"},
    "lambo_derive": {
        "agent_id": "agent-a",
        "concepts": [
            {
                "content": "Lease TTL is 45s because it must exceed the 15s shutdown budget.",
                "concept_type": "logic",
                "depends_on": ["user schema"],
            }
        ],
    },
    "lambo_record_action": {
        "agent_id": "agent-a",
        "action": "created migrations/003.sql",
        "produces": ["migrations/003.sql"],
        "depends_on": ["user schema"],
    },
    "lambo_reserve": {"agent_id": "agent-a", "node_id": "<the id of user schema>"},
    "lambo_stats": {"agent_id": "agent-a"},
    "lambo_recall": {"agent_id": "agent-a", "query": "user schema"},
    "lambo_inspect": {"agent_id": "agent-a", "focus": "user schema", "depth": 1},
    "lambo_stale": {"agent_id": "agent-a"},
    "lambo_saints": {"agent_id": "agent-a"},
    "lambo_derive_image": {
        "agent_id": "agent-a",
        "caption": "the user schema diagram",
        "concept_type": "resource",
        "image_id": "d1",
        "vector": {"values": [0.6, 0.8, 0.0, 0.0], "contract": IMAGE_CONTRACT},
        "parent_of": [{"parent": "user schema", "child": "the user schema diagram [image:d1]"}],
    },
}


class _Clock:
    """2026-01-01T00:00:00Z, one second later at each reading."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


class _Ids:
    """Ids from a counter, so that the story's and the examples' ids are known in advance."""

    def __init__(self, first: int = 1) -> None:
        self.minted = first - 1

    def __call__(self) -> str:
        self.minted += 1
        return _story_id(self.minted)


def run_example(operation: AnyOperation) -> Params:
    """The example call's real result, in a fresh temporary workspace holding STORY."""
    with tempfile.TemporaryDirectory(prefix="lcg-tool-docs-") as directory:
        settings = Settings(workspace=Path(directory), vector_follow="sync", embedder="hashing")
        image = operation.name == "lambo_derive_image"
        if image:  # client vectors accepted, in the example's 4-d space
            accepted = {**settings.tuning.values, "[embedder] accept_client_vectors": True}
            settings = replace(settings, tuning=Tuning(values=accepted))
        workspace = Workspace(
            settings,
            embedder=HashingEmbedder(dim=4) if image else HashingEmbedder(),
            clock=_Clock(),
            command="lcg tool_docs",
            memory_ids=_Ids(first=1000),
        )
        if operation.name in TYPING_TOOLS:
            workspace.classifier = _StandInClassifier()
        with workspace as ws:
            for name, text in FILES.get(operation.name, {}).items():  # .lcg/ exists now
                (Path(directory) / name).write_text(text, encoding="utf-8")
            app = App(ws, new_id=_Ids())
            before: Params = {}
            for name, params in (*STORY, *BEFORE.get(operation.name, ())):
                before = operations.dispatch(app, name, params)
            example = dict(EXAMPLES[operation.name])
            if example.get("job_id") == JOB_ID:
                example["job_id"] = before["job_id"]
            if operation.name.startswith("lambo_"):
                example = _memory_story(app, example)
            if operation.name not in SERVICE_METHODS:
                result = operations.dispatch(app, operation.name, example)
        if operation.name in SERVICE_METHODS:  # they close and reopen: the serving process's
            service = Service(settings, command="lcg tool_docs")
            service.start()
            try:
                result = service.call(operation.name, example)
            finally:
                service.close()
        stable: Params = _stable(result, directory)
        return stable


def _memory_story(app: App, example: Params) -> Params:
    """Derive MEMORY_STORY and wait for it (its receipt is delivered by the wait), so that the
    memory examples can cite it; a node_id placeholder becomes its id."""
    ack = operations.dispatch(
        app, "lambo_derive", {"agent_id": "agent-a", "concepts": [MEMORY_STORY]}
    )
    receipt = ack["structuredContent"]["receipt"]
    settled = operations.dispatch(
        app, "lambo_stats", {"agent_id": "agent-a", "receipt": receipt, "wait_ms": 30_000}
    )
    (node,) = settled["structuredContent"]["receipt"]["created"]
    if example.get("node_id") == "<the id of user schema>":
        example["node_id"] = node
    return example


def _stable(value: Any, directory: str, key: str = "") -> Any:
    """`value` with the temporary path, the varying values and float noise made stable."""
    if key in VARYING_KEYS:
        return VARIES
    if isinstance(value, Mapping):
        return {k: _stable(v, directory, str(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_stable(item, directory) for item in value]
    if isinstance(value, str):
        value = STAMP.sub(r".\1-<UTC time>", value.replace(directory, WORKSPACE))
        return RECEIPT.sub("lwr1.<epoch>.<issued>.", value)
    if isinstance(value, float):
        return round(value, SCORE_PLACES)
    return value


def families() -> dict[str, list[AnyOperation]]:
    """The table's tools by the module of `lcg.interfaces.tools` they live in, table order."""
    grouped: dict[str, list[AnyOperation]] = {}
    for operation in operations.OPERATIONS:
        module = operation.run.__module__.rsplit(".", 1)[-1]
        grouped.setdefault(FAMILY_OF.get(module, module), []).append(operation)
    return grouped


def example_results() -> dict[str, Params]:
    """Every tool's example result by tool name (each in a fresh workspace: `run_example`)."""
    return {tool.name: run_example(tool) for tools in families().values() for tool in tools}


def render_pages(results: Mapping[str, Params]) -> dict[str, str]:
    """Each family's page text by file name (`graph.md`, ...), from `example_results()`."""
    return {
        f"{family}.md": _page(family, tools, [results[tool.name] for tool in tools])
        for family, tools in families().items()
    }


def _page(family: str, tools: Sequence[AnyOperation], results: Sequence[Params]) -> str:
    module = sys.modules[tools[0].run.__module__]
    summary = (module.__doc__ or "").strip().splitlines()[0]
    lines = [
        f"# Tools: {family}",
        "",
        summary,
        "",
        "<!-- Generated by `python -m lcg.interfaces.tool_docs` from the operation table;",
        "     edit the tool's params model or docstring, not this page. -->",
        "",
        textwrap.fill(
            "Every example runs in a fresh workspace holding the same small story (two "
            "entities, Ada Lovelace and the Analytical Engine, an edge between them and one "
            "episode) and shows the result that call returned. Ids come from a counter "
            f"(`{_story_id(1)}` is the first), times from a clock that starts at "
            "2026-01-01T00:00:00Z, embeddings from the deterministic hashing embedder of the "
            "tests (not MiniLM: search scores differ; they are rounded here to "
            f"{SCORE_PLACES} places); `{WORKSPACE}` stands for the workspace's directory and "
            f"`{VARIES}` for a value that differs between machines.",
            width=100,
            break_on_hyphens=False,
        ),
        *(
            [
                "",
                "Each memory example first derives `user schema` (an entity) as `agent-a` and "
                "waits for it; memory ids count from 1000, and receipt ids show "
                "`<epoch>.<issued>`, which differ on every run. `lambo_derive_image`'s runs "
                "with client vectors accepted, in a 4-dimensional hashing space.",
            ]
            if family == "memory"
            else []
        ),
        *(
            [
                "",
                "The examples of `knowledge_wal_mark_list` and `knowledge_wal_mark_delete` first "
                "create the mark `before-cleanup` in `liminis`.",
            ]
            if family == "admin"
            else []
        ),
        *(
            [
                "",
                textwrap.fill(
                    "The example of `knowledge_merge_entities` first asserts `Countess of "
                    "Lovelace` and an edge from it to the Analytical Engine with the story's "
                    "predicate, so the merge rewrites nothing and collapses that duplicate. "
                    "The corrections examples run with this knowledge-corrections.yaml in the "
                    "workspace (its format: [docs/corrections.md](../corrections.md)):",
                    width=100,
                ),
                "",
                "```yaml",
                CORRECTIONS_EXAMPLE.rstrip(),
                "```",
            ]
            if family == "curation"
            else []
        ),
        *(
            [
                "",
                textwrap.fill(
                    "The example of `knowledge_add_cross_group_edge` first asserts `Charles "
                    "Babbage` in the group `people`, so its pointer binds. The example of "
                    "`knowledge_rebind_pointers` first adds that edge while `people` holds no "
                    "such entity (the pointer is unbound and no read shows the edge), then "
                    "asserts the entity: the rebind binds it. ADR 0041 records the design.",
                    width=100,
                ),
            ]
            if family == "cross_group"
            else []
        ),
        *(
            [
                "",
                textwrap.fill(
                    "The typing examples run with this `.lcg/ontology.yaml` (its format: "
                    "[docs/ontology.md](../ontology.md)). The reprocess tools ask the "
                    "configured LLM endpoint; a page cannot, so their examples get a scripted "
                    "stand-in that picks the first type whose word the text holds (wrote: "
                    "AUTHORED, designed: DESIGNED, Babbage: Person). The entity example first "
                    "asserts an untyped `Charles Babbage`.",
                    width=100,
                ),
                "",
                "```yaml",
                ONTOLOGY_EXAMPLE.rstrip(),
                "```",
            ]
            if family == "typing"
            else []
        ),
        "",
        *(f"- [`{tool.name}`](#{tool.name}) ({tool.scope.value})" for tool in tools),
        "",
    ]
    for tool, result in zip(tools, results, strict=True):
        lines.extend(_tool_section(tool, result))
    return "\n".join(lines).rstrip() + "\n"


def _tool_section(tool: AnyOperation, result: Params) -> list[str]:
    schema = tool.input_schema()
    lines = [f"## {tool.name}", "", f"Scope: `{tool.scope.value}`. {tool.description}", ""]
    fields = schema_text.fields(schema, EXAMPLES[tool.name])
    if fields:
        lines += [
            "| parameter | type | required | default | bounds | description | example |",
            "|---|---|---|---|---|---|---|",
        ]
        lines += [_row(field) for field in fields]
    else:
        lines.append("No parameters.")
    call = {"method": tool.name, "params": EXAMPLES[tool.name]}
    lines += ["", "Example call (the JSON-RPC request's method and params):", ""]
    lines += _json_block(call)
    lines += ["", "Result:", ""]
    lines += _json_block(result)
    lines.append("")
    return lines


def _row(field: schema_text.Field) -> str:
    """A parameter's row; a field of the object it takes (`concepts[].content`) follows it."""
    cells = [
        f"`{field.name}`",
        field.type,
        "yes" if field.required else "",
        f"`{field.default}`" if field.default else "",
        field.bounds,
        field.description,
        f"`{field.example}`" if field.example else "",
    ]
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def _json_block(value: object) -> list[str]:
    return ["```json", json.dumps(value, indent=2, ensure_ascii=False), "```"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lcg.interfaces.tool_docs",
        description="Write (or --check) the tool pages generated from the operation table.",
    )
    parser.add_argument("directory", nargs="?", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if stale")
    args = parser.parse_args(argv)
    directory, pages = Path(args.directory), render_pages(example_results())
    if args.check:
        stale = stale_pages(pages, directory)
        for name in stale:
            sys.stderr.write(f"{directory / name} differs from the table; regenerate it\n")
            was, now = (
                (_read(directory / name) or "").splitlines(True),
                pages[name].splitlines(True),
            )
            sys.stderr.writelines(list(difflib.unified_diff(was, now, n=1))[:40])  # what differs
        return 1 if stale else 0
    write_pages(pages, directory)
    return 0


def stale_pages(pages: dict[str, str], directory: Path) -> list[str]:
    """The names of the pages whose file in `directory` is missing or says something else."""
    return [name for name, text in pages.items() if _read(directory / name) != text]


def write_pages(pages: dict[str, str], directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in pages.items():
        (directory / name).write_text(text, encoding="utf-8")


def _read(path: Path) -> str | None:
    return path.read_text(encoding="utf-8") if path.exists() else None


if __name__ == "__main__":
    raise SystemExit(main())
