"""The release gate for generated text: check every number as a claim, critique and regenerate
(bounded), fall back to the facts-backend text when the model cannot be made to agree with the facts.

Contract used by the engine (kept from the first version): `guard_text(...) -> GuardResult`.
A text passes when every claim with context is correct (claim_report.py), every number without context
occurs among the ledger's numeric tokens, the visits it is about never go backwards (temporal
fidelity), and no number is outside the paper's N_facts (so a released text has hallucination
rate 0). Otherwise the critique names each unsupported number, what the text made it, and the
facts for that context; at most `max_rounds` regenerations (the bounded textual-feedback loop of
DoctorRAG's Med-TextGrad, seed 002), then the deterministic facts text replaces it and the record
says `fallback_used`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.grounding.claim_report import ClaimReport, check_text
from engine.grounding.ledger_index import LedgerIndex
from engine.grounding.numbers import paper_tokens
from engine.types import FactValue

MAX_CRITIQUE_ITEMS = 12


@dataclass
class GuardResult:
    text: str
    record: dict[str, Any] = field(default_factory=dict)


def check_numbers(
    text: str, ledger: Sequence[FactValue] | LedgerIndex, plan_patients: Sequence[int] = ()
) -> dict[str, Any]:
    """The verification record of one text (no regeneration): claims, paper metrics, order."""
    idx = ledger if isinstance(ledger, LedgerIndex) else LedgerIndex(ledger)
    rep = check_text(text, idx, list(plan_patients))
    return _record(text, rep, idx)


def _record(text: str, rep: ClaimReport, idx: LedgerIndex) -> dict[str, Any]:
    toks = set(paper_tokens(text))
    absent = sorted(t for t in toks if t not in idx.tokens)
    unsupported = [
        {
            "span": [c.start, c.end],
            "text": c.text,
            "reason": c.reason or c.status,
            "context": c.describe(),
            "expected": c.expected,
        }
        for c in rep.unsupported
    ]
    for v in rep.order_violations:
        unsupported.append(
            {
                "span": v["span"],
                "text": f"visit {v['visit']}",
                "reason": v["reason"],
                "context": "visit order",
                "expected": [],
            }
        )
    flagged = {u["text"].lstrip("+-") for u in unsupported}
    for t in absent:
        if t not in flagged:
            unsupported.append(
                {
                    "span": None,
                    "text": t,
                    "reason": f"{t} is not among the fact table's numbers",
                    "context": "fact table",
                    "expected": [],
                }
            )
    if not text.strip():
        # an empty answer has no wrong number but says nothing: it must not be released
        unsupported.append(
            {
                "span": None,
                "text": "",
                "reason": "the model returned an empty text",
                "context": "whole text",
                "expected": [],
            }
        )
    n_ctx = len(rep.with_context)
    return {
        "numbers": len(rep.claims),
        "numeric_tokens": len(toks),
        "claims_with_context": n_ctx,
        "numbers_without_context": len(rep.without_context),
        "claim_accuracy": rep.claim_accuracy,
        "unsupported": unsupported,
        "fact_precision": (len(toks) - len(absent)) / len(toks) if toks else 1.0,
        "hallucination_rate": len(absent) / len(toks) if toks else 0.0,
        "temporal_fidelity": rep.temporal_fidelity,
        "temporal_fidelity_strict": rep.temporal_fidelity_strict,
        "visit_mentions": rep.visit_mentions,
        "claims": [c.to_dict() for c in rep.claims],
    }


def critique(record: dict[str, Any]) -> str:
    """Textual feedback for the model: each unsupported number with its context and the facts."""
    lines = ["Some numbers in your text do not match the facts. Fix each one:"]
    for u in record["unsupported"][:MAX_CRITIQUE_ITEMS]:
        exp = f" The facts say: {'; '.join(u['expected'])}." if u.get("expected") else ""
        lines.append(f"- '{u['text']}' ({u['context']}): {u['reason']}.{exp}")
    more = len(record["unsupported"]) - MAX_CRITIQUE_ITEMS
    if more > 0:
        lines.append(f"- and {more} more.")
    lines.append(
        "Rewrite the text using only numbers from the facts, each stated with its patient, "
        "visit and domain; mention visits in increasing order; a decrease is an improvement."
    )
    return "\n".join(lines)


def guard_text(
    text: str,
    ledger: Sequence[FactValue] | LedgerIndex,
    regenerate: Callable[[str], str] | None,
    fallback: Callable[[], str],
    *,
    max_rounds: int = 2,
    plan_patients: Sequence[int] = (),
) -> GuardResult:
    """Return text whose numbers all hold, with the verification record for it.

    `regenerate(critique)` asks the same agent again with a critique naming each unsupported
    number (one LLM call); `fallback()` returns the deterministic facts-backend text. A prebuilt
    `LedgerIndex` may be passed to check several texts against one ledger (built once)."""
    idx = ledger if isinstance(ledger, LedgerIndex) else LedgerIndex(ledger)
    rounds = 0
    rec = check_numbers(text, idx, plan_patients)
    history = [_brief(rec)]
    while not _passed(rec) and regenerate is not None and rounds < max_rounds:
        rounds += 1
        text = regenerate(critique(rec))
        rec = check_numbers(text, idx, plan_patients)
        history.append(_brief(rec))
    fallback_used = False
    if not _passed(rec):
        rejected = {
            k: rec[k] for k in ("unsupported", "claim_accuracy", "hallucination_rate", "numbers")
        }
        rejected["text"] = text
        text = fallback()
        rec = check_numbers(text, idx, plan_patients)
        rec["rejected"] = rejected
        fallback_used = True
    rec.update(
        {
            "rounds": rounds,
            "fallback_used": fallback_used,
            "passed": _passed(rec),
            "history": history,
        }
    )
    if fallback_used:
        rec["note"] = (
            "The model's text still had unsupported numbers after "
            f"{rounds} regeneration round(s); the facts-backend text replaced it."
        )
    return GuardResult(text, rec)


def _passed(rec: dict[str, Any]) -> bool:
    return not rec["unsupported"]


def _brief(rec: dict[str, Any]) -> dict[str, Any]:
    return {
        "unsupported": [u["text"] for u in rec["unsupported"]],
        "claim_accuracy": rec["claim_accuracy"],
    }
