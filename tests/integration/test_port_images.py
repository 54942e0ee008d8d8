"""Image concepts through lcg-jsonl (issue 32/33, ADR 0089 and 0095): an export carries what
lambo_derive_image needs to re-create one (its id, caption, unit vector and embedding
contract, never image bytes), an import re-creates it through lambo_derive_image on a server
that accepts client vectors, and its edges come along; a server that does not, or holds
another contract, refuses the import before anything is written."""

from __future__ import annotations

import functools
import json
import math
import random
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.console_script import lcg_in_process as lcg
from tests.helpers.console_script import lcg_json as run_json
from tests.helpers.service_process import ServiceProcess

lcg_json = functools.partial(run_json, run=lcg)

CAPTION = "red silk saree, gold border"
IMAGE_ID = "saree1"
CONTENT = f"{CAPTION} [image:{IMAGE_ID}]"
CLIENT_VECTORS = "[embedder]\naccept_client_vectors = true\n"


def accepting(workspace: Path) -> Path:
    """A workspace whose lcg.toml accepts client vectors."""
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / "lcg.toml").write_text(CLIENT_VECTORS, encoding="utf-8")
    return workspace


def tool(workspace: Path, name: str, **params: Any) -> dict[str, Any]:
    answer = lcg_json(workspace, "call", name, json.dumps({"agent_id": "a1", **params}))
    found: dict[str, Any] = answer["structuredContent"]
    return found


def settled(workspace: Path, ack: dict[str, Any]) -> dict[str, Any]:
    receipt = tool(workspace, "lambo_stats", receipt=ack["receipt"], wait_ms=20000)["receipt"]
    assert receipt["state"].startswith("applied"), receipt
    return dict(receipt)


def client_vector(workspace: Path, seed: int = 3) -> dict[str, Any]:
    """A vector a client computed under the session's contract (here: a random one)."""
    contract = tool(workspace, "lambo_stats")["embedding_contract"]
    rng = random.Random(seed)
    return {"values": [rng.uniform(-1, 1) for _ in range(contract["dim"])], "contract": contract}


def remember(workspace: Path) -> tuple[dict[str, Any], str]:
    """An image concept, a text concept that depends on it and one that is its parent (after
    a first write, which creates the workspace)."""
    concepts: list[dict[str, Any]] = [
        {"content": "the shop sells clothes", "concept_type": "logic"}
    ]
    settled(workspace, tool(workspace, "lambo_derive", concepts=concepts))
    vector = client_vector(workspace)
    ack = tool(
        workspace,
        "lambo_derive_image",
        caption=CAPTION,
        concept_type="resource",
        image_id=IMAGE_ID,
        vector=vector,
    )
    image = settled(workspace, ack)["created"][0]
    concepts = [
        {
            "content": "the catalogue photo is the saree",
            "concept_type": "logic",
            "depends_on": [image],
        }
    ]
    settled(workspace, tool(workspace, "lambo_derive", concepts=concepts))
    pair = {"parent": "festive clothes", "child": CONTENT}
    concepts = [{"content": "festive clothes", "concept_type": "entity"}]
    settled(workspace, tool(workspace, "lambo_derive", concepts=concepts, parent_of=[pair]))
    return vector, image


def export(workspace: Path, out: Path) -> list[dict[str, Any]]:
    lcg_json(
        workspace, "export", "-f", "lcg-jsonl", "--session", "liminis", "-o", str(out), "--json"
    )
    return [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()[1:]]


def shape(lines: list[dict[str, Any]]) -> tuple[set[tuple[Any, ...]], set[tuple[str, ...]]]:
    """Concepts (type, content, is an image) and edges (kind, source, target) by content."""
    concepts = {x["uuid"]: x for x in lines if x["kind"] == "concept"}
    edges: set[tuple[str, ...]] = {
        (x["type"], concepts[x["source"]]["content"], concepts[x["target"]]["content"])
        for x in lines
        if x["kind"] == "concept_edge"
    }
    found: set[tuple[Any, ...]] = {
        (c["concept_type"], c["content"], "image" in c) for c in concepts.values()
    }
    return found, edges


def import_(workspace: Path, path: Path) -> Any:
    return lcg(workspace, "import", str(path), "-f", "lcg-jsonl", "--session", "liminis", "--json")


