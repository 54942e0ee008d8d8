"""lambo_derive_image by client vectors on a real workspace (issue 33, ADR 0095), through the
one dispatch the MCP tools use: every argument rule refuses before the ack and writes nothing
(the session's WAL head unchanged), never repeating the payload; an applied image concept
carries the client's vector, which a recall by query_vector finds ahead of unrelated
concepts, which no similarity merge touches, and which a replay and a rebuilt vector index
take from the log instead of embedding the caption. Over a real pipe:
tests/e2e/test_derive_image_stdio.py."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lcg.domain.errors import DomainError
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.service import Service
from lcg.interfaces.settings_file import Tuning
from lcg.interfaces.workspace import Workspace
from lcg.projections.embedding.hashing import HashingEmbedder
from lcg.projections.embedding.port import Embedder
from lcg.projections.memory import state
from tests.conftest import make_workspace
from tests.helpers.images import JPEG_5X3, b64, png
from tests.integration.test_memory_layers import QUIET, tool
from tests.integration.test_memory_layers import applied as layer_applied
from tests.integration.test_memory_writes import (
    AGENT,
    SESSION,
    call,
    concept,
    derive,
    head,
    settled,
)

SAREE = "red silk saree, gold border"
KURTA = "blue cotton kurta for the monsoon"
INVOICE = "the invoice totals are rounded to cents"
UNUSUAL = 0.734  # a value sent in a vector: never shown back


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """Client vectors accepted, as `[embedder] accept_client_vectors = true` sets them."""
    values = {**Tuning().values, "[embedder] accept_client_vectors": True}
    return dataclasses.replace(Settings(workspace=tmp_path), tuning=Tuning(values=values))


def contract(app: App) -> dict[str, Any]:
    stats = call(app, "lambo_stats", agent_id=AGENT)["structuredContent"]
    found: dict[str, Any] = stats["embedding_contract"]
    return found


def vector_of(workspace: Workspace, text: str, scale: float = 2.5) -> list[float]:
    """What a client computes under the session's contract: here the text's embedding (the
    hashing embedder's), scaled off unit length."""
    return [float(v) * scale for v in workspace.embedder.embed([text])[0]]


def image(app: App, caption: str, values: list[float], **params: Any) -> dict[str, Any]:
    """lambo_derive_image's ack."""
    vector = {"values": values, "contract": contract(app)}
    return call(
        app,
        "lambo_derive_image",
        agent_id=AGENT,
        caption=caption,
        concept_type=params.pop("concept_type", "resource"),
        vector=vector,
        **params,
    )


def applied(app: App, ack: dict[str, Any]) -> dict[str, Any]:
    return settled(app, ack["structuredContent"]["receipt"])


def recall_by(app: App, values: list[float], **params: Any) -> list[dict[str, Any]]:
    vector = {"values": values, "contract": contract(app)}
    result = call(app, "lambo_recall", agent_id=AGENT, query_vector=vector, **params)
    hits: list[dict[str, Any]] = result["structuredContent"]["hits"]
    return hits


def refused(app: App, workspace: Workspace, **params: Any) -> DomainError:
    """The call is refused before the ack, writing nothing."""
    before = head(workspace)
    arguments = {"agent_id": AGENT, "caption": SAREE, "concept_type": "resource", **params}
    with pytest.raises(DomainError) as error:
        call(app, "lambo_derive_image", **arguments)
    assert head(workspace) == before
    return error.value


def test_m_img_050_053_061_ack_before_apply_then_the_concept_with_its_suffix(
    app: App, workspace: Workspace
) -> None:
    ack = image(app, SAREE, vector_of(workspace, KURTA), image_id="r17")
    text, content = ack["text"], ack["structuredContent"]
    assert content["receipt_state"] == "pending"
    assert content["agent_id"] == AGENT
    assert f'Recorded under agent_id "{AGENT}"' in text
    assert "[image:r17]" in content["summary"]
    body = applied(app, ack)
    assert body["state"] == "applied"
    assert body["detail"].startswith("derived 1 image concept: 1 created")
    (node,) = state.concepts_with_content(workspace.reader(), SESSION, f"{SAREE} [image:r17]")
    assert node.concept_type == "resource"
    assert body["created"] == [node.uuid]


def test_m_img_045_050_recall_by_a_near_identical_vector_finds_the_image_first(
    app: App, workspace: Workspace
) -> None:
    for content in (KURTA, INVOICE):
        settled(app, derive(app, concept(content, "entity")))
    sent = vector_of(workspace, "a photo of a red saree with a woven gold border")
    applied(app, image(app, SAREE, sent, image_id="r17"))
    near = [v * 1.01 + (0.001 if i % 7 == 0 else 0.0) for i, v in enumerate(sent)]
    hits = recall_by(app, near)
    assert hits[0]["content"] == f"{SAREE} [image:r17]"
    assert hits[0]["score"] > 0.99  # stored at unit length: the cosine of the two
    assert {h["content"] for h in hits[1:]} <= {KURTA, INVOICE}


def test_m_img_050_m_rec_273_the_caption_is_found_by_words_through_the_keyword_leg(
    app: App, workspace: Workspace
) -> None:
    applied(app, image(app, SAREE, vector_of(workspace, INVOICE), image_id="r17"))
    settled(app, derive(app, concept(KURTA, "entity")))
    result = call(app, "lambo_recall", agent_id=AGENT, query="silk saree")
    hits = {hit["content"]: hit for hit in result["structuredContent"]["hits"]}
    assert hits[f"{SAREE} [image:r17]"]["ranks"]["bm25"] == 1  # the caption's words


def test_m_img_055_056_020_identity_by_caption_and_id(app: App, workspace: Workspace) -> None:
    sent = vector_of(workspace, KURTA)
    first = applied(app, image(app, SAREE, sent, image_id="r17"))
    again = applied(app, image(app, SAREE, vector_of(workspace, INVOICE), image_id="r17"))
    assert again["matched"] == first["created"]
    assert again["created"] == []
    other = applied(app, image(app, SAREE, sent, image_id="r18"))
    assert other["created"] != first["created"]
    by_digest = applied(app, image(app, SAREE, sent))
    same_digest = applied(app, image(app, SAREE, [v * 3 for v in sent]))  # same unit vector
    assert same_digest["matched"] == by_digest["created"]
    node = state.node(workspace.reader(), SESSION, by_digest["created"][0])
    assert node is not None
    suffix = node.content.rsplit(" [image:", 1)[1].rstrip("]")
    assert len(suffix) == 16
    assert all(c in "0123456789abcdef" for c in suffix)


def test_m_img_057_no_similarity_merge_into_or_from_an_image_concept(
    app: App, workspace: Workspace
) -> None:
    """The image's vector is exactly the framed embedding a text concept gets (cosine 1, over
    any merge threshold; ids without digits, which the identifier guard would tell apart),
    yet the text is not merged into the image, nor the image into it."""
    text = "a kurta photo from the monsoon shoot"
    sent = [float(v) for v in workspace.embedder.embed([f"{text} — {text}"])[0]]
    first = applied(app, image(app, "kurta", sent, image_id="ka"))
    assert first["created"]
    derived = settled(app, derive(app, concept(text, "resource")))
    assert derived["matched"] == []
    assert derived["created"] != first["created"]
    second = applied(app, image(app, "kurta", sent, image_id="kb"))
    assert second["matched"] == []
    assert second["created"] not in (first["created"], derived["created"])


def test_m_img_060_m_err_025_an_image_id_a_text_concept_holds_is_taken_on_the_receipt(
    app: App, workspace: Workspace
) -> None:
    pair = {"parent": "outfits", "child": f"{SAREE} [image:r17]"}
    settled(app, derive(app, concept("outfits for Onam", "entity"), parent_of=[pair]))
    ack = image(app, SAREE, vector_of(workspace, KURTA), image_id="r17")
    assert ack["structuredContent"]["receipt_state"] == "pending"  # accepted: decided on apply
    body = applied(app, ack)
    assert body["state"] == "failed"
    assert "image id taken" in body["detail"]
    assert "r17" in body["detail"]
    assert "choose another image id" in body["detail"]
    assert str(UNUSUAL) not in body["detail"]


def test_m_img_070_071_a_text_write_links_to_the_image_by_its_content(
    app: App, workspace: Workspace
) -> None:
    """Also M-ACT-015: a lambo_record_action entry names the image concept by its content,
    `caption [image:<image_id>]`, and creates no second concept."""
    created = applied(app, image(app, SAREE, vector_of(workspace, KURTA), image_id="r17"))
    (uuid,) = created["created"]
    pair = {"parent": "outfits", "child": f"{SAREE} [image:r17]"}
    settled(app, derive(app, concept("outfits for Onam", "entity"), parent_of=[pair]))
    action = call(
        app,
        "lambo_record_action",
        agent_id=AGENT,
        action="dismissed for Onam",
        modifies=[f"{SAREE} [image:r17]"],
    )
    settled(app, action["structuredContent"]["receipt"])
    conn = workspace.reader()
    kinds = {
        str(row[0]) for row in conn.execute("SELECT kind FROM memory_edges WHERE target=?", (uuid,))
    }
    assert {"derives", "parent_of", "modifies"} <= kinds
    assert len(state.concepts_with_content(conn, SESSION, f"{SAREE} [image:r17]")) == 1


def test_m_img_031_parent_of_names_the_image_and_frames_only_its_ends(
    app: App, workspace: Workspace
) -> None:
    pair = {"parent": "festive outfits", "child": f"{SAREE} [image:r17]"}
    body = applied(
        app, image(app, SAREE, vector_of(workspace, KURTA), image_id="r17", parent_of=[pair])
    )
    assert body["state"] == "applied"
    conn = workspace.reader()
    (image_node,) = state.concepts_with_content(conn, SESSION, f"{SAREE} [image:r17]")
    (parent,) = state.concepts_with_content(conn, SESSION, "festive outfits")
    assert state.edge_uuid(conn, SESSION, "parent_of", parent.uuid, image_node.uuid)


def test_m_img_051_replay_and_a_rebuilt_index_use_the_stored_vector(
    settings: Settings, embedder: Embedder
) -> None:
    """The vector is in the log: a workspace reopened with nothing but its WAL (projections,
    embedding cache and vector indexes deleted, so everything is replayed) finds the image by
    that vector at cosine 1, which embedding the caption (about a saree; the vector is an
    invoice's) could not give."""
    with make_workspace(settings, embedder) as ws:
        app = App(ws)
        sent = vector_of(ws, INVOICE)
        applied(app, image(app, SAREE, sent, image_id="r17"))
        settled(app, derive(app, concept(KURTA, "entity")))
    lcg = settings.workspace / ".lcg"
    for path in lcg.iterdir():
        if path.name.startswith("wal.sqlite") or path.name == "writer.lock":
            continue
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()
    with make_workspace(settings, embedder) as ws:
        app = App(ws)
        hits = recall_by(app, sent)
        assert hits[0]["content"] == f"{SAREE} [image:r17]"
        assert hits[0]["score"] == pytest.approx(1.0, abs=1e-4)
        caption = np.asarray(ws.embedder.embed([f"{SAREE} [image:r17]"])[0])
        assert float(caption @ np.asarray(sent)) / np.linalg.norm(sent) < 0.9


def test_m_img_051_m_sta_103_an_image_intent_left_pending_applies_with_its_vector(
    settings: Settings, embedder: Embedder
) -> None:
    """An acked image write the process did not apply before it closed is applied by the next
    process from its intent, with the vector the intent carries."""
    with make_workspace(settings, embedder) as ws:
        app = App(ws)
        sent = vector_of(ws, INVOICE)
        with ws.memory.processor.paused():
            ack = image(app, SAREE, sent, image_id="r17")
            ws.memory.close()
    with make_workspace(settings, embedder) as ws:
        app = App(ws)
        body = applied(app, ack)
        assert body["state"] == "applied_after_restart"
        assert body["detail"].startswith("derived 1 image concept: 1 created")
        assert recall_by(app, sent)[0]["content"] == f"{SAREE} [image:r17]"


# -- refusals ---------------------------------------------------------------------------------


def test_m_img_012_018_019_021_argument_refusals_write_nothing(
    app: App, workspace: Workspace
) -> None:
    good = {"values": vector_of(workspace, KURTA), "contract": contract(app)}
    cases: list[tuple[dict[str, Any], str, str]] = [
        ({"caption": "saree [IMAGE:R17]", "vector": good}, "caption", "image suffix"),
        ({"caption": "   ", "vector": good}, "caption", "required"),
        ({"concept_type": "observation", "vector": good}, "concept_type", "concept type"),
        ({"image_id": "R17", "vector": good}, "image_id", "image id"),
        ({"image_id": "", "vector": good}, "image_id", "image id"),
        ({"image_id": "a" * 65, "vector": good}, "image_id", "size cap"),
        ({"image_id": "r-17", "vector": good}, "image_id", "image id"),
        ({}, "vector", "exactly one"),
    ]
    for params, field, rule in cases:
        error = refused(app, workspace, **params)
        assert (error.field, error.rule) == (field, rule), params


def test_m_img_010_059_no_other_argument_no_path_or_url(app: App, workspace: Workspace) -> None:
    good = {"values": vector_of(workspace, KURTA), "contract": contract(app)}
    for extra in ({"repo_scope": "github.com/acme/x"}, {"path": "x.png"}, {"url": "http://x"}):
        with pytest.raises(DomainError):
            call(
                app,
                "lambo_derive_image",
                agent_id=AGENT,
                caption=SAREE,
                concept_type="entity",
                vector=good,
                **extra,
            )


def test_m_img_013_014_015_016_017_m_lim_025_the_caption_limit_depends_on_the_id(
    app: App, workspace: Workspace
) -> None:
    good = {"values": vector_of(workspace, KURTA), "contract": contract(app)}
    for image_id, cap in (("r17", 16_372), ("x", 16_374), (None, 16_359)):
        extra = {} if image_id is None else {"image_id": image_id}
        error = refused(app, workspace, caption="a" * (cap + 1), vector=good, **extra)
        assert (error.field, error.rule) == ("caption", "size")
        assert f"at most {cap:,}" in error.message
        ack = call(
            app,
            "lambo_derive_image",
            agent_id=AGENT,
            caption="a" * cap,
            concept_type="entity",
            vector=good,
            **extra,
        )
        assert applied(app, ack)["state"] == "applied"


def test_m_img_040_041_042_043_044_058_vector_refusals_never_repeat_the_values(
    app: App, workspace: Workspace
) -> None:
    own = contract(app)
    dim = own["dim"]
    values = [UNUSUAL] * dim
    cases: list[tuple[dict[str, Any], str]] = [
        ({"values": values, "contract": {**own, "model": "clip-vit-b-32"}}, "contract mismatch"),
        ({"values": values, "contract": {**own, "dim": dim + 1}}, "contract mismatch"),
        ({"values": [UNUSUAL] * (dim - 1), "contract": own}, "width"),
        ({"values": [UNUSUAL] * 4097, "contract": own}, "too many values"),
        ({"values": [0.0] * dim, "contract": own}, "non-zero length"),
        ({"values": [*values[:-1], float("nan")], "contract": own}, "finite"),
        ({"values": values}, "required"),
    ]
    for vector, rule in cases:
        error = refused(app, workspace, vector=vector)
        assert error.rule == rule, vector.get("contract")
        assert str(UNUSUAL) not in error.message
    error = refused(app, workspace, vector={"values": values, "contract": {**own, "model": "m"}})
    assert "model differs" in error.message
    assert own["kind"] in error.message  # the session's contract shown


def test_m_img_006_022_023_024_025_026_m_lim_022_023_image_refusals_then_configuration(
    app: App, workspace: Workspace
) -> None:
    """Real PNG and JPEG bytes: each shape rule refuses first, naming its field; a valid image
    is a configuration error (no embedder here embeds images). None repeats the base64."""
    wide = b64(png(4097, 1))
    cases: list[tuple[dict[str, Any], str, str]] = [
        ({"mime": "image/gif", "data": b64(png(2, 2))}, "image.mime", "mime"),
        ({"mime": "image/jpeg", "data": b64(png(2, 2))}, "image.mime", "mime"),
        ({"mime": "image/png", "data": JPEG_5X3}, "image.mime", "mime"),
        (
            {"mime": "image/png", "data": "data:image/png;base64," + b64(png(2, 2))},
            "image.data",
            "base64",
        ),
        ({"mime": "image/png", "data": b64(png(2, 2))[:-2]}, "image.data", "base64"),
        ({"mime": "image/png", "data": "A" * 2_796_208}, "image.data", "size"),
        ({"mime": "image/png", "data": wide}, "image.data", "pixels"),
        ({"mime": "image/png", "data": b64(png(2, 2)), "path": "x.png"}, "image", "shape"),
        ({"mime": "image/png", "data": b64(png(3, 2))}, "image", "configuration"),
        ({"mime": "image/jpeg", "data": JPEG_5X3}, "image", "configuration"),
    ]
    for raw, field, rule in cases:
        error = refused(app, workspace, image=raw)
        assert (error.field, error.rule) == (field, rule), (field, rule)
        assert str(raw["data"])[:40] not in error.message
    error = refused(app, workspace, image={"mime": "image/jpeg", "data": JPEG_5X3})
    assert error.message.startswith("configuration error: ")
    assert "embeds text only" in error.message
    both = {"values": [1.0], "contract": contract(app)}
    error = refused(app, workspace, image={"mime": "image/jpeg", "data": JPEG_5X3}, vector=both)
    assert error.rule == "exactly one"


def test_m_img_007_029_client_vectors_off_is_a_configuration_error(
    tmp_path: Path, embedder: Embedder
) -> None:
    with make_workspace(Settings(workspace=tmp_path), embedder) as ws:
        app = App(ws)
        before = head(ws)
        with pytest.raises(DomainError) as error:
            call(
                app,
                "lambo_derive_image",
                agent_id=AGENT,
                caption=SAREE,
                concept_type="entity",
                vector={"values": [UNUSUAL], "contract": {}},
            )
        assert error.value.message.startswith("configuration error: ")
        assert "[embedder] accept_client_vectors = true" in error.value.message
        assert str(UNUSUAL) not in error.value.message
        assert head(ws) == before


def test_m_img_030_event_time_as_for_derive(app: App, workspace: Workspace) -> None:
    """Also OQ-03: lambo_derive_image takes `event_time` as its argument table says, checked
    as lambo_derive checks it."""
    good = {"values": vector_of(workspace, KURTA), "contract": contract(app)}
    error = refused(app, workspace, vector=good, event_time="yesterday")
    assert error.field == "event_time"
    ack = call(
        app,
        "lambo_derive_image",
        agent_id=AGENT,
        caption=SAREE,
        concept_type="entity",
        vector=good,
        event_time="2025-09-05T10:00:00Z",
    )
    assert applied(app, ack)["state"] == "applied"


def test_m_img_032_m_lay_scope_writes_the_image_to_a_layer(tmp_path: Path) -> None:
    """On a layered session, scope names the session the image is written to (as for
    lambo_derive): the ack says so, the layer's recall by the vector finds it, the session's
    own does not hold it."""
    tuning = QUIET.with_values(embedder__accept_client_vectors=True)
    settings = Settings(
        workspace=tmp_path, session="lambo", layers=("general",), tuning=tuning, embedder="hashing"
    )
    service = Service(settings, command="pytest")
    assert service.start() == "healthy", service.reason
    try:
        own = tool(service, "lambo_stats")["structuredContent"]["embedding_contract"]
        values = [float(v) for v in HashingEmbedder().embed([KURTA])[0]]
        vector = {"values": values, "contract": own}
        ack = tool(
            service,
            "lambo_derive_image",
            caption=SAREE,
            concept_type="resource",
            image_id="r17",
            vector=vector,
            scope="general",
        )
        assert ack["structuredContent"]["session"] == "general"
        assert "written to session 'general'" in ack["text"]
        layer_applied(service, ack)
        scoped = tool(service, "lambo_recall", query_vector=vector, scope="general")
        assert scoped["structuredContent"]["hits"][0]["content"] == f"{SAREE} [image:r17]"
        mine = tool(service, "lambo_recall", query_vector=vector)["structuredContent"]["hits"]
        assert all(hit["content"] != f"{SAREE} [image:r17]" for hit in mine)
    finally:
        service.close()


def test_m_img_072_an_actions_text_refuses_an_image_suffix(app: App, workspace: Workspace) -> None:
    """lambo_record_action's action, like lambo_derive's content, refuses a word that reads as
    [image:<id>] once folded and stemmed, writing nothing; text that only mentions one is
    fine."""
    for action in ("photographed [IMAGE:R17]", "photographed [image:abc]s"):
        before = head(workspace)
        with pytest.raises(DomainError) as error:
            call(app, "lambo_record_action", agent_id=AGENT, action=action)
        assert (error.value.field, error.value.rule) == ("action", "image suffix")
        assert head(workspace) == before
    for action in ("see [image: diagram]", "photographed [image:r17]s"):
        ack = call(app, "lambo_record_action", agent_id=AGENT, action=action)
        assert settled(app, ack["structuredContent"]["receipt"])["state"] == "applied"


def test_m_sta_055_m_img_050_stats_and_inspect_show_the_image_concept(
    app: App, workspace: Workspace
) -> None:
    """Client vectors accepted, the embedder still embeds text only; the image concept is a
    concept like any other to lambo_stats and lambo_inspect, by its content."""
    body = applied(app, image(app, SAREE, vector_of(workspace, KURTA), image_id="r17"))
    stats = call(app, "lambo_stats", agent_id=AGENT)["structuredContent"]
    assert stats["embedding_modalities"] == ["text"]
    assert stats["concept_count"] == 1
    shown = call(app, "lambo_inspect", agent_id=AGENT, focus=f"{SAREE} [image:r17]")
    assert f"{SAREE} [image:r17]" in shown["text"]
    assert body["created"][0][:8] in shown["text"]


def test_m_img_011_033_the_caption_is_not_framed_only_the_parent_of_ends_are(
    app: App, workspace: Workspace
) -> None:
    """A 16,000-byte caption is stored (lambo_derive would frame it with itself, over 8,189);
    a parent_of end framed with the caption and its suffix over 16,384 bytes is refused
    naming that end; a missing or blank caption is refused."""
    good = {"values": vector_of(workspace, KURTA), "contract": contract(app)}
    long = "a" * 16_000
    ack = call(
        app,
        "lambo_derive_image",
        agent_id=AGENT,
        caption=long,
        concept_type="entity",
        image_id="r17",
        vector=good,
    )
    assert applied(app, ack)["state"] == "applied"
    end = {"parent": "p" * 400, "child": f"{long} [image:r17]"}
    error = refused(app, workspace, caption=long, image_id="r17", vector=good, parent_of=[end])
    assert (error.field, error.rule) == ("parent_of[0].parent", "embedding-text limit")
    error = refused(app, workspace, caption="   ", vector=good)
    assert (error.field, error.rule) == ("caption", "required")
    before = head(workspace)
    with pytest.raises(DomainError) as missing:
        call(app, "lambo_derive_image", agent_id=AGENT, concept_type="entity", vector=good)
    assert missing.value.field == "caption"
    assert head(workspace) == before


def test_m_rec_010_277_283_a_recall_image_is_checked_like_derive_images_then_refused(
    app: App, workspace: Workspace
) -> None:
    """lambo_recall's image has the same shape and limits as lambo_derive_image's: a bad one
    is refused by its field and rule, a good one (real PNG, JPEG) as a configuration error;
    neither repeats the base64."""
    cases = [
        ({"mime": "image/jpeg", "data": b64(png(2, 2))}, "image.mime", "mime"),
        ({"mime": "image/png", "data": b64(png(4097, 1))}, "image.data", "pixels"),
        ({"mime": "image/png", "data": b64(png(3, 2))}, "image", "configuration"),
        ({"mime": "image/jpeg", "data": JPEG_5X3}, "image", "configuration"),
    ]
    for raw, field, rule in cases:
        with pytest.raises(DomainError) as error:
            call(app, "lambo_recall", agent_id=AGENT, image=raw)
        assert (error.value.field, error.value.rule) == (field, rule)
        assert raw["data"][:24] not in error.value.message
