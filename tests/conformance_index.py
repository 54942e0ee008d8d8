"""Writes docs/conformance.md: each checklist id the tests name, in one line, with its tests.

    .venv/bin/python -m tests.conformance_index            # write docs/conformance.md
    .venv/bin/python -m tests.conformance_index --check    # write nothing; exit 1 if stale
    .venv/bin/python -m tests.conformance_index --import SPEC_DIR   # refresh the statements

The checklists (seed 000's knowledge checklist: K-, P-, A- ids; seed 001's memory checklist:
M-, OQ- ids) live outside the repository, so their items are imported once, one line each, into
docs/conformance-items.tsv (`id<TAB>statement`; a row whose id has no number names a section).
The index is built from that file and the tests alone: a test names an id in its function name
(`test_k_wal_035_...`, `test_m_ins_020_...`, `test_p_008_...`, several ids and `_014_018`
continuations allowed) or cites it in its docstring; a test module's docstring cites ids for
all of its tests. Ids cited anywhere else in the repository (code, docs, comments) that no
test names are listed apart, so what is claimed but unproven shows. Lives with the tests
because it reads them; nothing imports it.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ITEMS = Path("docs/conformance-items.tsv")
LEFT = Path("docs/conformance-left.tsv")  # id<TAB>why no test proves it here
INDEX = Path("docs/conformance.md")
COMMAND = "python -m tests.conformance_index"
SELF_TEST = Path("tests/unit/test_conformance_index.py")  # its examples are not citations
SOURCES: tuple[str, ...] = ("README.md", "pyproject.toml", "docs", "domain", "commands")
SOURCES += ("projections", "queries", "interfaces", "fixtures", "tests", "bench")
SUFFIXES = frozenset({".py", ".md", ".toml", ".yaml", ".txt"})
STATEMENT_CHARS = 200  # one line: the item's first sentence, cut at a word beyond this
SHORTEST_SENTENCE = 40  # a shorter first "sentence" is a heading: the next one comes too

# One id in running text, with what may follow it: `..NNN` or `..X-NNN` ranges, `/NNN` and
# `, NNN` lists of numbers of the same item family.
_NUMBER = r"\d{2,3}[a-z]?"
_ID = rf"(?:[KM]-[A-Z]+-{_NUMBER}|P-{_NUMBER}|A-{_NUMBER}|OQ-{_NUMBER})"
CITATION = re.compile(
    rf"(?<![\w-])(?P<first>{_ID})(?P<rest>(?:(?:\.\.|–|/|, )(?:[A-Z]+-)*\d{{2,3}}[a-z]?)*)(?![\w-])"
)
_STEP = re.compile(r"(\.\.|–|/|, )((?:[A-Z]+-)*)(\d{2,3}[a-z]?)")
# The same in a test's name: `k_wal_035`, `m_instr_004`, `p_008`, `a_12`, `oq_16`, then `_NNN`s.
_NAME_ID = re.compile(
    r"(?:^|_)(?P<id>(?:[km]_[a-z]+_\d{3}|p_\d{3}|a_\d{2}|oq_\d{2}))"
    r"(?P<more>(?:_(?:to_)?\d{3})*)(?=_|$)"
)

FAMILIES = {  # prefix rows the importer writes for the families with no index table of their own
    "P": "what seed 000 leaves open, and the choice proposed (knowledge checklist, §U)",
    "A": "ambiguities in seed 000 and their resolutions (knowledge checklist, §A)",
    "OQ": "open questions in seed 001 (memory checklist)",
}


@dataclass(frozen=True, slots=True)
class Proof:
    """A test (path::name) and whether it names the id or its docstring cites it."""

    test: str
    named: bool


@dataclass(slots=True)
class Found:
    proofs: dict[str, set[Proof]] = field(default_factory=lambda: defaultdict(set))
    cited: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))


def parse_citations(text: str, known: Iterable[str] = ()) -> list[str]:
    """Every id a text cites, ranges expanded (to the ids `known` holds, when given)."""
    known_ids = set(known)
    found: list[str] = []
    for match in CITATION.finditer(text):
        first = match["first"]
        family, number = first.rsplit("-", 1)
        found.append(first)
        previous = number
        for separator, prefix, step in _STEP.findall(match["rest"]):
            if separator == ", " and not prefix and len(step) != len(previous):
                break  # "P-008, 12 tools": a count, not a list of ids ("P-128, A-02" is)
            family = prefix[:-1] if prefix else family
            if separator in ("..", "–"):
                found.extend(_range(family, previous, step, known_ids))
            else:
                found.append(f"{family}-{step}")
            previous = step
    return list(dict.fromkeys(found))


def _range(family: str, low: str, high: str, known: set[str]) -> list[str]:
    width = len(low.rstrip("abcdefghijklmnopqrstuvwxyz"))
    start, end = int(re.sub(r"\D", "", low)), int(re.sub(r"\D", "", high))
    ids = [f"{family}-{n:0{width}d}" for n in range(start + 1, end + 1)]
    return [i for i in ids if i in known] if known else ids


def ids_in_name(name: str) -> list[str]:
    """The ids a test's function name carries: `test_k_xg_013_014_k_sta_007` names three,
    `test_k_rt_001_to_003` three."""
    found: list[str] = []
    for match in _NAME_ID.finditer(name):
        parts = match["id"].upper().split("_")
        family, number = "-".join(parts[:-1]), parts[-1]
        found.append(f"{family}-{number}")
        previous, through = number, False
        for more in match["more"].split("_"):
            if more == "to":  # `k_rt_001_to_005`: a range, as `K-RT-001..005` in a docstring
                through = True
            elif more:
                found.extend(
                    _range(family, previous, more, set()) if through else [f"{family}-{more}"]
                )
                previous, through = more, False
    return list(dict.fromkeys(found))


def _tests(tree: ast.Module) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith(
            "test"
        ):
            yield node.name, node
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            for inner in node.body:
                if isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef) and (
                    inner.name.startswith("test")
                ):
                    yield f"{node.name}::{inner.name}", inner


def scan_tests(root: Path, known: set[str]) -> dict[str, set[Proof]]:
    """Id -> the tests that name it or whose (or whose module's) docstring cites it."""
    proofs: dict[str, set[Proof]] = defaultdict(set)
    for path in sorted((root / "tests").rglob("test_*.py")):
        relative = path.relative_to(root).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        in_module: set[str] = set()
        for name, function in _tests(tree):
            test = f"{relative}::{name}"
            named = ids_in_name(function.name)
            for item in named:
                proofs[item].add(Proof(test, named=True))
            for item in parse_citations(ast.get_docstring(function) or "", known):
                if item not in named:
                    proofs[item].add(Proof(test, named=False))
            in_module.update(named)
        for item in parse_citations(ast.get_docstring(tree) or "", known):
            if item not in in_module:  # the module as a whole, when no test of it names the id
                proofs[item].add(Proof(relative, named=False))
    return proofs


def scan_citations(root: Path, known: set[str]) -> dict[str, set[str]]:
    """Id -> the repository's files (not the index, its statements or this module) citing it."""
    cited: dict[str, set[str]] = defaultdict(set)
    for path in _sources(root):
        relative = path.relative_to(root).as_posix()
        for item in parse_citations(path.read_text(encoding="utf-8", errors="replace"), known):
            cited[item].add(relative)
    return cited


def _sources(root: Path) -> Iterator[Path]:
    skip = {ITEMS, LEFT, INDEX, Path("tests/conformance_index.py"), SELF_TEST}
    for top in SOURCES:
        paths = [root / top] if (root / top).is_file() else sorted((root / top).rglob("*"))
        for path in paths:
            relative = path.relative_to(root)
            if (
                path.suffix in SUFFIXES
                and path.is_file()
                and relative not in skip
                and not any(part.startswith((".", "__")) for part in relative.parts[:-1])
            ):
                yield path


def read_items(path: Path) -> dict[str, str]:
    items: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            key, statement = line.split("\t", 1)
            items[key] = statement
    return items


def read_left(root: Path) -> dict[str, str]:
    """The items left with a reason (none when the file is absent)."""
    return read_items(root / LEFT) if (root / LEFT).is_file() else {}


def _family(item: str) -> str:
    return item.rsplit("-", 1)[0]


def _order(item: str) -> tuple[int, str, int, str]:
    family, _, number = item.rpartition("-") if re.search(r"-\d", item) else (item, "", "")
    rank = {"K": 0, "P": 1, "A": 2, "M": 3, "OQ": 4}.get(family.split("-")[0], 5)
    digits = re.sub(r"\D", "", number)
    return rank, family, int(digits or 0), number


def accounting(root: Path = ROOT) -> tuple[list[str], list[str]]:
    """The checklist ids neither proven by a test nor left with a reason, and those both
    proven and left (a test came: the reason should go)."""
    items = read_items(root / ITEMS)
    known = {key for key in items if re.search(r"-\d", key)}
    proven = set(scan_tests(root, known))
    left = set(read_left(root))
    return sorted(known - proven - left, key=_order), sorted(proven & left, key=_order)


def render(root: Path = ROOT) -> str:
    items = read_items(root / ITEMS)
    known = {key for key in items if re.search(r"-\d", key)}
    left = read_left(root)
    proofs = scan_tests(root, known)
    cited = scan_citations(root, known)
    proven = sorted(proofs, key=_order)
    unproven = sorted((set(cited) - set(proofs) - set(left)) & known, key=_order)
    unknown = sorted(set(cited) - known - set(proofs), key=_order)
    lines = [
        "# Conformance index",
        "",
        "Each checklist id the tests name, in one line, with the tests that prove it. Generated by",
        f"`{COMMAND}` from the tests' names and docstrings and the item statements in",
        "[conformance-items.tsv](conformance-items.tsv) (imported once from the checklists, which",
        "live outside the repository); `tests/unit/test_conformance_index.py` fails when this page",
        "is not what the generator writes now. Do not edit it by hand: name a test after the id",
        "(`test_k_wal_035_...`, `test_m_ins_020_...`) or cite the id in its docstring, then",
        "regenerate.",
        "",
        "K- ids are seed 000's normative items (knowledge tools), P- our proposals where seed 000",
        "is silent, A- its ambiguities and the resolution taken; M- ids are seed 001's items",
        "(agent memory, the `lambo_*` tools), OQ- its open questions. A test listed in *italics*",
        "cites the id in its docstring rather than naming it; a test file in italics cites it in",
        "its module docstring, for its tests as a whole. An item no test proves, because it",
        "cannot apply here or is not built, is listed at the end with the reason, from",
        f"[{LEFT.name}]({LEFT.name}).",
        "",
        f"{len(proven)} ids named or cited by tests; {len(left)} left with a reason;"
        f" {len(unproven)} cited elsewhere that no test names;"
        f" {len(set(proven) - known) + len(unknown)} cited that the checklists do not hold.",
    ]
    family = ""
    for item in proven:
        if _family(item) != family:
            family = _family(item)
            title = items.get(family, "")
            lines += ["", f"## {family}" + (f": {title}" if title else ""), ""]
        tests = sorted(proofs[item], key=lambda p: (not p.named, p.test))
        shown = ", ".join(f"`{p.test}`" if p.named else f"*`{p.test}`*" for p in tests)
        lines.append(f"- **{item}** {items.get(item, '(not in the checklists)')} — {shown}")
    lines += ["", "## Cited, no test names it", ""]
    lines += [
        f"- **{item}** {items[item]} — cited in {', '.join(sorted(cited[item]))}"
        for item in unproven
    ]
    lines += ["", "## Left, and why", ""]
    lines += [
        f"- **{item}** {items.get(item, '(not in the checklists)')} — *{left[item]}*"
        for item in sorted(left, key=_order)
    ]
    if unknown:
        lines += ["", "## Cited, not in the checklists", ""]
        lines += [
            f"- **{item}** — {', '.join(sorted(cited[item] | {p.test for p in proofs[item]}))}"
            for item in unknown
        ]
    return "\n".join(lines) + "\n"


# --import: one line per checklist item, from the checklists' own files.
_ITEM_LINE = re.compile(
    r"^- (?:\[(?P<bracketed>[A-Z]+(?:-[A-Z]+)?-\d+)\]|(?P<bare>OQ-\d+)) (?P<text>.+)$"
)
_INDEX_ROW = re.compile(
    r"^\|\s*\d+\s*\|\s*(?P<title>[^|]+?)\s*\|\s*`(?P<prefix>[A-Z]+-[A-Z]+)`\s*\|"
)
_TAGS = re.compile(
    r"\s*(\(§[^)]*\)|\(needs: [^)]*\)"
    r"|\*\*\[(upstream|upstream-later|new)[^\]]*\]\*\*|\*\[derived\]\*)"
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"(*])")


def summarize(text: str) -> str:
    """The item's first sentence (its bold title, if any, leading): one line, ~200 chars."""
    text = _TAGS.sub("", " ".join(text.split())).strip()
    title = re.match(r"^\*\*(?P<title>[^*]+?)\.?\*\*\s*(?P<rest>.*)$", text)
    lead = ""
    if title:
        lead = title["title"] + (" " if title["title"].endswith(("?", "!")) else ": ")
        text = title["rest"]
    sentence = _first_sentence(text)
    statement = (lead + sentence).strip()
    if len(statement) > STATEMENT_CHARS:
        statement = statement[:STATEMENT_CHARS].rsplit(" ", 1)[0].rstrip(",;:") + " …"
    if statement.count("`") % 2:
        statement = statement.replace(" …", "` …") if statement.endswith(" …") else statement + "`"
    return statement.replace("\t", " ")


def _first_sentence(text: str) -> str:
    """Up to the first sentence end outside backticks; a heading-like one ("Tool count.")
    takes the next sentence with it."""
    for match in _SENTENCE_END.finditer(text):
        if text[: match.start()].count("`") % 2 == 0 and match.start() >= SHORTEST_SENTENCE:
            return text[: match.start()]
    return text


def import_items(spec: Path) -> str:
    rows: dict[str, str] = {}
    for name in ("knowledge-checklist.md", "memory-checklist.md"):
        for line in (spec / name).read_text(encoding="utf-8").splitlines():
            if row := _INDEX_ROW.match(line):
                rows.setdefault(row["prefix"], " ".join(row["title"].split()))
            elif item := _ITEM_LINE.match(line):
                rows.setdefault(item["bracketed"] or item["bare"], summarize(item["text"]))
    rows.update(FAMILIES)
    return "".join(f"{key}\t{rows[key]}\n" for key in sorted(rows, key=_order))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.split("\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if stale")
    parser.add_argument(
        "--import",
        dest="spec",
        type=Path,
        help="the folder holding knowledge-checklist.md and memory-checklist.md: rewrite "
        f"{ITEMS} from them first",
    )
    args = parser.parse_args(argv)
    if args.spec is not None:
        (ROOT / ITEMS).write_text(import_items(args.spec), encoding="utf-8")
    if args.check:
        if is_stale(ROOT):
            sys.stderr.write(f"{INDEX} is stale; regenerate it: {COMMAND}\n")
            return 1
        return 0
    write(ROOT)
    return 0


def is_stale(root: Path) -> bool:
    """Whether the committed index differs from what the generator writes now."""
    target = root / INDEX
    return not target.exists() or target.read_text(encoding="utf-8") != render(root)


def write(root: Path) -> None:
    (root / INDEX).write_text(render(root), encoding="utf-8")


if __name__ == "__main__":
    raise SystemExit(main())
