"""The guard step of every agent node: generate with the LLM (or take the facts text), then
release the text through the grounding guard (engine.grounding.guard: critique -> regenerate,
bounded; then the facts-text fallback) and keep the guard's record.

A `Generation` belongs to one node run: it starts from the state's counters and records and
returns, through `changes()`, the state fields it changed (llm_calls, skipped_calls, notes,
guard_records), so that nodes stay functions that return what they change.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from contextvars import ContextVar
from dataclasses import replace

from engine.agents import budget
from engine.agents.citable import citable_ids, with_citable
from engine.agents.cited_check import prose_checker
from engine.agents.cited_release import CitedGuard, release_cited
from engine.agents.rendered_record import rendered_record
from engine.clinical.ledger import allowed_numbers
from engine.clinical.statements import Statements
from engine.grounding.guard import StatementSpec, guard_text
from engine.grounding.ledger_index import LedgerIndex
from engine.grounding.verify import context_phrases
from engine.llm.base import LLMRequest, PromptTooLongError
from engine.llm.lengths import statements_within
from engine.state import Draft, NodeContext, State
from engine.types import FactValue, GuardRecord
from engine.writing.citing import Rendered, finish


def with_allowed(req: LLMRequest, *fact_texts: str) -> LLMRequest:
    """The request with the numbers its facts allow (instrument names carry digits: "PDQ-8")."""
    allowed = allowed_numbers(*fact_texts, "PDQ-8")
    return replace(req, allowed_numbers=allowed)


def prompt_text(req: LLMRequest) -> str:
    return f"[system]\n{req.system}\n\n[user]\n{req.user}"


#: (ledger list, its length, its index) of the last node in this context (one engine run runs its
#: nodes in order in one thread): the final node reuses the index the cohort node built for the
#: same ledger object (identity and length checked, never a copy)
_LAST_INDEX: ContextVar[tuple[Sequence[FactValue], int, LedgerIndex] | None] = ContextVar(
    "guard_last_ledger_index", default=None
)


class Generation:
    """LLM calls and guarded release for one node run."""

    def __init__(
        self,
        state: State,
        ctx: NodeContext,
        ledger: Sequence[FactValue] | None = None,
        statements: Statements | None = None,
    ):
        self.ctx = ctx
        self.statements = state.statements if statements is None else statements
        self.guard = state.guard
        self.plan_patients = state.plan.patients
        self.analysis = state.plan.analysis
        self._source = state.ledger if ledger is None else ledger
        self.ledger = list(self._source)
        self.llm_calls = state.llm_calls
        self.skipped_calls = state.skipped_calls
        self.notes = list(state.notes)
        self.records: dict[str, GuardRecord] = dict(state.guard_records)
        self.sink = state.sink  # streamed text and cancel (dashboard), None elsewhere
        self.cohort = state.cohort
        self._index: LedgerIndex | None = None
        self._skipped: list[LLMRequest] = []  # requests not sent (prompt too long)

    @property
    def index(self) -> LedgerIndex:
        """The ledger's index, built once for every text this node releases (building it is
        most of a claim check's cost)."""
        if self._index is None:
            last = _LAST_INDEX.get()
            if last is not None and last[0] is self._source and last[1] == len(self._source):
                self._index = last[2]  # the same ledger list as the previous node's (cohort->final)
            else:
                self._index = LedgerIndex(self.ledger)
                _LAST_INDEX.set((self._source, len(self._source), self._index))
        return self._index

    def changes(self) -> dict:
        return {
            "llm_calls": self.llm_calls,
            "skipped_calls": self.skipped_calls,
            "notes": self.notes,
            "guard_records": self.records,
        }

    def sized(
        self, req: LLMRequest, patients: Collection[int] | None = None, renders: str | None = None
    ) -> LLMRequest:
        """`req` with its generation length from the statements its agent (or `renders`)
        renders about `patients` (default: the plan's; engine.agents.budget), at most
        cfg.max_new_tokens."""
        shown = self.plan_patients if patients is None else patients
        return budget.sized(req, self.statements, shown, self.ctx.cfg.max_new_tokens, renders)

    @property
    def model_writes(self) -> bool:
        """Whether a model writes this node's texts (the facts backend renders them)."""
        return self.ctx.llm is not None

    def allowing(self, req: LLMRequest, *fact_texts: str) -> LLMRequest:
        """`with_allowed(req, *fact_texts)` when a model writes: number-safe decoding is the
        only reader of the allowed numbers, so a facts-backend request carries none."""
        return with_allowed(req, *fact_texts) if self.model_writes else req

    def citing(
        self, req: LLMRequest, agent: str | None = None, patients: Collection[int] | None = None
    ) -> LLMRequest:
        """`req` with the statements its agent renders (engine.agents.budget.agent_statements)
        as citable lines (engine.agents.citable) when a model writes; unchanged otherwise."""
        if not self.model_writes:
            return req
        shown = self.plan_patients if patients is None else patients
        return with_citable(
            req,
            budget.agent_statements(agent or req.agent, self.statements, shown),
            self.citable_lines,
        )

    @property
    def citable_lines(self) -> int:
        """How many statements one request lists to cite: as many as its longest text can
        state (engine.llm.lengths.statements_within cfg.max_new_tokens)."""
        return statements_within(self.ctx.cfg.max_new_tokens)

    def generate_with_draft(
        self, reqs: Sequence[LLMRequest], draft: LLMRequest | None
    ) -> tuple[list[str], dict[str, Draft]]:
        """The texts of `reqs` and, in the same batch, the draft of a later node's request
        (the final digest). The draft's call is counted by the node that releases it
        (`take_draft`), so each node's trace keeps its own calls."""
        if draft is None:
            return self.generate(reqs), {}
        out = self.generate([*reqs, draft])
        sent = not any(r is draft for r in self._skipped)
        if sent:
            self.llm_calls -= 1
        return out[:-1], {draft.agent: Draft(draft, out[-1], sent)}

    def take_draft(self, draft: Draft) -> str:
        """A draft an earlier node generated for this node: its call counted here."""
        if draft.sent:
            self.llm_calls += 1
        return draft.text

    def texts(self, reqs: Sequence[LLMRequest], fallbacks: Sequence[str]) -> list[str]:
        """The facts texts with the facts backend, else one generation per request."""
        return list(fallbacks) if self.ctx.llm is None else self.generate(reqs)

    def generate(self, reqs: Sequence[LLMRequest]) -> list[str]:
        llm = self.ctx.llm
        assert llm is not None
        try:
            out = (
                llm.generate(list(reqs))
                if self.sink is None
                else llm.generate(list(reqs), sink=self.sink)
            )
        except PromptTooLongError as e:
            if len(reqs) > 1:  # one long prompt must not cost the others their generation
                return [self.generate([r])[0] for r in reqs]
            # nothing is sent; the empty text fails the guard, so the facts text is released
            self.skipped_calls += 1
            self._skipped.append(reqs[0])
            self.notes = [*self.notes, f"{reqs[0].agent}: {e}; the facts text is used instead"]
            return [""]
        self.llm_calls += len(reqs)
        if len(out) != len(reqs):
            raise RuntimeError(f"LLM backend returned {len(out)} texts for {len(reqs)} requests")
        return out

    def release(
        self,
        agent: str,
        req: LLMRequest,
        text: str,
        fallback: str,
        flags: dict | None = None,
        digest: bool = False,
    ) -> str:
        """Run the grounding guard on one agent's text and keep its record: numbers, then every
        sentence and the agent's key facts (statement-level grounding; `flags` for the final agent;
        `digest`: the final agent's digest, released above rendered details)."""
        spec = StatementSpec(
            agent=agent,
            flags=flags,
            cohort=self.cohort,
            phrases=context_phrases(self.ctx.contexts),
            coverage_min=self.ctx.cfg.coverage_min,
            analysis=self.analysis,
            digest=digest,
        )
        rendered = finish(fallback)
        fallback = rendered.text
        if self.ctx.llm is None and rendered.citations:
            return self._release_rendered(agent, rendered)
        if self.ctx.llm is not None and req.citable is not None:
            return self._release_cited(agent, req, text, rendered, spec)
        text = finish(text).text
        if self.ctx.llm is None or not self.guard:
            # facts backend / unguarded baseline: measure the text, never replace it
            res = guard_text(
                text,
                self.index,
                None,
                lambda: text,
                max_rounds=0,
                plan_patients=self.plan_patients,
                statements=spec,
                repair=False,  # released as written: the record must describe this very text
            )
            rec = dict(res.record)
            rec["fallback_used"] = False
            rec["guarded"] = False
            rec["released"] = "as_written"
            rec.pop("written", None)
            self.records[agent] = rec  # type: ignore[assignment]
            return text

        regenerate = self._regenerator(req, "Rewrite the answer.")
        res = guard_text(
            text,
            self.index,
            regenerate,
            lambda: fallback,
            max_rounds=self.ctx.cfg.grounding_rounds,
            plan_patients=self.plan_patients,
            statements=spec,
        )
        rec = dict(res.record)
        rec["guarded"] = True
        self.records[agent] = rec  # type: ignore[assignment]
        return res.text

    def _regenerator(self, req: LLMRequest, ask: str) -> Callable[[str], str]:
        """The guard's regeneration of `req`: the same request with the critique and `ask`."""

        def regenerate(critique: str) -> str:
            again = replace(
                req, user=f"{req.user}\n\nCritique of your previous answer: {critique}\n{ask}"
            )
            return self.generate([again])[0]

        return regenerate

    def _release_cited(
        self, agent: str, req: LLMRequest, text: str, fallback: Rendered, spec: StatementSpec
    ) -> str:
        """A model text that was given citable statements (engine.agents.cited_release): cited
        sentences checked by lookup, the others by the prose checker; unguarded (the baseline)
        measured as written."""
        g = CitedGuard(
            self.statements,
            prose_checker(self.index, self.plan_patients, spec),
            citable_ids(req),
            agent,
            self.plan_patients,
            self.ctx.cfg.coverage_min,
            spec.digest,
        )
        if not self.guard:
            cited = g.read(text)
            rec = g.check(cited)
            rec.update(fallback_used=False, guarded=False, released="as_written", rounds=0)
            rec.update(passed=_passed(rec), history=[], repairs=[])
            self.records[agent] = rec  # type: ignore[assignment]
            return cited.text

        regenerate = self._regenerator(
            req, "Rewrite the answer, each clause after the id of the statement it states."
        )
        out, rec = release_cited(g, text, regenerate, fallback, self.ctx.cfg.grounding_rounds)
        rec["guarded"] = True
        self.records[agent] = rec  # type: ignore[assignment]
        return out

    def _release_rendered(self, agent: str, rendered: Rendered) -> str:
        """The facts backend's own rendered text: released as written, its record looked up from
        its citations (engine.agents.rendered_record), not parsed."""
        rec = rendered_record(
            rendered,
            self.statements,
            agent=agent,
            plan_patients=self.plan_patients,
            coverage_min=self.ctx.cfg.coverage_min,
        )
        rec.update(
            rounds=0,
            fallback_used=False,
            passed=_passed(rec),
            history=[],
            repairs=[],
            released="as_written",
            guarded=False,
        )
        self.records[agent] = rec  # type: ignore[assignment]
        return rendered.text


def _passed(rec: dict) -> bool:
    return not rec["unsupported"] and rec.get("statements_passed", True)
