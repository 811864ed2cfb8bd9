"""Tokens for search and the planner's item concepts: lower-case words, a light suffix stemmer and
English stop words.

One function for documents, notes, queries and concept terms, so "falls", "falling" and "fall"
meet, as do "hallucinations" and "hallucination". Numbers are not words here: scores are matched
through the concept channel, never as text.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"[a-z]+")
_SUFFIXES = (
    "ations",
    "ation",
    "ion",
    "ings",
    "ing",
    "ness",
    "ies",
    "ated",
    "ed",
    "es",
    "s",
    "e",
    "y",
)
STOPWORDS = frozenset(
    """a about above after again all also an and any are as at be been before being below between
    both but by can could did do does doing down during each few for from further had has have
    having he her here hers him his how i if in into is it its itself just me more most my no nor
    not of on once only or other our out over own same she should so some such than that the
    their them then there these they this those through to too under until up very was we were
    what when where which while who whom why will with without you your patient visit""".split()  # noqa: SIM905
)


def stem(word: str) -> str:
    for suf in _SUFFIXES:
        if word.endswith(suf) and len(word) - len(suf) >= 3:
            return word[: -len(suf)]
    return word


def words(text: str) -> list[str]:
    """Lower-case alphabetic words of `text`, in order (no stemming, stop words kept)."""
    return _WORD.findall(text.lower())


def tokens(text: str) -> list[str]:
    """Stemmed content tokens of `text`, in order (stop words dropped)."""
    return [stem(w) for w in words(text) if w not in STOPWORDS]


# A negation cue opens a scope of the next few words, closed early by clause punctuation or a
# contrast word (NegEx's idea, simplified): "no significant non-motor difficulties", "without
# hallucinations or delusions", "denies falls; reports tremor" (tremor is not negated).
NEGATION_CUES = frozenset(
    "no not without denies denied deny denying absent never neither nor none".split()  # noqa: SIM905
)
NEGATION_SCOPE = 5
_SCOPE_END = frozenset("but however although though except yet".split())  # noqa: SIM905
_WORD_OR_STOP = re.compile(r"[a-z]+|[.;:!?]")


def negated_stems(text: str) -> frozenset[str]:
    """Stems of `text` whose every occurrence lies inside a negation scope: a note saying only
    "without hallucinations" mentions hallucination negated; "hallucinations at night, no falls"
    mentions hallucination plainly and fall negated."""
    plain: set[str] = set()
    negated: set[str] = set()
    scope = 0
    for w in _WORD_OR_STOP.findall(text.lower()):
        if not w[0].isalpha() or w in _SCOPE_END:
            scope = 0
        elif w in NEGATION_CUES:
            scope = NEGATION_SCOPE
        else:
            (negated if scope > 0 else plain).add(stem(w))
            scope = max(0, scope - 1)
    return frozenset(negated - plain)
