"""Whole-text verification: sentence verdicts plus key-fact coverage, in one record.

`verify_text(...)` is what the guard, `marag check` and the evaluation call: it runs the statement
checker (`statements.py`) and the coverage check (`coverage.py`) and returns the JSON-ready record
{passed, coverage, sentences, ...}. `context_phrases(ctx)` gives the contexts' own wording (red-flag
labels and reasons) that a text may quote without asserting it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from engine.clinical.key_facts import in_digest
from engine.contexts import Contexts
from engine.grounding.coverage import DOMAIN_AGENTS, coverage, key_facts
from engine.grounding.ledger_index import LedgerIndex
from engine.grounding.statements import check_statements
from engine.types import FactValue

NO_CURRENT_FLAG = re.compile(r"\bno red flag is current\b", re.I)
#: "current red flags (walking and balance, problems with concentration (cognition))"
CURRENT_FLAG_LIST = re.compile(r"\bcurrent red flags \(((?:[^()]|\([^()]*\))*)\)", re.I)
PATIENT = re.compile(r"\b(?:patient|proj id)\s+(\d+)\b", re.I)


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
    analysis: str | None = None,
    digest: bool = False,
) -> dict[str, Any]:
    """The statement record of one text: sentence verdicts, coverage of the agent's key facts
    (none when `agent` is None: `marag check` on a free text uses the final agent's), and passed.
    A prebuilt `LedgerIndex` may be passed (the guard's: the index is built once per node).
    `digest`: the text is the final agent's digest, whose key facts leave out those the rendered
    details state (engine.clinical.key_facts.in_digest)."""
    rep = check_statements(text, ledger, plan_patients, masked_phrases=phrases)
    kf = key_facts(agent, ledger, flags, cohort, analysis) if agent else []
    if digest:  # the final agent's digest: the details state the rest
        kf = [k for k in kf if in_digest(k.kind)]
    if flags is not None:
        final_facts = key_facts("final", ledger, flags, None)
        _check_no_current_flag(rep, final_facts)
        _check_current_flag_list(rep, final_facts)
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


def _check_no_current_flag(rep, final_facts) -> None:
    """ "No red flag is current" (a listed form of the facts text) holds only when the run's flags
    have no red flag at the latest visit (the final agent's current flags) of the patient the
    sentence is about: the last patient named before it, else every patient."""
    current = [k for k in final_facts if k.kind == "red_flag"]
    if not current:
        return
    for s in rep.sentences:
        if not NO_CURRENT_FLAG.search(s.text):
            continue
        named = PATIENT.findall(rep.text, 0, s.span[0])
        hits = [k for k in current if not named or k.patient == int(named[-1])]
        if hits:
            s.status = "unsupported"
            s.reasons.append(
                "'no red flag is current': current red flags "
                + ", ".join(f"{k.item} (patient {k.patient}, visit {k.visit})" for k in hits)
            )
            s.categories.append("presence")


def _check_current_flag_list(rep, final_facts) -> None:
    """ "current red flags (A, B)" (the facts text's To-monitor list, a listed form) holds only
    when every item it names is a current red flag (a red flag at the latest visit) of the
    patient the sentence is about (the last patient named before it, else any patient)."""
    from engine.grounding.cues import item_cues

    cues = item_cues(rep.text)
    for s in rep.sentences:
        for m in CURRENT_FLAG_LIST.finditer(rep.text, s.span[0], s.span[1]):
            named = PATIENT.findall(rep.text, 0, s.span[0])
            current = {
                k.item
                for k in final_facts
                if k.kind == "red_flag" and (not named or k.patient == int(named[-1]))
            }
            for start, _end, value in cues:
                if not m.start(1) <= start < m.end(1):
                    continue
                codes, _doms, phrase = value
                if codes and not set(codes) & current:
                    s.status = "unsupported"
                    s.reasons.append(
                        f"'current red flags ({phrase})': {phrase} is not a current red flag"
                        + (f" (current: {', '.join(sorted(current))})" if current else "")
                    )
                    s.categories.append("presence")
