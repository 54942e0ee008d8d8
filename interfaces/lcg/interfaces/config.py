"""Configuration, read once at the edge from flags and the environment and passed down."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from lcg.domain.errors import InvalidParams
from lcg.projections.wal.store import Durability

STATE_DIR = ".lcg"
WAL_FILE = "wal.sqlite"
GRAPH_FILE = "graph.sqlite"
LEASE_FILE = "writer.lock"


@dataclass(frozen=True, slots=True)
class Settings:
    """Where the workspace lives and how hard it flushes."""

    workspace: Path
    durability: Durability = "normal"

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

    @classmethod
    def load(cls, env: Mapping[str, str], cwd: Path, workspace: Path | None = None) -> Settings:
        """`workspace` (the --workspace flag) wins over LCG_WORKSPACE, which wins over cwd."""
        chosen = workspace or (Path(env["LCG_WORKSPACE"]) if env.get("LCG_WORKSPACE") else cwd)
        raw = env.get("LCG_DURABILITY", "normal").strip().lower() or "normal"
        if raw not in ("normal", "full"):
            raise InvalidParams("LCG_DURABILITY", "must be 'normal' or 'full'", f"got {raw!r}")
        durability: Durability = "full" if raw == "full" else "normal"
        return cls(workspace=chosen.resolve(), durability=durability)
