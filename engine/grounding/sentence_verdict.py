"""The statement checker's records: one verdict per sentence (status, reasons, the facts it
matched) and the report of a whole text."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.grounding.claim_report import ClaimReport
from engine.grounding.facts_view import fact_dict
from engine.types import FactValue


@dataclass
class SentenceVerdict:
    text: str
    span: tuple[int, int]
    status: str  # supported | neutral | unsupported
    reasons: list[str] = field(default_factory=list)
    facts: list[dict[str, Any]] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)  # which checks failed (for eval / tests)
    paragraph: int = 0

    def fail(self, category: str, reason: str) -> None:
        """A failed assertion of the sentence: its reason, and which check failed."""
        self.reasons.append(reason)
        self.categories.append(category)

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "span": list(self.span),
            "status": self.status,
            "reasons": self.reasons,
            "facts": self.facts,
        }


@dataclass
class StatementReport:
    text: str
    sentences: list[SentenceVerdict]
    claims: ClaimReport

    @property
    def unsupported(self) -> list[SentenceVerdict]:
        return [s for s in self.sentences if s.status == "unsupported"]

    @property
    def passed(self) -> bool:
        return not self.unsupported

    @property
    def unsupported_rate(self) -> float:
        n = len(self.sentences)
        return len(self.unsupported) / n if n else 0.0


def assertion_record(
    kind: str,
    word: str,
    patient: int,
    series: Mapping[int, FactValue],
    span: tuple[int, int] | None,
    facts: Iterable[FactValue],
) -> dict[str, Any]:
    """A verified word assertion with the ledger values it matched."""
    first = next(iter(series.values()))
    item = first.item if first.kind == "item" else None
    return {
        "assertion": kind,
        "word": word,
        "patient": patient,
        "domain": first.domain,
        "item": item,
        "span": list(span) if span else None,
        "values": [fact_dict(f) for f in facts],
    }
