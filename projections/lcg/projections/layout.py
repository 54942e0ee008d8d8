"""Where a workspace keeps its files: `.lcg/` and what is in it, named once.

`Settings` (the CLI's configuration) and the application services that open, recover or
restore a workspace both read the paths from here, so the services need only a
`WorkspaceFiles`, never the configuration that chose it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # fast start (ADR 0053): the paths load without the WAL store
    from lcg.projections.wal.store import Durability

STATE_DIR = ".lcg"
WAL_FILE = "wal.sqlite"
GRAPH_FILE = "graph.sqlite"
LEASE_FILE = "writer.lock"
SOCKET_FILE = "service.sock"  # K-CFG-003: the socket service listens at .lcg/service.sock
EMBEDDINGS_FILE = "embeddings.sqlite"
VECTORS_DIR = "vectors"
CYPHER_DIR = "cypher"  # the ladybug database of the Cypher projection (ADR 0039)
TEXT_SCORER_FILE = "text-scorer.npz"


@dataclass(frozen=True, slots=True)
class WorkspaceFiles:
    """A workspace directory's files, and how hard its log is flushed."""

    workspace: Path
    durability: Durability = "normal"
    # empty: the log is wal_path; else the postgresql:// URL of the log (ADR 0073), never
    # shown (it may carry a password): messages name it by `log_where`
    store_url: str = field(default="", repr=False)

    @property
    def log_where(self) -> str:
        """The log as messages name it: the WAL file, or the server without its password."""
        if not self.store_url:
            return str(self.wal_path)
        from lcg.projections.wal.postgres import describe  # noqa: PLC0415 (ADR 0053)

        return describe(self.store_url)

    @property
    def log_name(self) -> str:
        """The log in one short word for messages: the WAL's file name, or the server."""
        return self.wal_path.name if not self.store_url else self.log_where

    @property
    def state_dir(self) -> Path:
        return self.workspace / STATE_DIR

    @property
    def wal_path(self) -> Path:
        return self.state_dir / WAL_FILE

    @property
    def graph_path(self) -> Path:
        return self.state_dir / GRAPH_FILE

    @property
    def lease_path(self) -> Path:
        return self.state_dir / LEASE_FILE

    @property
    def socket_path(self) -> Path:
        return self.state_dir / SOCKET_FILE

    @property
    def embeddings_path(self) -> Path:
        return self.state_dir / EMBEDDINGS_FILE

    @property
    def vectors_dir(self) -> Path:
        return self.state_dir / VECTORS_DIR

    @property
    def cypher_dir(self) -> Path:
        return self.state_dir / CYPHER_DIR

    @property
    def text_scorer_path(self) -> Path:
        return self.state_dir / TEXT_SCORER_FILE
