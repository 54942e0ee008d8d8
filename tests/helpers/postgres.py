"""The machine's PostgreSQL server for the tests marked `postgres`: each run gets its own
database (a random name, dropped at the end) and each test an empty schema in it.

The server is `LCG_TEST_POSTGRES` (a libpq URL; default the trust-auth server on 127.0.0.1).
When it cannot be reached the tests skip with the reason, or fail when `CI` is set: CI must
not pass by skipping them (issue 28).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

SERVER = os.environ.get("LCG_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")


def with_database(url: str, dbname: str) -> str:
    """The URL of another database on the same server, as a URL (the store's setting)."""
    params = conninfo_to_dict(url)
    auth = str(params.get("user", ""))
    if params.get("password"):
        auth += f":{params['password']}"
    host = params.get("host", "127.0.0.1")
    port = params.get("port", "5432")
    return f"postgresql://{auth}{'@' if auth else ''}{host}:{port}/{dbname}"


def admin() -> psycopg.Connection[tuple[object, ...]]:
    """A connection to the server's maintenance database; skips, or fails under CI, when the
    server cannot be reached."""
    try:
        return psycopg.connect(make_conninfo(SERVER), autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as error:
        reason = f"the PostgreSQL server for the tests cannot be reached: {error}"
        if os.environ.get("CI"):
            pytest.fail(reason + " (CI is set: these tests must run)")
        pytest.skip(reason)


@pytest.fixture(scope="session")
def pg_database() -> Iterator[str]:
    """A database of this run's own (per xdist worker), dropped at the end."""
    name = f"lcg_test_{uuid.uuid4().hex[:12]}"
    with admin() as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield with_database(SERVER, name)
    finally:
        with admin() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def pg_url(pg_database: str) -> str:
    """The run's database with an empty public schema: every test starts from no tables."""
    with psycopg.connect(pg_database, autocommit=True) as conn:
        conn.execute("DROP SCHEMA IF EXISTS public CASCADE")
        conn.execute("CREATE SCHEMA public")
    return pg_database
