"""Mutation testing of the pure domain modules: how many small changes their unit tests notice.

The usual tools (mutmut, cosmic-ray) find modules by a package's folder and miss this layout
(`domain/lcg/domain/...`, a namespace `lcg` over several roots: ADR 0001). This one takes the
module's file, mutates its syntax tree with the standard library's `ast` (comparison, boolean
and arithmetic operators, constants), and runs the unit tests that import the module (or a
package that re-exports it) in a fresh `python -m pytest` per mutant, one core, with a
timeout. The mutant is never written to the worktree: the child process puts an import hook
first on `sys.meta_path` that loads the module from the mutated source (under the module's
own name and file), so an interrupted run leaves nothing behind.

    .venv/bin/python -m bench.mutation domain/lcg/domain/memory/receipts.py --sample 60

A mutant is killed when the tests fail (or error, or time out), survived when they pass. The
score is killed / sampled; a survivor is either a gap in the tests or an equivalent mutant
(one no test could tell apart), which only reading it can say: `--show-survivors` prints them.
"""

from __future__ import annotations

import argparse
import ast
import importlib.abc
import importlib.machinery
import importlib.util
import os
import random
import re
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
UNIT_TESTS = ROOT / "tests" / "unit"
PYTEST = ("-p", "no:xdist", "-p", "no:cacheprovider", "-o", "addopts=", "-x", "-q")

_COMPARE: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}
_ARITHMETIC: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.FloorDiv,
    ast.Div: ast.Mult,
    ast.FloorDiv: ast.Mult,
    ast.Mod: ast.FloorDiv,
    ast.Pow: ast.Mult,
    ast.LShift: ast.RShift,
    ast.RShift: ast.LShift,
    ast.BitAnd: ast.BitOr,
    ast.BitOr: ast.BitAnd,
    ast.BitXor: ast.BitAnd,
}
_BOOLEAN: dict[type[ast.boolop], type[ast.boolop]] = {ast.And: ast.Or, ast.Or: ast.And}


@dataclass(frozen=True, slots=True)
class Site:
    """One mutation: the `index`-th mutable node in walk order, and what is done to it."""

    index: int
    line: int
    kind: str  # compare | boolean | arithmetic | not | constant
    change: str


# --- finding and applying mutations ---------------------------------------------------------


