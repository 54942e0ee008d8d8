"""The HTTP transport's rules that need no server (ADR 0064): settings, credentials, the bind
rule, the bearer check, the query-string refusal, the token buckets, Host/Origin names."""

from __future__ import annotations

import secrets
import socket
from pathlib import Path

import pytest

from lcg.domain.errors import InvalidParams
from lcg.interfaces.config import Settings
from lcg.interfaces.http_auth import (
    ENV_CREDENTIAL,
    RateLimiter,
    TokenBucket,
    bearer_credential,
    credentials_of,
    held_by,
    is_loopback,
    refuse_open_bind,
    request_costs,
    token_in_query,
)
from lcg.interfaces.operations import Scope
from lcg.interfaces.settings_file import CredentialEntry

TOKEN = secrets.token_hex(16)


def _settings(tmp_path: Path, text: str) -> Settings:
    (tmp_path / "lcg.toml").write_text(text, encoding="utf-8")
    return Settings.load({}, tmp_path)


def test_m_trn_011_m_trn_012_m_cfg_003_m_cfg_004_http_defaults_to_loopback_port_7700(
    tmp_path: Path,
) -> None:
    tuning = Settings.load({}, tmp_path).tuning
    assert tuning.get_int("serve", "port") == 7700
    assert tuning.text("serve", "bind") == "127.0.0.1"
    assert tuning.credentials == ()


def test_m_cfg_034_the_limits_are_settings(tmp_path: Path) -> None:
    tuning = _settings(
        tmp_path, "[serve]\nmax_sessions = 3\nper_session_rps = 2.5\nburst = 9\n"
    ).tuning
    assert tuning.get_int("serve", "max_sessions") == 3
    assert tuning.get_float("serve", "per_session_rps") == 2.5
    assert tuning.get_int("serve", "burst") == 9
    with pytest.raises(InvalidParams, match=r"\[serve\] max_sessions"):
        _settings(tmp_path, "[serve]\nmax_sessions = 0\n")


def test_m_cfg_034_every_serve_limit_is_a_setting_and_an_unknown_serve_key_is_refused(
    tmp_path: Path,
) -> None:
    """Issue 27 item 4: bind, port, the rates, the session ceiling, the body and head
    deadlines and the connection ceiling are `[serve]` keys; a misspelt one is refused naming
    it and the closest known key, as any unknown key."""
    text = (
        '[serve]\nbind = "127.0.0.2"\nport = 7701\nbody_timeout_secs = 5.5\n'
        "header_timeout_secs = 2.5\nmax_connections = 64\n"
    )
    tuning = _settings(tmp_path, text).tuning
    assert tuning.text("serve", "bind") == "127.0.0.2"
    assert tuning.get_int("serve", "port") == 7701
    assert tuning.get_float("serve", "body_timeout_secs") == 5.5
    assert tuning.get_float("serve", "header_timeout_secs") == 2.5
    assert tuning.get_int("serve", "max_connections") == 64
    with pytest.raises(InvalidParams, match=r"\[serve\] header_timeout.*unknown key") as error:
        _settings(tmp_path, "[serve]\nheader_timeout = 3\n")
    assert "header_timeout_secs" in str(error.value)


def test_m_trn_018_m_cfg_020_a_credential_entry_is_read_and_checked(tmp_path: Path) -> None:
    entry = f'[[serve.credential]]\nname = "ci"\ntoken = "{TOKEN}"\nscopes = ["read", "memory"]\n'
    (credential,) = _settings(tmp_path, entry).tuning.credentials
    assert credential == CredentialEntry("ci", TOKEN, "", ("read", "memory"))
    assert TOKEN not in repr(credential)
    refusals = {
        "unknown key": entry + 'agents = ["demo"]\n',
        "exactly one of token and token_file": entry.replace("scopes", 'token_file = "t"\nscopes'),
        "must be a non-empty list among read, write, admin, cypher, memory": entry.replace(
            '"memory"]', '"everything"]'
        ),
        "must be unique": entry + entry,
        "array of tables": f'[serve.credential]\nname = "ci"\ntoken = "{TOKEN}"\n',
    }
    for rule, text in refusals.items():
        with pytest.raises(InvalidParams) as error:
            _settings(tmp_path, text)
        assert rule in error.value.message
        assert TOKEN not in error.value.message


def test_m_trn_016_m_trn_017_the_flag_then_lcg_then_lambo_token(tmp_path: Path) -> None:
    other = secrets.token_hex(16)
    env = {"LCG_AUTH_TOKEN": other, "LAMBO_AUTH_TOKEN": secrets.token_hex(16)}
    (flag,) = credentials_of((), TOKEN, env, tmp_path)
    assert (flag.name, flag.token, flag.scopes) == (ENV_CREDENTIAL, TOKEN, None)
    assert credentials_of((), None, env, tmp_path)[0].token == other
    lambo = {"LCG_AUTH_TOKEN": " ", "LAMBO_AUTH_TOKEN": TOKEN}
    assert credentials_of((), None, lambo, tmp_path)[0].token == TOKEN
    assert credentials_of((), None, {}, tmp_path) == ()


def test_a_token_file_is_read_under_the_workspace_and_short_tokens_are_refused(
    tmp_path: Path,
) -> None:
    (tmp_path / "t.token").write_text(f"{TOKEN}\n", encoding="utf-8")
    entry = CredentialEntry("file", token_file="t.token", scopes=("read",))  # noqa: S106
    (credential,) = credentials_of((entry,), None, {}, tmp_path)
    assert credential.token == TOKEN
    assert credential.scopes == frozenset({Scope.READ})
    with pytest.raises(InvalidParams, match="at least 16"):
        credentials_of((), "short", {}, tmp_path)
    with pytest.raises(InvalidParams, match="names the --auth-token credential"):
        credentials_of((CredentialEntry("token", "c" * 16, "", ("read",)),), TOKEN, {}, tmp_path)
    with pytest.raises(InvalidParams, match="must differ"):
        credentials_of((CredentialEntry("same", TOKEN, "", ("read",)),), TOKEN, {}, tmp_path)


