"""Final Agent: score table T, incongruence and red-flag rows, synthesis-mode dispatch, request.

- T lists S_d(p, v) for every patient, visit and domain of F.
- incongruence: at one visit, a domain scores 0 while another domain of the same patient is at or
  above its moderate cut-off (contexts/thresholds.json `incongruence.moderate_cutoff`).
- red flags: item values at or above the rule's threshold (contexts/thresholds.json `red_flags`,
  from clinical-scales.md), matched by the fact's profile item codes.
- mode: cohort when the cohort agent ran, comparison when table B exists, single_session when the
  plan says so and domain narratives exist, else trajectory (the paper's dispatcher).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine.agents.digest_request import digest_request
from engine.agents.guard import Generation, prompt_text
from engine.clinical.findings import all_red_flags, incongruence_flags, red_flags
from engine.clinical.series import fmt, render_series_table
from engine.grounding.screening import screen_and_annotate
from engine.llm.base import LLMRequest
from engine.prompts import load_prompt
from engine.state import NodeContext, State
from engine.types import CohortAnswer, Fact, Flags, SeriesRow
from engine.writing import dense, digest, left_out, notes, readable
from engine.writing.citing import plain
from kb_store.profiles import DOMAIN_WORDS, DOMAINS


def score_table(facts: Sequence[Fact]) -> list[dict[str, Any]]:
    """T: one row per patient visit with each domain's score (None = not scored / not selected)."""
    rows: dict[tuple[int, int], dict[str, Any]] = {}
    for f in facts:
        r = rows.setdefault(
            (f.patient, f.visit),
            {"patient": f.patient, "visit": f.visit, "date": f.date, **{d: None for d in DOMAINS}},
        )
        r[f.domain] = f.score
    return [rows[k] for k in sorted(rows)]


def render_score_table(table: Sequence[dict[str, Any]], domains: Sequence[str] = DOMAINS) -> str:
    lines = []
    for r in table:
        parts = [f"{DOMAIN_WORDS[d]} {fmt(r[d])}" for d in domains if r.get(d) is not None]
        lines.append(
            f"Patient {r['patient']}, visit {r['visit']} ({r['date']}): " + ", ".join(parts)
        )
    return "\n".join(lines)


def render_flags(flags: dict[str, list[dict[str, Any]]]) -> str:
    lines = []
    for r in flags.get("incongruence", []):
        lines.append(
            f"Incongruence: patient {r['patient']}, visit {r['visit']}: {DOMAIN_WORDS[r['domain']]} "
            f"{fmt(r['values'][r['domain']])} while {DOMAIN_WORDS[r['elevated_domain']]} (moderate "
            f"cut-off {fmt(r['cutoff'])}) is {fmt(r['values'][r['elevated_domain']])}."
        )
    for r in flags.get("red_flags", []):
        lines.append(
            f"Red flag: patient {r['patient']}, visit {r['visit']}: {r['item_label']} = "
            f"{fmt(r['value'])} (threshold {fmt(r['threshold'])})."
        )
    return "\n".join(lines) or "none"


def dispatch_mode(analysis: str, *, cohort: bool, comparison: bool, domain_narratives: bool) -> str:
    if cohort:
        return "cohort"
    if comparison:
        return "comparison"
    if analysis == "single_session" and domain_narratives:
        return "single_session"
    return "trajectory"


def final_request(
    query: str,
    mode: str,
    upstream: str,
    table_text: str,
    flags_text: str,
    context: str,
    given: str = "none",
) -> LLMRequest:
    p = load_prompt("final")
    return LLMRequest(
        system=p["system"].format(context=context),
        user=p["user"].format(
            query=query,
            mode=mode,
            structure=p["structures"][mode],
            given=given,
            upstream=upstream,
            table=table_text,
            flags=flags_text,
        ),
        agent="final",
    )


COHORT_T_PATIENTS = 5  # patients of the ranking whose score rows the cohort-mode final prompt shows


def cohort_t_patients(cohort: CohortAnswer) -> set[int]:
    """Patients whose rows the cohort-mode table T shows: the top of the ranking and the ties."""
    return {x["patient"] for x in cohort["ranking"][:COHORT_T_PATIENTS]} | set(cohort["ties"])


def _shown_rows(state: State, flags: Flags) -> tuple[list[SeriesRow], Flags]:
    """The score table T and the flags the final prompt shows. Cohort mode: T for the top-ranked
    patients only (a 44-patient T would not fit a small model's context); the whole ranking and
    the cohort statistics are in the upstream G."""
    rows = [r for rs in state.series.values() for r in rs]
    shown = flags
    if state.cohort is not None:
        top = cohort_t_patients(state.cohort)
        rows = [r for r in rows if r.patient in top]
        shown = {
            "incongruence": [x for x in flags["incongruence"] if x["patient"] in top],
            "red_flags": [x for x in flags["red_flags"] if x["patient"] in top],
        }
    rows.sort(key=lambda r: (r.patient, r.visit, DOMAINS.index(r.domain)))
    return rows, shown