def _skipped_nodes(tree: ast.Module) -> set[int]:
    """ids of nodes never mutated: docstrings and other bare strings, decorators (dataclass
    options such as frozen= and slots= change no behaviour a test can see), annotations and
    type aliases, f-string pieces, `__all__`."""
    skipped: set[int] = set()

    def skip(node: ast.AST | None) -> None:
        if node is not None:
            skipped.update(id(inner) for inner in ast.walk(node))

    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            skip(node)  # a docstring, or a bare string documenting the line above: no effect
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            for decorator in node.decorator_list:  # configuration (frozen=, slots=, maxsize=)
                skip(decorator)
        if isinstance(node, ast.AnnAssign):
            skip(node.annotation)
            if isinstance(node.annotation, ast.Name) and node.annotation.id == "TypeAlias":
                skip(node.value)  # a type, not a computation
        elif isinstance(node, ast.arg):
            skip(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            skip(node.returns)
        elif isinstance(node, ast.JoinedStr) or (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
        ):
            skip(node)
    return skipped


def _constant_change(value: object) -> object:
    """The swapped constant, or the value itself when the constant is left alone."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value + 1.0 if value else 1.0
    if isinstance(value, str):
        return f"XX{value}XX"
    return value


def _mutations(node: ast.AST) -> Iterator[tuple[str, str]]:
    """(kind, change) for every mutation of this one node, in a fixed order."""
    if isinstance(node, ast.Compare):
        for position, op in enumerate(node.ops):
            if type(op) in _COMPARE:
                swapped = _COMPARE[type(op)].__name__
                yield "compare", f"op {position}: {type(op).__name__} -> {swapped}"
    elif isinstance(node, ast.BoolOp) and type(node.op) in _BOOLEAN:
        yield "boolean", f"{type(node.op).__name__} -> {_BOOLEAN[type(node.op)].__name__}"
    elif isinstance(node, ast.BinOp | ast.AugAssign) and type(node.op) in _ARITHMETIC:
        yield "arithmetic", f"{type(node.op).__name__} -> {_ARITHMETIC[type(node.op)].__name__}"
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield "not", "not x -> x"
    elif isinstance(node, ast.Constant) and node.value is not None:
        changed = _constant_change(node.value)
        if changed != node.value:
            yield "constant", f"{node.value!r} -> {changed!r}"[:120]


def _walk(tree: ast.Module) -> Iterator[tuple[ast.AST, str, str]]:
    skipped = _skipped_nodes(tree)
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        for kind, change in _mutations(node):
            yield node, kind, change


def sites(source: str) -> list[Site]:
    """Every mutation of the module, numbered in walk order."""
    tree = ast.parse(source)
    return [
        Site(index, getattr(node, "lineno", 0), kind, change)
        for index, (node, kind, change) in enumerate(_walk(tree))
    ]


def _mutate(node: ast.AST, change: str) -> None:
    if isinstance(node, ast.Compare):
        position = int(change.split(":", 1)[0].removeprefix("op "))
        node.ops[position] = _COMPARE[type(node.ops[position])]()
    elif isinstance(node, ast.BoolOp):
        node.op = _BOOLEAN[type(node.op)]()
    elif isinstance(node, ast.BinOp | ast.AugAssign):
        node.op = _ARITHMETIC[type(node.op)]()
    elif isinstance(node, ast.Constant):
        changed = _constant_change(node.value)
        if not isinstance(changed, str | int | float):
            raise TypeError(f"constant {node.value!r} is not mutated")
        node.value = changed
    else:
        raise TypeError(f"no mutation for {type(node).__name__}")


class _DropNot(ast.NodeTransformer):
    def __init__(self, target: ast.AST) -> None:
        self.target = target

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        self.generic_visit(node)
        return node.operand if node is self.target else node


def mutant_source(source: str, site: Site) -> str:
    """The module's source with one mutation applied (as `ast.unparse` writes it)."""
    tree = ast.parse(source)
    for index, (node, kind, change) in enumerate(_walk(tree)):
        if index == site.index:
            if (kind, change) != (site.kind, site.change):
                raise ValueError(f"site {site.index} moved: {kind} {change}")
            if kind == "not":
                tree = _DropNot(node).visit(tree)
            else:
                _mutate(node, change)
            return ast.unparse(ast.fix_missing_locations(tree))
    raise ValueError(f"no site {site.index}")


# --- running the tests -----------------------------------------------------------------------


def module_name(path: Path) -> str:
    """`domain/lcg/domain/memory/text.py` -> `lcg.domain.memory.text` (the namespace root is
    the folder above `lcg/`)."""
    parts = path.resolve().relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[parts.index("lcg") :])


def _importers(name: str) -> set[Path]:
    """tests/unit files that import the module by name (`import a.b.c`, `from a.b.c import`,
    or `from a.b import c`)."""
    parent, _, leaf = name.rpartition(".")
    direct = re.compile(rf"^\s*(from|import)\s+{re.escape(name)}\b", re.MULTILINE)
    named = re.compile(
        rf"^from\s+{re.escape(parent)}\s+import\s+(\([^)]*\b{leaf}\b[^)]*\)|[^\n]*\b{leaf}\b)",
        re.MULTILINE,
    )
    return {
        path
        for path in UNIT_TESTS.glob("test_*.py")
        if direct.search(text := path.read_text()) or named.search(text)
    }


