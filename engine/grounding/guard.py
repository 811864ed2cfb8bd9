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

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.grounding.claim_report import ClaimReport, check_text
from engine.grounding.ledger_index import LedgerIndex
from engine.grounding.numbers import paper_tokens
from engine.grounding.sentences import split_sentences
from engine.grounding.verify import verify_text
from engine.grounding.vocabulary import DOMAIN_RE
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
    lines = ["Some statements in your text do not match the facts. Fix each one:"]
    for u in record["unsupported"][:MAX_CRITIQUE_ITEMS]:
        exp = f" The facts say: {'; '.join(u['expected'])}." if u.get("expected") else ""
        lines.append(f"- '{u['text']}' ({u['context']}): {u['reason']}.{exp}")
    more = len(record["unsupported"]) - MAX_CRITIQUE_ITEMS
    if more > 0:
        lines.append(f"- and {more} more.")
    st = record.get("statements")
    if st:
        for b in st["removable"][:MAX_CRITIQUE_ITEMS]:
            lines.append(f"- Sentence '{b['text'][:160]}': {'; '.join(b['reasons'][:2])}.")
        missing = st["coverage_detail"]["missing"]
        if missing:
            lines.append("State these key facts: " + "; ".join(missing[:MAX_CRITIQUE_ITEMS]) + ".")
    lines.append(
        "Rewrite the text using only numbers from the facts, each stated with its patient, "
        "visit and domain; mention visits in increasing order; a decrease is an improvement. "
        "Say nothing the facts do not contain: no medication, diagnosis, age or sex, cause, "
        "advice, lifestyle, people, places or prices."
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
    statements: StatementSpec | None = None,
    repair: bool = True,
) -> GuardResult:
    """Return text whose numbers all hold, with the verification record for it.

    `regenerate(critique)` asks the same agent again with a critique naming each unsupported
    number (one LLM call); `fallback()` returns the deterministic facts-backend text. A prebuilt
    `LedgerIndex` may be passed to check several texts against one ledger (built once).

    With `statements` (the statement check), every sentence must also be supported or neutral
    and the text must state its key facts: an unsupported sentence is first *repaired* (removed,
    or replaced by the facts text's sentence about the same patient and domain); the repaired
    text is released when it passes, otherwise critique and regenerate, then the facts text.
    `record["released"]` says which: as_written | repaired | regenerated | replaced.
    `repair=False` measures a text that is released as it is (the facts backend's own text): its
    record is that text's, unrepaired."""
    idx = ledger if isinstance(ledger, LedgerIndex) else LedgerIndex(ledger)
    rounds = 0
    written = text
    rec = check_prose(text, idx, plan_patients, statements)
    history = [_brief(rec)]
    released = "as_written"
    repairs: list[dict[str, Any]] = []
    if not _passed(rec) and repair:
        text, rec, released = _try_repair(
            text, rec, idx, plan_patients, statements, fallback, repairs
        )
    while not _passed(rec) and regenerate is not None and rounds < max_rounds:
        rounds += 1
        text = regenerate(critique(rec))
        rec = check_prose(text, idx, plan_patients, statements)
        history.append(_brief(rec))
        released = "regenerated"
        if not _passed(rec):
            text, rec, released = _try_repair(
                text, rec, idx, plan_patients, statements, fallback, repairs, "regenerated"
            )
    fallback_used = False
    if not _passed(rec):
        rejected = {
            k: rec[k] for k in ("unsupported", "claim_accuracy", "hallucination_rate", "numbers")
        }
        rejected["text"] = text
        if "statements" in rec:
            rejected["unsupported_sentences"] = rec["statements"]["removable"]
            rejected["coverage"] = rec["statements"]["coverage_detail"]
        text = fallback()
        rec = check_prose(text, idx, plan_patients, statements)
        rec["rejected"] = rejected
        fallback_used = True
        released = "replaced"
    rec.update(
        {
            "rounds": rounds,
            "fallback_used": fallback_used,
            "passed": _passed(rec),
            "history": history,
            "released": released,
            "repairs": repairs,
        }
    )
    if released != "as_written":
        rec["written"] = written  # the model's first text, for the before/after of QA review
    if fallback_used:
        rec["note"] = (
            "The model's text still had unsupported numbers or sentences (or missed key facts) "
            f"after repair and {rounds} regeneration round(s); the facts-backend text replaced it."
        )
    return GuardResult(text, rec)


@dataclass(frozen=True)
class StatementSpec:
    """What the statement check needs beyond the ledger: the agent (for its key facts), the
    run's flags and cohort finding, the contexts' own phrases, and the coverage threshold."""

    agent: str | None = None
    flags: Mapping[str, Sequence[Mapping[str, Any]]] | None = None
    cohort: Mapping[str, Any] | None = None
    phrases: tuple[str, ...] = ()
    coverage_min: float = 1.0
    analysis: str | None = None  # the plan's analysis type (a single session states scores)
    digest: bool = False  # the final agent's digest (its key facts: key_facts.in_digest)


