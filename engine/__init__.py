"""The MA-RAG engine: plan, retrieve, route, agents, final agent, grounding, LLM backends, CLI.

The public API is two names, loaded on first use so that `import engine.<module>` stays light:

    from engine import Config, open_engine
    result = open_engine(Config.load()).ask("How did patient 3 change?")   # -> engine.types.Result

`open_engine(cfg, kb=None, llm=...)` wires the KB and the LLM backend that `cfg` names
(engine.engine_factory); `Engine.ask(query, plan=None)` plans the query (or runs the given
engine.types.Plan) and returns the Result whose JSON form `marag ask --json` prints. The CLI, the
dashboard, the evaluation and the benchmarks use these names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from engine.config import Config
    from engine.engine_factory import open_engine

__all__ = ["Config", "open_engine"]


def __getattr__(name: str) -> Any:
    if name == "Config":
        from engine.config import Config

        return Config
    if name == "open_engine":
        from engine.engine_factory import open_engine

        return open_engine
    raise AttributeError(f"module 'engine' has no attribute {name!r}")