def _imports(source: str, name: str) -> bool:
    return re.search(rf"^\s*(from|import)\s+{re.escape(name)}\b", source, re.MULTILINE) is not None


def _package_of(name: str) -> str | None:
    """The package that exposes this module: its `__init__.py` imports from it, or from a
    sibling module that (at any depth) imports it. `lcg.domain.memory.gc` re-exports
    `gc.sweep`'s names and `gc.sweep` imports `gc.protections`: a test importing the package
    tests both. None when no package does."""
    parent = name.rpartition(".")[0]
    spec = importlib.util.find_spec(parent) if parent else None
    if spec is None or spec.origin is None or not spec.origin.endswith("__init__.py"):
        return None
    folder = Path(spec.origin).parent
    siblings = {f"{parent}.{f.stem}": f.read_text() for f in folder.glob("*.py")}
    reaching, grew = {name}, True
    while grew:
        grew = False
        for sibling, source in siblings.items():
            if sibling not in reaching and any(_imports(source, n) for n in reaching):
                reaching.add(sibling)
                grew = True
    return parent if f"{parent}.__init__" in reaching else None


def unit_tests_of(name: str) -> list[Path]:
    """tests/unit files that import the module, or a package that re-exports it (and so on up:
    `from lcg.domain.memory.gc import sweep_due` tests `lcg.domain.memory.gc.triggers`)."""
    found: set[Path] = set()
    current: str | None = name
    while current is not None:
        found |= _importers(current)
        current = _package_of(current)
    return sorted(found)


@dataclass(frozen=True, slots=True)
class Outcome:
    site: Site
    verdict: str  # killed | survived | timeout
    seconds: float


