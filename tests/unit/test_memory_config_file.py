"""The settings file under the reference's name, `lambo.toml`, and its knobs (issue 30 item 3,
checklist section 18): read beside lcg.toml's keys; unknown keys refused naming the file, the
key and the closest known one."""

from __future__ import annotations

from pathlib import Path

import pytest

from lcg.domain.errors import InvalidParams
from lcg.interfaces.config import Settings


def _lambo(tmp_path: Path, text: str) -> Path:
    (tmp_path / "lambo.toml").write_text(text, encoding="utf-8")
    return tmp_path


def test_m_cfg_lambo_toml_is_the_settings_file_when_there_is_no_lcg_toml(tmp_path: Path) -> None:
    settings = Settings.load({}, _lambo(tmp_path, 'promotion_policy = "Solo"\n'))
    assert settings.promotion_policy == "Solo"
    assert settings.tuning.source == {"promotion_policy": "file"}


def test_m_cfg_lcg_toml_and_lambo_toml_together_are_refused(tmp_path: Path) -> None:
    (tmp_path / "lcg.toml").write_text("", encoding="utf-8")
    with pytest.raises(InvalidParams) as error:
        Settings.load({}, _lambo(tmp_path, ""))
    assert error.value.field == "lcg.toml and lambo.toml"


@pytest.mark.parametrize(
    ("text", "field", "closest"),
    [
        ("[selction]\nskip_redundant = true\n", "lambo.toml [selction]", "[selection]"),
        (
            "[selection]\nskip_redundnat = true\n",
            "lambo.toml [selection] skip_redundnat",
            "skip_redundant",
        ),
        ("skip_redundant = true\n", "lambo.toml skip_redundant", "[selection] skip_redundant"),
        (
            "canonization_supersed = true\n",
            "lambo.toml canonization_supersed",
            "canonization_supersede",
        ),
        ("[recall]\ntopk = 3\n", "lambo.toml [recall] topk", "top_k"),
    ],
)
def test_m_cfg_an_unknown_key_names_the_file_the_key_and_the_closest_known_one(
    tmp_path: Path, text: str, field: str, closest: str
) -> None:
    with pytest.raises(InvalidParams) as error:
        Settings.load({}, _lambo(tmp_path, text))
    assert error.value.field == field
    assert f"did you mean {closest}?" in error.value.message


def test_m_cfg_029_030_the_references_names_set_the_canonization_knobs(tmp_path: Path) -> None:
    settings = Settings.load(
        {}, _lambo(tmp_path, "canonization_edge_min_age = 30\ncanonization_supersede = true\n")
    )
    knobs = settings.tuning.knobs()
    assert knobs.edge_min_age.total_seconds() == 30
    assert knobs.supersede is True


def test_m_cfg_029_a_knob_set_under_both_names_is_refused(tmp_path: Path) -> None:
    text = "canonization_edge_min_age = 30\n[canonization]\nedge_min_age_secs = 10\n"
    with pytest.raises(InvalidParams) as error:
        Settings.load({}, _lambo(tmp_path, text))
    assert error.value.field == "lambo.toml [canonization] edge_min_age_secs"


def test_m_cfg_024_025_033_defaults(tmp_path: Path) -> None:
    tuning = Settings.load({}, tmp_path).tuning
    assert tuning.recall_defaults == (5, 500, 2)
    assert (tuning.skip_redundant, tuning.similar_signals) == (False, False)
    assert tuning.supersession_line == "auto"
    assert tuning.get("embedder", "accept_client_vectors") is False
    assert tuning.get("", "match_strategy") == "hybrid"


