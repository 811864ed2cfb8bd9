"""The statement checker's vocabularies (engine/grounding/lexicon/*.json): one sentence that must
match and one that must not, per category of content the fact table cannot support, plus the
assertion words, the neutral forms and numbers written as words."""

from __future__ import annotations

import pytest

from engine.grounding.lexicon import CONTENT_CATEGORIES, content_hits, is_neutral
from engine.grounding.number_words import digitise, number_words

EXAMPLES = {
    "medication": ("The motor rise followed a levodopa dose change.", "Motor rose from 2 to 6."),
    "diagnosis": ("The picture is consistent with dementia.", "Cognition was rated 2."),
    "demographics": ("She is a 72-year-old woman.", "Patient 3 was seen at three visits."),
    "cause": ("ADL improved due to better sleep.", "ADL improved from 5 to 2."),
    "recommendation": ("A falls assessment should be considered.", "Walking was rated 3."),
    "lifestyle": ("The patient keeps a healthy lifestyle.", "The PDQ-8 score fell to 1."),
    "people": ("Dr. Smith recorded the scores.", "The scores were recorded at visit 2."),
    "institution": ("All visits took place at the university hospital.", "All visits were scored."),
    "price": ("Each assessment cost $120.", "Each assessment was scored on 44 items."),
}


def test_every_category_has_examples():
    assert set(EXAMPLES) == set(CONTENT_CATEGORIES)


@pytest.mark.parametrize("category", CONTENT_CATEGORIES)
def test_category_matches_its_example_and_not_plain_score_prose(category):
    bad, good = EXAMPLES[category]
    assert category in {h.category for h in content_hits(bad)}, bad
    assert content_hits(good) == [], good


def test_masked_spans_are_not_content():
    text = "Cognition 2 (possible PD-MCI or dementia; predicts mortality)."
    phrase = "possible PD-MCI or dementia; predicts mortality"
    a = text.index(phrase)
    assert content_hits(text, [(a, a + len(phrase))]) == []
    assert {h.category for h in content_hits(text)} == {"diagnosis"}


def test_neutral_forms():
    assert is_neutral(
        "Decision support only: this summary restates recorded assessment scores; it is not a "
        "diagnosis or a treatment recommendation, and clinical decisions remain with the treating "
        "clinician."
    )
    assert is_neutral("Summary:")
    assert not is_neutral("The patient is doing well.")


def test_number_words_keep_spans_and_read_values():
    text = "Motor rose by five points over twenty-one days; ranked third; one visit."
    out = digitise(text)
    assert len(out) == len(text)
    assert "5    points" in out and "21" in out and "3rd" in out
    assert "one visit" in out  # "one" is left alone: too often not a count
    assert [v for _a, _b, v, _d in number_words(text)] == [5, 21, 3]
