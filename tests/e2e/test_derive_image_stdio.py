"""lambo_derive_image over a real MCP stdio server (issue 33, ADR 0095): listed exactly when
client vectors are accepted; a client copies embedding_contract from lambo_stats, derives an
image concept by a vector it computed, waits for it to apply, and recalls it first by a
near-identical query_vector; refusals (real PNG and JPEG bytes, a mismatched contract) are
isError answers naming the field and the rule, and neither they, the --ledger file nor the
server's log carry the base64 or a vector value. Over Streamable HTTP, every session of one
serve lists it alike."""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from lcg.projections.embedding.hashing import HashingEmbedder
from tests.helpers.http_serve import HttpServe, http_client
from tests.helpers.images import JPEG_5X3, b64, png
from tests.helpers.mcp_session import mcp_client, structured, text_of, tool_names
from tests.helpers.service_process import ServiceProcess

AGENT = "dresscode"
SAREE = "red silk saree, gold border"
KURTA = "blue cotton kurta for the monsoon"
INVOICE = "the invoice totals are rounded to cents"
UNUSUAL = 0.734  # a value sent in a refused vector: never shown back
LAMBO_TOOLS = {
    "lambo_recall",
    "lambo_derive",
    "lambo_record_action",
    "lambo_reserve",
    "lambo_stats",
    "lambo_inspect",
    "lambo_stale",
    "lambo_saints",
}


def _server(workspace: Path, *extra: str, client_vectors: bool) -> Any:
    env = {"LCG_EMBEDDER": "hashing"}
    if client_vectors:
        env["LCG_EMBEDDER_ACCEPT_CLIENT_VECTORS"] = "true"
    return mcp_client(
        "serve",
        "--mcp-stdio",
        "--scope",
        "memory",
        "--session",
        "demo",
        "--workspace",
        str(workspace),
        *extra,
        env=env,
    )


