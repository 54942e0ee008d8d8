"""The workspace's settings file, `lcg.toml`, and the environment variables that override it.

One table of keys (ADR 0030). Each key is `[section] name` in the file and
`LCG_<SECTION>_<NAME>` in the environment (upper case; the top-level `promotion_policy` is
`LCG_PROMOTION_POLICY`); the environment wins over the file, the file over the default. A key
the reference (seed 001) names also reads the reference's variable, `LAMBO_PROMOTION_POLICY`,
after the `LCG_*` one: the `LCG_*` name wins when both are set. An unknown section or key, a
value of the wrong type or out of range refuses start-up, naming the key, the rule, the
variable and what was given.
"""

from __future__ import annotations

import difflib
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Final

from lcg.domain import rules
from lcg.domain.errors import DomainError, InvalidParams
from lcg.domain.memory.layers import LayerMerge
from lcg.interfaces.settings_keys import KEYS, TOP, Key
from lcg.interfaces.settings_names import SEED_NAMES, SEED_REFUSED, closest, settings_path

if TYPE_CHECKING:
    from lcg.domain.memory.canonization import Knobs, Policy
    from lcg.domain.memory.gc import GcKnobs
    from lcg.queries.stages import Stages

# Fast start (ADR 0053): the memory policy's modules are imported where a knob is read, so
# a command that only reads its settings (a CLI call through the socket) never loads them.

SETTINGS_FILE: Final = "lcg.toml"


CREDENTIAL_KEYS: Final = ("name", "token", "token_file", "scopes", "sessions")
CREDENTIAL_SCOPES: Final = ("read", "write", "admin", "cypher", "memory")


@dataclass(frozen=True, slots=True)
class CredentialEntry:
    """One `[[serve.credential]]` of the file: a name, its token (or the file holding it) and
    the tool scopes it reaches (ADR 0064); the token file is read when HTTP is served."""

    name: str
    token: str = field(default="", repr=False)
    token_file: str = ""
    scopes: tuple[str, ...] = ()
    sessions: tuple[str, ...] | None = None  # the sessions it may address (None: all)


# Every LAMBO_* variable seed 001 names, and the lcg variable it acts as (M-CFG-006, M-CFG-010).
# LAMBO_AUTH_TOKEN is the bearer token of the HTTP transport, read (after LCG_AUTH_TOKEN) only
# when HTTP is served (lcg.interfaces.http_auth).
AUTH_TOKEN_VARIABLES: Final = ("LCG_AUTH_TOKEN", "LAMBO_AUTH_TOKEN")
LAMBO_NAMES: Final[Mapping[str, str | None]] = {
    **{alias: key.env for key in KEYS for alias in key.aliases},
    "LAMBO_AUTH_TOKEN": "LCG_AUTH_TOKEN",
}