def test_oq_49_the_keys_and_defaults_the_seed_leaves_unnamed(tmp_path: Path) -> None:
    """The names and defaults chosen (docs/settings.md): promotion_policy and match_strategy
    are top-level, the cadence knobs are in [daemon], the recall defaults in [recall], the
    rate and session ceiling in [serve] (50 a second, a burst of twice that; 64 live sessions
    where upstream's flag has 32), suspected_supersession_line in [embedder], unset = auto."""
    tuning = Settings.load({}, tmp_path).tuning
    assert tuning.get("", "promotion_policy") == "Swarm"
    assert tuning.get("", "match_strategy") == "hybrid"
    assert tuning.get_float("daemon", "canonization_eval_interval_secs") == 60
    assert tuning.recall_defaults == (5, 500, 2)
    assert tuning.get_float("serve", "per_session_rps") == 50
    assert tuning.get_int("serve", "burst") == 100
    assert tuning.get_int("serve", "max_sessions") == 64
    assert tuning.supersession_line == "auto"
    written = tmp_path / "lambo.toml"
    written.write_text(
        'promotion_policy = "Solo"\n[daemon]\ncanonization_eval_interval_secs = 5\n'
        "[recall]\ntop_k = 7\n[serve]\nper_session_rps = 3\n"
        '[embedder]\nsuspected_supersession_line = "on"\n',
        encoding="utf-8",
    )
    tuning = Settings.load({}, tmp_path).tuning
    assert tuning.get("", "promotion_policy") == "Solo"
    assert tuning.get_float("daemon", "canonization_eval_interval_secs") == 5
    assert tuning.recall_defaults[0] == 7
    assert tuning.get_float("serve", "per_session_rps") == 3
    assert tuning.supersession_line == "on"


@pytest.mark.parametrize(
    ("text", "env", "field", "why"),
    [
        ('[embedder]\naccept_client_vectors = "yes"\n', {}, "lambo.toml [embedder]"
         " accept_client_vectors", "true or false"),
        ("", {"LCG_EMBEDDER_ACCEPT_CLIENT_VECTORS": "perhaps"},
         "LCG_EMBEDDER_ACCEPT_CLIENT_VECTORS", "'perhaps'"),
        ('match_strategy = "canonical"\n', {}, "lambo.toml match_strategy", "keyword-only"),
        ('match_strategy = "fuzzy"\n', {}, "lambo.toml match_strategy", "hybrid | canonical"),
        ("[recall]\ntop_k = 0\n", {}, "lambo.toml [recall] top_k", "from 1 to 100"),
        ('[embedder]\nsuspected_supersession_line = "maybe"\n', {},
         "lambo.toml [embedder] suspected_supersession_line", "auto | on | off"),
    ],
)  # fmt: skip
def test_m_cfg_026_027_028_033_values_this_server_refuses(
    tmp_path: Path, text: str, env: dict[str, str], field: str, why: str
) -> None:
    with pytest.raises(InvalidParams) as error:
        Settings.load(env, _lambo(tmp_path, text))
    assert error.value.field == field
    assert why in error.value.message


@pytest.mark.parametrize(
    ("text", "env"),
    [
        ("[embedder]\naccept_client_vectors = true\n", {}),
        ("", {"LCG_EMBEDDER_ACCEPT_CLIENT_VECTORS": "true"}),
    ],
)
def test_m_cfg_026_client_vectors_are_accepted_when_the_operator_enables_them(
    tmp_path: Path, text: str, env: dict[str, str]
) -> None:
    assert Settings.load(env, _lambo(tmp_path, text)).tuning.accept_client_vectors is True


def test_m_cfg_028_hybrid_and_false_are_accepted_as_written(tmp_path: Path) -> None:
    text = 'match_strategy = "hybrid"\n[embedder]\naccept_client_vectors = false\n'
    tuning = Settings.load({}, _lambo(tmp_path, text)).tuning
    assert tuning.source == {"match_strategy": "file", "[embedder] accept_client_vectors": "file"}


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("backend_flush_interval = 1\n", "lambo.toml backend_flush_interval"),
        ('backend_flush_interval = "1s"\n', "lambo.toml backend_flush_interval"),
        ("[store]\nbackend_flush_interval = 0\n", "lambo.toml [store] backend_flush_interval"),
    ],
)
def test_m_cfg_031_backend_flush_interval_is_refused_naming_what_takes_its_place(
    tmp_path: Path, text: str, field: str
) -> None:
    """The reference's write-behind flush period has no counterpart: an intent is in the log
    before its ack. The file is refused, naming the key and LCG_DURABILITY, whatever the
    value and section, rather than the knob silently ignored."""
    with pytest.raises(InvalidParams) as error:
        Settings.load({}, _lambo(tmp_path, text))
    assert error.value.field == field
    assert error.value.message == (
        f"{field}: not a setting of this server: there is no write-behind flush to time, since"
        " a write's intent is in the log before its ack (what a flush interval of 0 would be);"
        " how durable each commit is, is LCG_DURABILITY (normal: a committed write survives a"
        " killed process; full: fsync every commit); remove the key"
    )
