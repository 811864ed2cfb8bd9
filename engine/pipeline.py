"""The Engine: a small runner over plan -> retrieve -> route -> agents -> final.

Nodes are functions of the typed `State` that return the fields they change; the runner merges
them, calls `on_node(name, "start"|"done")` for progress UIs and records a `TraceEntry(node, ms,
llm_calls)` per node. With `llm=None` (the facts backend) every text is the deterministic
facts_text prose and no LLM call is made. With an LLM, every generated text passes through the
grounding guard (critique -> regenerate, bounded; then the facts-text fallback) unless guard=False.

LLM calls per analysis (paper, Table 5): trajectory / single_session = planner + 4 domain agents +
final; comparison / cohort = planner + 1 + final. The rules planner makes no call (planner = 0);
a domain agent with an empty subset makes no call; each guard regeneration is one extra call,
counted in `llm_calls`, in its node's trace entry and in verification["rounds"].
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

from engine import facts_text
from engine.agents.cohort import cohort_request
from engine.agents.comparison import build_table_b, comparison_request, render_table_b
from engine.agents.domain import domain_request
from engine.agents.final import (
    dispatch_mode,
    final_request,
    incongruence_flags,
    red_flags,
    render_flags,
)
from engine.cohort_stats import compute_cohort
from engine.config import Config
from engine.contexts import Contexts, load_contexts
from engine.course import render_series_table, series
from engine.grounding.guard import guard_text
from engine.ledger import allowed_numbers, build_ledger, cohort_values
from engine.llm.base import LLM, LLMRequest, PromptTooLongError
from engine.plan import check_patients, parse_query, plan_with_llm
from engine.retrieve import retrieve_node
from engine.route import route_after_retrieve
from engine.state import State
from engine.types import Plan, Result, TraceEntry
from kb_store.profiles import DOMAINS
from kb_store.reader import KBReader

DECISION_SUPPORT_NOTE = (
    "Decision support only: this summary restates recorded assessment scores and computed changes; "
    "confirm against the clinical record before acting on it."
)
OnNode = Callable[[str, str], None]
COHORT_T_PATIENTS = 5  # patients of the ranking whose score rows the cohort-mode final prompt shows


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

    # ---- planning ---------------------------------------------------------------------------

    def _plan(self, query: str) -> tuple[Plan, int, str]:
        """(plan with checked patients, planner LLM calls, note)."""
        if self.cfg.planner == "llm" and self.llm is not None:
            plan, _raw, default = plan_with_llm(query, self.llm)
            note = "LLM planner" + (": output unparseable, safe default used" if default else "")
            calls = 1
        else:
            plan, calls = parse_query(query), 0
            note = "rules planner: no LLM call" + (
                " (planner=llm needs an LLM backend)" if self.cfg.planner == "llm" else ""
            )
        return check_patients(plan, self.kb.patient_ids()), calls, note

    def plan(self, query: str) -> Plan:
        return self._plan(query)[0]

    def ask(self, query: str, plan: Plan | None = None, **kw: Any) -> Result:
        """Plan (counting the planner call when no plan is given), then run."""
        if plan is not None:
            if not plan.query and query:
                plan = Plan(
                    plan.patients, plan.analysis, plan.instruments, plan.visit_filter, query
                )
            return self.run(plan, **kw)
        on_node: OnNode | None = kw.get("on_node")
        if on_node:
            on_node("plan", "start")
        t0 = time.perf_counter()
        plan, calls, note = self._plan(query)
        entry = TraceEntry("plan", (time.perf_counter() - t0) * 1000, calls, note)
        if on_node:
            on_node("plan", "done")
        return self.run(plan, _pre=[entry], _planner_calls=calls, **kw)

    # ---- running ----------------------------------------------------------------------------

    def run(
        self,
        plan: Plan,
        *,
        on_node: OnNode | None = None,
        guard: bool = True,
        _pre: list[TraceEntry] | None = None,
        _planner_calls: int = 0,
    ) -> Result:
        known = self.kb.patient_ids()
        check_patients(plan, known)
        if not plan.patients:
            plan = Plan(
                tuple(known), plan.analysis, plan.instruments, plan.visit_filter, plan.query
            )
        st = State(
            query=plan.query,
            plan=plan,
            guard=guard,
            trace=list(_pre or []),
            llm_calls=_planner_calls,
            planner_calls=_planner_calls,
        )

        def node(name: str, fn: Callable[[], dict]) -> None:
            if on_node:
                on_node(name, "start")
            t0, calls0 = time.perf_counter(), st.llm_calls
            changes = fn()
            st.update(changes)
            st.trace.append(
                TraceEntry(name, round((time.perf_counter() - t0) * 1000, 3), st.llm_calls - calls0)
            )
            if on_node:
                on_node(name, "done")

        node("retrieve", lambda: self._retrieve(st))
        node("route", lambda: {"next_node": route_after_retrieve(st.intent)})
        if st.next_node == "domain_agents":
            self._domain_agents(st, node)
        elif st.next_node == "comparison_agent":
            node("comparison_agent", lambda: self._comparison(st))
        else:
            node("cohort_agent", lambda: self._cohort(st))
        node("final_agent", lambda: self._final(st))
        return self._result(st)

    # ---- nodes ------------------------------------------------------------------------------

    def _retrieve(self, st: State) -> dict:
        out = retrieve_node(st.plan, self.kb)
        ser = series(out["facts"], self.contexts)
        out["series"] = ser
        out["ledger"] = build_ledger(out["facts"], ser, self.contexts)
        return out

    def _domain_agents(self, st: State, node: Callable[[str, Callable[[], dict]], None]) -> None:
        reqs: dict[str, LLMRequest] = {}
        fallbacks: dict[str, str] = {}
        for d in DOMAINS:
            rows = [r for (p, dom), rs in st.series.items() if dom == d for r in rs]
            rows.sort(key=lambda r: (r.patient, r.visit))
            fallbacks[d] = facts_text.domain_text(d, rows, self.contexts, st.notes)
            req = domain_request(d, st.query, rows, self.contexts.texts[d], st.notes)
            if req is not None:
                reqs[d] = self._with_allowed(req, render_series_table(rows))
        prompts = dict(st.prompts)
        for d, r in reqs.items():
            prompts[d] = _prompt_text(r)
        st.prompts = prompts

        def run_agents(names: list[str]) -> dict:
            narr = dict(st.narratives)
            if self.llm is None:
                texts = {d: fallbacks[d] for d in names}
            else:
                batch = [reqs[d] for d in names]
                texts = dict(zip(names, self._generate(st, batch), strict=True))
            for d in names:
                narr[d] = self._guarded(st, d, reqs[d], texts[d], fallbacks[d])
            return {"narratives": narr}

        names = [d for d in DOMAINS if d in reqs]
        if self.cfg.batch_domain_agents:
            node("domain_agents", lambda: run_agents(names))
        else:
            for d in names:
                node(f"{d}_agent", lambda d=d: run_agents([d]))
        st.upstream = "\n\n".join(st.narratives[d] for d in names)

    def _comparison(self, st: State) -> dict:
        rows = [r for rs in st.series.values() for r in rs]
        table_b = build_table_b(rows)
        b_text = render_table_b(table_b)
        req = self._with_allowed(
            comparison_request(st.query, table_b, self.contexts.combined, st.notes), b_text
        )
        fallback = facts_text.comparison_text(st.series, st.plan.patients)
        text = fallback if self.llm is None else self._generate(st, [req])[0]
        summary = self._guarded(st, "comparison", req, text, fallback)
        o = b_text + "\n\n" + summary
        return {
            "table_b": table_b,
            "narratives": {**st.narratives, "comparison": o},
            "upstream": o,
            "prompts": {**st.prompts, "comparison": _prompt_text(req)},
        }

    def _cohort(self, st: State) -> dict:
        cohort = compute_cohort(st.facts, st.query, st.plan.instruments)
        st.ledger = st.ledger + cohort_values(cohort)
        req = cohort_request(st.query, cohort, self.contexts.combined, st.notes + cohort["notes"])
        req = self._with_allowed(req, req.user)
        fallback = facts_text.cohort_text(cohort)
        text = fallback if self.llm is None else self._generate(st, [req])[0]
        g = self._guarded(st, "cohort", req, text, fallback)
        return {
            "cohort": cohort,
            "narratives": {**st.narratives, "cohort": g},
            "upstream": g,
            "prompts": {**st.prompts, "cohort": _prompt_text(req)},
        }

    def _final(self, st: State) -> dict:
        flags = {
            "incongruence": incongruence_flags(st.facts, self.contexts),
            "red_flags": red_flags(st.facts, self.contexts),
        }
        mode = dispatch_mode(
            st.plan.analysis,
            cohort=st.cohort is not None,
            comparison=bool(st.table_b),
            domain_narratives=any(d in st.narratives for d in DOMAINS),
        )
        fallback = facts_text.final_text(
            mode,
            series=st.series,
            facts=st.facts,
            patients=st.plan.patients,
            flags=flags,
            cohort=st.cohort,
        )
        rows = [r for rs in st.series.values() for r in rs]
        shown_flags = flags
        if st.cohort is not None:
            # cohort mode: T for the top-ranked patients only (a 44-patient T would not fit a small
            # model's context); the whole ranking and the cohort statistics are in the upstream G
            top = {x["patient"] for x in st.cohort["ranking"][:COHORT_T_PATIENTS]} | set(
                st.cohort["ties"]
            )
            rows = [r for r in rows if r.patient in top]
            shown_flags = {k: [x for x in v if x["patient"] in top] for k, v in flags.items()}
        rows.sort(key=lambda r: (r.patient, r.visit, DOMAINS.index(r.domain)))
        table_text = render_series_table(rows)
        flags_txt = render_flags(shown_flags)
        req = final_request(
            st.query, mode, st.upstream, table_text, flags_txt, self.contexts.combined
        )
        req = self._with_allowed(req, table_text, flags_txt, st.upstream if st.cohort else "")
        text = fallback if self.llm is None else self._generate(st, [req])[0]
        summary = self._guarded(st, "final", req, text, fallback)
        summary, screening = self._screen(summary, st)
        return {
            "flags": flags,
            "mode": mode,
            "summary": summary,
            "prompts": {**st.prompts, "final": _prompt_text(req)},
            "screening": screening,
        }

    # ---- helpers ----------------------------------------------------------------------------

    def _with_allowed(self, req: LLMRequest, *fact_texts: str) -> LLMRequest:
        # instrument names carry digits the model must be able to write ("PDQ-8")
        allowed = allowed_numbers(*fact_texts, "PDQ-8")
        return LLMRequest(req.system, req.user, req.agent, allowed, req.max_new_tokens)

    def _generate(self, st: State, reqs: list[LLMRequest]) -> list[str]:
        assert self.llm is not None
        try:
            out = self.llm.generate(reqs)
        except PromptTooLongError as e:
            if len(reqs) > 1:  # one long prompt must not cost the others their generation
                return [self._generate(st, [r])[0] for r in reqs]
            # nothing is sent; the empty text fails the guard, so the facts text is released
            st.skipped_calls += 1
            st.notes = [*st.notes, f"{reqs[0].agent}: {e}; the facts text is used instead"]
            return [""]
        st.llm_calls += len(reqs)
        if len(out) != len(reqs):
            raise RuntimeError(f"LLM backend returned {len(out)} texts for {len(reqs)} requests")
        return out

    def _guarded(self, st: State, agent: str, req: LLMRequest, text: str, fallback: str) -> str:
        """Run the grounding guard on one agent's text and keep its record."""
        if self.llm is None or not st.guard:
            # facts backend / unguarded baseline: measure the text, never replace it
            res = guard_text(
                text, st.ledger, None, lambda: text, max_rounds=0, plan_patients=st.plan.patients
            )
            rec = dict(res.record)
            rec["fallback_used"] = False
            rec["guarded"] = False
            st.guard_records[agent] = rec
            return text

        def regenerate(critique: str) -> str:
            again = LLMRequest(
                req.system,
                req.user
                + "\n\nCritique of your previous answer: "
                + critique
                + "\nRewrite the answer.",
                req.agent,
                req.allowed_numbers,
                req.max_new_tokens,
            )
            return self._generate(st, [again])[0]

        res = guard_text(
            text,
            st.ledger,
            regenerate,
            lambda: fallback,
            max_rounds=self.cfg.grounding_rounds,
            plan_patients=st.plan.patients,
        )
        rec = dict(res.record)
        rec["guarded"] = True
        st.guard_records[agent] = rec
        return res.text

    def _screen(self, summary: str, st: State) -> tuple[str, list[dict]]:
        """Output screening (engine.grounding.screening) and the decision-support note."""
        try:
            from engine.grounding.screening import screen_and_annotate
        except ImportError:  # pragma: no cover - only while the screening module is absent
            return summary.rstrip() + "\n\n" + DECISION_SUPPORT_NOTE, []
        text, findings = screen_and_annotate(summary, st.plan, self.kb.patient_ids())
        return text, list(findings)

    def _result(self, st: State) -> Result:
        return Result(
            plan=st.plan,
            facts=st.facts,
            table_b=st.table_b,
            cohort=st.cohort,
            flags=st.flags,
            narratives=st.narratives,
            prompts=st.prompts,
            summary=st.summary,
            verification=aggregate_verification(st),
            screening=st.screening,
            ledger=st.ledger,
            llm_calls=st.llm_calls,
            trace=st.trace,
            backend=self.backend,
        )