def _run(tests: Sequence[Path], env: dict[str, str], timeout: float) -> tuple[str, float]:
    command = [sys.executable, "-m", "bench.mutation", "--child", *map(str, tests)]
    started = time.monotonic()
    try:
        done = subprocess.run(
            command,
            cwd=ROOT,
            env=env,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return "timeout", time.monotonic() - started
    return ("survived" if done.returncode == 0 else "killed"), time.monotonic() - started


def _child_env(name: str, path: Path, source_file: Path | None) -> dict[str, str]:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", OMP_NUM_THREADS="1")
    env["LCG_MUTANT_MODULE"] = name
    env["LCG_MUTANT_ORIGIN"] = str(path.resolve())
    if source_file is not None:
        env["LCG_MUTANT_SOURCE"] = str(source_file)
    return env


def run_module(
    path: Path,
    tests: Sequence[Path],
    sample: int,
    rng: random.Random,
    scratch: Path,
    progress: bool = True,
) -> tuple[list[Outcome], int, float]:
    """The sampled mutants' outcomes, how many mutations the module has, and the baseline
    seconds. The unmutated module (as `ast.unparse` writes it) must pass first."""
    name = module_name(path)
    source = path.read_text()
    every = sites(source)
    chosen = sorted(rng.sample(every, min(sample, len(every))), key=lambda s: s.index)
    plain = scratch / f"{name}.unparsed.py"
    plain.write_text(ast.unparse(ast.parse(source)))
    verdict, baseline = _run(tests, _child_env(name, path, plain), timeout=600)
    if verdict != "survived":
        raise SystemExit(f"{name}: the unit tests fail on the unmutated module; nothing to measure")
    timeout = max(30.0, baseline * 5)
    outcomes: list[Outcome] = []
    for count, site in enumerate(chosen, start=1):
        mutated = scratch / f"{name}.mutant.py"
        mutated.write_text(mutant_source(source, site))
        verdict, seconds = _run(tests, _child_env(name, path, mutated), timeout)
        outcomes.append(Outcome(site, verdict, seconds))
        if progress:
            print(
                f"{name} {count}/{len(chosen)} line {site.line} {site.kind} {site.change}: "
                f"{verdict}",
                file=sys.stderr,
            )
    return outcomes, len(every), baseline


# --- the child: pytest with the mutated module ----------------------------------------------


class _MutantLoader(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Loads one module from another file's source, under the module's own name and path."""

    def __init__(self, name: str, origin: str, source: str) -> None:
        self.name, self.origin, self.source = name, origin, source

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name:
            return None
        return importlib.util.spec_from_file_location(fullname, self.origin, loader=self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        exec(compile(self.source, self.origin, "exec"), module.__dict__)  # noqa: S102


def child(tests: Sequence[str]) -> int:
    import pytest

    source_file = os.environ.get("LCG_MUTANT_SOURCE")
    if source_file is not None:
        loader = _MutantLoader(
            os.environ["LCG_MUTANT_MODULE"],
            os.environ["LCG_MUTANT_ORIGIN"],
            Path(source_file).read_text(),
        )
        sys.meta_path.insert(0, loader)
    return int(pytest.main([*PYTEST, *tests]))


# --- the report ------------------------------------------------------------------------------


def table(rows: Sequence[tuple[str, Sequence[Path], list[Outcome], int]]) -> str:
    lines = [
        "| module | unit tests | mutations | sampled | killed | timed out | survived | score |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, tests, outcomes, total in rows:
        killed = sum(o.verdict == "killed" for o in outcomes)
        timeouts = sum(o.verdict == "timeout" for o in outcomes)
        survived = sum(o.verdict == "survived" for o in outcomes)
        score = (killed + timeouts) / len(outcomes) if outcomes else 0.0
        files = ", ".join(p.name for p in tests) or "none imports it: nothing run"
        lines.append(
            f"| `{name}` | {files} | {total} | {len(outcomes)} | {killed} | {timeouts} |"
            f" {survived} | {score:.0%} |"
        )
    return "\n".join(lines)


def survivors(rows: Sequence[tuple[str, Sequence[Path], list[Outcome], int]]) -> str:
    lines = []
    for name, _, outcomes, _ in rows:
        for o in outcomes:
            if o.verdict == "survived":
                lines.append(
                    f"- `{name}` site {o.site.index}, line {o.site.line}: "
                    f"{o.site.kind} {o.site.change}"
                )
    return "\n".join(lines) or "(none)"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("modules", nargs="+", type=Path, help="module files to mutate")
    parser.add_argument("--sample", type=int, default=60, help="mutants per module (default 60)")
    parser.add_argument("--seed", type=int, default=34, help="the sample's random seed")
    parser.add_argument("--out", type=Path, help="also write the markdown here")
    parser.add_argument("--show-survivors", action="store_true")
    parser.add_argument("--list", action="store_true", help="list the mutations, run nothing")
    args = parser.parse_args(argv)
    import tempfile

    rows: list[tuple[str, Sequence[Path], list[Outcome], int]] = []
    with tempfile.TemporaryDirectory(prefix="lcg-mutation-") as folder:
        for path in args.modules:
            name = module_name(path)
            if args.list:
                for site in sites(path.read_text()):
                    print(f"{name} {site.index} line {site.line}: {site.kind} {site.change}")
                continue
            tests = unit_tests_of(name)
            if not tests:  # every mutant would survive: a row saying so, nothing run
                print(f"{name}: no unit test in tests/unit imports it", file=sys.stderr)
                rows.append((name, [], [], len(sites(path.read_text()))))
                continue
            rng = random.Random(f"{args.seed}:{name}")
            outcomes, total, baseline = run_module(path, tests, args.sample, rng, Path(folder))
            print(f"{name}: baseline {baseline:.1f} s", file=sys.stderr)
            rows.append((name, tests, outcomes, total))
    if args.list:
        return
    report = table(rows)
    if args.show_survivors:
        report += "\n\nSurvivors:\n\n" + survivors(rows)
    print(report)
    if args.out is not None:
        args.out.write_text(report + "\n")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        sys.exit(child(sys.argv[2:]))
    main()
