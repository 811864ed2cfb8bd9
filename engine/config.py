"""The one typed configuration object. Precedence: explicit overrides (command-line flags, dashboard
choices), then `MARAG_*` environment variables, then defaults. This is the only module that reads
the environment; everything else receives a `Config`, or the part it needs: kb_store gets the
`KBSettings` that `Config.kb` builds, so the knowledge-base layer never sees engine settings.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from kb_store.defaults import DEFAULT_COLLECTION, EMBEDDINGS
from kb_store.settings import KBSettings

REPO_ROOT = Path(__file__).resolve().parents[1]
LLM_CHOICES = ("facts", "local", "openai")
EMBEDDING_CHOICES = EMBEDDINGS
PLANNER_CHOICES = ("rules", "llm")
PAPER_MAX_NEW_TOKENS = 1200  # the paper's generation length
CPU_MAX_NEW_TOKENS = 64  # local model on the CPU: see docs/llm-backends.md "Per-device defaults"
PAPER_GROUNDING_ROUNDS = 2  # critique-and-regenerate rounds where generation is fast
CPU_GROUNDING_ROUNDS = 0  # local model on the CPU: repair, else the facts text (no regeneration)


@dataclass(frozen=True)
class Config:
    kb_dir: Path = field(default_factory=lambda: Path.cwd() / ".marag" / "kb")
    collection: str = DEFAULT_COLLECTION
    chroma_url: str | None = None  # use a Chroma server (HttpClient) instead of the embedded store
    embedding: str = "minilm"  # minilm (all-MiniLM-L6-v2 from package files) | hashing (tests)
    llm: str = "facts"  # facts | local | openai
    model: str | None = None  # local HF model dir or GGUF file; None = bundled SmolLM2-135M GGUF
    model_cache_dir: Path = field(
        default_factory=lambda: Path.home() / ".cache" / "marag" / "models"
    )
    load_in_4bit: bool = False  # bitsandbytes nf4, CUDA only
    device: str = "auto"  # auto | cpu | cuda
    torch_threads: int = 0  # CPU threads for local generation; 0 = torch's default
    openai_base_url: str | None = None
    openai_model: str = "default"
    openai_api_key: str = "not-needed"
    # 0 = the per-device default: the paper's 1,200 (greedy, repetition penalty 1.1)
    # on a GPU or an OpenAI-compatible server; CPU_MAX_NEW_TOKENS for a local model on the CPU
    max_new_tokens: int = 0
    repetition_penalty: float = 1.1
    number_safe: bool | None = None  # None = on for the local backend, off elsewhere
    batch_domain_agents: bool = True
    planner: str = "rules"  # rules | llm
    # critique-and-regenerate rounds before the facts fallback; -1 = the per-device default:
    # PAPER_GROUNDING_ROUNDS on a GPU or a server, CPU_GROUNDING_ROUNDS for a local model on the CPU
    grounding_rounds: int = -1
    coverage_min: float = 1.0  # share of an agent's key facts its text must state
    visit_window_days: int = 0  # sessions of different instruments this close share a visit
    contexts_dir: Path = REPO_ROOT / "contexts"
    # --- audit trail and access control ---
    audit_db: str | None = None  # SQLite path or SQLAlchemy URL; None = audit.sqlite3 beside the KB
    user: str | None = None  # user recorded by the CLI; None = the OS login
    roles_file: Path = field(default_factory=lambda: Path.cwd() / ".streamlit" / "roles.toml")
    trusted_network: bool = False  # serve on a network address without sign-in (logged)
    # --- end audit trail and access control ---
    #: server folders the dashboard's Data page may read (MARAG_DATA_ROOTS, ':'-separated); none =
    #: reading server paths is off
    data_roots: tuple[Path, ...] = ()
    #: pipeline runs one dashboard process runs at once for thread-safe backends (facts, openai);
    #: the local model always runs one at a time, with a queue
    max_concurrent_runs: int = 8
    #: level of the "marag" loggers (engine.logs): DEBUG, INFO, WARNING, ERROR
    log_level: str = "WARNING"

    def __post_init__(self) -> None:
        if self.max_new_tokens == 0:
            object.__setattr__(self, "max_new_tokens", self.default_max_new_tokens())
        if self.grounding_rounds == -1:
            object.__setattr__(self, "grounding_rounds", self.default_grounding_rounds())

    def default_max_new_tokens(self) -> int:
        """The paper's budget where generation is fast (GPU, server); a small one on the CPU, so
        that a trajectory question (4 domain agents in one batch + the final agent, with the
        grounding's regenerations) answers in under a minute on a 2-core machine."""
        if self.llm == "local" and self.resolved_device() == "cpu":
            return CPU_MAX_NEW_TOKENS
        return PAPER_MAX_NEW_TOKENS

    def default_grounding_rounds(self) -> int:
        """Regeneration rounds per device. On the CPU each round of the bundled model costs about
        20 s per agent batch and, measured on the MA-RAG trajectory question, rarely yields a text
        that passes (docs/llm-backends.md "Per-device defaults"): the CPU default goes from the
        sentence repair straight to the facts text, so the question answers in under a minute."""
        if self.llm == "local" and self.resolved_device() == "cpu":
            return CPU_GROUNDING_ROUNDS
        return PAPER_GROUNDING_ROUNDS

    def resolved_device(self) -> str:
        """cpu | cuda for the local backend ("auto": CUDA when torch sees a GPU)."""
        if self.device != "auto" or self.load_in_4bit:
            return "cuda" if self.load_in_4bit else self.device
        if self.llm != "local":
            return "cpu"
        try:
            import torch
        except ImportError:  # pragma: no cover - torch is a dependency
            return "cpu"
        return "cuda" if torch.cuda.is_available() else "cpu"

    @property
    def demonstration_model(self) -> bool:
        """The bundled SmolLM2-135M: a demonstration model whose prose is checked and often
        replaced (the dashboard labels it so)."""
        return self.llm == "local" and self.model is None

    @classmethod
    def load(
        cls, overrides: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None
    ) -> Config:
        """Build from defaults, then MARAG_<FIELD> variables, then non-None `overrides`."""
        env = os.environ if env is None else env
        cfg = cls()
        values: dict[str, Any] = {}
        for f in fields(cls):
            raw = env.get(f"MARAG_{f.name.upper()}")
            if raw is not None and raw != "":
                values[f.name] = _coerce(cfg, f.name, raw, from_env=True)
        for k, v in (overrides or {}).items():
            if v is not None:
                values[k] = _coerce(cfg, k, v, from_env=False)
        # per-device defaults: resolved for the final backend and device
        values.setdefault("max_new_tokens", 0)
        values.setdefault("grounding_rounds", -1)
        return replace(cfg, **values).validated()

    def validated(self) -> Config:
        if self.llm not in LLM_CHOICES:
            raise ValueError(f"llm must be one of {', '.join(LLM_CHOICES)}, got {self.llm!r}")
        if self.embedding not in EMBEDDING_CHOICES:
            raise ValueError(
                f"embedding must be one of {', '.join(EMBEDDING_CHOICES)}, got {self.embedding!r}"
            )
        if self.planner not in PLANNER_CHOICES:
            raise ValueError(
                f"planner must be one of {', '.join(PLANNER_CHOICES)}, got {self.planner!r}"
            )
        if self.llm == "openai" and not self.openai_base_url:
            raise ValueError("llm=openai needs MARAG_OPENAI_BASE_URL (or --openai-base-url)")
        if not 0.0 <= self.coverage_min <= 1.0:
            raise ValueError(f"coverage_min must be between 0 and 1, got {self.coverage_min}")
        if self.grounding_rounds < 0 or self.max_new_tokens < 1:
            raise ValueError("grounding_rounds must be >= 0 and max_new_tokens >= 1")
        return self

    @property
    def kb(self) -> KBSettings:
        """The knowledge-base settings kb_store works with (the one place they are unpacked)."""
        return KBSettings(
            kb_dir=self.kb_dir,
            collection=self.collection,
            embedding=self.embedding,
            chroma_url=self.chroma_url,
            visit_window_days=self.visit_window_days,
        )

    @property
    def number_safe_effective(self) -> bool:
        return self.llm == "local" if self.number_safe is None else self.number_safe


def _coerce(cfg: Config, name: str, value: Any, *, from_env: bool = False) -> Any:
    """The typed, validated value (engine.config_validation); errors name MARAG_<NAME>."""
    from engine.config_validation import coerce

    known = {f.name for f in fields(cfg)}
    if name not in known:
        raise ValueError(f"unknown configuration key {name!r}")
    return coerce(name, getattr(cfg, name), value, from_env=from_env)
