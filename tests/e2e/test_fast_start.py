"""Fast start (issue 25, item 4): the commands that only describe lcg, and a call through a
running socket service, load none of the heavy libraries (the model runtime, the vector index,
numpy, spaCy, sqlite_utils) nor the HTTP stack (uvicorn, Starlette: ADR 0064)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.console_script import run
from tests.helpers.service_process import ServiceProcess, clean_env

HEAVY = ("numpy", "faiss", "onnxruntime", "spacy", "sqlite_utils", "uvicorn", "starlette")

# Runs the `lcg` command in a fresh interpreter, as the console script does, and prints the
# heavy modules loaded by the end of it. SystemExit is how typer ends every command.
AUDIT = """
import json, sys
from lcg.interfaces.cli import main
args, watched = json.loads(sys.argv[1]), set(json.loads(sys.argv[2]))
sys.argv = ["lcg", *args]
try:
    main()
except SystemExit as exit:
    code = exit.code
else:
    code = 0
heavy = sorted({name.split(".")[0] for name in sys.modules} & watched)
sys.stderr.write("AUDIT " + json.dumps({"code": code, "heavy": heavy}) + "\\n")
"""


def loaded_heavy_modules(tmp_path: Path, *args: str) -> tuple[str, list[str]]:
    """Run `lcg ARGS` in `tmp_path`; its standard output and the heavy modules it imported."""
    env = clean_env()
    result = subprocess.run(
        [sys.executable, "-c", AUDIT, json.dumps(args), json.dumps(HEAVY)],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env=env,
        cwd=tmp_path,
        timeout=60.0,
        check=False,
    )
    audit = [line for line in result.stderr.splitlines() if line.startswith("AUDIT ")]
    assert audit, result.stderr
    report = json.loads(audit[-1].removeprefix("AUDIT "))
    assert report["code"] in (0, None), result.stderr
    return result.stdout, report["heavy"]


@pytest.mark.parametrize(
    ("args", "shows"),
    [
        (("--version",), "lcg "),
        (("--help",), "Usage"),
        (("tools",), "knowledge_status"),
        (("describe", "knowledge_status"), "scope: read"),
        (("describe", "lambo_derive", "--json"), '"inputSchema"'),
    ],
)
def test_commands_that_describe_lcg_import_no_heavy_library(
    tmp_path: Path, args: tuple[str, ...], shows: str
) -> None:
    stdout, heavy = loaded_heavy_modules(tmp_path, *args)
    assert shows in stdout
    assert heavy == [], f"lcg {' '.join(args)} imported {heavy}"


@pytest.mark.slow
def test_a_call_through_a_running_socket_service_loads_no_model(tmp_path: Path) -> None:
    service = ServiceProcess(tmp_path / "ws")
    try:
        assert service.wait_ready()["healthy"] is True, service.log
        stdout, heavy = loaded_heavy_modules(
            tmp_path, "call", "knowledge_status", "--workspace", str(tmp_path / "ws")
        )
    finally:
        service.stop()
    assert json.loads(stdout)["wal_groups"] == {}
    assert heavy == [], f"lcg call through the socket imported {heavy}"


@pytest.mark.parametrize("args", [("--version",), ("tools",)])
def test_the_launcher_answers_as_the_typer_command_does_without_loading_typer(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    """`lcg --version` and `lcg tools` answer before typer loads (ADR 0053); what they print
    is what the typer command prints (`lcg --log-level warning ...` goes through typer)."""
    fast = subprocess.run(
        [sys.executable, "-c", LAUNCHED, json.dumps(args)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60.0,
        check=True,
    )
    typer_path = subprocess.run(
        [sys.executable, "-c", LAUNCHED, json.dumps(["--log-level", "warning", *args])],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60.0,
        check=True,
    )
    fast_out, fast_modules = fast.stdout.split("MODULES ")
    typer_out, typer_modules = typer_path.stdout.split("MODULES ")
    assert fast_out == typer_out
    assert fast_out.strip()
    assert json.loads(fast_modules) == {"typer": False, "lcg.interfaces.cli_app": False}
    assert json.loads(typer_modules) == {"typer": True, "lcg.interfaces.cli_app": True}


LAUNCHED = """
import json, sys
from lcg.interfaces.cli import main
sys.argv = ["lcg", *json.loads(sys.argv[1])]
try:
    main()
except SystemExit:
    pass
watched = ("typer", "lcg.interfaces.cli_app")
print("MODULES " + json.dumps({name: name in sys.modules for name in watched}))
"""


# The console script's body, then on stderr the exit code and whether typer, the typer app and
# the operation table were loaded.
CALLED = """
import json, sys
from lcg.interfaces.cli import main
sys.argv = ["lcg", *json.loads(sys.argv[1])]
code = 0
try:
    main()
except SystemExit as exit:
    code = exit.code
sys.stdout.flush()
watched = ("typer", "lcg.interfaces.cli_app", "lcg.interfaces.operations")
loaded = {name: name in sys.modules for name in watched}
sys.stderr.write("CALLED " + json.dumps({"code": code, "loaded": loaded}) + "\\n")
"""


def called(cwd: Path, *args: str) -> tuple[str, str, int, dict[str, bool]]:
    """`lcg ARGS` in a fresh interpreter: stdout, stderr, exit code and the modules loaded."""
    done = run([sys.executable, "-c", CALLED, json.dumps(args)], cwd=cwd)
    stderr, _, audit = done.stderr.rpartition("CALLED ")
    report = json.loads(audit)
    return done.stdout, stderr, report["code"], report["loaded"]


CALLS_THROUGH_THE_SERVICE = [
    (("call", "knowledge_status"), 0),
    (("call", "knowledge_list_entities", '{"group_ids": ["g"]}'), 0),
    (("call", "knowledge_wal_mark_delete", '{"name": "nope"}'), 3),
    (("call", "knowledge_list_entities", '{"num_results": -1}'), 2),
    (("call", "knowledge_status", "[1]"), 2),
    (("call", "knowledge_statu"), 2),
]


@pytest.mark.slow
def test_a_call_through_a_running_socket_service_loads_no_typer_and_answers_as_typer_does(
    tmp_path: Path,
) -> None:
    """`lcg call` beside a healthy service is answered by the launcher (issue 25 item 4, ADR
    0072): the same output, note, errors and exit codes as the typer command (`--log-level`
    sends a line through typer), with neither typer nor the operation table loaded."""
    workspace = tmp_path / "ws"
    service = ServiceProcess(workspace)
    try:
        assert service.wait_ready()["healthy"] is True, service.log
        for args, code in CALLS_THROUGH_THE_SERVICE:
            where = ("--workspace", str(workspace))
            fast = called(tmp_path, *args, *where)
            typer_path = called(tmp_path, "--log-level", "warning", *args, *where)
            assert fast[:3] == typer_path[:3], args
            assert fast[2] == code, (args, fast)
            assert "goes through" in fast[1] or code == 2, (args, fast)
            assert fast[3]["typer"] is False, args
            assert fast[3]["lcg.interfaces.cli_app"] is False, args
            assert fast[3]["lcg.interfaces.operations"] is (args[1] == "knowledge_statu"), args
            assert typer_path[3]["typer"] is True, args
        stdout, stderr, code, loaded = called(
            tmp_path,
            "call",
            "knowledge_add_episode",
            "-w",
            str(workspace),
            '{"name": "n", "episode_body": "Maria leads Kestrel.", "group_id": "g"}',
        )
        assert code == 0, stderr
        assert json.loads(stdout)["episode_uuid"]
        assert loaded["typer"] is False
    finally:
        service.stop()