def check_prose(
    text: str, idx: LedgerIndex, plan_patients: Sequence[int], spec: StatementSpec | None
) -> dict[str, Any]:
    """The prose checker's record of one text: its numbers, then (with `spec`) its sentences
    and the agent's key facts."""
    rec = check_numbers(text, idx, plan_patients)
    if spec is not None:
        st = verify_text(
            text,
            idx,
            plan_patients,
            agent=spec.agent,
            flags=spec.flags,
            phrases=spec.phrases,
            coverage_min=spec.coverage_min,
            cohort=spec.cohort,
            analysis=spec.analysis,
            digest=spec.digest,
        )
        rec["statements"] = st
        rec["coverage"] = st["coverage"]
        rec["unsupported_sentences"] = st["unsupported_sentences"]
        rec["sentences_total"] = st["sentences_total"]
        rec["statements_passed"] = st["passed"]
    return rec


def _try_repair(
    text: str,
    rec: dict[str, Any],
    idx: LedgerIndex,
    plan_patients: Sequence[int],
    spec: StatementSpec | None,
    fallback: Callable[[], str],
    repairs: list[dict[str, Any]],
    stage: str = "as_written",
) -> tuple[str, dict[str, Any], str]:
    """Remove each unsupported sentence, or replace it by the facts text's sentence for the same
    content; keep the repair when the repaired text passes every check."""
    if spec is None or not text.strip():
        return text, rec, stage
    bad = rec["statements"]["removable"]
    # numbers the claim reader flagged outside any sentence verdict (e.g. visit order) cannot be
    # repaired by removing sentences
    spans = [tuple(b["span"]) for b in bad]
    loose = [
        u
        for u in rec["unsupported"]
        if u.get("span") is None or not any(a <= u["span"][0] < b for a, b in spans)
    ]
    if not bad or loose:
        return text, rec, stage
    source = fallback()
    repaired, removed = repair_text(text, bad, source)
    new = check_prose(repaired, idx, plan_patients, spec)
    entry = {"stage": stage, "removed": removed, "passed": _passed(new)}
    repairs.append(entry)
    if _passed(new):
        return repaired, new, "repaired"
    return text, rec, stage


def repair_text(
    text: str,
    bad: Sequence[Mapping[str, Any]],
    source: str,
) -> tuple[str, list[dict[str, Any]]]:
    """`text` without its unsupported sentences; each is replaced by the sentence of `source` (the
    facts text) about the same patients and domains when there is one not yet in the text."""
    src = [source[a:b].strip() for _p, a, b in split_sentences(source)]
    used: set[str] = set()
    out = []
    last = 0
    removed = []
    for b in sorted(bad, key=lambda x: x["span"][0]):
        a0, a1 = b["span"]
        out.append(text[last:a0])
        last = a1
        repl = _replacement(text[a0:a1], src, used, text)
        if repl:
            used.add(repl)
            out.append(repl)
        removed.append({"text": b["text"], "reasons": b["reasons"], "replaced_by": repl or None})
    out.append(text[last:])
    repaired = re.sub(r"[ \t]{2,}", " ", "".join(out))
    repaired = re.sub(r"\n{3,}", "\n\n", repaired).strip()
    return repaired, removed


def _keys(sentence: str) -> tuple[set[int], set[str]]:
    pats = {int(x) for x in re.findall(r"\b(?:patient|proj id)\s*#?(\d+)", sentence, re.I)}
    doms = set()
    for pat, dom in DOMAIN_RE:
        if pat.search(sentence):
            doms.add(dom)
    return pats, doms


def _replacement(sentence: str, src: list[str], used: set[str], text: str) -> str:
    p, d = _keys(sentence)
    if not d:
        return ""
    best, score = "", 0
    for cand in src:
        if cand in used or cand in text:
            continue
        cp, cd = _keys(cand)
        if p and cp and not (p & cp):
            continue
        s = len(d & cd) * 2 + len(p & cp)
        if d & cd and s > score:
            best, score = cand, s
    return best


def _passed(rec: dict[str, Any]) -> bool:
    return not rec["unsupported"] and rec.get("statements_passed", True)


def _brief(rec: dict[str, Any]) -> dict[str, Any]:
    out = {
        "unsupported": [u["text"] for u in rec["unsupported"]],
        "claim_accuracy": rec["claim_accuracy"],
    }
    if "statements" in rec:
        out["unsupported_sentences"] = [b["text"] for b in rec["statements"]["removable"]]
        out["coverage"] = rec["coverage"]
    return out
