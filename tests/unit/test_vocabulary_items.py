"""Fixed names and counts of seed 000 no other test names (K-CFG-012, K-INV-006/007): the
enumerations' values and the socket's method names."""

from __future__ import annotations

from pathlib import Path
from typing import get_args

from lcg.domain.cross_group import BINDING_STATES, BindingState
from lcg.domain.extraction import Endpoint
from lcg.domain.typing_rules import SCOPES
from lcg.interfaces.config import Settings
from lcg.interfaces.service import HEALTH_CHECK, Service
from tests.helpers.seed_scopes import SEED_000_TOOLS, SEED_SCOPES


def test_k_cfg_012_the_enumerations_hold_the_seeds_values() -> None:
    assert BINDING_STATES == ("bound", "unbound", "ambiguous")
    assert get_args(BindingState) == BINDING_STATES
    assert SCOPES == ("untyped", "off_ontology", "all")
    assert get_args(Endpoint) == ("source", "target", "both")


def test_k_inv_006_007_health_check_is_the_one_socket_method_without_the_prefix() -> None:
    methods = Service(Settings(Path("unused")), command="t").methods
    seed = {name for scope, names in SEED_SCOPES.items() if scope != "memory" for name in names}
    knowledge = [m for m in methods if m in seed]
    assert len(knowledge) == SEED_000_TOOLS == 43
    assert all(m.startswith("knowledge_") for m in knowledge)
    assert [m for m in methods if not m.startswith(("knowledge_", "lambo_", "lcg_"))] == [
        HEALTH_CHECK
    ]
    assert HEALTH_CHECK == "health_check"