def _prompt_text(req: LLMRequest) -> str:
    return f"[system]\n{req.system}\n\n[user]\n{req.user}"


_VISIT_RE = re.compile(r"\bvisits?\s+(\d+)", re.I)


def _temporal_fidelity(text: str, ledger: list) -> tuple[float, float | None]:
    """(paper's temporal fidelity over the whole text, scoped per paragraph/patient/domain)."""
    try:
        from engine.metrics import temporal_fidelity, temporal_fidelity_scoped
    except ImportError:  # pragma: no cover - only while engine.metrics is absent
        vs = [int(v) for v in _VISIT_RE.findall(text)]
        return (1.0 if all(a <= b for a, b in zip(vs, vs[1:], strict=False)) else 0.0), None
    return float(temporal_fidelity(text, ledger)), float(temporal_fidelity_scoped(text, ledger))


def aggregate_verification(st: State) -> dict[str, Any]:
    recs = st.guard_records
    numbers = sum(int(r.get("numbers", 0)) for r in recs.values())
    unsupported = [{"agent": a, **u} for a, r in recs.items() for u in r.get("unsupported", [])]
    rounds = sum(int(r.get("rounds", 0)) for r in recs.values())
    tf, tf_scoped = _temporal_fidelity(st.summary, st.ledger)
    agent_calls = sum(t.llm_calls for t in st.trace if t.node not in ("plan", "final_agent"))
    final_calls = sum(t.llm_calls for t in st.trace if t.node == "final_agent")
    return {
        "numbers": numbers,
        "unsupported": unsupported,
        "fact_precision": (numbers - len(unsupported)) / numbers if numbers else 1.0,
        "hallucination_rate": len(unsupported) / numbers if numbers else 0.0,
        "temporal_fidelity": tf,
        "temporal_fidelity_scoped": tf_scoped,
        "rounds": rounds,
        "fallback_used": any(r.get("fallback_used") for r in recs.values()),
        "summary_passed": bool(recs.get("final", {}).get("passed", not unsupported)),
        "fallback_agents": [a for a, r in recs.items() if r.get("fallback_used")],
        "guarded": any(r.get("guarded") for r in recs.values()),
        "mode": st.mode,
        "notes": st.notes,
        "call_counts": {
            "planner": st.planner_calls,
            "agents": agent_calls,
            "final": final_calls,
            "regenerations": rounds,
            "total": st.llm_calls,
            "skipped_prompt_too_long": st.skipped_calls,
        },
        "per_agent": recs,
    }