@dataclass(frozen=True, slots=True)
class Tuning:
    """The values of every key, after the file and the environment."""

    values: Mapping[str, object] = field(default_factory=lambda: {k.label: k.default for k in KEYS})
    source: Mapping[str, str] = field(default_factory=dict)  # label -> "file" | "env"
    credentials: tuple[CredentialEntry, ...] = ()  # the file's [[serve.credential]] entries

    def __repr__(self) -> str:  # `[store] url` may carry a password: never shown (ADR 0073)
        shown = {k: "***" if k == "[store] url" and v else v for k, v in self.values.items()}
        return f"Tuning(values={shown!r}, source={self.source!r}, credentials={self.credentials!r})"

    def get(self, section: str, name: str) -> object:
        return self.values[Key(section, name, str, None).label]

    def _float(self, section: str, name: str) -> float:
        value = self.get(section, name)
        assert isinstance(value, int | float)
        return float(value)

    def _int(self, section: str, name: str) -> int:
        value = self.get(section, name)
        assert isinstance(value, int)
        return value

    def _bool(self, section: str, name: str) -> bool:
        return bool(self.get(section, name))

    @property
    def layers(self) -> tuple[str, ...]:
        """[serve] layers: the session names, in the configured order (ADR 0080)."""
        value = self.get("serve", "layers")
        assert isinstance(value, tuple)
        return value

    def _secs(self, section: str, name: str) -> timedelta:
        return timedelta(seconds=self._float(section, name))

    @property
    def policy(self) -> Policy:
        from lcg.domain.memory.canonization import parse_policy  # noqa: PLC0415 (ADR 0053)

        return parse_policy(str(self.get(TOP, "promotion_policy")))

    @property
    def fusion(self) -> str:
        return str(self.get("fusion", "strategy"))

    @property
    def skip_redundant(self) -> bool:
        return self._bool("selection", "skip_redundant")

    @property
    def similar_signals(self) -> bool:
        return self._bool("selection", "similar_signals")

    @property
    def stages(self) -> Stages:
        """[retrieval]: passage search's and recall's stages after fusion (ADR 0068)."""
        from lcg.queries.stages import Stages  # noqa: PLC0415 (ADR 0053)

        return Stages(
            session_weight=self._float("retrieval", "session_weight"),
            per_session=self._int("retrieval", "per_session"),
            time_filter=self._bool("retrieval", "time_filter"),
            entity_hop=self._float("retrieval", "entity_hop"),
            speaker_weight=self._float("retrieval", "speaker_weight"),
            rrf_vector=self._float("retrieval", "rrf_vector"),
            rrf_k=self._int("retrieval", "rrf_k"),
            budget_pack=self._bool("retrieval", "budget_pack"),
        )

    @property
    def recall_defaults(self) -> tuple[int, int, int]:
        """[recall]: lambo_recall's top_k, max_tokens and traversal_depth when not sent."""
        return (
            self._int("recall", "top_k"),
            self._int("recall", "max_tokens"),
            self._int("recall", "traversal_depth"),
        )

    @property
    def accept_client_vectors(self) -> bool:
        """[embedder] accept_client_vectors: a client's own vectors are accepted (ADR 0093)."""
        return self._bool("embedder", "accept_client_vectors")

    @property
    def supersession_line(self) -> str:
        return str(self.get("embedder", "suspected_supersession_line"))

    @property
    def layer_merge(self) -> LayerMerge:
        """[serve] layer_merge: a layered recall's order, rank or relevance (ADR 0107)."""
        return "rank" if self.get("serve", "layer_merge") == "rank" else "relevance"

    def text(self, section: str, name: str) -> str:
        return str(self.get(section, name))

    def get_int(self, section: str, name: str) -> int:
        return self._int(section, name)

    def get_float(self, section: str, name: str) -> float:
        return self._float(section, name)

    @property
    def name_similarity(self) -> float:
        return self._float("extraction", "name_similarity")

    @property
    def tick_interval(self) -> timedelta:
        return self._secs("daemon", "tick_interval_secs")

    def knobs(self) -> Knobs:
        from lcg.domain.memory.canonization import Knobs  # noqa: PLC0415 (ADR 0053)

        return Knobs(
            promotion_policy=self.policy,
            min_peer_count=self._int("canonization", "min_peer_count"),
            edge_min_age=self._secs("canonization", "edge_min_age_secs"),
            eval_interval=self._secs("daemon", "canonization_eval_interval_secs"),
            batch_size=self._int("canonization", "batch_size"),
            repromotion_cooldown=self._secs("canonization", "repromotion_cooldown_secs"),
            max_canonical_nodes=self._int("canonization", "max_canonical_nodes"),
            supersede=self._bool("canonization", "supersede"),
        )

    def gc_knobs(self) -> GcKnobs:
        from lcg.domain.memory.gc import GcKnobs  # noqa: PLC0415 (ADR 0053)

        return GcKnobs(
            gc_interval=self._int("daemon", "gc_interval"),
            gc_max_interval=self._secs("daemon", "gc_max_interval_secs"),
            gc_idle_floor=self._int("daemon", "gc_idle_floor"),
            max_canonical_nodes=self._int("canonization", "max_canonical_nodes"),
            edge_min_age=self._secs("canonization", "edge_min_age_secs"),
        )

    def with_values(self, **changes: object) -> Tuning:
        """A copy with `section__name=value` changes (tests and the demo)."""
        values = dict(self.values)
        for dunder, value in changes.items():
            section, _, name = dunder.rpartition("__")
            values[_key(section, name).label] = value
        return Tuning(values=values, source=self.source, credentials=self.credentials)


def _key(section: str, name: str) -> Key:
    found = _lookup(section, name)
    if found is None:
        raise KeyError(f"{section}.{name}")
    return found


def _lookup(section: str, name: str) -> Key | None:
    return next((k for k in KEYS if k.section == section and k.name == name), None)


