"""The one way to build an Engine: `open_engine(cfg)` wires the KB (from `cfg.kb`, a kb_store
KBSettings) and the LLM backend (engine.llm.backends.make_llm, cached per process) into
engine.pipeline.Engine. The CLI, the dashboard, the evaluation and the benchmarks all call it; a
caller that already holds the KB (an in-memory one, an evaluation dataset) or an LLM passes it in.

Imports the KB store and the LLM backends lazily so that `marag plan` and the facts backend do not
load Chroma or model code they do not need.
"""

from __future__ import annotations

import enum
import gc
from typing import TYPE_CHECKING

from engine.config import Config

if TYPE_CHECKING:  # pragma: no cover
    from engine.llm.base import LLM
    from engine.pipeline import Engine
    from kb_store.reader import KBReader


class _Default(enum.Enum):
    FROM_CONFIG = "from-config"


#: The default `llm`: the backend cfg.llm names (None itself means no LLM: the facts text).
FROM_CONFIG = _Default.FROM_CONFIG


def open_kb(cfg: Config) -> KBReader:
    """The KB reader for cfg.kb; raises kb_store.chroma_kb.KBMissingError when there is none."""
    return cfg.kb.open()


def open_llm(cfg: Config) -> LLM | None:
    """The backend cfg.llm names (None for facts), cached per process."""
    if cfg.llm == "facts":
        return None
    from engine.llm.backends import make_llm

    return make_llm(cfg)


def open_engine(
    cfg: Config, *, kb: KBReader | None = None, llm: LLM | None | _Default = FROM_CONFIG
) -> Engine:
    """An Engine over `kb` (default: the KB cfg.kb names) and `llm` (default: cfg.llm's backend;
    None: no LLM, the deterministic facts text)."""
    from engine.pipeline import Engine

    reader = kb if kb is not None else open_kb(cfg)
    model = open_llm(cfg) if llm is FROM_CONFIG else llm
    return Engine(cfg, reader, model)


def settle_heap() -> None:
    """For a long-lived process (the dashboard), once its engine is open: collect, then move every
    object built so far (modules, the KB handle and its fact table, the model) out of the
    collector's generations (`gc.freeze`). They live as long as the process, and a full
    collection no longer walks them: on the 10,000-patient KB a full collection paused one
    trajectory question in about twelve by 65-85 ms; with the startup objects frozen, by 3 ms at
    most (bench/README.md). Objects created later are collected as usual."""
    gc.collect()
    gc.freeze()