async def _call(client: Client, name: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(name, arguments)
    assert not result.is_error, result.content
    return structured(result)


async def _settled(client: Client, receipt: str) -> dict[str, Any]:
    done = await _call(client, "lambo_stats", agent_id=AGENT, receipt=receipt, wait_ms=30_000)
    answer: dict[str, Any] = done["receipt"]
    return answer


def test_m_img_001_002_003_listed_exactly_when_client_vectors_are_on(tmp_path: Path) -> None:
    """Also OQ-01: lambo_stale is always listed, so the base list is eight tools and nine
    with lambo_derive_image."""

    async def main() -> tuple[set[str], set[str]]:
        async with _server(tmp_path / "off", client_vectors=False) as client:
            off = await tool_names(client)
        async with _server(tmp_path / "on", client_vectors=True) as client:
            on = await tool_names(client)
        return off, on

    off, on = anyio.run(main)
    assert off == LAMBO_TOOLS  # the eight tools, unchanged
    assert on == {*LAMBO_TOOLS, "lambo_derive_image"}


def test_m_img_050_052_053_058_061_derive_by_vector_then_recall_it_first_over_stdio(
    tmp_path: Path,
) -> None:
    """Also M-CFG-012 (its half that applies here: the serve's own log and ledger never
    carry a sent vector's values or an image's base64; RUST_LOG names a Rust MCP library
    lcg does not use)."""
    ledger = tmp_path / "calls.jsonl"
    log = tmp_path / "serve.log"
    embedder = HashingEmbedder()
    sent = [float(v) * 3.0 for v in embedder.embed(["a photo of a red saree"])[0]]

    async def main() -> None:
        async with _server(
            tmp_path / "ws",
            "--ledger",
            str(ledger),
            "--log-file",
            str(log),
            client_vectors=True,
        ) as client:
            for content in (KURTA, INVOICE):
                ack = await _call(
                    client,
                    "lambo_derive",
                    agent_id=AGENT,
                    concepts=[{"content": content, "concept_type": "entity"}],
                )
                assert (await _settled(client, ack["receipt"]))["state"] == "applied"
            contract = (await _call(client, "lambo_stats", agent_id=AGENT))["embedding_contract"]
            result = await client.call_tool(
                "lambo_derive_image",
                {
                    "agent_id": AGENT,
                    "caption": SAREE,
                    "concept_type": "resource",
                    "image_id": "r17",
                    "vector": {"values": sent, "contract": contract},
                },
            )
            assert not result.is_error, result.content
            ack = structured(result)
            assert ack["receipt_state"] == "pending"  # acked before it applies
            assert ack["agent_id"] == AGENT
            assert f'Recorded under agent_id "{AGENT}"' in text_of(result)
            body = await _settled(client, ack["receipt"])
            assert body["state"] == "applied", body
            near = [v * 0.9 + (0.002 if i % 5 == 0 else 0.0) for i, v in enumerate(sent)]
            recalled = await _call(
                client,
                "lambo_recall",
                agent_id=AGENT,
                query_vector={"values": near, "contract": contract},
            )
            assert recalled["hits"][0]["content"] == f"{SAREE} [image:r17]"
            assert recalled["hits"][0]["node_id"] == body["created"][0]

            png_data, jpeg = b64(png(3, 2)), JPEG_5X3
            refusals: list[tuple[dict[str, Any], str]] = [
                ({"image": {"mime": "image/jpeg", "data": png_data}}, "declared image/jpeg"),
                ({"image": {"mime": "image/png", "data": jpeg}}, "declared image/png"),
                ({"image": {"mime": "image/png", "data": png_data}}, "configuration error"),
                (
                    {
                        "vector": {
                            "values": [UNUSUAL] * contract["dim"],
                            "contract": {**contract, "model": "clip-vit-b-32"},
                        }
                    },
                    "model differs",
                ),
            ]
            for extra, said in refusals:
                refused = await client.call_tool(
                    "lambo_derive_image",
                    {"agent_id": AGENT, "caption": KURTA, "concept_type": "entity", **extra},
                )
                assert refused.is_error is True
                text = text_of(refused)
                assert said in text
                assert str(UNUSUAL) not in text
                assert png_data[:16] not in text
                assert jpeg[:16] not in text

    anyio.run(main)
    lines = [json.loads(line) for line in ledger.read_text().splitlines() if line]
    images = [line for line in lines if line.get("tool") == "lambo_derive_image"]
    assert [line["ok"] for line in images] == [True, False, False, False, False]
    for written in (ledger.read_text(), log.read_text()):
        assert str(UNUSUAL) not in written
        assert repr(next(v for v in sent if v)) not in written
        assert b64(png(3, 2))[:16] not in written
        assert JPEG_5X3[:16] not in written


def test_m_img_001_002_every_session_of_an_http_serve_lists_it_alike(tmp_path: Path) -> None:
    """Over Streamable HTTP, the serve's own session and another one at `/mcp/s/<session>`
    list the same tools: lambo_derive_image with client vectors on (a setting of the whole
    process), and an image concept derived through one session is that session's."""
    token = secrets.token_hex(16)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "lcg.toml").write_text(
        f'[embedder]\naccept_client_vectors = true\n\n[[serve.credential]]\nname = "all"\n'
        f'token = "{token}"\nscopes = ["memory"]\n',
        encoding="utf-8",
    )
    served = HttpServe(
        workspace, "serve", "--session", "alpha", "--transport", "http", command="lambo", env={}
    )
    try:

        async def main() -> tuple[set[str], set[str]]:
            async with http_client(served.url, token) as alpha:
                own = await tool_names(alpha)
            async with http_client(f"{served.base}/mcp/s/beta", token) as beta:
                other = await tool_names(beta)
                contract = (await _call(beta, "lambo_stats", agent_id=AGENT))["embedding_contract"]
                values = [float(v) for v in HashingEmbedder().embed([KURTA])[0]]
                ack = await _call(
                    beta,
                    "lambo_derive_image",
                    agent_id=AGENT,
                    caption=SAREE,
                    concept_type="entity",
                    vector={"values": values, "contract": contract},
                )
                assert (await _settled(beta, ack["receipt"]))["state"] == "applied"
            return own, other

        own, other = anyio.run(main)
    finally:
        assert served.stop() == 0, served.log
    assert own == other == {*LAMBO_TOOLS, "lambo_derive_image"}


def test_m_img_001_002_an_attached_serve_lists_it_exactly_when_its_holder_can_serve_it(
    tmp_path: Path,
) -> None:
    """`lcg serve --mcp-stdio --connect` reads no settings of its own: the holder's health
    says whether it accepts client vectors, and the attached serve lists what it says."""

    async def listed(socket: Path) -> set[str]:
        async with mcp_client(
            "serve", "--mcp-stdio", "--scope", "memory", "--connect", str(socket)
        ) as client:
            return await tool_names(client)

    seen = {}
    for on in (False, True):
        env = {"LCG_EMBEDDER": "hashing"}
        if on:
            env["LCG_EMBEDDER_ACCEPT_CLIENT_VECTORS"] = "true"
        holder = ServiceProcess(tmp_path / f"holder-{on}", env=env)
        try:
            assert holder.wait_ready()["healthy"] is True, holder.log
            seen[on] = anyio.run(listed, holder.socket_path)
        finally:
            assert holder.stop() == 0
    assert seen[False] == LAMBO_TOOLS
    assert seen[True] == {*LAMBO_TOOLS, "lambo_derive_image"}
