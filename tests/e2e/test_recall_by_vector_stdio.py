"""lambo_recall by query_vector over a real MCP stdio server (issue 33, ADR 0093): started with
LCG_EMBEDDER_ACCEPT_CLIENT_VECTORS=true, a client copies embedding_contract from lambo_stats,
computes the vector of a stored concept's text with the same embedder, and recalls by it; a
mismatched contract is an isError answer naming what differs, without the values sent; the
--ledger lines say only by: "vector"."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from lcg.projections.embedding.hashing import HashingEmbedder
from tests.helpers.mcp_session import mcp_client, structured, tool_names

SAREE = "red silk saree with a gold border"
INVOICE = "the invoice totals are rounded to cents"
UNUSUAL = 0.734


async def _call(client: Client, name: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(name, arguments)
    assert not result.is_error, result.content
    return structured(result)


def test_m_rec_011_272_282_284_recall_by_a_client_vector_over_stdio(tmp_path: Path) -> None:
    ledger = tmp_path / "calls.jsonl"

    async def main() -> None:
        async with mcp_client(
            "serve",
            "--mcp-stdio",
            "--session",
            "demo",
            "--workspace",
            str(tmp_path / "ws"),
            "--ledger",
            str(ledger),
            env={"LCG_EMBEDDER": "hashing", "LCG_EMBEDDER_ACCEPT_CLIENT_VECTORS": "true"},
        ) as client:
            names = await tool_names(client)
            assert "lambo_recall" in names
            assert "lambo_derive_image" in names  # listed with client vectors (ADR 0095)
            for content in (SAREE, INVOICE):
                ack = await _call(
                    client,
                    "lambo_derive",
                    agent_id="dresscode",
                    concepts=[{"content": content, "concept_type": "entity"}],
                )
                done = await _call(
                    client,
                    "lambo_stats",
                    agent_id="dresscode",
                    receipt=ack["receipt"],
                    wait_ms=30_000,
                )
                assert done["receipt"]["state"] == "applied", done
            stats = await _call(client, "lambo_stats", agent_id="dresscode")
            contract = stats["embedding_contract"]
            assert contract["kind"] == "hashing"
            values = [float(v) * 2.0 for v in HashingEmbedder().embed([SAREE])[0]]
            recalled = await _call(
                client,
                "lambo_recall",
                agent_id="dresscode",
                query_vector={"values": values, "contract": contract},
            )
            assert recalled["hits"][0]["content"] == SAREE

            wrong = {**contract, "model": "someone-elses-model"}
            refused = await client.call_tool(
                "lambo_recall",
                {
                    "agent_id": "dresscode",
                    "query_vector": {"values": [UNUSUAL] * contract["dim"], "contract": wrong},
                },
            )
            assert refused.is_error is True
            text = refused.content[0].text  # type: ignore[union-attr]
            assert "model differs" in text
            assert f'model: "{contract["model"]}"' in text
            assert str(UNUSUAL) not in text
            assert "someone-elses-model" not in text

    anyio.run(main)
    lines = [json.loads(line) for line in ledger.read_text().splitlines() if line]
    recalls = [line for line in lines if line.get("tool") == "lambo_recall"]
    assert [(line["ok"], line["by"]) for line in recalls] == [(True, "vector"), (False, "vector")]
    assert "query" not in recalls[0]
    assert recalls[0]["hits"]
    text = ledger.read_text()
    assert str(UNUSUAL) not in text
    assert "someone-elses-model" not in text
