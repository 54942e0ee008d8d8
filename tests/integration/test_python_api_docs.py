"""docs/python-api.md's examples run as written (issue 26 item 4): each fenced `python` block,
in order, in one empty directory; a block whose first line says it needs a running service gets
a real `lcg serve` on that workspace for its run."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers.service_process import ServiceProcess

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "python-api.md"
NEEDS_SERVICE = re.compile(r"# needs a running service: lcg serve --workspace (\S+)\n")

pytestmark = pytest.mark.slow


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.DOTALL)


def _run(block: str, index: int) -> None:
    code = compile(block, f"{PAGE.name} block {index}", "exec")
    exec(code, {"__name__": f"python_api_block_{index}"})  # noqa: S102 (the page's own examples)


def test_every_python_example_of_the_api_page_runs_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    blocks = _blocks()
    assert len(blocks) >= 8
    outputs = []
    for index, block in enumerate(blocks, start=1):
        needs = NEEDS_SERVICE.match(block)
        if needs is None:
            _run(block, index)
        else:
            service = ServiceProcess(tmp_path / needs.group(1))
            try:
                assert service.wait_ready()["state"] == "healthy"
                _run(block, index)
            finally:
                assert service.stop() == 0
        outputs.append(capsys.readouterr().out.splitlines())

    added, memory, replay, errors, beside, repos, nodes, images = outputs[:8]
    assert added[0].startswith("team note Maria Chen leads the Kestrel scheduler team")
    assert added[1].startswith("Maria Chen lead ")  # attributes as written (ADR 0092)
    assert added[2:] == ["Maria Chen LEADS Kestrel", "1 episode(s)"]
    assert memory[0] == "applied"
    assert memory[1].startswith("The Kestrel job queue lives in Redis [Resource]")
    assert memory[2] == "The Kestrel job queue lives in Redis"
    assert replay == ["3 0", "None 1"]
    assert errors[0] == "invalid_params name"
    assert errors[1].startswith("name: must contain only letters")
    assert beside == ["socket", "team note", "socket"]
    assert repos == ["applied", "['github.com/acme/gadgets', 'github.com/acme/widgets']"]
    assert nodes == ["{'ops': 1}", "deploy"]
    assert images == ["applied", "red silk saree, gold border [image:saree1]"]
