"""Issue 16 hot paths: the per-run memo and the literal pre-tests change no result.

The pre-tests skip a regex only when it cannot match (a literal word it needs is absent from an
ASCII text); these tests compare against the full scans on texts that contain lexicon and item
words in several cases, and check the memo's scope (one run) and sharing rules."""

from __future__ import annotations

import pytest

from engine.grounding import cues as cues_mod
from engine.grounding import lexicon
from engine.grounding.lexicon import ContentHit, content_hits, content_patterns
from engine.grounding.run_memo import cached, memoised, run_memo
from engine.grounding.vocabulary import item_vocabulary

TEXTS = [
    "Patient 5's motor score rose from 20 at visit 1 to 31 at visit 6 (+11 points), above the MCID.",
    "He was started on levodopa 100 mg by his neurologist at the university hospital; cost $40.",
    "Falls (NP2WALK) and freezing of gait worsened; rigidity of the neck improved due to exercise.",
    "FREEZING OF GAIT, Tremor At Rest and speech were unchanged; we recommend a DaTscan.",
    "Patient 3 is 67 years old, a retired nurse with mild cognitive impairment (PD-MCI).",
    "Postural stability declined; arising from chair and finger-tapping scores fluctuated.",
    "The fee was 30 usd at the clinic. Dr. Smith, Pharmacare Ltd, advised physical activity.",
    "Non-ASCII text: the café patient’s gait – worse; Levodopa ſtarted; KINETIC tremor.",
]


def _full_hits(text: str) -> tuple[ContentHit, ...]:
    out = [
        ContentHit(cat, m.start(), m.end(), m.group(), reason)
        for cat, (pat, reason) in content_patterns().items()
        for m in pat.finditer(text)
    ]
    out.sort(key=lambda h: h.start)
    return tuple(out)


@pytest.mark.parametrize("text", TEXTS + [t.upper() for t in TEXTS] + [t.title() for t in TEXTS])
def test_content_hits_same_as_the_full_scan(text):
    assert lexicon._all_content_hits(text) == _full_hits(text)


def test_content_hits_found_at_all():
    assert {h.category for t in TEXTS for h in content_hits(t)} >= {
        "medication",
        "people",
        "institution",
        "price",
        "cause",
    }


def test_item_cues_same_without_the_pre_test(monkeypatch):
    texts = TEXTS + [t.upper() for t in TEXTS]
    with_pre = [cues_mod.find_cues(t) for t in texts]
    n = len(item_vocabulary())
    monkeypatch.setattr(cues_mod, "item_literals", lambda: tuple(() for _ in range(n)))
    without = [cues_mod.find_cues(t) for t in texts]
    assert with_pre == without
    assert sum(c.kind == "item" for cs in with_pre for c in cs) >= 6


def test_memo_lives_for_one_run_block():
    calls: list[str] = []

    @memoised
    def f(text: str) -> tuple[str, ...]:
        calls.append(text)
        return (text,)

    f("a")
    f("a")
    assert calls == ["a", "a"]  # outside a run: no memo
    with run_memo():
        f("a")
        f("a")
        with run_memo():  # nested: the outer memo
            f("a")
        f("b")
        assert cached("k", lambda: 1) == 1
        assert cached("k", lambda: 2) == 1
    assert calls == ["a", "a", "a", "b"]
    with run_memo():  # a new run computes again
        f("a")
        assert cached("k", lambda: 3) == 3
    assert calls == ["a", "a", "a", "b", "a"]
