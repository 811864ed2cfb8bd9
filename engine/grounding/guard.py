"""The release gate for generated text: check numbers, critique and regenerate (bounded), fall back
to the facts-backend text when the model cannot be made to agree with the facts.

Contract used by the engine (keep it): `guard_text(...) -> GuardResult`. This first version checks
numbers leniently (a number is supported when some ledger value equals it); the claim-level check
(issue 6) replaces `check_numbers` without changing the signature.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.types import FactValue

NUMBER_RE = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?%?")


@dataclass
class GuardResult:
    text: str
    record: dict[str, Any] = field(default_factory=dict)


def check_numbers(text: str, ledger: Sequence[FactValue]) -> dict[str, Any]:
    values = [v.value for v in ledger]
    nums = [m for m in NUMBER_RE.finditer(text)]
    unsupported = []
    for m in nums:
        tok = m.group().rstrip("%")
        x = float(tok)
        if not any(abs(x - v) <= 1e-9 or abs(abs(x) - abs(v)) <= 1e-9 for v in values):
            unsupported.append({"span": [m.start(), m.end()], "text": m.group(), "reason": "no fact has this value"})
    n = len(nums)
    return {
        "numbers": n,
        "unsupported": unsupported,
        "fact_precision": (n - len(unsupported)) / n if n else 1.0,
        "hallucination_rate": len(unsupported) / n if n else 0.0,
    }


def guard_text(
    text: str,
    ledger: Sequence[FactValue],
    regenerate: Callable[[str], str] | None,
    fallback: Callable[[], str],
    *,
    max_rounds: int = 2,
    plan_patients: Sequence[int] = (),
) -> GuardResult:
    """Return text whose numbers all hold, with the verification record for it.

    `regenerate(critique)` asks the same agent again with a critique naming each unsupported
    number (one LLM call); `fallback()` returns the deterministic facts-backend text."""
    rounds = 0
    rec = check_numbers(text, ledger)
    while rec["unsupported"] and regenerate is not None and rounds < max_rounds:
        rounds += 1
        critique = "These numbers are not supported by the facts: " + ", ".join(
            u["text"] for u in rec["unsupported"]
        ) + ". Use only numbers that appear in the facts."
        text = regenerate(critique)
        rec = check_numbers(text, ledger)
    fallback_used = False
    if rec["unsupported"]:
        rejected = rec
        text = fallback()
        rec = check_numbers(text, ledger)
        rec["rejected"] = rejected
        fallback_used = True
    rec.update({"rounds": rounds, "fallback_used": fallback_used, "passed": not rec["unsupported"]})
    return GuardResult(text, rec)
