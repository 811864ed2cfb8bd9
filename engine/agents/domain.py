"""Domain Agents (motor, adl, nonmotor, qol): N_d = L_domain(q, F_d, C_d).

The per-visit deltas, cumulative change from baseline, MCID labels and severity are computed in
code (engine.clinical.series.series) and rendered into the prompt's facts table; an empty subset is skipped (no
request, no LLM call). When a model writes, the prompt lists the domain's statements to cite
instead of the table and the reference text (engine.agents.citable; prompts/domain.json
"cited_source").
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.agents.digest_request import digest_request
from engine.agents.final import dispatch_mode
from engine.agents.guard import Generation, prompt_text, with_allowed
from engine.clinical.series import render_series_table
from engine.llm.base import LLMRequest
from engine.prompts import load_prompt
from engine.state import NodeContext, State
from engine.types import SeriesRow
from engine.writing import dense
from kb_store.profiles import DOMAIN_WORDS, DOMAINS

AGENT_NAMES = {"motor": "motor", "adl": "adl", "nonmotor": "nonmotor", "qol": "qol"}


def domain_request(
    domain: str,
    query: str,
    rows: Sequence[SeriesRow],
    context: str,
    notes: Sequence[str] = (),
    cited: bool = False,
) -> LLMRequest | None:
    """The agent's request over F_d and C_d; `cited`: the prompt for a text that cites the
    domain's statements (engine.agents.citable lists them), which state F_d and the labels C_d
    gives, so it carries neither the facts table nor the reference text."""
    if not rows:
        return None
    p = load_prompt("domain")
    label = DOMAIN_WORDS[domain]
    note_txt = ("\nNotes: " + " ".join(notes) + "\n") if notes else ""
    if cited:
        return LLMRequest(
            system=p["cited_system"].format(domain_label=label),
            user=p["cited_user"].format(query=query, notes=note_txt),
            agent=AGENT_NAMES[domain],
        )
    return LLMRequest(
        system=p["system"].format(domain_label=label, context=context),
        user=p["user"].format(
            domain_label=label, query=query, facts=render_series_table(rows), notes=note_txt
        ),
        agent=AGENT_NAMES[domain],
    )


def model_request(
    gen: Generation,
    domain: str,
    query: str,
    rows: Sequence[SeriesRow],
    ctx: NodeContext,
    notes: Sequence[str],
) -> LLMRequest | None:
    """The request a model writes for `domain`: the cited prompt with the statements it renders,
    or, when it has none to cite, the facts-table prompt; number-safe over the table's numbers."""
    table = render_series_table(rows)
    req = domain_request(domain, query, rows, ctx.contexts.texts[domain], notes, cited=True)
    if req is None:
        return None
    req = gen.citing(with_allowed(req, table))
    if req.citable is None:
        plain = domain_request(domain, query, rows, ctx.contexts.texts[domain], notes)
        req = with_allowed(plain, table) if plain is not None else None
    return req


def domain_rows(state: State, domain: str) -> list[SeriesRow]:
    """F_d as course rows: every patient's series of one domain, by patient and visit."""
    rows = [r for (_p, dom), rs in state.series.items() if dom == domain for r in rs]
    rows.sort(key=lambda r: (r.patient, r.visit))
    return rows


def active_domains(state: State) -> list[str]:
    """The domains with facts: each gets an agent (an empty subset makes no request)."""
    return [d for d in DOMAINS if domain_rows(state, d)]


def final_draft(state: State, ctx: NodeContext, gen: Generation, domains: Sequence[str]):
    """The final digest request, for the batch of the node that runs every active domain when
    a model writes unstreamed (engine.agents.digest_request); None otherwise."""
    if not ctx.cfg.batch_domain_agents or state.sink is not None:
        return None
    if not set(active_domains(state)) <= set(domains):
        return None
    mode = dispatch_mode(
        state.plan.analysis, cohort=False, comparison=False, domain_narratives=True
    )
    return digest_request(gen, state.query, mode)


def domain_node(state: State, ctx: NodeContext, domains: Sequence[str]) -> dict:
    """Run the agents of `domains` (one batch, with the final digest when a model writes):
    narratives, prompts, the upstream N_d and the final draft."""
    gen = Generation(state, ctx)
    reqs: dict[str, LLMRequest] = {}
    fallbacks: dict[str, str] = {}
    for d in domains:
        rows = domain_rows(state, d)
        fallbacks[d] = dense.domain_text(d, rows, ctx.contexts, state.statements)
        if gen.model_writes:
            req = model_request(gen, d, state.query, rows, ctx, state.notes)
        else:
            req = domain_request(d, state.query, rows, ctx.contexts.texts[d], state.notes)
        if req is not None:
            reqs[d] = gen.sized(req)
    names = [d for d in domains if d in reqs]
    drafts = dict(state.drafts)
    if gen.model_writes:
        got, new = gen.generate_with_draft(
            [reqs[d] for d in names], final_draft(state, ctx, gen, domains)
        )
        texts = got if names else []
        drafts.update(new)
    else:
        texts = [fallbacks[d] for d in names]
    narratives = dict(state.narratives)
    prompts = dict(state.prompts)
    for d, text in zip(names, texts, strict=True):
        prompts[d] = prompt_text(reqs[d])
        narratives[d] = gen.release(d, reqs[d], text, fallbacks[d])
    upstream = "\n\n".join(narratives[d] for d in DOMAINS if d in narratives)
    return {
        "narratives": narratives,
        "prompts": prompts,
        "upstream": upstream,
        "drafts": drafts,
        **gen.changes(),
    }
