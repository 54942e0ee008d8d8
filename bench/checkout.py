"""Running another checkout's lcg with this venv: the "before" of a before/after in one run.

A checkout's namespace roots on PYTHONPATH come before the venv's editable install (whose
finder runs after the PathFinder), so the checkout's code is what imports."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

LAYERS = ("domain", "commands", "queries", "projections", "interfaces", "fixtures")


def checkout_env(root: Path | None) -> dict[str, str]:
    """This environment without LCG_* settings; with `root`, its checkout's code first."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LCG_")}
    if root is not None:
        env["PYTHONPATH"] = os.pathsep.join(str(root / layer) for layer in LAYERS)
    return env


def where_lcg_is(env: dict[str, str]) -> str:
    """The file `lcg.interfaces.cli` is loaded from under `env`: proof of which code runs."""
    return subprocess.run(
        [sys.executable, "-c", "import lcg.interfaces.cli as m; print(m.__file__)"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
