"""Choose the LLM backend from the configuration: `make_llm(cfg)` returns None for the `facts`
backend (deterministic prose, zero LLM calls), a LocalLLM for `local`, an OpenAICompatLLM for
`openai`. Instances are cached per process by the configuration fields they depend on, so the
dashboard, the CLI and tests load a model once.
"""

from __future__ import annotations

import threading

from engine.config import Config
from engine.llm.base import LLM

_CACHE: dict[tuple, LLM] = {}
_LOCK = threading.Lock()


def cache_key(cfg: Config) -> tuple:
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


def make_llm(cfg: Config) -> LLM | None:
    """The backend for cfg.llm (None for "facts"); cached per process."""
    if cfg.llm == "facts":
        return None
    key = cache_key(cfg)
    with _LOCK:
        llm = _CACHE.get(key)
        if llm is None:
            if cfg.llm == "local":
                from engine.llm.local import LocalLLM

                llm = LocalLLM(cfg)
            elif cfg.llm == "openai":
                from engine.llm.openai_backend import OpenAICompatLLM

                llm = OpenAICompatLLM(cfg)
            else:  # Config.validated() rejects other names; keep a clear message anyway
                raise ValueError(f"unknown llm backend {cfg.llm!r}")
            _CACHE[key] = llm
        return llm


def clear_cache() -> None:
    """Forget cached backends."""
    with _LOCK:
        _CACHE.clear()
