"""The typed state the pipeline nodes read, and the context they run in.

Each node is a function `node(state, ctx) -> dict` returning only the fields it changes; the
runner (engine.pipeline.Engine) merges them into the state with `State.update`. Keeping the state
a plain dataclass (no LangGraph) makes each node testable with a hand-built state.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from engine.clinical.series import Series
from engine.clinical.statements import Statements
from engine.config import Config
from engine.contexts import Contexts
from engine.llm.base import LLM, LLMRequest
from engine.types import (
    CohortAnswer,
    Fact,
    FactValue,
    Flags,
    GuardRecord,
    Plan,
    ScreeningFinding,
    TableBRow,
    TraceEntry,
    empty_flags,
)
from kb_store.reader import KBReader


@dataclass(frozen=True)
class NodeContext:
    """What every node may use besides the state: configuration, KB, LLM (None = facts backend)
    and the clinical contexts."""

    cfg: Config
    kb: KBReader
    llm: LLM | None
    contexts: Contexts


@dataclass(frozen=True)
class Draft:
    """A text a node generated for a later node (the final digest, written in the same batch
    as the agents' texts): the request it answers, the text, and whether the request was sent
    (a prompt too long for the model's context is not; its text is empty)."""

    request: LLMRequest
    text: str
    sent: bool = True


@dataclass
class State:
    query: str
    plan: Plan
    guard: bool = True  # run the grounding guard on generated text
    intent: str = ""  # internal label from the fixed intent map
    facts: list[Fact] = field(default_factory=list)  # F (domain path: OFF/untreated only)
    subsets: dict[str, list[Fact]] = field(default_factory=dict)  # F_motor, F_adl, ...
    on_facts: list[Fact] = field(default_factory=list)  # PPMI ON-exam rows, kept apart
    notes: list[str] = field(default_factory=list)  # retrieval notes (missing visits, ON exams)
    series: Series = field(default_factory=dict)  # engine.clinical.series.series of the facts
    cohort_frame: Any = None  # cohort over the session table: cohort_table.cohort_frame's selection
    next_node: str = ""
    narratives: dict[str, str] = field(default_factory=dict)
    prompts: dict[str, str] = field(default_factory=dict)
    table_b: list[TableBRow] = field(default_factory=list)
    upstream: str = ""  # the text handed to the final agent (N_d joined, O, or G)
    cohort: CohortAnswer | None = None
    flags: Flags = field(default_factory=empty_flags)
    summary: str = ""
    mode: str = ""
    ledger: list[FactValue] = field(default_factory=list)  # the union of the statements' values
    statements: Statements = field(default_factory=Statements)  # engine.clinical.statements
    guard_records: dict[str, GuardRecord] = field(default_factory=dict)  # agent -> record
    screening: list[ScreeningFinding] = field(default_factory=list)
    llm_calls: int = 0
    planner_calls: int = 0
    skipped_calls: int = 0  # requests not sent: prompt longer than the model's context
    trace: list[TraceEntry] = field(default_factory=list)
    excluded: list[dict[str, Any]] = field(default_factory=list)  # kb_store.exclusions
    courses: dict[Any, Any] = field(default_factory=dict)  # engine.clinical.course
    findings: dict[int, Any] = field(default_factory=dict)  # engine.clinical.findings per patient
    summary_dense: str = ""
    digest: str = ""  # the opening text of the summary (engine.writing.digest)
    sections: list[Any] = field(default_factory=list)  # the details: (heading, paragraphs)
    #: agent -> the draft an earlier node generated for it (the final digest; model backends)
    drafts: dict[str, Draft] = field(default_factory=dict)
    sink: Any = None  # engine.llm.base.TextSink: streamed text and cancel (dashboard)

    def update(self, changes: dict[str, Any]) -> None:
        known = {f.name for f in fields(self)}
        for k, v in changes.items():
            if k not in known:
                raise KeyError(f"node returned unknown state field {k!r}")
            setattr(self, k, v)
