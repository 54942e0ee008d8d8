"""Curation: merging entities (P-124) and the workspace's corrections file (P-125)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, NotRequired, TypedDict

import yaml
from pydantic import Field

from lcg.commands import corrections, curation
from lcg.commands.writer import WriteContext
from lcg.domain import corrections as correction_file
from lcg.domain import rules
from lcg.domain.commands import MergeEntities
from lcg.domain.corrections import Issue
from lcg.domain.errors import InvalidParams
from lcg.domain.ids import DEFAULT_GROUP, EntityUuid, GroupId
from lcg.interfaces.app import App
from lcg.interfaces.params import GroupIdField, NoParams, Params, UuidField

AliasName = Annotated[
    str, Field(min_length=1, max_length=rules.MAX_NAME, pattern=rules.NOT_BLANK_PATTERN)
]
MAX_ALIASES = 1_000  # one merge call: bounded like a read's num_results


class MergeEntitiesParams(Params):
    canonical_uuid: UuidField | None = Field(
        None, description="The entity the aliases fold into (or give canonical_name)."
    )
    canonical_name: str | None = Field(
        None,
        min_length=1,
        max_length=rules.MAX_NAME,
        pattern=rules.NOT_BLANK_PATTERN,
        description="The canonical entity by name in group_id (or give canonical_uuid).",
    )
    alias_uuids: list[UuidField] = Field(
        default_factory=list, max_length=MAX_ALIASES, description="Entities to merge away."
    )
    alias_names: list[AliasName] = Field(
        default_factory=list,
        max_length=MAX_ALIASES,
        description="Entities to merge away, by name in group_id (the oldest of that name).",
    )
    merge_all_by_name: bool = Field(
        False,
        description="Also merge every other entity of group_id sharing the canonical's name"
        " (and every entity of each alias name).",
    )
    group_id: GroupIdField = DEFAULT_GROUP
    dry_run: bool = Field(False, description="Return the plan; write nothing.")


def _merge_command(app: App, q: MergeEntitiesParams) -> MergeEntities:
    if (q.canonical_uuid is None) == (q.canonical_name is None):
        raise InvalidParams(
            "canonical_uuid",
            "give exactly one of canonical_uuid and canonical_name",
            "both given" if q.canonical_uuid is not None else "neither given",
        )
    if not (q.alias_uuids or q.alias_names or q.merge_all_by_name):
        raise InvalidParams(
            "alias_uuids", "name at least one alias (alias_uuids, alias_names) or merge_all_by_name"
        )
    return MergeEntities(
        group_id=GroupId(q.group_id),
        canonical_uuid=None if q.canonical_uuid is None else EntityUuid(q.canonical_uuid),
        canonical_name=q.canonical_name,
        alias_uuids=tuple(dict.fromkeys(EntityUuid(u) for u in q.alias_uuids)),
        alias_names=tuple(q.alias_names),
        merge_all_by_name=q.merge_all_by_name,
        dry_run=q.dry_run,
        now=app.now(),
    )


def merge_entities(app: App, q: MergeEntitiesParams) -> curation.MergeResult:
    """Merge alias entities into a canonical one of group_id: aliases become Merged tombstones
    (merged_into: the canonical), their edges move to it; edges becoming self-loops or
    duplicates are invalidated; other groups' edges are never rewritten. dry_run returns the
    plan and writes nothing."""
    command = _merge_command(app, q)
    return app.writes.writer.execute(lambda ctx: curation.merge_entities(ctx, command))


class ValidateResult(TypedDict):
    """knowledge_validate_corrections (P-125)."""

    valid: bool
    message: str
    total_corrections: int
    unapplied_corrections: int
    issues: list[Issue]
    warnings: list[Issue]


class ApplyCorrectionsParams(Params):
    dry_run: bool = Field(False, description="Check and simulate every correction; write nothing.")


class ApplyResult(TypedDict):
    """knowledge_apply_corrections (P-125); `applied` counts what was written (0 on a dry run
    or a failure: then nothing was)."""

    success: bool
    applied: int
    skipped: int
    errors: list[str]
    details: list[corrections.CorrectionDetail]
    message: NotRequired[str]


def _read_file(app: App) -> tuple[Path, object, list[Issue]]:
    """The corrections file's data as YAML gives it (None: no file or an empty one)."""
    path = app.reads.settings.workspace / correction_file.FILE_NAME
    try:
        if path.stat().st_size > correction_file.MAX_FILE_BYTES:
            too_big = f"must be at most {correction_file.MAX_FILE_BYTES} bytes"
            return path, None, [Issue(correction=None, field=path.name, message=too_big)]
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return path, None, []
    except (OSError, UnicodeDecodeError) as error:
        return path, None, [Issue(correction=None, field=path.name, message=str(error))]
    try:
        return path, yaml.safe_load(text), []
    except yaml.YAMLError as error:
        return path, None, [Issue(correction=None, field=path.name, message=f"not YAML: {error}")]


