"""Metrics on hand-computed examples (paper definitions; claim accuracy)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine import metrics
from engine.types import FactValue

TINY = [
    FactValue("score", 14, 5, 3, "motor", date="2021-05-20"),
    FactValue("delta", 2, 5, 3, "motor"),
    FactValue("slope", 1.4567, 5, domain="motor", tolerance=0.005),
]
# N_facts = {14, 2, 5 (patient), 3 (visit), 2021, 20, 1.4567, 1, 1.5, 1.46}


def test_fact_precision_and_hallucination_rate_by_hand():
    s = "Motor 14 at visit 3, up 2, and 7 items."
    # N_model = {14, 3, 2, 7}; 7 is absent -> 3/4 and 1/4
    assert metrics.fact_precision(s, TINY) == pytest.approx(0.75)
    assert metrics.hallucination_rate(s, TINY) == pytest.approx(0.25)
    # a set: repeating a supported number changes nothing; a rounded slope is supported
    assert metrics.fact_precision("14 14 14 and 1.46", TINY) == 1.0
    # sign is dropped for the paper metric: -2 is the token 2
    assert metrics.hallucination_rate("changed by -2", TINY) == 0.0
    assert metrics.fact_precision("no numbers", TINY) == 1.0
    assert metrics.hallucination_rate("no numbers", TINY) == 0.0
    # tokens given directly
    assert metrics.fact_precision("4 and 5", {"4"}) == 0.5


def test_temporal_fidelity_by_hand():
    assert metrics.temporal_fidelity("At visit 1 ... then visit 3 ... then visit 2.") == 0.0
    # mentions 1, 2, 2; "from visit 1" is a reference, not a mention
    assert (
        metrics.temporal_fidelity("Visit 1 was mild. Visit 2: +2 from visit 1. Visit 2 again.")
        == 1.0
    )
    assert metrics.temporal_fidelity("No visits named.") == 1.0
    assert metrics.visit_mentions("visits 1-3 and the 4th visit") == [1, 3, 4]


def test_temporal_fidelity_scoped_resets_per_domain():
    text = "Motor went from 9 at visit 1 to 14 at visit 3, ADL from 6 at visit 1 to 8 at visit 3."
    assert metrics.temporal_fidelity(text) == 0.0  # paper: 1, 3, 1, 3
    assert metrics.temporal_fidelity_scoped(text) == 1.0


def test_claim_accuracy_by_hand():
    # claims with context: patient 5 (correct), visit 3 (correct), motor 12 (wrong); 99 has none
    s = "Patient 5, visit 3: motor 12. Overall 99."
    st = metrics.claim_stats(s, TINY, (5,))
    assert st["claims_with_context"] == 3 and st["claims_correct"] == 2
    assert st["numbers_without_context"] == 1
    assert metrics.claim_accuracy(s, TINY, (5,)) == pytest.approx(2 / 3)
    assert metrics.claim_accuracy("nothing", TINY) == 1.0


def test_sbert_similarity_is_the_cosine_of_the_embeddings():
    vecs = {"a": np.array([1.0, 0.0]), "b": np.array([1.0, 1.0])}
    assert metrics.sbert_similarity(
        "a", "b", embed=lambda ts: [vecs[t] for t in ts]
    ) == pytest.approx(1 / math.sqrt(2))
    h = metrics.hashing_embedder()
    assert metrics.sbert_similarity("motor 14", "motor 14", embed=h) == pytest.approx(1.0)


@pytest.mark.slow
def test_sbert_similarity_with_real_minilm():
    emb = metrics.minilm_embedder()
    close = metrics.sbert_similarity(
        "Motor symptoms worsened over the visits.", "The motor score got worse across visits.", emb
    )
    far = metrics.sbert_similarity(
        "Motor symptoms worsened over the visits.", "The weather in Paris is sunny today.", emb
    )
    assert 0.5 < close <= 1.0 and far < close
