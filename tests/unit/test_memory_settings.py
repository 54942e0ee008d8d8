"""Memory settings read from the environment (issue 11/13): session, promotion policy, clock."""

from __future__ import annotations

from pathlib import Path

import pytest

from lcg.domain.errors import InvalidParams
from lcg.interfaces.config import Settings


def test_m_sta_040_041_the_promotion_policy_that_won_is_kept(tmp_path: Path) -> None:
    assert Settings.load({}, tmp_path).promotion_policy == "Swarm"
    assert Settings.load({"LCG_PROMOTION_POLICY": " solo "}, tmp_path).promotion_policy == "Solo"


def test_a_bad_promotion_policy_refuses_start_up_naming_the_value_and_the_choices(
    tmp_path: Path,
) -> None:
    with pytest.raises(InvalidParams) as error:
        Settings.load({"LCG_PROMOTION_POLICY": "democracy"}, tmp_path)
    assert error.value.field == "LCG_PROMOTION_POLICY"
    assert "'democracy'" in error.value.message
    assert "Swarm or Solo" in error.value.message


def test_the_session_and_the_clock_file_come_from_the_environment(tmp_path: Path) -> None:
    settings = Settings.load(
        {"LCG_SESSION": "kestrel", "LCG_CLOCK_FILE": str(tmp_path / "shift")}, tmp_path
    )
    assert settings.session == "kestrel"
    assert settings.clock_file == tmp_path / "shift"
    with pytest.raises(InvalidParams, match="LCG_SESSION"):
        Settings.load({"LCG_SESSION": "no spaces"}, tmp_path)
