"""Choose the LLM backend from the configuration: `make_llm(cfg)` returns None for the `facts`
backend (deterministic prose, zero LLM calls), a LocalLLM for `local`, an OpenAICompatLLM for
`openai`. Instances are cached per process by the configuration fields they depend on, so the
dashboard, the CLI and tests load a model once.
"""

from __future__ import annotations

from engine.config import Config
from engine.llm.base import LLM
from engine.llm.keyed_cache import KeyedCache

#: the backends made in this process, by cache_key
_BACKENDS: KeyedCache[LLM] = KeyedCache()


def cache_key(cfg: Config) -> tuple:
    """The configuration fields cfg.llm's backend depends on (equal keys share one instance)."""
    if cfg.llm == "local":
        return (
            "local",
            str(cfg.model),
            str(cfg.model_cache_dir),
            cfg.load_in_4bit,
            cfg.device,
            cfg.max_new_tokens,
            cfg.repetition_penalty,
            cfg.number_safe_effective,
        )
    if cfg.llm == "openai":
        return (
            "openai",
            cfg.openai_base_url,
            cfg.openai_model,
            cfg.openai_api_key,
            cfg.max_new_tokens,
        )
    return (cfg.llm,)


def _new_backend(cfg: Config) -> LLM:
    """A new backend instance for cfg.llm ("local" or "openai")."""
    if cfg.llm == "local":
        from engine.llm.local import LocalLLM

        return LocalLLM(cfg)
    if cfg.llm == "openai":
        from engine.llm.openai_backend import OpenAICompatLLM

        return OpenAICompatLLM(cfg)
    # Config.validated() rejects other names; keep a clear message anyway
    raise ValueError(f"unknown llm backend {cfg.llm!r}")


def make_llm(cfg: Config) -> LLM | None:
    """The backend for cfg.llm (None for "facts"); cached per process."""
    if cfg.llm == "facts":
        return None
    return _BACKENDS.get_or_make(cache_key(cfg), lambda: _new_backend(cfg))


def clear_cache() -> None:
    """Forget cached backends."""
    _BACKENDS.clear()
