"""`[store] url` / LCG_STORE_URL (ADR 0067, 0073): empty keeps the log in .lcg/wal.sqlite; a
postgresql:// URL puts it in that database; any other scheme is refused at start-up; the value
is never echoed (a URL may carry a password)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lcg.domain.errors import InvalidParams
from lcg.interfaces.config import Settings

SECRET = "pw-never-shown-815"  # noqa: S105 (a made-up one, to be looked for)
URL = f"postgresql://lcg:{SECRET}@db.example:5432/lcg"


def test_without_a_store_url_the_log_is_the_workspace_file(tmp_path: Path) -> None:
    settings = Settings.load({"LCG_STORE_URL": " "}, tmp_path)
    assert settings.wal_path == tmp_path.resolve() / ".lcg" / "wal.sqlite"
    assert settings.store_url == ""
    assert settings.files.log_where == str(settings.wal_path)


def test_a_postgresql_url_names_the_log_and_is_never_shown(tmp_path: Path) -> None:
    settings = Settings.load({"LCG_STORE_URL": f" {URL} "}, tmp_path)
    assert settings.store_url == URL
    assert settings.files.store_url == URL
    assert settings.files.log_where == "postgresql://lcg@db.example:5432/lcg"
    assert SECRET not in repr(settings) + repr(settings.files)


def test_the_settings_file_key_names_it_alike(tmp_path: Path) -> None:
    (tmp_path / "lcg.toml").write_text(f'[store]\nurl = "{URL}"\n', encoding="utf-8")
    assert Settings.load({}, tmp_path).store_url == URL


def test_another_scheme_is_refused_naming_the_rule(tmp_path: Path) -> None:
    with pytest.raises(InvalidParams) as error:
        Settings.load({"LCG_STORE_URL": f"mysql://root:{SECRET}@h/db"}, tmp_path)
    assert "must be empty or a postgresql:// URL" in str(error.value)
    assert "'mysql'" in str(error.value)
    assert SECRET not in str(error.value)


def test_an_unknown_store_key_is_refused_as_every_unknown_key(tmp_path: Path) -> None:
    (tmp_path / "lcg.toml").write_text('[store]\nhost = "db"\n', encoding="utf-8")
    with pytest.raises(InvalidParams, match="unknown key"):
        Settings.load({}, tmp_path)
