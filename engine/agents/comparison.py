"""Comparison Agent: table B by rules, then O = B (as text) + L_comparison(q, B, C).

B has one row per patient x visit x domain: score, delta vs the previous visit, and the change label
(improved / worsened / stable, MCID-aware; direction only without a verified MCID) or "baseline"
for the first visit in the selection.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from engine.agents.digest_request import digest_request
from engine.agents.guard import Generation, prompt_text
from engine.clinical.series import fmt, fmt_signed
from engine.llm.base import LLMRequest
from engine.prompts import load_prompt
from engine.state import NodeContext, State
from engine.types import SeriesRow, TableBRow
from engine.writing import dense
from kb_store.profiles import DOMAIN_WORDS, DOMAINS


def _unread(r: SeriesRow, prev: SeriesRow | None) -> str:
    """Table B's change word when this row or the one it is compared with has a caveat
    (engine.clinical.caveats): no MCID label is read from it."""
    for row in (r, prev):
        if row is not None and row.caveat:
            return "partial" if row.caveat == "partial" else "possibly not examined"
    return ""


def build_table_b(rows: Iterable[SeriesRow]) -> list[TableBRow]:
    out: list[TableBRow] = []
    rows = list(rows)
    at = {(r.patient, r.domain, r.visit): r for r in rows}
    for r in rows:
        first = r.delta is None and r.score is not None and r.visit == r.ref_visit
        prev = at.get((r.patient, r.domain, r.prev_visit)) if r.prev_visit is not None else None
        why = _unread(r, prev if r.delta is not None else None)
        out.append(
            {
                "patient": r.patient,
                "visit": r.visit,
                "date": r.date,
                "domain": r.domain,
                "score": r.score,
                "delta": None if r.delta is None else r.delta.value,
                "from_visit": r.prev_visit,
                "change": why
                if why
                else "baseline"
                if first and r.visit == 1
                else (
                    "first selected visit"
                    if first
                    else ("missing" if r.score is None else (r.delta.label if r.delta else "n/a"))
                ),
                "significance": "no MCID label"
                if why and r.delta
                else (r.delta.significance if r.delta else ""),
                "missing_items": r.missing,
            }
        )
    return sorted(out, key=lambda b: (DOMAINS.index(b["domain"]), b["patient"], b["visit"]))


def render_table_b(table_b: Sequence[TableBRow]) -> str:
    lines = ["Table B (patient, visit, domain, score, change from previous visit):"]
    for b in table_b:
        if b["delta"] is None:
            ch = b["change"]
        else:
            ch = f"{b['change']} ({fmt_signed(b['delta'])} from visit {b['from_visit']}; {b['significance']})"
        lines.append(
            f"Patient {b['patient']}, visit {b['visit']} ({b['date']}), "
            f"{DOMAIN_WORDS[b['domain']]} = {fmt(b['score'])}, {ch}"
        )
    return "\n".join(lines)


def comparison_request(
    query: str, table_b: Sequence[TableBRow], context: str, notes: Sequence[str] = ()
) -> LLMRequest:
    p = load_prompt("comparison")
    note_txt = ("\nNotes: " + " ".join(notes) + "\n") if notes else ""
    return LLMRequest(
        system=p["system"].format(context=context),
        user=p["user"].format(query=query, table=render_table_b(table_b), notes=note_txt),
        agent="comparison",
    )


def comparison_node(state: State, ctx: NodeContext) -> dict:
    """Table B by rules, then O = B (as text) + the comparison text."""
    gen = Generation(state, ctx)
    table_b = build_table_b(r for rs in state.series.values() for r in rs)
    b_text = render_table_b(table_b)
    req = gen.allowing(
        comparison_request(state.query, table_b, ctx.contexts.combined, state.notes), b_text
    )
    req = gen.sized(gen.citing(req))
    fallback = dense.comparison_text(state.series, state.plan.patients, state.statements)
    drafts = dict(state.drafts)
    if gen.model_writes:  # the final digest in the same batch (engine.agents.digest_request)
        draft = digest_request(gen, state.query, "comparison") if state.sink is None else None
        (text,), new = gen.generate_with_draft([req], draft)
        drafts.update(new)
    else:
        text = fallback
    o = b_text + "\n\n" + gen.release("comparison", req, text, fallback)
    return {
        "table_b": table_b,
        "narratives": {**state.narratives, "comparison": o},
        "upstream": o,
        "prompts": {**state.prompts, "comparison": prompt_text(req)},
        "drafts": drafts,
        **gen.changes(),
    }
