"""Which log a workspace runs on: its `.lcg/wal.sqlite`, or a PostgreSQL database.

docs/adr/0073-the-workspace-on-a-log-store.md. `WorkspaceFiles.store_url` (the settings'
`[store] url`, LCG_STORE_URL) chooses; everything that opens a workspace's log asks here, so
the rest of lcg sees only the `LogStore` port. The PostgreSQL module (psycopg and its pool)
is imported only when a URL names it: `lcg --version` and the embedded default never load it.
"""

from __future__ import annotations

from lcg.domain.events import EventCodec
from lcg.projections.layout import WorkspaceFiles
from lcg.projections.wal.port import LogStore
from lcg.projections.wal.store import EventLog


def open_log(files: WorkspaceFiles, *, codec: EventCodec | None = None) -> LogStore:
    """The workspace's log, opened (created when it does not exist yet)."""
    codec = codec or EventCodec()
    if files.store_url:
        return open_url(files.store_url, codec)
    return EventLog(files.wal_path, codec, files.durability)


def open_url(url: str, codec: EventCodec | None = None) -> LogStore:
    """The PostgreSQL log a postgresql:// URL names (its tables made on first use)."""
    from lcg.projections.wal.postgres import PostgresLog  # noqa: PLC0415 (ADR 0053)

    return PostgresLog(url, codec or EventCodec())


def holds_anything(log_: LogStore) -> bool:
    """Whether an open log holds any event."""
    return any(log_.heads().values())
