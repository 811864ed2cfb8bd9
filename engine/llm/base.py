"""The LLM interface every agent talks to (the scripted fake the tests use lives in tests/fakes.py).

A request is a system + user message pair plus, optionally, the set of numbers the prompt allows
(used by number-safe decoding in the local backend). `generate` takes a batch so that backends that
can batch (the local transformers model) run the four domain agents in one call; each request still
counts as one LLM call.

Progress: a sink may also have `on_progress(agent, stage, tokens)` (optional, `ProgressSink`);
`report_progress` calls it when it is there, so a sink with only `on_text` keeps working. Backends
report, per request, the stages below in order: the model loading (local, first call only), the
prompt being read (prefill) or the request waiting for the server, "writing" with the number of
tokens generated so far (rising), and "done" with the final count.
"""

from __future__ import annotations

import re
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


#: progress stages, in the order a backend reports them for one request
LOADING = "loading model"
PREFILL = "reading the prompt"
WAITING = "waiting for the server"
WRITING = "writing"
DONE = "done"


class ProgressSink(Protocol):
    """The optional part of a TextSink: which agent's request is at which stage, and how many
    tokens it has generated so far (0 before it writes)."""

    def on_progress(self, agent: str, stage: str, tokens: int) -> None: ...


def report_progress(sink: object | None, agent: str, stage: str, tokens: int = 0) -> None:
    """Pass a progress event to `sink` when it takes them (a sink without `on_progress`, or
    none, ignores it)."""
    on_progress = getattr(sink, "on_progress", None)
    if on_progress is not None:
        on_progress(agent, stage, tokens)


#: a citation marker as a model writes it, BEFORE the clause it supports: "[S4]" or "[S4,S7]"
#: (statement ids as the prompt gives them). It cites the text after it up to the next marker or
#: the end of the sentence, so that decoding knows the cited statements while the clause's numbers
#: are written. Decoding (engine.llm.number_safe) and the check of cited text read this one
#: definition; the digits of a marker are not numbers of the text.
CITE_MARKER = re.compile(r"\[(S\d+(?:,\s?S\d+)*)\]")


def marker_ids(inner: str) -> tuple[str, ...]:
    """The statement ids of a marker's inside ("S4,S7" -> ("S4", "S7"))."""
    return tuple(x.strip() for x in inner.split(","))


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
    #: None = the backend's cfg.max_new_tokens; the agents set it (engine.agents.budget)
    max_new_tokens: int | None = None
    #: the statements the text may cite, as (id as the prompt writes it, e.g. "S4", the numbers
    #: a clause citing it may write: its values, patient id, visits and the parts of its sessions'
    #: dates, normalised like `allowed_numbers`); None = the text cites nothing (CITE_MARKER)
    citable: tuple[tuple[str, frozenset[str]], ...] | None = None


class LLM(Protocol):
    name: str

    def generate(self, requests: Sequence[LLMRequest], sink: TextSink | None = None) -> list[str]:
        """One completion per request, in order; with a `sink`, text is passed to it as it is
        written and generation stops with `Cancelled` when the sink says so."""
        ...
