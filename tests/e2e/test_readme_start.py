"""The README's five-minute start runs as written (issue 26 item 1): its three calls, in a
shell with the installed commands on PATH, remember, recall and inspect one concept; its
Claude Code lines name console scripts that exist, with the arguments the configs give."""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

from tests.helpers.console_script import LCG, run
from tests.helpers.service_process import clean_env

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
START = README.split("## Five-minute start", 1)[1].split("\n## ", 1)[0]


def _sh_blocks(text: str) -> list[str]:
    return re.findall(r"```sh\n(.*?)```", text, flags=re.DOTALL)


def test_the_three_calls_remember_recall_and_inspect_as_written(tmp_path: Path) -> None:
    three = START.split("### 2. Three calls", 1)[1]
    (script,) = _sh_blocks(three)
    env = clean_env(HOME=str(tmp_path), PATH=f"{LCG.parent}{os.pathsep}{os.environ['PATH']}")
    done = run(["bash", "-euc", script], env=env, cwd=tmp_path, timeout=120.0)
    assert done.returncode == 0, done.stderr
    assert f"note: created a new workspace at {tmp_path / 'notes'}" in done.stderr
    assert "receipt lwr1." in done.stdout
    assert "applied" in done.stdout
    assert '"content": "Lease TTL is 45s because it must exceed the 15s shutdown budget"' in (
        done.stdout
    )
    assert "written by me at" in done.stdout  # lambo_inspect's text
    assert (tmp_path / "notes" / ".lcg").is_dir()


def test_the_claude_code_lines_name_installed_commands_with_the_configs_arguments() -> None:
    lines = [
        shlex.split(line.split("#", 1)[0])
        for block in _sh_blocks(START.split("### 2. Three calls", 1)[0])
        for line in block.splitlines()
        if line.startswith("claude mcp add")
    ]
    assert [line[3] for line in lines] == ["lambo", "lcg"]
    for line in lines:
        command, *args = line[line.index("--") + 1 :]
        assert command.startswith("$PWD/.venv/bin/")
        assert (LCG.parent / Path(command).name).exists()
        assert args[0] == "serve"
        assert "--workspace" in args
    assert lines[0][6:] == ["serve", "--session", "myproject", "--workspace", "~/notes"]
    assert lines[1][6:] == ["serve", "--mcp-stdio", "--workspace", "~/notes"]
