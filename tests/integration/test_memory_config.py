"""The reference's lambo.toml knobs on a real workspace (issue 30 item 3, checklist section 18):
[recall] defaults reach lambo_recall, [embedder] suspected_supersession_line shows the line,
and a lambo.toml in the workspace is the settings file."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.projections.embedding.port import Embedder
from tests.conftest import make_workspace
from tests.integration.test_memory_writes import (
    AGENT,
    call,
    concept,
    derive,
    node_by_content,
    settled,
)

FACTS = [f"the staging host {n} runs the nightly import" for n in ("alpha", "beta", "gamma")]


def _recall(app: App, query: str, **extra: object) -> dict[str, object]:
    answer = call(app, "lambo_recall", agent_id=AGENT, query=query, **extra)
    content: dict[str, object] = answer["structuredContent"]
    return content


def test_m_cfg_033_recall_defaults_are_configured_values(
    tmp_path: Path, embedder: Embedder
) -> None:
    (tmp_path / "lambo.toml").write_text("[recall]\ntop_k = 1\n", encoding="utf-8")
    settings = Settings.load({}, tmp_path)
    assert settings.tuning.recall_defaults == (1, 500, 2)
    with make_workspace(settings, embedder) as ws:
        app = App(ws)
        for fact in FACTS:
            settled(app, derive(app, concept(fact)))
        assert len(_recall(app, "staging host nightly import")["hits"]) == 1  # type: ignore[arg-type]
        sent = _recall(app, "staging host nightly import", top_k=3)
        assert len(sent["hits"]) == 3  # type: ignore[arg-type]  # a sent value wins


@pytest.mark.minilm
@pytest.mark.parametrize(("value", "shown"), [("on", True), ("auto", False), ("off", False)])
def test_m_cfg_027_suspected_supersession_line(
    settings: Settings, embedder: Embedder, value: str, shown: bool
) -> None:
    """Also M-REC-211/220/221: `on` shows the line in the seed's words for any contract, `off`
    for none, and `auto` not under a contract whose precision was not measured (MiniLM)."""
    tuned = settings.tuning.with_values(embedder__suspected_supersession_line=value)
    with make_workspace(dataclasses.replace(settings, tuning=tuned), embedder) as ws:
        app = App(ws)
        older_text = "the release pins version 2.3 of the parser"
        newer_text = "the release pins version 2.4 of the parser"
        settled(app, derive(app, concept(older_text)))
        settled(app, derive(app, concept(newer_text)))
        newer = node_by_content(ws, newer_text)
        found = _recall(app, "which parser version does the release pin?")
        line = f'⚠ Possibly superseded by "{newer_text}" (id {newer.uuid[:8]}), not declared'
        assert (line in str(found["context"])) is shown
