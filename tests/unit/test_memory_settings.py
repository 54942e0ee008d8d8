"""Memory settings read from the environment (issue 11/13): session, promotion policy, clock."""

from __future__ import annotations

from pathlib import Path

import pytest

from lcg.domain.errors import InvalidParams
from lcg.interfaces.config import Settings
from lcg.interfaces.settings_file import LAMBO_NAMES, describe


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
    assert "Swarm | Solo" in error.value.message


def test_the_session_and_the_clock_file_come_from_the_environment(tmp_path: Path) -> None:
    settings = Settings.load(
        {"LCG_SESSION": "kestrel", "LCG_CLOCK_FILE": str(tmp_path / "shift")}, tmp_path
    )
    assert settings.session == "kestrel"
    assert settings.clock_file == tmp_path / "shift"
    with pytest.raises(InvalidParams, match="LCG_SESSION"):
        Settings.load({"LCG_SESSION": "no spaces"}, tmp_path)


def _file(tmp_path: Path, text: str) -> Path:
    (tmp_path / "lcg.toml").write_text(text, encoding="utf-8")
    return tmp_path


def test_m_cfg_032_the_settings_file_sets_the_policy_and_the_environment_wins(
    tmp_path: Path,
) -> None:
    workspace = _file(tmp_path, 'promotion_policy = "solo"\n')
    assert Settings.load({}, workspace).promotion_policy == "Solo"
    assert Settings.load({"LCG_PROMOTION_POLICY": "Swarm"}, workspace).promotion_policy == "Swarm"
    assert Settings.load({}, workspace).tuning.source == {"promotion_policy": "file"}


def test_m_cfg_029_030_every_canonization_and_gc_knob_reaches_the_policy(tmp_path: Path) -> None:
    workspace = _file(
        tmp_path,
        "[canonization]\nmin_peer_count = 5\nedge_min_age_secs = 1.5\nbatch_size = 7\n"
        "repromotion_cooldown_secs = 10\nmax_canonical_nodes = 3\nsupersede = true\n"
        "[daemon]\ncanonization_eval_interval_secs = 2\ngc_interval = 1\n"
        "gc_max_interval_secs = 30\ngc_idle_floor = 0\ntick_interval_secs = 0.5\n"
        '[selection]\nskip_redundant = true\nsimilar_signals = true\n[fusion]\nstrategy = "rrf"\n',
    )
    settings = Settings.load({"LCG_DAEMON_GC_INTERVAL": "4"}, workspace)
    knobs, gc = settings.tuning.knobs(), settings.tuning.gc_knobs()
    assert (knobs.min_peer_count, knobs.batch_size, knobs.max_canonical_nodes) == (5, 7, 3)
    assert knobs.edge_min_age.total_seconds() == 1.5
    assert knobs.supersede
    assert knobs.eval_interval.total_seconds() == 2
    assert knobs.repromotion_cooldown.total_seconds() == 10
    assert (gc.gc_interval, gc.gc_idle_floor, gc.gc_max_interval.total_seconds()) == (4, 0, 30)
    assert gc.max_canonical_nodes == 3
    assert gc.edge_min_age.total_seconds() == 1.5
    assert settings.tuning.tick_interval.total_seconds() == 0.5
    assert settings.tuning.skip_redundant
    assert settings.tuning.similar_signals
    assert settings.search_fusion == "rrf"
    assert Settings.load({"LCG_SEARCH_FUSION": "max"}, workspace).search_fusion == "max"


def test_defaults_without_a_file_are_upstreams(tmp_path: Path) -> None:
    tuning = Settings.load({}, tmp_path).tuning
    knobs, gc = tuning.knobs(), tuning.gc_knobs()
    assert (knobs.min_peer_count, knobs.batch_size, knobs.max_canonical_nodes) == (20, 50, 1000)
    assert (knobs.edge_min_age.total_seconds(), knobs.supersede) == (60, False)
    assert (gc.gc_interval, gc.gc_idle_floor, gc.gc_max_interval.total_seconds()) == (
        10_000,
        100,
        86_400,
    )
    assert not tuning.skip_redundant
    assert not tuning.similar_signals


@pytest.mark.parametrize(
    ("text", "field", "rule"),
    [
        ("[daemon]\ngc_intervl = 3\n", "lcg.toml [daemon] gc_intervl", "unknown key"),
        ("[deamon]\ngc_interval = 3\n", "lcg.toml [deamon]", "unknown section"),
        ("colour = 1\n", "lcg.toml colour", "unknown key"),
        ("[daemon]\ngc_interval = 0\n", "lcg.toml [daemon] gc_interval", "from 1"),
        ('[daemon]\ngc_interval = "9"\n', "lcg.toml [daemon] gc_interval", "an integer"),
        ("[daemon]\ngc_interval = 2.5\n", "lcg.toml [daemon] gc_interval", "an integer"),
        ('[selection]\nskip_redundant = "yes"\n', "lcg.toml [selection] skip_redundant", "true"),
        ('promotion_policy = "mob"\n', "lcg.toml promotion_policy", "Swarm | Solo"),
        ("[daemon\n", "lcg.toml", "valid TOML"),
    ],
)
def test_m_cfg_bad_settings_refuse_start_up_naming_the_key_and_the_rule(
    tmp_path: Path, text: str, field: str, rule: str
) -> None:
    with pytest.raises(InvalidParams) as error:
        Settings.load({}, _file(tmp_path, text))
    assert error.value.field == field
    assert rule in error.value.message


