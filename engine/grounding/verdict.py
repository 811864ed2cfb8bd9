"""The verdict: each claim checked against the ledger index. A claim is correct when a ledger value
consistent with its context (candidates) has its value (within rounding and the value's tolerance)
and, for changes, its sign agrees with the direction word (a decrease is an improvement). The
values that hold are recorded on the claim (`Claim.matched`): they are the claim's provenance.
Identifiers are checked too: a patient must be in the plan, a visit must exist for the patient, a
date must be that patient's (and that visit's). A number without recoverable context gets the
lenient check (its value occurs among the ledger's numeric tokens).
"""

from __future__ import annotations

from collections.abc import Callable

from engine.grounding.claim import Claim, variant
from engine.grounding.ledger_index import LedgerIndex
from engine.grounding.numbers import canonical
from engine.grounding.vocabulary import ROUNDED_KINDS, SIGNED_KINDS, item_counts
from engine.types import FactValue
from kb_store.documents import fmt_num

_PAIR_FACT_KINDS = ("pair", "delta", "cumulative", "slope", "slope_year")


def judge(cl: Claim, idx: LedgerIndex, allowed: set[int]) -> None:
    """Set the claim's status, reason, expected values and matched ledger values."""
    _JUDGES.get(cl.role, _judge_value)(cl, idx, allowed)


def _judge_patient(cl: Claim, idx: LedgerIndex, allowed: set[int]) -> None:
    p = int(cl.value)
    if allowed and p not in allowed:
        cl.status, cl.reason = (
            "wrong",
            f"patient {p} is outside the plan (patients {sorted(allowed)})",
        )
    elif idx.patients and p not in idx.patients:
        cl.status, cl.reason = "wrong", f"patient {p} has no facts"
    else:
        cl.status = "correct"


def _judge_visit(cl: Claim, idx: LedgerIndex, _allowed: set[int]) -> None:
    v = int(cl.value)
    known = idx.visits.get(cl.patient if cl.patient in idx.visits else None, set())
    if not idx.visits:
        cl.status = "lenient_supported" if canonical(v) in idx.tokens else "lenient_unsupported"
        cl.context = False
    elif v in known:
        cl.status = "correct"
        cl.matched = idx.find(["visit"], patient=cl.patient) if cl.patient is not None else []
        cl.matched = [f for f in cl.matched if int(f.value) == v]
    else:
        who = f"patient {cl.patient}" if cl.patient is not None else "any patient"
        cl.status, cl.reason = "wrong", f"{who} has no visit {v} (visits {sorted(known)})"


def _judge_date(cl: Claim, idx: LedgerIndex, _allowed: set[int]) -> None:
    iso = cl.date or ""
    dates = idx.dates.get(cl.patient if cl.patient in idx.dates else None, {})
    hits = [d for d in dates if d.startswith(iso)]
    if cl.visit is not None:
        hits = [d for d in hits if dates[d] in (cl.visit, None)]
    if not idx.dates:
        cl.context = False
        cl.status = (
            "lenient_supported"
            if all(canonical(float(p)) in idx.tokens for p in iso.split("-"))
            else "lenient_unsupported"
        )
    elif hits:
        cl.status = "correct"
        cl.matched = [
            f for f in idx.of_kind("date") if f.date in hits and cl.patient in (None, f.patient)
        ]
    else:
        cl.status = "wrong"
        exp = [d for d, v in dates.items() if cl.visit is None or v == cl.visit]
        cl.reason = f"date {iso} is not a visit date of {cl.describe()}"
        cl.expected = sorted(exp)[:6]


def _judge_value(cl: Claim, idx: LedgerIndex, _allowed: set[int]) -> None:
    if not cl.context:
        ok = canonical(cl.value) in idx.tokens
        cl.status = "lenient_supported" if ok else "lenient_unsupported"
        if not ok:
            cl.reason = f"{cl.text} occurs nowhere in the facts"
        return
    if cl.items is not None and not cl.items:
        cl.status = "wrong"
        cl.reason = f"'{cl.item_phrase}' is not an item of the assessed instruments"
        return
    if cl.items is not None and cl.kind in ("score", "item") and not (cl.items & idx.items_known):
        cl.status, cl.reason = "wrong", f"no item '{cl.item_phrase}' in the facts"
        return
    if cl.visit_list:
        _judge_visit_list(cl, idx)
        return
    facts = candidates(cl, idx)
    good = _good(cl, idx, facts)
    if good:
        cl.status, cl.matched = "correct", good
        return
    _explain_wrong(cl, facts)


#: the judge of each claim role with its own rule; every other role is judged as a value
_JUDGES: dict[str, Callable[[Claim, LedgerIndex, set[int]], None]] = {
    "patient": _judge_patient,
    "visit": _judge_visit,
    "date": _judge_date,
}


