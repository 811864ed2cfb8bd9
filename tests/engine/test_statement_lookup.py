"""The lookup tables of a rendered text's record (engine.agents.statement_lookup) against a
plain reference: for a citation's statements, the values equal to a number (signed as written,
or of its size; within a value's tolerance), a session's visit and date, in the order of
`ledger_of` over the cited statements. The tables are built lazily, per group, and a pool that
cites every statement takes the run's order as is; neither may change what a lookup returns."""

from __future__ import annotations

import random

import pytest

from engine.agents.statement_lookup import Pool, RunIndex
from engine.clinical.statements import Statement, Statements, ledger_of
from engine.grounding.numbers import NumberToken
from engine.types import FactValue


def _values(rng: random.Random) -> list[FactValue]:
    out = []
    for p in (1, 2):
        for visit in (1, 2, 3):
            date = f"2021-0{visit}-1{p}"
            out.append(FactValue.make("visit", float(visit), p, visit, date=date))
            out.append(FactValue.make("date", 2021.0, p, visit, date=date))
            for dom in ("motor", "adl"):
                out.append(
                    FactValue.make("score", float(rng.randint(0, 6)), p, visit, dom, date=date)
                )
                out.append(
                    FactValue.make("item", float(rng.randint(0, 4)), p, visit, dom, "X", date)
                )
            out.append(FactValue.make("delta", float(rng.randint(-4, 4)), p, visit, "motor"))
            out.append(
                FactValue.make(
                    "slope", round(rng.uniform(-3, 3), 2), p, None, "motor", tolerance=0.01
                )
            )
    return out


def _statements(rng: random.Random) -> Statements:
    vals = _values(rng)
    sts = Statements()
    for i in range(30):  # values shared between statements, in shuffled orders
        sts.add(Statement(f"S{i + 1}", "score", 1, "motor", (1,), "", tuple(rng.sample(vals, 6))))
    return sts


def _reference(cited: list[Statement], role: str, tok: NumberToken) -> list[FactValue]:
    order = ledger_of(cited)
    if role == "date":
        hit = [v for v in order if v.date == tok.date] or [
            v for v in order if v.date and tok.date in (v.date[:7], v.date[:4])
        ]
        return [v for v in hit if v.kind in ("visit", "date")][:1] or hit[:1]
    if role == "visit":
        hit = [v for v in order if v.kind == "visit" and float(v.value) == tok.value]
        if hit or tok.value in {x for s in cited for x in s.visits}:
            spanning = [s.values[0] for s in cited if tok.value in s.visits and s.values]
            return hit or [v for v in order if v.visit == tok.value][:1] or spanning[:1]
        return []
    plain = [v for v in order if v.kind not in ("visit", "date") and not v.tolerance]
    out = [v for v in plain if float(v.value) == tok.value]
    if not tok.signed:
        out += [v for v in plain if float(v.value) == -tok.value and tok.value != 0]
    for v in order:
        if v.kind in ("visit", "date") or not v.tolerance:
            continue
        d = abs(float(v.value) - tok.value)
        if not tok.signed:
            d = min(d, abs(abs(float(v.value)) - tok.value))
        if d <= v.tolerance + 1e-9:
            out.append(v)
    return out


def _tok(value: float, signed: bool = False, date: str | None = None) -> NumberToken:
    return NumberToken(str(value), value, 0, 1, "date" if date else "int", signed, 0, date)


@pytest.mark.parametrize("seed", range(6))
def test_pool_lookups_equal_the_reference_over_the_cited_statements(seed: int) -> None:
    rng = random.Random(seed)
    sts = _statements(rng)
    run = RunIndex(sts)
    cites = [sts.items] + [rng.sample(sts.items, rng.randint(1, 12)) for _ in range(8)]
    slopes = sorted({float(v.value) for v in ledger_of(sts.items) if v.kind == "slope"})
    toks = [("value", _tok(float(x))) for x in range(0, 7)]
    toks += [("value", _tok(float(x), signed=True)) for x in range(-4, 5)]
    toks += [("value", _tok(abs(x) + 0.01)) for x in slopes[:3]]
    toks += [("visit", _tok(float(x))) for x in (1, 2, 3, 4)]
    toks += [("date", _tok(2021.0, date=d)) for d in ("2021-02-11", "2021-03", "2021", "2022")]
    for cited in cites:
        whole = cited is sts.items
        pool = Pool(cited, run, whole)
        for role, tok in toks:
            got = pool.match(role, tok)
            want = _reference(list(cited), role, tok)
            assert [id(v) for v in got] == [id(v) for v in want], (role, tok.value, tok.date)


def test_the_tables_of_a_group_are_built_on_its_first_lookup() -> None:
    sts = _statements(random.Random(1))
    run = RunIndex(sts)
    assert run.groups == {}
    Pool(sts.items, run, True).match("value", _tok(3.0))
    assert set(run.groups) == {"exact", "size", "tolerant"}
    Pool(sts.items, run, True).match("date", _tok(2021.0, date="2021-02-11"))
    assert {"date", "month", "date_ident", "month_ident"} <= set(run.groups)
