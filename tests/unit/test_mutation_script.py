"""bench/mutation.py finds the mutations of a module's syntax tree and applies one at a time."""

from __future__ import annotations

import ast
from pathlib import Path

from bench.mutation import ROOT, module_name, mutant_source, sites, unit_tests_of

SOURCE = '''
"""A module docstring is never mutated."""
LIMIT: int = 3
"""Nor a bare string documenting the line above."""


@dataclass(frozen=True, slots=True)  # decorators configure: never mutated
class Point:
    x: int


def within(a: int, b: int, flag: bool) -> bool:
    """Nor a function's."""
    return a < b and not flag or a + LIMIT == b
'''


def test_every_operator_and_constant_is_a_site_but_docstrings_decorators_annotations_not() -> None:
    found = [(s.kind, s.change) for s in sites(SOURCE)]
    assert sorted(found) == sorted(
        [
            ("constant", "3 -> 4"),
            ("boolean", "Or -> And"),
            ("boolean", "And -> Or"),
            ("compare", "op 0: Eq -> NotEq"),
            ("compare", "op 0: Lt -> LtE"),
            ("not", "not x -> x"),
            ("arithmetic", "Add -> Sub"),
        ]
    )


def test_each_mutant_changes_exactly_its_own_site() -> None:
    plain = ast.unparse(ast.parse(SOURCE))
    mutants = {site.change: mutant_source(SOURCE, site) for site in sites(SOURCE)}
    assert len(set(mutants.values())) == len(mutants)
    assert plain not in mutants.values()
    assert "return a < b and flag or a + LIMIT == b" in mutants["not x -> x"]
    assert "return a <= b and (not flag) or a + LIMIT == b" in mutants["op 0: Lt -> LtE"]
    assert "LIMIT: int = 4" in mutants["3 -> 4"]


def test_a_module_file_maps_to_its_name_and_the_unit_tests_importing_it() -> None:
    path = ROOT / "domain" / "lcg" / "domain" / "memory" / "receipts.py"
    assert module_name(path) == "lcg.domain.memory.receipts"
    assert [p.name for p in unit_tests_of("lcg.domain.memory.receipts")] == [
        "test_memory_layers.py",
        "test_memory_receipts.py",
    ]
    assert Path(__file__).name not in [p.name for p in unit_tests_of("lcg.domain.deciders")]


def test_a_module_the_package_re_exports_is_tested_by_the_tests_importing_the_package() -> None:
    # gc/__init__ imports from gc.triggers; gc.protections only through gc.sweep
    for leaf in ("triggers", "protections"):
        assert "test_memory_gc.py" in [
            p.name for p in unit_tests_of(f"lcg.domain.memory.gc.{leaf}")
        ]
