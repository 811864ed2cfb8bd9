"""The dashboard's access to the engine, the KB and the clinical references.

Owns the process-wide, cached and never-mutated objects (`st.cache_resource`): one engine (KB handle
+ LLM) per configuration, built by the engine's public API (engine.open_engine, the
one the CLI, the evaluation and the benchmarks use), and the clinical references from contexts/. A
cached engine is shared by every browser session: its `RunGate` (dashboard.run_gate) lets runs of
thread-safe backends (facts, openai) overlap and queues runs of the local model, showing each
waiting user their position. Per-user results live in `st.session_state` (see dashboard.session),
never here.

The factory is looked up on its module at call time, so tests replace it with monkeypatch.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

import streamlit as st

import engine as engine_api
from dashboard.clinical import ClinicalRefs, load_refs
from dashboard.run_gate import RunGate
from engine import engine_factory
from engine.config import Config
from engine.types import Plan, Result

BACKEND_LABELS = {
    "facts": "facts (deterministic text, no model)",
    "local": "local (in-process transformers model)",
    "openai": "openai (OpenAI-compatible server)",
}
DEMO_MODEL_NOTE = (
    "Demonstration model: the bundled SmolLM2-135M is a tiny model. Every sentence it writes is "
    "checked against the facts; unsupported sentences are removed, and its text is often "
    "replaced by the facts text. Configure a capable model (MARAG_MODEL, or an OpenAI-compatible "
    "server) for real use."
)


class KBUnavailable(Exception):
    """No KB at the configured location (or it cannot be opened); the message says where."""


@dataclass(frozen=True, eq=False)
class EngineHandle:
    """A ready engine and the KB reader it reads, shared read-only across sessions."""

    engine: Any  # engine.pipeline.Engine
    kb: Any  # kb_store.reader.KBReader
    backend: str
    gate: RunGate  # concurrent runs for thread-safe backends; a queue for the local model

    def run(
        self,
        plan: Plan,
        on_node: Callable[[str, str], None] | None = None,
        on_wait: Callable[[int], None] | None = None,
        sink: Any = None,
    ) -> Result:
        """Run the pipeline when a slot is free; `on_wait(position)` while queued; `sink`
        receives the model's text as it is written."""
        with self.gate.slot(on_wait):
            if sink is None:
                return self.engine.run(plan, on_node=on_node)
            return self.engine.run(plan, on_node=on_node, sink=sink)

    def plan(self, query: str) -> Plan:
        if self.engine.cfg.planner != "llm" or self.backend == "facts":
            return self.engine.plan(query)  # the rules planner: no model, no slot needed
        with self.gate.slot():
            return self.engine.plan(query)


def config_key(cfg: Config) -> str:
    """A stable string naming a configuration (the cache key of its engine)."""
    return "|".join(
        f"{f.name}={getattr(cfg, f.name)!s}" for f in fields(cfg) if f.name != "openai_api_key"
    )


def base_config() -> Config:
    return Config.load()


@functools.cache
def _bundled_model_installed() -> bool:
    try:
        from engine.llm.local import bundled_gguf_path

        return bundled_gguf_path() is not None
    except Exception:  # noqa: BLE001 - no local backend installed
        return False


def available_backends(cfg: Config) -> list[str]:
    """Backends this deployment can offer: facts always; local when a model is configured or the
    bundled GGUF is installed; openai when a server URL is configured."""
    out = ["facts"]
    if cfg.model is not None or _bundled_model_installed():
        out.append("local")
    if cfg.openai_base_url:
        out.append("openai")
    if cfg.llm not in out:
        out.append(cfg.llm)
    return out


def config_for(backend: str | None) -> Config:
    return Config.load({"llm": backend} if backend else None)


@st.cache_resource(
    show_spinner="Opening the knowledge base..."  # a local model loads on its first run, max_entries=4
)
def _cached_engine(key: str, _cfg: Config) -> EngineHandle:  # noqa: ARG001  # Streamlit cache key
    from kb_store.kb_location import KBMissingError

    try:
        engine = engine_api.open_engine(_cfg)  # the public API, resolved at call time
    except KBMissingError as e:
        raise KBUnavailable(str(e)) from e
    engine_factory.settle_heap()  # the engine lives as long as the process
    gate = RunGate.for_backend(_cfg.llm, _cfg.max_concurrent_runs)
    return EngineHandle(engine, engine.kb, _cfg.llm, gate)


def get_engine(cfg: Config) -> EngineHandle:
    """The cached engine for `cfg`. Raises KBUnavailable."""
    return _cached_engine(config_key(cfg), cfg)


def clear_engines() -> None:
    """Forget cached engines (after the KB was rebuilt); the next page run reopens the KB."""
    _cached_engine.clear()
    _patient_ids.clear()


@st.cache_resource(max_entries=4)
def _refs(contexts_dir: str) -> ClinicalRefs:
    from pathlib import Path

    return load_refs(Path(contexts_dir))


def clinical_refs(cfg: Config) -> ClinicalRefs:
    return _refs(str(cfg.contexts_dir))


@st.cache_data(max_entries=8, ttl=300, show_spinner=False)
def _patient_ids(key: str, _handle: EngineHandle) -> list[int]:  # noqa: ARG001  # Streamlit cache key
    return [int(p) for p in _handle.kb.patient_ids()]


def patient_ids(handle: EngineHandle, cfg: Config) -> list[int]:
    return _patient_ids(config_key(cfg), handle)