def test_m_trn_014_m_trn_015_only_loopback_may_go_without_a_credential() -> None:
    for bind in ("127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"):
        assert is_loopback(bind)
        refuse_open_bind(bind, ())
    for bind in ("0.0.0.0", "::", "192.168.1.4", "example.org"):  # noqa: S104
        assert not is_loopback(bind)
        with pytest.raises(InvalidParams, match="needs a credential"):
            refuse_open_bind(bind, ())
    refuse_open_bind("0.0.0.0", credentials_of((), TOKEN, {}, Path()))  # noqa: S104


def test_m_trn_019_the_bearer_token_matches_exactly() -> None:
    credentials = credentials_of(
        (CredentialEntry("b", "b" * 16, "", ("read",)),), TOKEN, {}, Path()
    )
    assert bearer_credential(f"Bearer {TOKEN}", credentials) == credentials[0]
    assert bearer_credential(f"bearer {'b' * 16}", credentials) == credentials[1]
    for header in (
        None,
        "",
        "Bearer",
        f"Basic {TOKEN}",
        f"Bearer {TOKEN}x",
        f"Bearer {TOKEN[:-1]}",
    ):
        assert bearer_credential(header, credentials) is None
    assert token_in_query(b"access_token=abc")
    assert token_in_query(b"x=1&Token=abc")
    assert not token_in_query(b"")
    assert not token_in_query(b"page=2")


def test_m_trn_020_writes_are_counted_apart_from_reads() -> None:
    derive = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"lambo_derive"}}'
    recall = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"lambo_recall"}}'
    assert request_costs(derive) == (0, 1)
    assert request_costs(recall) == (1, 0)
    assert request_costs(b"[" + derive + b"," + recall + b"]") == (1, 1)
    assert request_costs(b"not json") == (1, 0)
    limiter = RateLimiter(rate=0.001, burst=2)
    assert limiter.retry_after("a", 0, 1) == 0
    assert limiter.retry_after("a", 0, 1) == 0
    assert limiter.retry_after("a", 0, 1) >= 1  # the write bucket is dry
    assert limiter.retry_after("a", 1, 0) == 0  # reads have their own
    assert limiter.retry_after("b", 0, 1) == 0  # and so does every credential


def test_a_token_bucket_refills_at_its_rate() -> None:
    bucket = TokenBucket(rate=1_000_000.0, burst=1)
    assert bucket.take(1) == 0.0
    assert bucket.take(5) > 0.0  # more than the burst never fits


def test_m_trn_039_the_holder_is_named_by_pid_and_command_without_paths() -> None:
    holder = "pid 42 on box, `lcg serve (socket /home/u/w/.lcg/service.sock)`, since 2026"
    assert held_by(holder) == "pid 42, `lcg serve`"
    assert held_by("pid 7 on box, `lcg serve --http`, since x") == "pid 7, `lcg serve --http`"
    assert held_by(None) == "another process"


def test_host_and_origin_name_the_bind_address_and_localhost_with_the_port() -> None:
    from lcg.interfaces.http_server import security_settings

    local = security_settings("127.0.0.1", 7700)
    assert local.enable_dns_rebinding_protection
    assert {"127.0.0.1:7700", "localhost:7700", "[::1]:7700"} <= set(local.allowed_hosts)
    assert "http://localhost:7700" in local.allowed_origins
    assert "evil.example:7700" not in local.allowed_hosts
    lan = security_settings("192.168.1.4", 8000)
    assert "192.168.1.4:8000" in lan.allowed_hosts
    assert not security_settings("0.0.0.0", 7700).enable_dns_rebinding_protection  # noqa: S104


def test_the_listening_socket_names_tcp_so_asyncio_sets_nodelay() -> None:
    """asyncio sets TCP_NODELAY on accepted sockets only when the listener's proto is TCP;
    without it every two-part response waited out the client's delayed ACK."""
    from lcg.interfaces.http_server import listen

    sock = listen("127.0.0.1", 0)
    try:
        assert sock.proto == socket.IPPROTO_TCP
        assert sock.getsockname()[1] != 0
    finally:
        sock.close()


def test_m_trn_023_a_credential_names_the_sessions_it_may_address(tmp_path: Path) -> None:
    """`sessions` (ADR 0071): absent, every session; a list, those only; each name by the
    session-name rule, refused naming the entry and the rule."""
    head = f'[[serve.credential]]\nname = "ci"\ntoken = "{TOKEN}"\nscopes = ["memory"]\n'
    (entry,) = _settings(tmp_path, head + 'sessions = ["beta", "beta", "g:1"]\n').tuning.credentials
    assert entry.sessions == ("beta", "g:1")
    (credential,) = credentials_of([entry], None, {}, tmp_path)
    assert credential.may_address("beta")
    assert not credential.may_address("alpha")
    (everyone,) = credentials_of(
        [CredentialEntry("all", TOKEN, "", ("memory",))], None, {}, tmp_path
    )
    assert everyone.may_address("alpha")
    for bad in ("[]", '["no spaces"]', '"beta"', "[1]"):
        with pytest.raises(InvalidParams, match=r"#1 sessions: must be a non-empty list"):
            _settings(tmp_path, head + f"sessions = {bad}\n")
