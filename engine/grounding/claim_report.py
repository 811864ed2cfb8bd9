"""Claim-level grounding: each number in a text is read with its context (reader.py)
and checked against the fact for that context in the run's ledger (verdict.py); this module
assembles the report of one text: its claims, the visit-order check and the accuracy figures.

A *claim* is one number plus what the text says it is: patient, visit (number, "baseline", "latest",
or a date), reference visit for changes, domain or item, and kind (score, item, change from the
previous visit, change from baseline, slope per visit/per year, mean/max/min, rank, count,
threshold, PDQ-8 summary index), plus a direction word ("improved", "worsened", ...) when one is
bound to it. Identifiers are claims too: a patient id must be in the plan, a visit must exist for
the patient, a date must be that patient's (and that visit's) date.

Scoping rule (docs/grounding.md):
- The *patient* carries over within a paragraph (until another patient cue); a cue naming several
  patients ("patients 3 and 8") clears it.
- *Visit*, *domain* and *item* carry over within a sentence, left to right. Cues inside
  parentheses apply inside them only (the state is restored at ")"). An item ends at ";", at a new
  domain or item cue, and at the end of the sentence.
- A visit written right after a number ("14 at visit 3", "9 at baseline", "12 (visit 2)") binds
  to that number and becomes the running visit.
- Kind cues are read in the window after the number (up to the next number, 60 characters) and
  then in the words just before it: "from baseline"/"since visit 1" (cumulative), "from the
  previous visit"/"from visit k" (change from visit k), "per visit"/"slope", "per year", "MCID",
  "cut-off", "average", "highest", "lowest", "ranked", "N visits/patients". A signed number or a
  change verb before it ("increased by") makes a change whose reference is unknown (accepted as
  a change from the previous visit or from baseline).
- A direction word binds to the nearest change claim before it in the sentence (else the next
  one after it) and must agree with the sign of the fact (decrease = improvement).
A number with neither a domain/item, an explicit kind nor a visit has *no recoverable context*:
it falls back to the lenient check (its value occurs among the ledger's numeric tokens) and is
counted separately. A claim with partial context is checked against every fact consistent with
the context it has.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from engine.grounding.claim import Claim
from engine.grounding.ledger_index import LedgerIndex
from engine.grounding.numbers import normalise
from engine.grounding.paragraphs import paragraphs
from engine.grounding.reader import Anchor, ParagraphReading, read_paragraph, shifted_claim
from engine.grounding.run_memo import cached
from engine.grounding.verdict import judge
from engine.types import FactValue, Plan


@dataclass
class ClaimReport:
    claims: list[Claim]
    order_violations: list[dict[str, Any]]
    temporal_fidelity: float
    temporal_fidelity_strict: float

    @property
    def with_context(self) -> list[Claim]:
        return [c for c in self.claims if c.context]

    @property
    def without_context(self) -> list[Claim]:
        return [c for c in self.claims if not c.context]

    @property
    def claim_accuracy(self) -> float:
        ctx = self.with_context
        return sum(c.status == "correct" for c in ctx) / len(ctx) if ctx else 1.0

    @property
    def visit_mentions(self) -> list[int]:
        """Visit indices the text is about, in order of mention (reference visits excluded)."""
        return [int(c.value) for c in self.claims if c.role == "visit" and not c.reference]

    @property
    def unsupported(self) -> list[Claim]:
        return [c for c in self.claims if not c.supported]


# ---------------------------------------------------------------- ledger index


def check_text(
    text: str, ledger: Sequence[FactValue] | LedgerIndex, plan: Plan | Sequence[int] | None = None
) -> ClaimReport:
    """Extract and check every claim; also the visit-order check behind temporal fidelity."""
    plan_patients = set(plan.patients) if isinstance(plan, Plan) else set(plan or ())
    if isinstance(ledger, LedgerIndex):
        # the guard checks each text's numbers twice (claim record, statement check) against
        # one index: once per run (run_memo); the report is read-only for its callers
        key = ("check_text", text, frozenset(plan_patients), ledger)
        return cached(key, lambda: _check_text(text, ledger, plan_patients))
    return _check_text(text, LedgerIndex(ledger), plan_patients)


def _check_text(text: str, idx: LedgerIndex, plan_patients: set[int]) -> ClaimReport:
    allowed = allowed_patients(idx, plan_patients)
    claims: list[Claim] = []
    anchors: list[Anchor] = []
    vs: list[int] = []
    si0 = 0
    for pi, (p0, para) in enumerate(paragraphs(normalise(text))):
        # each paragraph read and judged once per run (the final text repeats paragraphs of the
        # agents' texts; the statement check's digit copy differs in few paragraphs)
        part = judged_paragraph(para, idx, allowed)
        claims.extend(shifted_claim(c, p0, pi, si0) for c in part.claims)
        anchors.extend(((pi, k[1], k[2]), v, pos + p0) for k, v, pos in part.anchors)
        vs.extend(part.all_visits)
        si0 += part.sentences
    violations = _order_violations(anchors)
    strict = 1.0 if all(a <= b for a, b in zip(vs, vs[1:], strict=False)) else 0.0
    return ClaimReport(claims, violations, 0.0 if violations else 1.0, strict)


def judged_paragraph(para: str, idx: LedgerIndex, allowed: frozenset[int]) -> ParagraphReading:
    """The judged claims of one paragraph (paragraph-local offsets), once per run: shared by
    every text of the run that has the paragraph, and read-only for its callers."""
    return cached(
        ("judged_paragraph", para, idx, allowed), lambda: _judged_paragraph(para, idx, allowed)
    )


def allowed_patients(idx: LedgerIndex, plan_patients: Sequence[int] | set[int]) -> frozenset[int]:
    """The patient ids a text may name: the plan's, else every patient of the ledger."""
    return frozenset(plan_patients or idx.patients)


def _judged_paragraph(para: str, idx: LedgerIndex, allowed: frozenset[int]) -> ParagraphReading:
    """One paragraph's claims, each with its verdict (paragraph-local offsets)."""
    part = read_paragraph(para, idx)
    for cl in part.claims:
        judge(cl, idx, allowed)
    return part


def extract_claims(
    text: str, ledger: Sequence[FactValue] | LedgerIndex, plan: Plan | Sequence[int] | None = None
) -> list[Claim]:
    """Claims of `text`, each checked against `ledger` (see module docstring for the rules)."""
    return check_text(text, ledger, plan).claims


def _order_violations(anchors: list[Anchor]) -> list[dict[str, Any]]:
    """Within one paragraph, patient and domain, the visits a text is about must not go backwards."""
    last: dict[tuple, tuple[int, int]] = {}
    out = []
    seen: set[tuple] = set()
    for key, v, pos in sorted(anchors, key=lambda a: a[2]):
        if key in last and v < last[key][0] and (key, v, last[key][0]) not in seen:
            seen.add((key, v, last[key][0]))
            out.append(
                {
                    "span": [pos, pos],
                    "visit": v,
                    "after_visit": last[key][0],
                    "patient": key[1],
                    "domain": key[2],
                    "reason": f"visit {v} is mentioned after visit {last[key][0]} "
                    f"({'patient ' + str(key[1]) if key[1] is not None else 'no patient'}, "
                    f"{key[2] or 'no domain'}): visits out of order",
                }
            )
        last[key] = (max(v, last.get(key, (v, 0))[0]), pos)
    return out