def load_tuning(workspace: Path, env: Mapping[str, str]) -> Tuning:
    """The settings file (`lcg.toml` or `lambo.toml`, if there is one), then the
    environment."""
    path = settings_path(workspace)
    values: dict[str, object] = {key.label: key.default for key in KEYS}
    source: dict[str, str] = {}
    credentials: tuple[CredentialEntry, ...] = ()
    if path is not None:
        entries, credentials = _file_entries(path)
        for key, raw in entries:
            values[key.label] = _checked(key, raw, f"{path.name} {key.label}")
            source[key.label] = "file"
    for key in KEYS:
        for variable in key.variables:  # the first one set wins: LCG_*, then LAMBO_*
            text = env.get(variable, "").strip()
            if text:
                values[key.label] = _checked(key, _from_env(key, text), variable)
                source[key.label] = "env"
                break
    return Tuning(values=values, source=source, credentials=credentials)


def _file_entries(path: Path) -> tuple[list[tuple[Key, object]], tuple[CredentialEntry, ...]]:
    file = path.name
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        raise InvalidParams(file, "must be a readable UTF-8 file", str(error)) from None
    except tomllib.TOMLDecodeError as error:
        raise InvalidParams(file, "must be valid TOML", str(error)) from None
    sections = sorted({key.section for key in KEYS} - {TOP})
    entries: list[tuple[Key, object]] = []
    credentials: tuple[CredentialEntry, ...] = ()
    for name, value in document.items():
        if isinstance(value, dict):
            if name not in sections:
                raise InvalidParams(
                    f"{file} [{name}]",
                    "unknown section"
                    + closest(name, sections, "[{}]")
                    + "; known: "
                    + ", ".join(f"[{s}]" for s in sections),
                )
            table = dict(value)
            if name == "serve" and "credential" in table:
                credentials = _credentials(table.pop("credential"), file)
            entries.extend((_known(name, key, file), v) for key, v in table.items())
        elif name in SEED_NAMES:
            entries.append((_key(*SEED_NAMES[name]), value))
        else:
            entries.append((_known(TOP, name, file), value))
    labels = [key.label for key, _ in entries]
    for label in labels:
        if labels.count(label) > 1:
            raise InvalidParams(f"{file} {label}", "is set twice (once under the reference's name)")
    return entries, credentials


def _credentials(raw: object, file: str = SETTINGS_FILE) -> tuple[CredentialEntry, ...]:
    """The `[[serve.credential]]` entries, each checked as a key is: unknown keys refused."""
    where = f"{file} [[serve.credential]]"
    if not isinstance(raw, list):
        raise InvalidParams(where, "must be an array of tables ([[serve.credential]])")
    entries = [_credential(item, f"{where} #{n}") for n, item in enumerate(raw, 1)]
    names = [entry.name for entry in entries]
    for name in names:
        if names.count(name) > 1:
            raise InvalidParams(f"{where} name", "must be unique", f"got {name!r} twice")
    return tuple(entries)


def _credential(item: object, where: str) -> CredentialEntry:
    if not isinstance(item, dict):
        raise InvalidParams(where, "must be a table with name, token or token_file, scopes")
    for key in item:
        if key not in CREDENTIAL_KEYS:
            close = closest(key, list(CREDENTIAL_KEYS))
            known = f"unknown key{close}; known: " + ", ".join(CREDENTIAL_KEYS)
            raise InvalidParams(f"{where} {key}", known)
    name, token, token_file = (item.get(key, "") for key in ("name", "token", "token_file"))
    scopes = item.get("scopes")
    for key, value in (("name", name), ("token", token), ("token_file", token_file)):
        if not isinstance(value, str):
            raise InvalidParams(f"{where} {key}", "must be a string", f"got {value!r}")
    if not str(name).strip():
        raise InvalidParams(f"{where} name", "is required (a non-empty string)")
    if bool(token) == bool(token_file):
        raise InvalidParams(f"{where} token", "exactly one of token and token_file is required")
    if (
        not isinstance(scopes, list)
        or not scopes
        or any(scope not in CREDENTIAL_SCOPES for scope in scopes)
    ):
        rule = "must be a non-empty list among " + ", ".join(CREDENTIAL_SCOPES)
        raise InvalidParams(f"{where} scopes", rule, f"got {scopes!r}")
    sessions = _credential_sessions(item.get("sessions"), where)
    return CredentialEntry(str(name).strip(), str(token), str(token_file), tuple(scopes), sessions)


