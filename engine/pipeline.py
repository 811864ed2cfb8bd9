"""The Engine: wiring of plan -> retrieve -> route -> agents -> final (no node logic here).

Nodes are functions of the typed `State` (engine.state) that return the fields they change; each
lives in its own module: engine.plan.plan_node, engine.retrieve.retrieve_node,
engine.route.route_node, engine.agents.{domain,comparison,cohort,final}.*_node, and the guard step
every agent's text passes through (engine.agents.guard). The runner merges the changes, calls
`on_node(name, "start"|"done")` for progress UIs and records a `TraceEntry(node, ms, llm_calls)`
per node. With `llm=None` (the facts backend) every text is the deterministic facts_text prose and
no LLM call is made. With an LLM, every generated text passes through the grounding guard
(critique -> regenerate, bounded; then the facts-text fallback) unless guard=False.

LLM calls per analysis (paper, Table 5): trajectory / single_session = planner + 4 domain agents +
final; comparison / cohort = planner + 1 + final. The rules planner makes no call (planner = 0);
a domain agent with an empty subset makes no call; each guard regeneration is one extra call,
counted in `llm_calls`, in its node's trace entry and in verification["rounds"].
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from engine.agents.cohort import cohort_node
from engine.agents.comparison import comparison_node
from engine.agents.domain import active_domains, domain_node
from engine.agents.final import final_node
from engine.clinical.course import courses_json
from engine.clinical.findings import course_and_findings
from engine.clinical.ledger import build_ledger, cohort_values, ledger_values
from engine.clinical.series import series, slopes
from engine.config import Config
from engine.contexts import Contexts, load_contexts
from engine.grounding.run_memo import run_memo
from engine.llm.base import LLM
from engine.metrics import in_order
from engine.plan import check_patients, plan_node
from engine.query_input import check_plan_size
from engine.retrieve import fetch_facts, retrieve_node
from engine.route import route_node
from engine.state import NodeContext, State
from engine.types import Fact, FactValue, Plan, Result, TraceEntry
from kb_store.reader import KBReader

OnNode = Callable[[str, str], None]
Node = Callable[[State, NodeContext], dict]


class Engine:
    def __init__(
        self, cfg: Config, kb: KBReader, llm: LLM | None = None, contexts: Contexts | None = None
    ):
        self.cfg = cfg
        self.kb = kb
        self.llm = llm
        self.contexts = contexts or load_contexts(cfg.contexts_dir)

    @property
    def backend(self) -> str:
        return "facts" if self.llm is None else getattr(self.llm, "name", "llm")

    @property
    def context(self) -> NodeContext:
        return NodeContext(self.cfg, self.kb, self.llm, self.contexts)

    def plan(self, query: str) -> Plan:
        return plan_node(query, self.context)[0]

    def ask(self, query: str, plan: Plan | None = None, **kw: Any) -> Result:
        """Plan (counting the planner call when no plan is given), then run."""
        if plan is not None:
            if not plan.query and query:
                plan = Plan(
                    plan.patients,
                    plan.analysis,
                    plan.instruments,
                    plan.visit_filter,
                    query,
                    plan.statistic,
                )
            return self.run(plan, **kw)
        on_node: OnNode | None = kw.get("on_node")
        if on_node:
            on_node("plan", "start")
        t0 = time.perf_counter()
        plan, calls, note = plan_node(query, self.context)
        entry = TraceEntry("plan", (time.perf_counter() - t0) * 1000, calls, note)
        if on_node:
            on_node("plan", "done")
        return self.run(plan, _pre=[entry], _planner_calls=calls, **kw)

    def run(
        self,
        plan: Plan,
        *,
        on_node: OnNode | None = None,
        guard: bool = True,
        sink: Any = None,
        _pre: list[TraceEntry] | None = None,
        _planner_calls: int = 0,
    ) -> Result:
        known = self.kb.patient_ids()
        check_patients(plan, known)
        if not plan.patients:
            plan = Plan(
                tuple(known),
                plan.analysis,
                plan.instruments,
                plan.visit_filter,
                plan.query,
                plan.statistic,
            )
        check_plan_size(plan.analysis, plan.patients)
        state = State(
            query=plan.query,
            plan=plan,
            guard=guard,
            trace=list(_pre or []),
            llm_calls=_planner_calls,
            planner_calls=_planner_calls,
            excluded=self._excluded(plan.patients),
            sink=sink,
        )
        ctx = self.context

        def step(name: str, node: Node) -> None:
            if on_node:
                on_node(name, "start")
            t0, calls0 = time.perf_counter(), state.llm_calls
            state.update(node(state, ctx))
            ms = round((time.perf_counter() - t0) * 1000, 3)
            state.trace.append(TraceEntry(name, ms, state.llm_calls - calls0))
            if on_node:
                on_node(name, "done")

        with run_memo():  # the grounding reader reads each distinct text once per run
            step("retrieve", retrieve_node)
            step("route", route_node)
            if state.next_node == "domain_agents":
                names = active_domains(state)
                if self.cfg.batch_domain_agents and sink is None:  # streamed: one agent at a time
                    step("domain_agents", lambda s, c: domain_node(s, c, names))
                else:
                    for d in names:
                        step(f"{d}_agent", lambda s, c, d=d: domain_node(s, c, [d]))
            elif state.next_node == "comparison_agent":
                step("comparison_agent", comparison_node)
            else:
                step("cohort_agent", cohort_node)
            step("final_agent", final_node)
        return self._result(state)

    def evidence(self, result: Result) -> tuple[list[Fact], list[FactValue]]:
        """(facts, ledger) over every patient of the run's plan, to score a text against the
        whole fact table (the evaluation). A cohort result carries only its answer's scope;
        this recomputes every patient's facts and the full ledger, as before."""
        if result.cohort is None:
            return list(result.facts), list(result.ledger)
        out = fetch_facts(result.plan, self.kb, self.contexts)
        ser = series(out["facts"], self.contexts)
        clin = course_and_findings(out["facts"], self.contexts, result.plan.patients)
        excluded = self._excluded(result.plan.patients)
        ledger = (
            build_ledger(out["facts"], ser, self.contexts)
            + ledger_values(clin["courses"], clin["findings"], excluded)
            + cohort_values(result.cohort)
        )
        return out["facts"], ledger

    def _result(self, state: State) -> Result:
        return Result(
            plan=state.plan,
            facts=state.facts,
            table_b=state.table_b,
            cohort=state.cohort,
            flags=state.flags,
            narratives=state.narratives,
            prompts=state.prompts,
            summary=state.summary,
            verification=aggregate_verification(state),
            screening=state.screening,
            ledger=state.ledger,
            llm_calls=state.llm_calls,
            trace=state.trace,
            backend=self.backend,
            claims={a: list(r.get("claims", [])) for a, r in state.guard_records.items()},
            series=[r for rows in state.series.values() for r in rows],
            slopes=slopes(state.series),
            excluded_sessions=state.excluded,
            courses=courses_json(state.courses),
            summary_dense=state.summary_dense,
            digest=state.digest,
            sections=state.sections,
            statements=state.statements,
        )

    def _excluded(self, patients: tuple[int, ...]) -> list[dict]:
        """Sessions rejected at ingest for the plan's patients (never dropped silently)."""
        from kb_store.exclusions import for_patients

        get = getattr(self.kb, "excluded_sessions", None)
        return for_patients(get() if get else [], patients)


