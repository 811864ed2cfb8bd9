"""The values of a run's statements, indexed for the lookup of a rendered text's numbers.

`RunIndex`: every value of the run's statements once, in order of first statement, with the
statements that state it and where; its lookup tables (by value, size, visit, date) are built per
group on the first lookup of that group. `Pool`: one citation's statements and the values they
state, in the order of the statements as cited and of the values in each (the order of
`ledger_of` over them): its own tables when it is small, else the run's filtered to it. engine.agents.rendered_record builds a text's record from these lookups.
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.clinical.statements import Statement, Statements, ledger_of
from engine.grounding.numbers import NumberToken
from engine.types import FactValue

#: value kinds that identify a session rather than state a finding
IDENT_KINDS = ("visit", "date")


class RunIndex:
    """Every value of the run's statements (each once, in order of first statement), with the
    statements that state it and where; a large citation's pool filters these. The lookup tables (by value, size, visit, date) are built per
    group on the first lookup of that group: a cohort run states thousands of values and its
    texts look up a few kinds of them."""

    def __init__(self, sts: Statements):
        self.sts = sts
        self.uniq = sts.ledger  # the run's ledger, computed once per run
        self._owners: dict[int, list[tuple[str, int]]] | None = None
        self.groups: dict[str, dict[object, list[FactValue]]] = {}

    @property
    def owners(self) -> dict[int, list[tuple[str, int]]]:
        """Per value (by identity): the statements that state it and where (built on first use:
        only a large citation's pool that does not cite every statement reads it)."""
        if self._owners is None:
            owners: dict[int, list[tuple[str, int]]] = {}
            for st in self.sts:
                sid = st.id
                for pos, v in enumerate(st.values):
                    owners.setdefault(id(v), []).append((sid, pos))
            self._owners = owners
        return self._owners

    def bucket(self, group: str, key: object) -> list[FactValue]:
        """The values of one lookup group under one key, in the run's order."""
        table = self.groups.get(group)
        if table is None:
            for name, built in _GROUPS[_GROUP_OF[group]](self.uniq).items():
                self.groups[name] = built
            table = self.groups[group]
        return table.get(key, [])


def _date_groups(uniq: Sequence[FactValue]) -> dict[str, dict[object, list[FactValue]]]:
    dates: dict[object, list[FactValue]] = {}
    months: dict[object, list[FactValue]] = {}
    dates_ident: dict[object, list[FactValue]] = {}  # a session's own visit and date values
    months_ident: dict[object, list[FactValue]] = {}
    for v in uniq:
        d = v.date
        if d:
            dates.setdefault(d, []).append(v)
            # "Jan 2020" and "2020" are the month and year of a session date
            months.setdefault(d[:7], []).append(v)
            months.setdefault(d[:4], []).append(v)
            if v.kind in IDENT_KINDS:
                dates_ident.setdefault(d, []).append(v)
                months_ident.setdefault(d[:7], []).append(v)
                months_ident.setdefault(d[:4], []).append(v)
    return {"date": dates, "month": months, "date_ident": dates_ident, "month_ident": months_ident}


def _visit_groups(uniq: Sequence[FactValue]) -> dict[str, dict[object, list[FactValue]]]:
    at_visit: dict[object, list[FactValue]] = {}
    visits: dict[object, list[FactValue]] = {}
    for v in uniq:
        if v.visit is not None:
            at_visit.setdefault(float(v.visit), []).append(v)
        if v.kind == "visit":
            visits.setdefault(float(v.value), []).append(v)
    return {"at_visit": at_visit, "visit": visits}


def _value_groups(uniq: Sequence[FactValue]) -> dict[str, dict[object, list[FactValue]]]:
    exact: dict[object, list[FactValue]] = {}
    size: dict[object, list[FactValue]] = {}
    tolerant: dict[object, list[FactValue]] = {}
    for v in uniq:
        if v.kind in IDENT_KINDS:
            continue
        x = float(v.value)
        if v.tolerance:
            tolerant.setdefault(round(x * 100), []).append(v)
        else:
            exact.setdefault(x, []).append(v)
            size.setdefault(abs(x), []).append(v)
    return {"exact": exact, "size": size, "tolerant": tolerant}


_GROUPS = {"dates": _date_groups, "visits": _visit_groups, "values": _value_groups}
_GROUP_OF = {
    "date": "dates",
    "month": "dates",
    "date_ident": "dates",
    "month_ident": "dates",
    "at_visit": "visits",
    "visit": "visits",
    "exact": "values",
    "size": "values",
    "tolerant": "values",
}


#: a pool of at most this many statements builds its own lookup tables; a larger one filters
#: the run's (a final text's paragraph cites a hundred statements and looks up a dozen numbers)
SMALL_POOL = 8
#: ... and so does one that states at most 1 / SMALL_SHARE of the run's values: its own tables
#: cost its size, the run's cost the run's (a cohort text cites its answer's cohort statements,
#: a few hundred values beside the thousands of item values of the patients it names)
SMALL_SHARE = 3


def _first(h: tuple[tuple[int, int], FactValue]) -> tuple[int, int]:
    return h[0]


class Pool:
    """The values and identifiers of one citation's statements, for lookup: the values these
    statements state, each once, in the order of the statements as cited and of the values in
    each (the order of `ledger_of` over them). A small pool builds its own lookup tables per
    group, on the first lookup of that group, from its values in that order; a larger one
    filters the run's tables (`RunIndex`) to its statements and orders the hits; a pool that
    cites every statement takes the run's tables as they are. Lookups are kept per token."""

    def __init__(self, sts: Sequence[Statement], run: RunIndex, whole: bool = False):
        self.run = run
        self.patients = {s.patient for s in sts}
        self.visits = {v for s in sts for v in s.visits}
        #: every statement of the run, in the run's order: a run bucket is already in pool order
        self.whole = whole
        self.small = not whole and (
            len(sts) <= SMALL_POOL or sum(len(s.values) for s in sts) * SMALL_SHARE <= len(run.uniq)
        )
        self._sts = sts
        self.rank: dict[str, int] = {}
        if not self.small:
            for i, s in enumerate(sts):
                self.rank.setdefault(s.id, i)
        self.groups: dict[str, dict[object, list[FactValue]]] = {}
        self.found: dict[tuple, list[FactValue]] = {}

    def _own(self, group: str, key: object) -> list[FactValue]:
        table = self.groups.get(group)
        if table is None:
            for name, built in _GROUPS[_GROUP_OF[group]](ledger_of(self._sts)).items():
                self.groups[name] = built
            table = self.groups[group]
        return table.get(key, [])

    def _pick(self, group: str, key: object) -> list[FactValue]:
        if self.small:
            return list(self._own(group, key))
        bucket = self.run.bucket(group, key)
        if not bucket or self.whole:
            return list(bucket)
        rank, owners = self.rank, self.run.owners
        hits: list[tuple[tuple[int, int], FactValue]] = []
        for v in bucket:
            own = owners[id(v)]
            if len(own) == 1:  # most values: one statement states them
                sid, pos = own[0]
                r = rank.get(sid)
                if r is not None:
                    hits.append(((r, pos), v))
                continue
            best = None
            for sid, pos in own:
                r = rank.get(sid)
                if r is not None and (best is None or (r, pos) < best):
                    best = (r, pos)
            if best is not None:
                hits.append((best, v))
        if len(hits) > 1:
            hits.sort(key=_first)
        return [v for _b, v in hits]

    def _first_hit(self, group: str, key: object) -> FactValue | None:
        """`_pick(group, key)[0]` (or None), without ordering the rest."""
        if self.small:
            own = self._own(group, key)
            return own[0] if own else None
        bucket = self.run.bucket(group, key)
        if not bucket or self.whole:
            return bucket[0] if bucket else None
        rank, owners = self.rank, self.run.owners
        best, hit = None, None
        for v in bucket:
            for sid, pos in owners[id(v)]:
                r = rank.get(sid)
                if r is not None and (best is None or (r, pos) < best):
                    best, hit = (r, pos), v
        return hit

    def values(self, tok: NumberToken) -> list[FactValue]:
        x = tok.value
        if tok.signed or x < 0:
            out = self._pick("exact", x)
        else:
            # the values equal to x, then those equal to -x: one pass over the sizes (the
            # values of size x hold those equal to x)
            sized = self._pick("size", x)
            out = [v for v in sized if float(v.value) == x]
            if len(out) < len(sized):
                out += [v for v in sized if float(v.value) != x]
        near = round(tok.value * 100)
        keys = {near - 1, near, near + 1}
        if not tok.signed:
            keys |= {-near - 1, -near, -near + 1}
        for k in keys:
            for v in self._pick("tolerant", k):
                d = abs(float(v.value) - tok.value)
                if not tok.signed:
                    d = min(d, abs(abs(float(v.value)) - tok.value))
                if d <= float(v.tolerance) + 1e-9:
                    out.append(v)
        return out

    def _spanning(self, visit: float) -> list[FactValue]:
        """The first value of the first statement whose visits include `visit` though no value
        is dated there: a trend's slope over visits 1 to 4 supports "visits 1, 2, 3, 4"."""
        for s in self._sts:
            if visit in s.visits and s.values:
                return [s.values[0]]
        return []

    def match(self, role: str, tok: NumberToken) -> list[FactValue]:
        key = (role, tok.value, tok.signed, tok.date)
        got = self.found.get(key)
        if got is None:
            got = self.found[key] = self._match(role, tok)
        return got

    def _match(self, role: str, tok: NumberToken) -> list[FactValue]:
        if role == "date":  # the session's visit or date value, else the first value dated so
            d = tok.date or ""
            for group in ("date", "month"):
                ident = self._first_hit(group + "_ident", d)
                hit = ident or self._first_hit(group, d)
                if hit is not None:
                    return [hit]
            return []
        if role == "visit":
            hit = self._pick("visit", tok.value)
            if hit or tok.value in self.visits:
                if hit:
                    return hit
                first = self._first_hit("at_visit", tok.value)
                return [first] if first is not None else self._spanning(tok.value)
            return []
        return self.values(tok)