def _judge_visit_list(cl: Claim, idx: LedgerIndex) -> None:
    """'rated 3 at visits 2, 3 and 4': the claim must hold at each visit. Whether a value holds
    does not depend on the visit (only which values are candidates does), so a candidate of
    several visits (a threshold of a red-flag paragraph) is tested once."""
    tested: dict[int, tuple[FactValue, bool]] = {}  # id -> (the value, held): the value kept alive
    per_visit: dict[int, list[FactValue]] = {}
    for v in cl.visit_list:
        at = variant(cl, visit=v, visit_list=[])
        good = []
        for f in candidates(at, idx):
            hit = tested.get(id(f))
            if hit is None:
                hit = tested[id(f)] = (f, _holds(at, f))
            if hit[1]:
                good.append(f)
        per_visit[v] = good
    settle_visit_list(cl, per_visit)


def settle_visit_list(cl: Claim, per_visit: dict[int, list[FactValue]]) -> None:
    """The verdict of a visit-list claim from the values that hold at each listed visit."""
    missing = [v for v, good in per_visit.items() if not good]
    if missing:
        cl.status = "wrong"
        cl.reason = f"{cl.text} does not hold for {cl.describe()} at visit(s) {missing}"
    else:
        cl.status = "correct"
        cl.matched = [f for good in per_visit.values() for f in good]


def _explain_wrong(cl: Claim, facts: list[FactValue]) -> None:
    signed_kind = cl.kind in SIGNED_KINDS
    cl.status = "wrong"
    cl.expected = [
        f"{f.label or f.kind}: {_fmt_signed(float(f.value)) if signed_kind else fmt_num(float(f.value))}"
        for f in facts[:6]
    ]
    undirected = variant(cl, direction=None, signed=False)
    if (
        signed_kind
        and cl.direction is not None
        and any(_value_ok(cl.value, float(f.value), f.tolerance, undirected, True) for f in facts)
    ):
        cl.reason = (
            f"'{cl.direction_word}' contradicts the sign of the change ({cl.describe()}); "
            "a decrease is an improvement, an increase a worsening"
        )
    elif not facts:
        cl.reason = f"no fact for {cl.describe()}"
    else:
        cl.reason = f"{cl.text} does not match the fact for {cl.describe()}"


def _fmt_signed(x: float) -> str:
    return ("+" if x > 0 else "") + fmt_num(x) if x else "0"


def _value_ok(claimed: float, fact: float, tol: float, cl: Claim, signed_kind: bool) -> bool:
    rounded = cl.kind in ROUNDED_KINDS or not float(fact).is_integer()
    tol = max(tol, 0.5 * 10 ** (-cl.decimals) if rounded else 0.0, 1e-9)
    if cl.kind == "threshold":
        return abs(abs(claimed) - abs(fact)) <= tol
    if not signed_kind:
        return abs(abs(claimed) - fact) <= tol if fact >= 0 else abs(claimed - fact) <= tol
    if cl.signed:
        ok = abs(claimed - fact) <= tol
    elif cl.direction is not None:
        ok = abs(cl.direction * abs(claimed) - fact) <= tol
    else:
        ok = abs(abs(claimed) - abs(fact)) <= tol
    if ok and cl.direction is not None and fact != 0 and (fact > 0) != (cl.direction > 0):
        return False
    return ok


def _holds(cl: Claim, f: FactValue) -> bool:
    """Whether the claim's number states the ledger value `f` (its context aside)."""
    return _value_ok(
        cl.value,
        float(f.value),
        f.tolerance,
        cl,
        f.kind in _PAIR_FACT_KINDS if cl.kind == "since" else cl.kind in SIGNED_KINDS,
    )


def _good(cl: Claim, idx: LedgerIndex, facts: list[FactValue] | None = None) -> list[FactValue]:
    facts = candidates(cl, idx) if facts is None else facts
    return [f for f in facts if _holds(cl, f)]


# ---------------------------------------------------------------- candidates by kind

Finder = Callable[[Claim, LedgerIndex], list[FactValue]]


def candidates(cl: Claim, idx: LedgerIndex) -> list[FactValue]:
    """The ledger values consistent with the claim's context (its value is not looked at)."""
    if cl.domain == "total" and cl.kind == "score":
        return idx.find(
            ["score", "max", "min", "mean", "rank"],
            patient=cl.patient,
            visit=cl.visit,
            domain="total",
        )
    if cl.kind == "item" or (cl.items is not None and cl.kind == "score"):
        return idx.find(["item"], **_ctx(cl))
    finder = _FINDERS.get(cl.kind or "")
    if finder is not None:
        return finder(cl, idx)
    return idx.find([cl.kind or "score"], patient=cl.patient, visit=cl.visit, domain=_dom(cl))


def _dom(cl: Claim) -> str | None:
    return None if cl.domain == "total" else cl.domain


def _ctx(cl: Claim, **over: object) -> dict:
    ctx = {"patient": cl.patient, "visit": cl.visit, "domain": _dom(cl), "items": cl.items}
    ctx.update(over)
    return ctx


