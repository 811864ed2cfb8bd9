"""The ledger index: look-ups over a run's ledger (FactValue list) by kind and context, the
patients, visits and dates it knows, and its numeric tokens (the paper's N_facts)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

from engine.grounding.facts_view import FactsView
from engine.grounding.numbers import canonical
from engine.types import FactValue


class LedgerIndex:
    """Look-ups over the ledger: facts by kind and context, patients, visits, dates, tokens."""

    def __init__(self, ledger: Sequence[FactValue]):
        self.ledger = list(ledger)
        self.patients = {f.patient for f in self.ledger if f.patient is not None}
        self.items_known = {f.item for f in self.ledger if f.kind == "item" and f.item}
        self.visits = _visits_of(self.ledger)
        self.dates = _dates_of(self.ledger)
        self.tokens = ledger_tokens(self.ledger)
        self._by_kind: dict[str, list[FactValue]] = {}
        self._by_kp: dict[tuple[str, int | None], list[FactValue]] = {}
        #: ledger positions of the values with an item, by (kind, item) and (kind, patient, item):
        #: a claim about named items looks at those values only, not at every item of the patient
        self._by_ki: dict[tuple[str, str], list[int]] = {}
        self._by_kpi: dict[tuple[str, int | None, str], list[int]] = {}
        self._index_kinds()
        self._view: FactsView | None = None

    def _index_kinds(self) -> None:
        """Fill the look-ups by kind, (kind, patient), (kind, item) and (kind, patient, item)."""
        by_kind, by_kp = self._by_kind, self._by_kp
        by_ki, by_kpi = self._by_ki, self._by_kpi
        for i, f in enumerate(self.ledger):
            k = f.kind
            lst = by_kind.get(k)
            if lst is None:
                by_kind[k] = [f]
            else:
                lst.append(f)
            kp = (k, f.patient)
            lst = by_kp.get(kp)
            if lst is None:
                by_kp[kp] = [f]
            else:
                lst.append(f)
            if f.item is not None:
                by_ki.setdefault((k, f.item), []).append(i)
                by_kpi.setdefault((k, f.patient, f.item), []).append(i)

    @property
    def view(self) -> FactsView:
        """The ledger read as series (statement check, key facts), built once per index."""
        if self._view is None:
            self._view = FactsView(self.ledger)
        return self._view

    def of_kind(self, kind: str) -> list[FactValue]:
        """The ledger's values of one kind, in ledger order (read-only)."""
        return self._by_kind.get(kind, [])

    def find(
        self, kinds: Iterable[str], *, patient=None, visit=None, domain=None, items=None
    ) -> list[FactValue]:
        out = []
        for kind in dict.fromkeys(kinds):
            if items is not None and None not in items:
                pool = self._item_pool(kind, patient, items)
            elif patient is not None:
                pool = self._by_kp.get((kind, patient), []) + self._by_kp.get((kind, None), [])
            else:
                pool = self._by_kind.get(kind, [])
            out.extend(self._filter(pool, patient, visit, domain, items))
        return out

    def _item_pool(self, kind: str, patient: int | None, items: Collection[str]) -> list[FactValue]:
        """The values of `kind` with one of `items`, in the order of the unrestricted pool (the
        patient's values, then those of no patient; or every value of the kind, in ledger order)
        with the values of other items left out (the filter would drop them)."""
        led = self.ledger
        if patient is None:
            return [led[i] for i in _merged(self._by_ki.get((kind, it)) for it in items)]
        kpi = self._by_kpi
        return [led[i] for i in _merged(kpi.get((kind, patient, it)) for it in items)] + [
            led[i] for i in _merged(kpi.get((kind, None, it)) for it in items)
        ]

    @staticmethod
    def _filter(pool: list[FactValue], patient, visit, domain, items) -> list[FactValue]:
        out = []
        for f in pool:
            if patient is not None and f.patient is not None and f.patient != patient:
                continue
            if visit is not None and f.visit != visit:
                continue
            if domain is not None and f.domain is not None and f.domain != domain:
                continue
            if (
                domain is not None
                and f.domain is None
                and f.kind in ("score", "item", "delta", "cumulative")
            ):
                continue
            if items is not None and f.item not in items:
                continue
            out.append(f)
        return out

    def latest_visit(self, patient: int | None) -> int | None:
        vs = self.visits.get(patient) if patient is not None else None
        return max(vs) if vs else None

    def visit_of_date(self, patient: int | None, iso: str) -> int | None:
        return self.dates.get(patient, {}).get(iso)


def _merged(parts: Iterable[list[int] | None]) -> list[int]:
    """Ascending positions from ascending lists (one list as it is)."""
    lists = [p for p in parts if p]
    if len(lists) == 1:
        return lists[0]
    return sorted(i for p in lists for i in p)


def _visits_of(ledger: Sequence[FactValue]) -> dict[int | None, set[int]]:
    """The visits per patient (None: every patient's): each value's visit, and a visit row's
    value."""
    visits: dict[int | None, set[int]] = {}
    every: set[int] = set()
    for f in ledger:
        v = f.visit
        if v is not None:
            v = int(v)
            got = visits.get(f.patient)
            if got is None:
                visits[f.patient] = {v}
            else:
                got.add(v)
            every.add(v)
        if f.kind == "visit" and f.patient is not None:
            v = int(f.value)
            visits.setdefault(f.patient, set()).add(v)
            every.add(v)
    if every:
        visits.setdefault(None, set()).update(every)
    return visits


def _dates_of(ledger: Sequence[FactValue]) -> dict[int | None, dict[str, int | None]]:
    """The visit of each date per patient (None: every patient's); None for a date shared by two
    visits of one patient."""
    dates: dict[int | None, dict[str, int | None]] = {}
    shared_day: set[tuple[int | None, str]] = set()
    # each distinct (patient, date, visit) once, in ledger order: a repeat changes nothing
    for patient, date, visit in dict.fromkeys(
        (f.patient, f.date, f.visit) for f in ledger if f.date
    ):
        if date:
            for key in (patient, None):
                seen = dates.setdefault(key, {})
                if (key, date) in shared_day:
                    continue
                old = seen.get(date)
                if old is not None and visit is not None and old != visit:
                    # two visits on one day (same-day sessions whose items differ are
                    # separate assessments): the date names neither visit alone
                    shared_day.add((key, date))
                    seen[date] = None
                else:
                    seen[date] = visit if visit is not None else old
    return dates


def ledger_tokens(ledger: Sequence[FactValue]) -> set[str]:
    """N_facts: the numeric tokens of the (extended) fact table: every ledger value, patient id,
    visit index and date part; non-integer values also as shown rounded to 0, 1 and 2 decimals.
    (Distinct values, ids, visits and dates first, then one canonical form each: ledgers repeat
    them.)"""
    values = {f.value for f in ledger if f.kind != "date"}
    nums: set[float] = {float(f.patient) for f in ledger if f.patient is not None}
    nums.update(float(f.visit) for f in ledger if f.visit is not None)
    for v in values:
        x = float(v)
        nums.add(x)
        if not x.is_integer():
            for d in (0, 1, 2):
                nums.add(round(x, d))
    for date in {f.date for f in ledger if f.date}:
        nums.update(float(p) for p in date.split("-") if p.isdigit())
    return {canonical(x) for x in nums}
