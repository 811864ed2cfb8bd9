"""The facts-backend prose (the guard's last fallback and the repair source) must have no
unsupported sentence: every narrative and the final summary, every analysis type, both datasets."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from test_facts_text_passes import plans  # noqa: E402

from engine.config import Config  # noqa: E402
from engine.eval.harness import default_marag_dir, open_dataset  # noqa: E402
from engine.grounding.statements import check_statements  # noqa: E402
from engine.grounding.verify import context_phrases  # noqa: E402
from engine.pipeline import Engine  # noqa: E402


@pytest.mark.parametrize("dataset", ["synthetic", "marag"])
def test_facts_prose_has_no_unsupported_sentence(dataset):
    if dataset == "marag" and not default_marag_dir().exists():
        pytest.skip(f"MA-RAG study data not found at {default_marag_dir()}")
    ds = open_dataset(dataset)
    eng = Engine(Config.load({}, env={}), ds.kb, None)
    phrases = context_phrases(eng.contexts)
    n = 0
    for plan in plans(ds.kb.patient_ids()):
        r = eng.run(plan)
        for name, text in {**r.narratives, "summary": r.summary}.items():
            rep = check_statements(text, r.ledger, r.plan.patients, masked_phrases=phrases)
            bad = [(s.text, s.reasons) for s in rep.unsupported]
            assert bad == [], (plan, name, bad[:3])
            n += len(rep.sentences)
    assert n > 100