def _run(app: App, parsed: correction_file.Parsed, *, write: bool) -> corrections.CorrectionsReport:
    now = app.now()

    def handler(ctx: WriteContext) -> corrections.CorrectionsReport:
        return corrections.run_corrections(ctx, parsed.corrections, now, write=write)

    try:
        return app.writes.writer.execute(handler)
    except corrections.RolledBack as rolled_back:
        return rolled_back.report


def validate_corrections(app: App, q: NoParams) -> ValidateResult:
    """Check the workspace's knowledge-corrections.yaml against the graph without writing:
    every correction is simulated in order and rolled back. Issues and warnings name the
    correction and the field; corrections applied before are not counted as unapplied."""
    path, data, issues = _read_file(app)
    parsed = correction_file.parse(data) if not issues else correction_file.Parsed()
    issues += parsed.issues
    report = _run(app, parsed, write=False)
    issues += report.errors
    unapplied = parsed.total - report.count("skipped")
    if not path.exists():
        message = f"no {path.name} in the workspace: nothing to correct"
    elif issues:
        message = f"{len(issues)} issue(s) in {path.name}; apply would write nothing"
    else:
        message = f"{path.name} is valid: {unapplied} of {parsed.total} correction(s) unapplied"
    return ValidateResult(
        valid=not issues,
        message=message,
        total_corrections=parsed.total,
        unapplied_corrections=unapplied,
        issues=issues,
        warnings=report.warnings,
    )


def apply_corrections(app: App, q: ApplyCorrectionsParams) -> ApplyResult:
    """Apply the workspace's knowledge-corrections.yaml (merge, rename, retype, set_summary,
    delete_edge) in one batch, all or nothing: one failing correction writes nothing. Applied
    corrections are recorded and skipped by later runs; dry_run simulates and writes nothing."""
    path, data, issues = _read_file(app)
    parsed = correction_file.parse(data) if not issues else correction_file.Parsed()
    issues += parsed.issues
    if issues:
        return ApplyResult(
            success=False,
            applied=0,
            skipped=0,
            errors=[_issue_text(issue) for issue in issues],
            details=[],
            message=f"{path.name} is not valid: nothing was written",
        )
    report = _run(app, parsed, write=not q.dry_run)
    failed = bool(report.errors)
    result = ApplyResult(
        success=not failed,
        applied=0 if failed else report.count("applied", "unchanged"),
        skipped=report.count("skipped"),
        errors=[_issue_text(issue) for issue in report.errors],
        details=report.details,
    )
    if not path.exists():
        result["message"] = f"no {path.name} in the workspace: nothing to correct"
    elif failed:
        result["message"] = f"{len(report.errors)} correction(s) failed: nothing was written"
    elif q.dry_run:
        would = report.count("would_apply", "unchanged")
        result["message"] = f"dry run: {would} correction(s) would apply; nothing was written"
    return result


def _issue_text(issue: Issue) -> str:
    where = f"{issue['correction']}: " if issue["correction"] else ""
    return f"{where}{issue['field']}: {issue['message']}"
