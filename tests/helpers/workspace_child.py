"""A child process for tests/e2e/test_process_durability.py: writes to or holds a workspace.

Run by path with the test's interpreter: `python tests/helpers/workspace_child.py MODE ...`.
Every acknowledged write is printed as one `<kind> <uuid>` line and flushed at once, so the
parent knows exactly which writes it may rely on. Durability comes from LCG_DURABILITY via
`Settings.load`, like the CLI.

Modes:
  append   open the workspace once, print `opened durability=<normal|full>`, then write
           --count times (entities and episodes alternate, each in its own group)
  hold     open the workspace, print `ready <pid>`, keep it until a line (or EOF) on stdin
  contend  print `ready`, wait for a line on stdin, then write --count times, opening the
           workspace for each write and retrying at once while another process holds it
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

from lcg.interfaces import operations
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.workspace import Workspace
from lcg.projections.embedding.choice import chosen_embedder
from lcg.projections.wal.lease import WorkspaceBusy
from lcg.projections.wal.store import EventLog

ENTITY_GROUP = "entities"
EPISODE_GROUP = "episodes"


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _write(app: App, tag: str, index: int, *, one_group: str | None) -> tuple[str, str]:
    """Write number `index`: an entity when it is even, an episode when odd."""
    if index % 2 == 0:
        params: dict[str, Any] = {
            "name": f"{tag}-entity-{index}",
            "summary": f"written by {tag} as write {index}",
            "group_id": one_group or ENTITY_GROUP,
        }
        result = operations.dispatch(app, "knowledge_assert_entity", params)
        if not result["created"]:
            raise SystemExit(f"write {index} revised an entity instead of creating one")
        return "entity", str(result["entity_uuid"])
    params = {
        "name": f"{tag}-episode-{index}",
        "episode_body": f"episode {index} written by {tag}",
        "group_id": one_group or EPISODE_GROUP,
    }
    result = operations.dispatch(app, "knowledge_add_episode", params)
    return "episode", str(result["episode_uuid"])


def _append(settings: Settings, tag: str, count: int) -> None:
    with Workspace(settings, command=f"workspace_child append {tag}") as ws:
        log = ws.log
        assert isinstance(log, EventLog)  # the file's journal setting
        _say(f"opened durability={log.durability}")
        app = App(ws)
        for index in range(count):
            kind, uuid = _write(app, tag, index, one_group=None)
            _say(f"{kind} {uuid}")
    _say("done")


def _hold(settings: Settings) -> None:
    with Workspace(settings, command="workspace_child hold"):
        _say(f"ready {os.getpid()}")
        sys.stdin.readline()
    _say("released")


def _contend(settings: Settings, tag: str, count: int, group: str, patience: float) -> None:
    _say("ready")
    sys.stdin.readline()
    deadline = time.monotonic() + patience
    busy = 0
    model = chosen_embedder(settings.embedder)  # one per process, reused by every open
    for index in range(count):
        while True:
            try:
                with Workspace(
                    settings, command=f"workspace_child contend {tag}", embedder=model
                ) as ws:
                    kind, uuid = _write(App(ws), tag, index, one_group=group)
                break
            except WorkspaceBusy:
                busy += 1
                if time.monotonic() > deadline:
                    raise SystemExit(f"{tag}: workspace still busy after {patience}s") from None
        _say(f"{kind} {uuid}")
    _say(f"done busy={busy}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("mode", choices=("append", "hold", "contend"))
    parser.add_argument("--workspace", type=Path, required=True)
    parser.add_argument("--tag", default="child")
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--group", default="shared")
    parser.add_argument("--patience", type=float, default=120.0)
    args = parser.parse_args(argv)
    settings = Settings.load(os.environ, Path.cwd(), args.workspace)
    if args.mode == "append":
        _append(settings, args.tag, args.count)
    elif args.mode == "hold":
        _hold(settings)
    else:
        _contend(settings, args.tag, args.count, args.group, args.patience)


if __name__ == "__main__":
    main()