def _change(cl: Claim, idx: LedgerIndex) -> list[FactValue]:
    extra = (
        idx.find(["slope"], patient=cl.patient, domain=_dom(cl))
        if cl.visit is None and cl.items is None
        else []
    )
    return idx.find(["delta", "cumulative"], **_ctx(cl)) + extra


def _pair(cl: Claim, idx: LedgerIndex) -> list[FactValue]:
    r, v = cl.ref_visit, cl.visit
    if r == 1:
        return idx.find(["cumulative"], **_ctx(cl))
    if r is not None and v is not None and r == v - 1:
        return idx.find(["delta"], **_ctx(cl))
    return _pair_facts(cl, idx)


def _since(cl: Claim, idx: LedgerIndex) -> list[FactValue]:
    pair = candidates(variant(cl, kind="pair"), idx)
    kind = ["item"] if cl.items is not None else ["score"]
    return pair + idx.find(kind, **_ctx(cl, visit=cl.ref_visit))


def _statistic(cl: Claim, idx: LedgerIndex) -> list[FactValue]:
    k = cl.kind or ""
    visit = cl.visit if k == "pdq8_si" else None
    return idx.find([k], patient=cl.patient, domain=_dom(cl), visit=visit)


def _count_visits(cl: Claim, idx: LedgerIndex) -> list[FactValue]:
    p = cl.patient
    if cl.instrument:  # "6 PDQ-8 questionnaires": that instrument's count, no other
        label = f"{cl.instrument} assessments"
        return [f for f in idx.find(["count"], patient=p) if f.label == label]
    pats = [p] if p is not None else sorted(idx.patients)
    ns = sorted({len(idx.visits.get(q, set())) for q in pats} - {0})
    extra = [FactValue("count", float(n), patient=p, label="number of visits") for n in ns]
    return idx.find(["count"], patient=p) + extra


def _count_items(cl: Claim, idx: LedgerIndex) -> list[FactValue]:
    d = _dom(cl)
    consts = [
        FactValue("count", float(n), domain=d, label=lab, source="kb_store/profiles")
        for n, lab in item_counts(d)
    ]
    return idx.find(["count"], patient=cl.patient, visit=cl.visit, domain=d) + consts


def _count_patients(_cl: Claim, idx: LedgerIndex) -> list[FactValue]:
    return idx.find(["count"]) + [
        FactValue("count", float(len(idx.patients)), label="number of patients")
    ]


_FINDERS: dict[str, Finder] = {
    "score": lambda cl, idx: idx.find(
        ["score"], patient=cl.patient, visit=cl.visit, domain=_dom(cl)
    ),
    "delta": lambda cl, idx: idx.find(["delta"], **_ctx(cl)),
    "cumulative": lambda cl, idx: idx.find(["cumulative"], **_ctx(cl)),
    "change": _change,
    "ranked": lambda cl, idx: idx.find(
        ["score", "slope", "slope_year", "max", "min", "mean"],
        patient=cl.patient,
        domain=_dom(cl),
        visit=cl.visit,
    ),
    "pair": _pair,
    "since": _since,
    "slope": lambda cl, idx: idx.find(["slope"], patient=cl.patient, domain=_dom(cl)),
    "slope_year": lambda cl, idx: idx.find(["slope_year"], patient=cl.patient, domain=_dom(cl)),
    # "its highest Summary Index of 37.5": the PDQ-8's index is a value of its domain too
    "max": lambda cl, idx: idx.find(
        ["max", "score", "pdq8_si"], patient=cl.patient, domain=_dom(cl), visit=cl.visit
    ),
    "min": lambda cl, idx: idx.find(
        ["min", "score", "pdq8_si"], patient=cl.patient, domain=_dom(cl), visit=cl.visit
    ),
    "mean": _statistic,
    "rank": _statistic,
    "pdq8_si": _statistic,
    "threshold": lambda cl, idx: idx.find(["threshold"], domain=_dom(cl)),
    "count_visits": _count_visits,
    "count_items": _count_items,
    "count_patients": _count_patients,
}


def _pair_facts(cl: Claim, idx: LedgerIndex) -> list[FactValue]:
    """Change between two named visits, computed from the two score facts of the ledger."""
    kind = "item" if cl.items is not None else "score"
    out = []
    ends = idx.find([kind], patient=cl.patient, visit=cl.visit, domain=cl.domain, items=cl.items)
    for e in ends:
        for s in idx.find(
            [kind],
            patient=e.patient,
            visit=cl.ref_visit,
            domain=e.domain,
            items=frozenset([e.item]) if e.item else None,
        ):
            if e.visit is not None and s.visit is not None and e.visit > s.visit:
                out.append(
                    FactValue(
                        "pair",
                        e.value - s.value,
                        patient=e.patient,
                        visit=e.visit,
                        domain=e.domain,
                        item=e.item,
                        label=f"{e.domain} change from visit {s.visit} to visit {e.visit}",
                        source="computed",
                    )
                )
    return out
