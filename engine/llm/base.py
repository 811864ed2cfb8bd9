"""The LLM interface every agent talks to, and the scripted fake used by tests.

A request is a system + user message pair plus, optionally, the set of numbers the prompt allows
(used by number-safe decoding in the local backend). `generate` takes a batch so that backends that
can batch (the local transformers model) run the four domain agents in one call; each request still
counts as one LLM call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol


class PromptTooLongError(ValueError):
    """The prompt does not fit the model's context window; the engine releases the facts text."""


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

    def generate(self, requests: Sequence[LLMRequest]) -> list[str]:
        """One completion per request, in order."""
        ...


@dataclass
class FakeLLM:
    """Scripted fake: `script` is a callable (request -> text) or a list of texts used in turn.
    Records every request so tests can assert what reached a prompt."""

    script: Callable[[LLMRequest], str] | list[str] = field(default_factory=list)
    name: str = "fake"
    calls: list[LLMRequest] = field(default_factory=list)
    batches: list[int] = field(default_factory=list)

    def generate(self, requests: Sequence[LLMRequest]) -> list[str]:
        self.batches.append(len(requests))
        out = []
        for r in requests:
            self.calls.append(r)
            if callable(self.script):
                out.append(self.script(r))
            elif self.script:
                out.append(self.script.pop(0))
            else:
                out.append(f"[{r.agent or 'llm'} narrative]")
        return out