def wal_events(workspace: Path) -> int:
    """The session's events (none where the workspace or the session does not exist yet)."""
    if not (workspace / ".lcg" / "wal.sqlite").exists():
        return 0
    done = lcg(workspace, "log", "-g", "liminis", "--json")
    if done.returncode == 3 and "no group 'liminis'" in done.stderr:
        return 0
    assert done.returncode == 0, done.stderr
    return len(json.loads(done.stdout)["events"])


def test_m_img_051_an_image_concept_round_trips_through_lcg_jsonl_with_its_vector_and_edges(
    tmp_path: Path,
) -> None:
    first, second = accepting(tmp_path / "first"), accepting(tmp_path / "second")
    vector, _ = remember(first)
    lines = export(first, tmp_path / "first.jsonl")
    header = json.loads((tmp_path / "first.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert header["version"] == 2  # an lcg that cannot import image concepts refuses it
    image_line = next(x for x in lines if x.get("image"))
    assert image_line["content"] == CONTENT
    carried = image_line["image"]
    assert set(carried) == {"image_id", "caption", "vector"}
    assert (carried["image_id"], carried["caption"]) == (IMAGE_ID, CAPTION)
    assert carried["vector"]["contract"] == vector["contract"]
    values = carried["vector"]["values"]
    norm = math.sqrt(sum(v * v for v in vector["values"]))
    assert math.isclose(sum(v * v for v in values), 1.0, rel_tol=1e-9)  # the unit vector
    assert all(
        math.isclose(a, b / norm, abs_tol=1e-9)
        for a, b in zip(values, vector["values"], strict=True)
    )
    assert all("image" not in x for x in lines if x["kind"] == "concept" and x is not image_line)
    concepts, edges = shape(lines)
    assert ("depends_on", "the catalogue photo is the saree", CONTENT) in edges
    assert ("parent_of", "festive clothes", CONTENT) in edges

    done = import_(second, tmp_path / "first.jsonl")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["concepts"]["created"] == len(concepts)
    assert report["concept_edges"]["created"] == len(edges)
    assert shape(export(second, tmp_path / "second.jsonl")) == (concepts, edges)
    # the copy is an image concept with the client's vector: a recall by it finds it first
    hits = tool(second, "lambo_recall", query_vector=vector, top_k=5)["hits"]
    assert hits[0]["content"] == CONTENT
    # a second import writes nothing: the image concept is known by its caption and id
    before = wal_events(second)
    again = json.loads(import_(second, tmp_path / "first.jsonl").stdout)
    assert again["concepts"] == {"created": 0, "updated": 0, "unchanged": len(concepts)}
    assert again["concept_edges"]["created"] == 0
    assert again["mark"] is None
    assert wal_events(second) == before


def test_m_img_051_an_import_of_image_concepts_is_refused_before_any_write_without_client_vectors(
    tmp_path: Path,
) -> None:
    first = accepting(tmp_path / "first")
    remember(first)
    path = tmp_path / "first.jsonl"
    lines = export(first, path)
    where = 2 + next(i for i, x in enumerate(lines) if x.get("image"))
    second = tmp_path / "second"
    done = import_(second, path)
    assert done.returncode != 0
    said = " ".join(done.stderr.split())
    assert f"{path}:{where}" in said
    assert "[embedder] accept_client_vectors = true" in said
    assert "nothing was written" in said
    assert wal_events(second) == 0
    # another embedding contract in the file: refused naming it, nothing written
    accepting(second)
    header, *rest = path.read_text(encoding="utf-8").splitlines()
    edited = [json.loads(x) for x in rest]
    for item in edited:
        if item.get("image"):
            item["image"]["vector"]["contract"]["model"] = "another-model"
    other = tmp_path / "other.jsonl"
    other.write_text("\n".join([header, *map(json.dumps, edited)]) + "\n", encoding="utf-8")
    done = import_(second, other)
    assert done.returncode != 0
    said = " ".join(done.stderr.split())
    assert f"{other}:{where}: image.vector.contract: does not match this session's" in said
    assert "model differs" in said
    assert "nothing was written" in said
    assert wal_events(second) == 0


def test_m_img_060_an_import_names_an_image_whose_key_a_text_concept_holds_and_writes_nothing(
    tmp_path: Path,
) -> None:
    first, second = accepting(tmp_path / "first"), accepting(tmp_path / "second")
    remember(first)
    path = tmp_path / "first.jsonl"
    lines = export(first, path)
    where = 2 + next(i for i, x in enumerate(lines) if x.get("image"))
    # the second session names the image first: a text concept holds its content
    pair = {"parent": "saris", "child": CONTENT}
    concepts = [{"content": "saris", "concept_type": "entity"}]
    settled(second, tool(second, "lambo_derive", concepts=concepts, parent_of=[pair]))
    before = wal_events(second)
    done = import_(second, path)
    assert done.returncode == 2
    said = " ".join(done.stderr.split())
    assert f"{path}:{where}: image id taken: image_id {IMAGE_ID}" in said
    assert wal_events(second) == before
    # a text concept line carrying an image suffix without its image field is a bad line
    bad = tmp_path / "bad.jsonl"
    header = {"format": "lcg-jsonl", "version": 1, "group_id": "liminis"}
    line = {"kind": "concept", "uuid": "c1", "content": CONTENT, "concept_type": "resource"}
    bad.write_text(
        json.dumps(header) + "\n" + json.dumps({**line, "agent_id": "a"}) + "\n", encoding="utf-8"
    )
    done = import_(second, bad)
    assert done.returncode == 2
    assert f"{bad}:2: content ends with an image suffix" in " ".join(done.stderr.split())
    assert wal_events(second) == before


def test_m_img_051_bad_image_lines_are_named_by_line_and_nothing_is_imported(
    tmp_path: Path,
) -> None:
    workspace = accepting(tmp_path / "w")
    contract = {"kind": "hashing", "model": "lcg-hashing-v1", "dim": 256}
    vector = {"values": [1.0] + [0.0] * 255, "contract": contract}
    image = {"image_id": IMAGE_ID, "caption": CAPTION, "vector": vector}

    def line(uuid: str, **fields: Any) -> dict[str, Any]:
        base = {"kind": "concept", "uuid": uuid, "content": CONTENT, "concept_type": "resource"}
        return {**base, "agent_id": "a", "image": image, **fields}

    lines = [
        {"format": "lcg-jsonl", "version": 2, "group_id": "liminis"},
        line("c1"),  # good
        line("c2", content="another caption [image:saree1]"),
        line("c3", concept_type="observation"),
        line("c4", image={**image, "vector": {**vector, "values": [1.0, 0.0]}}),
        line("c5", image={**image, "image_id": "Saree"}, content=f"{CAPTION} [image:Saree]"),
        {"kind": "concept", "uuid": "t1", "content": "x", "concept_type": "logic", "agent_id": "a"},
        {"kind": "concept_edge", "type": "depends_on", "source": "c1", "target": "t1"},
    ]
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    done = import_(workspace, path)
    assert done.returncode == 2
    said = " ".join(done.stderr.split())
    assert f'{path}:3: "content" of an image concept must be its caption plus' in said
    assert f"{path}:4: concept_type: must be one of entity, logic, constraint, resource" in said
    assert f"{path}:5: image.vector.values" in said
    assert f"{path}:6: image.image_id: must be 1 to 64 lowercase letters and digits" in said
    assert f"{path}:8: an image concept's depends_on edge cannot be written" in said
    assert f"{path}:2:" not in said
    assert f"{path}:7:" not in said
    assert wal_events(workspace) == 0


@pytest.mark.slow
def test_m_img_051_an_import_through_a_running_service_asks_it_for_client_vectors(
    tmp_path: Path,
) -> None:
    first = accepting(tmp_path / "first")
    remember(first)
    path = tmp_path / "first.jsonl"
    lines = export(first, path)
    where = 2 + next(i for i, x in enumerate(lines) if x.get("image"))
    for name, accepts in (("on", True), ("off", False)):
        workspace = accepting(tmp_path / name) if accepts else tmp_path / name
        concepts = [{"content": "the shop sells clothes", "concept_type": "logic"}]
        settled(workspace, tool(workspace, "lambo_derive", concepts=concepts))
        before = wal_events(workspace)
        service = ServiceProcess(workspace)
        try:
            assert service.wait_ready()["state"] == "healthy"
            done = import_(workspace, path)
            said = " ".join(done.stderr.split())
            assert "goes through" in said  # the service holds the workspace
            if accepts:
                assert done.returncode == 0, said
                hits = tool(workspace, "lambo_recall", query=CAPTION, top_k=5)["hits"]
                assert CONTENT in [hit["content"] for hit in hits]
            else:
                assert done.returncode != 0
                assert f"{path}:{where}:" in said
                assert "[embedder] accept_client_vectors = true" in said
                assert wal_events(workspace) == before
        finally:
            assert service.stop() == 0
