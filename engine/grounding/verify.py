"""Whole-text verification (issue 12): sentence verdicts plus key-fact coverage, in one record.

`verify_text(...)` is what the guard, `marag check` and the evaluation call: it runs the statement
checker (`statements.py`) and the coverage check (`coverage.py`) and returns the JSON-ready record
{passed, coverage, sentences, ...}. `context_phrases(ctx)` gives the contexts' own wording (red-flag
labels and reasons) that a text may quote without asserting it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from engine.contexts import Contexts
from engine.grounding.coverage import DOMAIN_AGENTS, coverage, key_facts
from engine.grounding.ledger_index import LedgerIndex
from engine.grounding.statements import check_statements
from engine.types import FactValue


def context_phrases(ctx: Contexts | None) -> tuple[str, ...]:
    if ctx is None:
        return ()
    out: list[str] = []
    for r in ctx.red_flags:
        out += [r.why, r.label]
    return tuple(p for p in out if p)


def verify_text(
    text: str,
    ledger: Sequence[FactValue] | LedgerIndex,
    plan_patients: Sequence[int] = (),
    *,
    agent: str | None = None,
    flags: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    phrases: Sequence[str] = (),
    coverage_min: float = 1.0,
    cohort: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The statement record of one text: sentence verdicts, coverage of the agent's key facts
    (none when `agent` is None: `marag check` on a free text uses the final agent's), and passed.
    A prebuilt `LedgerIndex` may be passed (the guard's: the index is built once per node)."""
    rep = check_statements(text, ledger, plan_patients, masked_phrases=phrases)
    kf = key_facts(agent, ledger, flags, cohort) if agent else []
    single = agent if agent in DOMAIN_AGENTS else None
    cov = coverage(rep, kf, plan_patients, single_domain=single)
    n = len(rep.sentences)
    bad = rep.unsupported
    return {
        "passed": not bad and cov.value >= coverage_min and bool(text.strip()),
        "coverage": cov.value,
        "coverage_detail": cov.to_dict(),
        "sentences": [s.to_dict() for s in rep.sentences],
        "sentences_total": n,
        "unsupported_sentences": len(bad),
        "unsupported_sentence_rate": len(bad) / n if n else 0.0,
        "removable": [{"text": s.text, "span": list(s.span), "reasons": s.reasons} for s in bad],
    }
