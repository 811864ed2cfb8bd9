"""The ledger read as series for the statement checker: scores per (patient, domain), item ratings
per (patient, item), MCIDs, severity bands, the swing floor and visit dates. Every value here is a
ledger value; nothing is recomputed from the fact table. The judgements over them (the MCID label,
a fluctuating course) are the clinical core's own functions (engine.clinical.series.classify,
engine.clinical.course.is_fluctuating), so the checker and the writers cannot disagree."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine.clinical.course import is_fluctuating
from engine.clinical.ledger import SWING_MIN
from engine.clinical.series import classify
from engine.contexts import Mcid
from engine.grounding.lexicon import assertions
from engine.types import FactValue


class FactsView:
    """Series per (patient, domain) and (patient, item), MCIDs, severity bands and dates,
    read once from the ledger (every number here is a ledger value)."""

    def __init__(self, ledger: Sequence[FactValue]):
        self.scores: dict[tuple[int, str], dict[int, FactValue]] = {}
        self.items: dict[tuple[int, str], dict[int, FactValue]] = {}
        self.item_domain: dict[str, str] = {}
        self.mcid: dict[str, dict[str, float]] = {}
        self.bands: dict[str, list[tuple[str, float | None, float | None]]] = {}
        self.dates: dict[int, dict[int, str]] = {}
        #: the smallest swing of a fluctuating course (0 when the ledger does not carry it)
        self.swing_min = 0.0
        bounds: dict[tuple[str, str], list[float]] = {}
        for f in ledger:
            if f.kind == "score" and f.patient is not None and f.visit is not None and f.domain:
                self.scores.setdefault((f.patient, f.domain), {})[int(f.visit)] = f
            elif f.kind == "item" and f.patient is not None and f.visit is not None and f.item:
                self.items.setdefault((f.patient, f.item), {})[int(f.visit)] = f
                if f.domain:
                    self.item_domain[f.item] = f.domain
            elif f.kind == "threshold" and f.item == SWING_MIN:
                self.swing_min = float(f.value)
            elif f.kind == "threshold" and f.domain and f.item:
                if f.item.startswith("mcid_"):
                    self.mcid.setdefault(f.domain, {})[f.item[5:]] = float(f.value)
                elif f.item.startswith("severity_"):
                    bounds.setdefault((f.domain, f.item[9:]), []).append(float(f.value))
            if f.kind == "visit" and f.patient is not None and f.date and f.visit is not None:
                self.dates.setdefault(f.patient, {})[int(f.visit)] = f.date
        for (dom, level), vals in bounds.items():
            self.bands.setdefault(dom, []).append((level, min(vals), max(vals)))
        self.patients = sorted({p for p, _ in self.scores})

    def series(
        self, patient: int, domain: str | None, items: frozenset[str] | None
    ) -> tuple[dict[int, FactValue] | None, str]:
        """(visit -> FactValue, label) of an item (the first one the ledger knows) or a domain."""
        if items:
            for code in sorted(items):
                s = self.items.get((patient, code))
                if s:
                    return s, f"item {code}"
            return None, ""
        if domain:
            s = self.scores.get((patient, domain))
            return (s, domain) if s else (None, "")
        return None, ""

    def mcid_of(self, domain: str | None) -> Mcid | None:
        """The domain's MCID pair as the ledger states it (None: no MCID, direction only)."""
        m = self.mcid.get(domain or "")
        if not m or "worsening" not in m or "improvement" not in m:
            return None
        return Mcid(m["improvement"], m["worsening"], "ledger")

    def label(self, domain: str | None, change: float) -> str:
        """The change label by the engine's one MCID rule (engine.clinical.series.classify)."""
        return classify(change, self.mcid_of(domain)).label

    def fluctuating(self, domain: str | None, values: Sequence[float]) -> bool:
        """Whether a series of one domain fluctuates by the engine's one definition."""
        deltas = [b - a for a, b in zip(values, values[1:], strict=False)]
        return is_fluctuating(deltas, self.mcid_of(domain), self.swing_min)

    def band(self, domain: str, value: float) -> str | None:
        """The band word of a domain score: 0 on a banded scale is the zero level ("normal": every
        item at its normal anchor, as the engine's course rules say), else the band it falls in."""
        if value == 0 and self.bands.get(domain):
            return str(assertions()["domain_zero_level"]["level"])
        for level, lo, hi in self.bands.get(domain, []):
            # bands are stored by their finite bounds; the open top band has lo == hi
            if lo == hi and value >= lo or lo <= value <= hi:
                return level
        return None


def fact_dict(f: FactValue) -> dict[str, Any]:
    """A ledger value as the plain record a verdict lists among the facts it matched."""
    return {
        "kind": f.kind,
        "value": f.value,
        "patient": f.patient,
        "visit": f.visit,
        "domain": f.domain,
        "item": f.item,
        "label": f.label,
    }


def num_text(x: float) -> str:
    """A number as a verdict's reason writes it: an integer without decimals ("12", not "12.0"),
    else its shortest form ("3.25")."""
    x = float(x)
    return str(int(x)) if x.is_integer() else f"{x:g}"