def aggregate_verification(state: State) -> dict[str, Any]:
    """The run's verification record, from the guard's records alone (no text is parsed again):
    numbers and unsupported numbers of every agent, the summary's temporal fidelity (its visit
    mentions in order; scoped per paragraph, patient and domain), rounds and call counts."""
    recs = state.guard_records
    final = recs["final"]
    numbers = sum(int(r.get("numbers", 0)) for r in recs.values())
    unsupported = [{"agent": a, **u} for a, r in recs.items() for u in r.get("unsupported", [])]
    rounds = sum(int(r.get("rounds", 0)) for r in recs.values())
    agent_calls = sum(t.llm_calls for t in state.trace if t.node not in ("plan", "final_agent"))
    final_calls = sum(t.llm_calls for t in state.trace if t.node == "final_agent")
    return {
        "numbers": numbers,
        "unsupported": unsupported,
        "fact_precision": (numbers - len(unsupported)) / numbers if numbers else 1.0,
        "hallucination_rate": len(unsupported) / numbers if numbers else 0.0,
        "temporal_fidelity": in_order(final.get("visit_mentions", [])),
        "temporal_fidelity_scoped": float(final.get("temporal_fidelity", 1.0)),
        "rounds": rounds,
        "fallback_used": any(r.get("fallback_used") for r in recs.values()),
        "summary_passed": bool(final.get("passed", not unsupported)),
        "fallback_agents": [a for a, r in recs.items() if r.get("fallback_used")],
        "guarded": any(r.get("guarded") for r in recs.values()),
        "mode": state.mode,
        "notes": state.notes,
        "call_counts": {
            "planner": state.planner_calls,
            "agents": agent_calls,
            "final": final_calls,
            "regenerations": rounds,
            "total": state.llm_calls,
            "skipped_prompt_too_long": state.skipped_calls,
        },
        # statement-level grounding
        "unsupported_sentences": sum(int(r.get("unsupported_sentences", 0)) for r in recs.values()),
        "sentences_total": sum(int(r.get("sentences_total", 0)) for r in recs.values()),
        "coverage": min((float(r.get("coverage", 1.0)) for r in recs.values()), default=1.0),
        "released": {a: r.get("released", "as_written") for a, r in recs.items()},
        "removed_sentences": [
            {"agent": a, **x}
            for a, r in recs.items()
            for rep in r.get("repairs", [])
            if rep.get("passed")
            for x in rep["removed"]
        ],
        "per_agent": recs,
    }