def test_a_bad_environment_value_names_the_variable(tmp_path: Path) -> None:
    with pytest.raises(InvalidParams) as error:
        Settings.load({"LCG_CANONIZATION_SUPERSEDE": "perhaps"}, tmp_path)
    assert error.value.field == "LCG_CANONIZATION_SUPERSEDE"
    assert "'perhaps'" in error.value.message


def test_the_settings_page_lists_every_key_and_its_variable() -> None:
    page = (Path(__file__).parents[2] / "docs" / "settings.md").read_text(encoding="utf-8")
    for row in describe():
        assert f"`{row['key']}`" in page
        assert f"`{row['env']}`" in page


# Seed 001 names two LAMBO_* variables: LAMBO_PROMOTION_POLICY (a settings key) and
# LAMBO_AUTH_TOKEN (the HTTP transport's bearer token, after LCG_AUTH_TOKEN: ADR 0064).


def test_m_cfg_010_lambo_promotion_policy_selects_the_policy(tmp_path: Path) -> None:
    settings = Settings.load({"LAMBO_PROMOTION_POLICY": " solo "}, tmp_path)
    assert settings.promotion_policy == "Solo"
    assert settings.tuning.source == {"promotion_policy": "env"}


def test_m_cfg_010_lambo_promotion_policy_wins_over_lcg_toml(tmp_path: Path) -> None:
    workspace = _file(tmp_path, 'promotion_policy = "Swarm"\n')
    assert Settings.load({"LAMBO_PROMOTION_POLICY": "Solo"}, workspace).promotion_policy == "Solo"


def test_m_cfg_010_the_lcg_name_wins_when_both_are_set(tmp_path: Path) -> None:
    both = {"LCG_PROMOTION_POLICY": "Swarm", "LAMBO_PROMOTION_POLICY": "Solo"}
    assert Settings.load(both, tmp_path).promotion_policy == "Swarm"
    # A blank LCG_ name is unset, so the LAMBO_ name still counts.
    blank = {"LCG_PROMOTION_POLICY": " ", "LAMBO_PROMOTION_POLICY": "Solo"}
    assert Settings.load(blank, tmp_path).promotion_policy == "Solo"


def test_m_cfg_010_a_bad_lambo_value_refuses_start_up_naming_that_variable(
    tmp_path: Path,
) -> None:
    with pytest.raises(InvalidParams) as error:
        Settings.load({"LAMBO_PROMOTION_POLICY": "democracy"}, tmp_path)
    assert error.value.field == "LAMBO_PROMOTION_POLICY"
    assert "Swarm | Solo" in error.value.message


def test_every_lambo_name_of_the_seed_is_mapped_and_on_the_settings_page() -> None:
    """The seed's LAMBO_* names, each with what lcg does with it (docs/settings.md)."""
    assert set(LAMBO_NAMES) == {"LAMBO_PROMOTION_POLICY", "LAMBO_AUTH_TOKEN"}
    page = (Path(__file__).parents[2] / "docs" / "settings.md").read_text(encoding="utf-8")
    for name in LAMBO_NAMES:
        assert f"`{name}`" in page
    assert LAMBO_NAMES["LAMBO_PROMOTION_POLICY"] == "LCG_PROMOTION_POLICY"
    assert LAMBO_NAMES["LAMBO_AUTH_TOKEN"] == "LCG_AUTH_TOKEN"  # noqa: S105 (a name)


def test_issue_31_speaker_weight_reaches_the_stages_and_a_bad_one_names_the_key(
    tmp_path: Path,
) -> None:
    assert Settings.load({}, tmp_path).tuning.stages.speaker_weight == 0.0
    written = _file(tmp_path, "[retrieval]\nspeaker_weight = 0.3\n")
    assert Settings.load({}, written).tuning.stages.speaker_weight == 0.3
    from_env = Settings.load({"LCG_RETRIEVAL_SPEAKER_WEIGHT": "0.5"}, written)
    assert from_env.tuning.stages.speaker_weight == 0.5
    with pytest.raises(InvalidParams) as error:
        Settings.load({"LCG_RETRIEVAL_SPEAKER_WEIGHT": "2"}, tmp_path)
    assert error.value.field == "LCG_RETRIEVAL_SPEAKER_WEIGHT"


def test_issue_31_budget_pack_reaches_the_stages_and_a_bad_one_names_the_key(
    tmp_path: Path,
) -> None:
    assert Settings.load({}, tmp_path).tuning.stages.budget_pack is False
    written = _file(tmp_path, "[retrieval]\nbudget_pack = true\n")
    assert Settings.load({}, written).tuning.stages.budget_pack is True
    assert Settings.load({"LCG_RETRIEVAL_BUDGET_PACK": "false"}, written).tuning.stages == (
        Settings.load({}, tmp_path / "nothing").tuning.stages
    )
    with pytest.raises(InvalidParams) as error:
        Settings.load({"LCG_RETRIEVAL_BUDGET_PACK": "sometimes"}, tmp_path / "nothing")
    assert error.value.field == "LCG_RETRIEVAL_BUDGET_PACK"