Section = tuple[str, list[str]]


def facts_summary(
    state: State, ctx: NodeContext, mode: str, flags: Flags
) -> tuple[str, str, list[Section]]:
    """(dense text, digest, details) of the facts backend's summary in every mode: the digest
    first (engine.writing.digest; the cohort finding in cohort mode), then the details."""
    dense_text = dense.final_text(
        mode,
        series=state.series,
        facts=state.facts,
        patients=state.plan.patients,
        flags=flags,
        cohort=state.cohort,
        monitor=notes.patients_to_monitor(state),
        sts=state.statements,
    )
    if mode == "trajectory":  # the details under headings; the dense form stays for QA
        sections = readable.trajectory_sections(state, ctx.contexts)
        return dense_text, digest.trajectory_digest(state, ctx.contexts), sections
    if mode == "cohort" and state.cohort is not None:
        head, body = digest.cohort_digest(state.cohort, state.statements)
    else:
        head = digest.trajectory_digest(state, ctx.contexts)
        body = readable.readable_comparison(state, flags) if mode == "comparison" else dense_text
    note = notes.baseline_note(state)
    if note:
        body = body + "\n\n" + note
    if state.excluded:
        body = body + "\n\n" + left_out.excluded_text(state.excluded, state.statements)
    return dense_text, head, [("Details", [body])]


def _facts_request(
    state: State, ctx: NodeContext, gen: Generation, mode: str, flags: Flags
) -> LLMRequest:
    """The final request as the paper's final agent asks it (upstream text, score table T,
    flags, given facts): the prompt the facts backend's record shows."""
    rows, shown_flags = _shown_rows(state, flags)
    table_text = render_series_table(rows)
    flags_txt = render_flags(shown_flags)
    # framing, falls and red flags as given facts (ledger values); not in cohort mode
    given = "none" if mode == "cohort" else readable.final_given_facts(state)
    req = final_request(
        state.query, mode, state.upstream, table_text, flags_txt, ctx.contexts.combined, given
    )
    req = gen.allowing(req, table_text, flags_txt, given, state.upstream if state.cohort else "")
    if state.cohort is not None:  # the summary of a cohort answer renders the cohort finding
        return gen.sized(req, cohort_t_patients(state.cohort), renders="cohort")
    return gen.sized(req)


def _model_summary(
    state: State,
    gen: Generation,
    mode: str,
    flags: Flags,
    digest_text: str,
    sections: list[Section],
) -> tuple[LLMRequest, str, str]:
    """(request, summary, released digest) when a model writes: the model writes the digest
    only, from the key statements (engine.agents.digest_request; the draft an agent node
    generated in its batch, else a request of its own), guarded against the facts digest; the
    details stay rendered."""
    draft = state.drafts.get("final")
    if draft is not None:
        req, text = draft.request, gen.take_draft(draft)
    else:
        shown, answer = None, None
        if state.cohort is not None:
            shown, answer = cohort_t_patients(state.cohort), state.cohort.get("patient")
        req = digest_request(gen, state.query, mode, shown, answer)
        assert req is not None
        (text,) = gen.generate([req])
    head = gen.release("final", req, text, digest_text, flags, digest=True)
    details = plain(readable.render_sections(sections))
    return req, "\n\n".join(x for x in (head, details) if x), head


def final_node(state: State, ctx: NodeContext) -> dict:
    """Score table T, flags, mode dispatch, the verified synthesis, screening and the note."""
    flags: Flags = {
        "incongruence": incongruence_flags(state.facts, ctx.contexts),
        # threshold rules plus new onset (engine.clinical.findings)
        "red_flags": all_red_flags(red_flags(state.facts, ctx.contexts), state.findings),
    }
    mode = dispatch_mode(
        state.plan.analysis,
        cohort=state.cohort is not None,
        comparison=bool(state.table_b),
        domain_narratives=any(d in state.narratives for d in DOMAINS),
    )
    dense_text, digest_text, sections = facts_summary(state, ctx, mode, flags)
    fallback = "\n\n".join(x for x in (digest_text, readable.render_sections(sections)) if x)
    gen = Generation(state, ctx)
    digest = plain(digest_text)
    if gen.model_writes:  # the digest is the one released (as written, repaired or replaced)
        req, summary, digest = _model_summary(state, gen, mode, flags, digest_text, sections)
    else:
        req = _facts_request(state, ctx, gen, mode, flags)
        summary = gen.release("final", req, fallback, fallback, flags)
    # the KB's ids are read only for a plan that names no patient (engine.grounding.screening)
    known = () if state.plan.patients else ctx.kb.patient_ids()
    summary, screening = screen_and_annotate(summary, state.plan, known)
    return {
        "flags": flags,
        "mode": mode,
        "summary": summary,
        "summary_dense": plain(dense_text),
        "digest": digest,
        "sections": [(head, [plain(x) for x in paras]) for head, paras in sections],
        "prompts": {**state.prompts, "final": prompt_text(req)},
        "screening": list(screening),
        **gen.changes(),
    }
