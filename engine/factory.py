"""open_engine(cfg): the Engine over the persistent KB and the configured LLM backend.

Imports the KB store and the LLM factory lazily so that `marag plan` and the facts backend do not
load Chroma or model code they do not need.
"""

from __future__ import annotations

from engine.config import Config
from engine.pipeline import Engine


def open_kb(cfg: Config):
    from kb_store.chroma_kb import open_kb as _open_kb

    return _open_kb(
        cfg.kb_dir, embedding=cfg.embedding, collection=cfg.collection, chroma_url=cfg.chroma_url
    )


def open_llm(cfg: Config):
    if cfg.llm == "facts":
        return None
    from engine.llm.factory import make_llm

    return make_llm(cfg)


def open_engine(cfg: Config) -> Engine:
    return Engine(cfg, open_kb(cfg), open_llm(cfg))
