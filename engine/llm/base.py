"""The LLM interface every agent talks to (the scripted fake the tests use lives in tests/fakes.py).

A request is a system + user message pair plus, optionally, the set of numbers the prompt allows
(used by number-safe decoding in the local backend). `generate` takes a batch so that backends that
can batch (the local transformers model) run the four domain agents in one call; each request still
counts as one LLM call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


class PromptTooLongError(ValueError):
    """The prompt does not fit the model's context window; the engine releases the facts text."""


class Cancelled(RuntimeError):
    """The user cancelled generation (a TextSink reported it); the run stops."""


class TextSink(Protocol):
    """Receives generated text as it is written (the dashboard streams each agent's
    text), and tells the backend when the user cancelled."""

    def on_text(self, agent: str, chunk: str) -> None: ...

    def cancelled(self) -> bool: ...


@dataclass(frozen=True)
class LLMRequest:
    system: str
    user: str
    agent: str = (
        ""  # which node asked: planner, motor, adl, nonmotor, qol, comparison, cohort, final, ...
    )
    allowed_numbers: frozenset[str] | None = (
        None  # number-safe decoding: numbers the text may contain
    )
    max_new_tokens: int | None = None  # None = the backend's configured default


class LLM(Protocol):
    name: str

    def generate(self, requests: Sequence[LLMRequest], sink: TextSink | None = None) -> list[str]:
        """One completion per request, in order; with a `sink`, text is passed to it as it is
        written and generation stops with `Cancelled` when the sink says so."""
        ...