def _credential_sessions(raw: object, where: str) -> tuple[str, ...] | None:
    """A credential's `sessions` (ADR 0071): absent, every session; else a non-empty list of
    session names, each by the session-name rule."""
    if raw is None:
        return None
    rule = "must be a non-empty list of session names"
    if not isinstance(raw, list) or not raw:
        raise InvalidParams(f"{where} sessions", rule, f"got {raw!r}")
    for name in raw:
        if not isinstance(name, str) or re.fullmatch(rules.GROUP_ID_PATTERN, name) is None:
            session_rule = rules.PATTERN_RULES[rules.GROUP_ID_PATTERN]
            raise InvalidParams(f"{where} sessions", f"{rule}: {session_rule}", f"got {name!r}")
    return tuple(dict.fromkeys(raw))


def _known(section: str, name: str, file: str = SETTINGS_FILE) -> Key:
    found = _lookup(section, name)
    if found is not None:
        return found
    here = [key.name for key in KEYS if key.section == section]
    if section == TOP:
        here += list(SEED_NAMES)
    where = "top level" if section == TOP else f"[{section}]"
    label = name if section == TOP else f"[{section}] {name}"
    if name in SEED_REFUSED:  # the reference's knob with no counterpart here (ADR 0088)
        raise InvalidParams(f"{file} {label}", SEED_REFUSED[name])
    close = closest(name, here)
    if not close:  # a key of another section, or one written under the wrong one
        labels = {key.label: key.label for key in KEYS} | {key.name: key.label for key in KEYS}
        found_label = difflib.get_close_matches(name, list(labels), n=1, cutoff=0.6)
        close = f"; did you mean {labels[found_label[0]]}?" if found_label else ""
    raise InvalidParams(
        f"{file} {label}", f"unknown key{close}; known at {where}: {', '.join(here)}"
    )


_TRUTH: Final = {"1": True, "true": True, "yes": True, "on": True} | {
    "0": False, "false": False, "no": False, "off": False
}  # fmt: skip


def _from_env(key: Key, text: str) -> object:
    """The environment's text as the key's type where it parses; else the text, for the error."""
    if key.kind is bool:
        return _TRUTH.get(text.lower(), text)
    if key.kind is tuple:
        return [part.strip() for part in text.split(",") if part.strip()]
    if key.kind in (int, float):
        for parse in (int, float):
            try:
                return parse(text)
            except ValueError:
                continue
    return text


def _checked(key: Key, value: object, where: str) -> object:
    """`value` as the key's type, or InvalidParams naming `where`, the rule and the value."""
    bad = InvalidParams(where, key.rule, f"got {value!r}")
    checked = _typed(key, value, where, bad)
    for refused, why in key.refused:
        if checked == refused:
            raise InvalidParams(where, why, f"got {value!r}")
    return checked


def _typed(key: Key, value: object, where: str, bad: InvalidParams) -> object:
    if key.kind is bool:
        if not isinstance(value, bool):
            raise bad
        return value
    if key.kind is str:
        if not isinstance(value, str):
            raise bad
        return _choice(key, value, where)
    if key.kind is tuple:
        names = value if isinstance(value, list) else None
        if names is None or not all(
            isinstance(n, str) and re.fullmatch(rules.GROUP_ID_PATTERN, n) for n in names
        ):
            raise bad
        return tuple(dict.fromkeys(names))
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise bad
    if key.kind is int and not isinstance(value, int):
        raise bad
    low = key.low if key.low is not None else float("-inf")
    high = key.high if key.high is not None else float("inf")
    if not low <= value <= high:
        raise bad
    return value if key.kind is int else float(value)


def _choice(key: Key, value: str, where: str) -> str:
    if key.name == "promotion_policy":
        from lcg.domain.memory.canonization import parse_policy  # noqa: PLC0415 (ADR 0053)

        try:
            return parse_policy(value).value
        except DomainError:
            raise InvalidParams(where, key.rule, f"got {value!r}") from None
    if not key.choices:
        return value.strip()
    for choice in key.choices:
        if value.strip().lower() == choice.lower():
            return choice
    raise InvalidParams(where, key.rule, f"got {value!r}")


def describe() -> list[dict[str, object]]:
    """Every key with its default, environment variable and meaning (docs and `lcg settings`)."""
    return [
        {
            "key": key.label,
            "env": key.env,
            "aliases": list(key.aliases),
            "default": list(key.default) if isinstance(key.default, tuple) else key.default,
            "rule": key.rule,
            "meaning": key.meaning,
        }
        for key in KEYS
    ]
