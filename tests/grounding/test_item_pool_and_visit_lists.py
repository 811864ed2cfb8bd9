"""Two look-ups of the verdict made cheaper change no verdict, on the real study data and
the shipped synthetic sample (every patient's trajectory ledger and facts text).

- `LedgerIndex.find(..., items=...)` takes its pool from the per-item positions instead of every
  value of the kind (and patient); it must return the same values, in the same order, as the
  filter over the unrestricted pool.
- A claim over a visit list ("at or above 4 at visits 1, 2, 3 and 4") tests each candidate value
  once, not once per visit, and copies the claim without `dataclasses.replace`; its status,
  reason and matched values must be those of the per-visit `replace` + `_good` it replaced."""

from __future__ import annotations

import dataclasses
import itertools

import pytest

from engine.config import Config
from engine.eval.harness import default_marag_dir, open_dataset
from engine.grounding import verdict
from engine.grounding.claim import Claim
from engine.grounding.ledger_index import LedgerIndex
from engine.grounding.numbers import normalise
from engine.grounding.paragraphs import paragraphs
from engine.grounding.reader import read_paragraph
from engine.pipeline import Engine
from engine.types import Plan


def _runs(dataset: str):
    if dataset == "marag" and not default_marag_dir().exists():
        pytest.skip(f"MA-RAG study data not found at {default_marag_dir()}")
    ds = open_dataset(dataset)
    eng = Engine(Config.load({}, env={}), ds.kb, None)
    pids = ds.kb.patient_ids()
    return [eng.run(Plan((p,), "trajectory")) for p in pids], pids


def _plain_find(idx: LedgerIndex, kind, patient=None, visit=None, domain=None, items=None):
    """The unrestricted pool of one kind, filtered (what `find` did for every look-up)."""
    pool = (
        idx._by_kp.get((kind, patient), []) + idx._by_kp.get((kind, None), [])
        if patient is not None
        else idx._by_kind.get(kind, [])
    )
    return idx._filter(pool, patient, visit, domain, items)


@pytest.mark.parametrize("dataset", ["synthetic", "marag"])
def test_item_look_ups_equal_the_filter_over_the_whole_pool(dataset):
    runs, pids = _runs(dataset)
    compared = with_hits = 0
    for r in runs[::4]:  # every fourth patient: ~1,000 look-ups each
        idx = LedgerIndex(r.ledger)
        items = sorted({f.item for f in idx.ledger if f.item})
        kinds = sorted({f.kind for f in idx.ledger if f.item})
        combos = [frozenset([i]) for i in items]
        combos += [frozenset(p) for p in itertools.islice(itertools.combinations(items, 2), 15)]
        combos += [frozenset(), frozenset(["NOT_AN_ITEM"]), frozenset(items[:5] + ["NOT_AN_ITEM"])]
        visits = [None, *sorted(idx.visits.get(None, set()))]
        domains = [None, "motor", "adl", "nonmotor", "qol"]
        for kind, items_, patient, visit, domain in itertools.product(
            kinds, combos, [None, r.plan.patients[0], pids[-1] + 1000], visits[:3], domains
        ):
            got = idx.find([kind], patient=patient, visit=visit, domain=domain, items=items_)
            want = _plain_find(idx, kind, patient, visit, domain, items_)
            assert len(got) == len(want) and all(a is b for a, b in zip(got, want, strict=True)), (
                kind,
                sorted(items_),
                patient,
                visit,
                domain,
            )
            compared += 1
            with_hits += bool(want)
        # several kinds at once keep the kinds' order
        both = idx.find(["item", "threshold"], items=frozenset(items[:3]))
        assert both == _plain_find(idx, "item", items=frozenset(items[:3])) + _plain_find(
            idx, "threshold", items=frozenset(items[:3])
        )
    assert compared > 1000 and with_hits > 100


def _old_judge_visit_list(cl: Claim, idx: LedgerIndex) -> None:
    """The per-visit values before the cheaper look-up (dataclasses.replace, every value per
    visit), settled as the verdict settles them."""
    per_visit = {
        v: verdict._good(dataclasses.replace(cl, visit=v, visit_list=[]), idx)
        for v in cl.visit_list
    }
    verdict.settle_visit_list(cl, per_visit)


def _visit_list_claims(text: str, idx: LedgerIndex) -> list[Claim]:
    return [
        c
        for _p0, para in paragraphs(normalise(text))
        for c in read_paragraph(para, idx).claims
        if c.visit_list and c.role == "value"
    ]


@pytest.mark.parametrize("dataset", ["synthetic", "marag"])
def test_visit_list_verdicts_equal_the_per_visit_replace(dataset):
    runs, _pids = _runs(dataset)
    seen = wrong = 0
    for r in runs:
        idx = LedgerIndex(r.ledger)
        texts = [r.summary, *r.narratives.values()]
        claims = [c for t in texts for c in _visit_list_claims(t, idx)]
        # wrong ones stay wrong: the same claims with a value no fact has, or a visit added
        claims += [dataclasses.replace(c, value=97.0, text="97") for c in claims[:3]]
        claims += [
            dataclasses.replace(c, visit_list=[*c.visit_list, max(c.visit_list) + 7])
            for c in claims[:3]
        ]
        for c in claims:
            new, old = dataclasses.replace(c), dataclasses.replace(c)
            verdict.judge(new, idx, set(r.plan.patients))
            _old_judge_visit_list(old, idx)
            assert (new.status, new.reason) == (old.status, old.reason), c.text
            assert len(new.matched) == len(old.matched)
            assert all(a is b for a, b in zip(new.matched, old.matched, strict=True))
            seen += 1
            wrong += new.status == "wrong"
    assert seen > 20 and wrong >= 3


def test_variant_equals_dataclasses_replace():
    c = Claim(
        "4", 10, 11, 4.0, "value", kind="threshold", visit_list=[1, 2], items=frozenset({"X"})
    )
    for changes in ({"visit": 3, "visit_list": []}, {"direction": None, "signed": False}, {}):
        a, b = verdict.variant(c, **changes), dataclasses.replace(c, **changes)
        assert a == b and a is not c
        assert all(getattr(a, f.name) is getattr(b, f.name) for f in dataclasses.fields(Claim))
