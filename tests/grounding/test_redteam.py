"""The red-team set on the real MA-RAG study facts: every true paraphrase
passes, every planted error fails on its planted sentence and only there."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import redteam  # noqa: E402

pytestmark = pytest.mark.skipif(
    not redteam.STUDY.is_dir(), reason=f"MA-RAG study data not found at {redteam.STUDY}"
)

CATEGORIES = {
    # point 2: assertions checked beyond numbers
    "direction", "severity", "presence", "comparison", "count", "date", "patient", "number_words",
    # point 3: content the fact table cannot support
    "medication", "diagnosis", "demographics", "cause", "recommendation", "lifestyle", "people",
    "institution", "price",
}  # fmt: skip


@pytest.fixture(scope="module")
def rows():
    return redteam.run_set(redteam.study_engine())


def test_set_size_and_categories():
    data = redteam.load_set()
    texts = data["texts"]
    assert len(texts) >= 60
    cats = {t["category"] for t in texts}
    assert cats == CATEGORIES | {"true"}
    for t in texts:
        if t["category"] != "true":
            assert t["planted"] in t["text"], t["id"]


def test_true_paraphrases_pass(rows):
    rejected = [
        (r["id"], r["unsupported"]) for r in rows if r["category"] == "true" and not r["passed"]
    ]
    assert rejected == []


def test_planted_errors_fail_on_the_planted_sentence(rows):
    missed = [
        (r["id"], r["unsupported"]) for r in rows if r["category"] != "true" and not r["on_planted"]
    ]
    assert missed == []


def test_rates_per_category(rows):
    rates = redteam.rates(rows)
    assert rates["true"]["false_rejection"] == 0.0
    assert all(v["catch"] == 1.0 for k, v in rates.items() if k != "true")


def test_heldout_set():
    """The held-out texts (written after tuning; first-run figures in docs/evaluation.md): every
    planted error is caught; at most one true paraphrase is rejected (h-t08: "(6 against 2)"
    after a comparison of two patients attributes both numbers to the first one)."""
    rows = redteam.run_set(redteam.study_engine(), redteam.HELDOUT_FILE)
    rates = redteam.rates(rows)
    assert all(v["catch"] == 1.0 for k, v in rates.items() if k != "true"), rates
    rejected = [r["id"] for r in rows if r["category"] == "true" and not r["passed"]]
    assert set(rejected) <= {"h-t08"}, rejected
