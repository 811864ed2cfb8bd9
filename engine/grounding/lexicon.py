"""The statement checker's vocabularies, loaded from data (`engine/grounding/lexicon/*.json`).

`content.json` lists what the fact table cannot support (medications and treatments, other
diagnoses, demographics, causes, recommendations, lifestyle, people, institutions, prices), one
category per key with its reason; `assertions.json` lists the words whose assertions are checked
against the ledger (direction, severity, presence/absence, comparatives, superlatives) and the
neutral forms (whole sentences that assert nothing clinical, e.g. the decision-support note).
Keeping them as data lets a reviewer extend a category without touching the checker; the tests in
tests/grounding/test_lexicon.py hold one positive and one negative example per category.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from re import _constants as _sre  # the parsed form, to read literal prefixes
from re._parser import parse as _sre_parse
from typing import Any

from engine.grounding import literal_scan
from engine.grounding.run_memo import cached, memoised

LEXICON_DIR = Path(__file__).with_name("lexicon")

CONTENT_CATEGORIES = (
    "medication",
    "diagnosis",
    "demographics",
    "cause",
    "recommendation",
    "lifestyle",
    "people",
    "institution",
    "price",
)


@dataclass(frozen=True)
class ContentHit:
    category: str
    start: int
    end: int
    text: str
    reason: str


def _load(name: str) -> dict[str, Any]:
    return json.loads((LEXICON_DIR / name).read_text(encoding="utf-8"))


def _word_parts(patterns: list[str]) -> list[str]:
    parts = []
    for p in patterns:
        head = "" if p.startswith(("\\b", "[", "\\d")) else r"(?<![\w])"
        tail = "" if p.endswith(("\\s", "\\b", "\\d", "\\s?")) else r"(?![\w])"
        parts.append(f"{head}(?:{p}){tail}")
    return parts


def _word_pattern(patterns: list[str]) -> re.Pattern[str]:
    return re.compile("|".join(_word_parts(patterns)), re.I)


def _literal_prefix(part: str) -> str:
    """The ASCII letters every match of `part` starts with (after its leading assertions),
    lower-cased; "" when it starts with anything else (a class, a repeat, a branch)."""
    out: list[str] = []

    def walk(items: Any) -> bool:
        for op, av in items:
            if op in (_sre.AT, _sre.ASSERT, _sre.ASSERT_NOT) and not out:
                continue
            if op is _sre.LITERAL and av < 128:
                out.append(chr(av))
                continue
            if op is _sre.SUBPATTERN and walk(av[-1].data):
                continue
            return False
        return True

    walk(_sre_parse(part, re.I).data)
    return "".join(out).lower()


@cache
def _content_parts() -> dict[str, tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]]:
    """category -> (the alternatives of its content pattern, in order; each one's needles: its
    literal prefix, else a literal run every match of it contains, else literals one of which
    every match contains ("$" for "[$\u00a3\u20ac]\\s?\\d", "usd" / "eur" / "gbp"), else ""). In an
    ASCII text an alternative none of whose needles occurs (lower-cased) cannot match."""
    data = _load("content.json")
    out = {}
    for c in CONTENT_CATEGORIES:
        parts = tuple(_word_parts(data[c]["patterns"]))
        out[c] = (parts, tuple(_needles(p) for p in parts))
    return out


def _needles(part: str) -> tuple[str, ...]:
    one = _literal_prefix(part) or literal_scan.required_literal(part)
    return (one,) if one else (literal_scan.any_literals(part) or ("",))


@lru_cache(maxsize=1024)
def _content_subpattern(category: str, keep: tuple[int, ...]) -> re.Pattern[str]:
    """The category's pattern with only the alternatives `keep` (same order, same flags)."""
    parts = _content_parts()[category][0]
    return re.compile("|".join(parts[i] for i in keep), re.I)


@cache
def content_patterns() -> dict[str, tuple[re.Pattern[str], str]]:
    """category -> (compiled pattern, reason)."""
    data = _load("content.json")
    return {c: (_word_pattern(data[c]["patterns"]), data[c]["reason"]) for c in CONTENT_CATEGORIES}


def content_hits(
    text: str, masked: Sequence[tuple[int, int]] = (), within: str | None = None
) -> list[ContentHit]:
    """Every unsupportable-content match in `text`, outside the `masked` spans (item labels,
    red-flag rule texts: words that belong to the instruments and contexts, not to the writer).

    `within`: a text that contains `text` (the sentence's whole text): an alternative whose
    literal prefix is absent from it is absent from `text` too, so the per-sentence pre-test
    only tries the alternatives found once in the whole text (the same matches)."""
    hits = _all_content_hits(text) if within is None else _hits_within(text, within)
    if not masked:
        return list(hits)
    return [h for h in hits if not any(a <= h.start < b for a, b in masked)]


@memoised
def _all_content_hits(text: str) -> tuple[ContentHit, ...]:
    """Every match in text order (once per text within an engine run: run_memo)."""
    low = text.lower() if text.isascii() else None
    return _scan(text, low, None)


def _hits_within(text: str, within: str) -> tuple[ContentHit, ...]:
    low = text.lower() if text.isascii() else None
    if low is None or not within.isascii():
        return _all_content_hits(text)
    return cached(("content_hits", text), lambda: _scan(text, low, _present_parts(within)))


@memoised
def _present_parts(text: str) -> dict[str, tuple[int, ...]]:
    """category -> the alternatives whose literal prefix occurs in the lower-cased ASCII text.
    A prefix of letters only occurs in the text iff it occurs in one of its runs of letters: the
    runs' prefixes are cached (texts repeat their words); other prefixes are looked up directly."""
    low = text.lower()
    letters, others = _prefix_slots()
    found: dict[str, list[int]] = {cat: [] for cat in _content_parts()}
    words: set[str] = set()
    for run in set(_LETTER_RUN.findall(low)):
        words |= _letter_prefixes_in(run)
    for pre in words:
        for cat, i in letters[pre]:
            found[cat].append(i)
    for pre, slots in others.items():
        if pre in low:
            for cat, i in slots:
                found[cat].append(i)
    return {cat: tuple(sorted(set(ix))) for cat, ix in found.items()}


_LETTER_RUN = re.compile(r"[a-z]+")


@cache
def _prefix_slots() -> tuple[
    dict[str, tuple[tuple[str, int], ...]], dict[str, tuple[tuple[str, int], ...]]
]:
    """(letters-only prefix -> its (category, alternative) slots, every other prefix -> its)."""
    slots: dict[str, list[tuple[str, int]]] = {}
    for cat, (_parts, needles) in _content_parts().items():
        for i, ns in enumerate(needles):
            for pre in ns:
                slots.setdefault(pre, []).append((cat, i))
    letters = {p: tuple(v) for p, v in slots.items() if p and p.isascii() and p.isalpha()}
    others = {p: tuple(v) for p, v in slots.items() if p not in letters}
    return letters, others


@cache
def _letter_prefixes() -> frozenset[str]:
    """The content prefixes made of ASCII letters only (non-empty)."""
    return frozenset(_prefix_slots()[0])


@lru_cache(maxsize=16384)
def _letter_prefixes_in(run: str) -> frozenset[str]:
    return frozenset(pre for pre in _letter_prefixes() if pre in run)


def _scan(
    text: str, low: str | None, candidates: dict[str, tuple[int, ...]] | None
) -> tuple[ContentHit, ...]:
    out = []
    # in an ASCII text, only the alternatives whose literal prefix occurs can match: the others
    # are left out of the scan (a leftover alternative never matches, so the matches are the same)
    for cat, (pat, reason) in content_patterns().items():
        if low is not None:
            parts, needles = _content_parts()[cat]
            pool = range(len(parts)) if candidates is None else candidates[cat]
            keep = tuple(i for i in pool if any(n in low for n in needles[i]))
            if not keep:
                continue
            if len(keep) < len(parts):
                pat = _content_subpattern(cat, keep)
        for m in literal_scan.finditer(pat, text, low):
            out.append(ContentHit(cat, m.start(), m.end(), m.group(), reason))
    out.sort(key=lambda h: h.start)
    return tuple(out)


@cache
def assertions() -> dict[str, Any]:
    return _load("assertions.json")


@cache
def direction_patterns() -> tuple[tuple[re.Pattern[str], str], ...]:
    """(pattern, label) for label in improved, worsened, stable, unchanged, fluctuating, peaked;
    multi-word forms first so that "no change" wins over "change"."""
    out = []
    for label, words in assertions()["direction"].items():
        for w in words:
            out.append((w, label))
    out.sort(key=lambda x: -len(x[0]))
    return tuple((_word_pattern([w]), lab) for w, lab in out)


@cache
def direction_prefixes() -> tuple[str, ...]:
    """For each of direction_patterns(), in order, its literal prefix (see _literal_prefix): in
    an ASCII sentence a pattern whose prefix does not occur (lower-cased) cannot match."""
    return tuple(_literal_prefix(p.pattern) for p, _ in direction_patterns())


@cache
def neutral_patterns() -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p, re.I) for p in assertions()["neutral_forms"])


@cache
def _any_neutral() -> re.Pattern[str]:
    """One alternation of the neutral forms: it matches at the start iff one of them does."""
    return re.compile("|".join(f"(?:{p.pattern})" for p in neutral_patterns()), re.I)


_SPACES = re.compile(r"\s+")


def is_neutral(sentence: str) -> bool:
    s = _SPACES.sub(" ", sentence.strip().strip("*").strip())
    return _any_neutral().match(s) is not None


@cache
def presence_patterns() -> dict[str, re.Pattern[str]]:
    pres = assertions()["presence"]
    return {
        "absent_before": re.compile(
            r"(?<![\w])(?:" + "|".join(pres["absent_before"]) + r")\s+(?:\w+\s+){0,2}$", re.I
        ),
        "present_before": re.compile(
            r"(?<![\w])(?:" + "|".join(pres["present_before"]) + r")\s+(?:\w+\s+){0,2}$", re.I
        ),
        "absent_after": re.compile(r"^\s*(?:" + "|".join(pres["absent_after"]) + r")", re.I),
        "present_after": re.compile(r"^\s*(?:" + "|".join(pres["present_after"]) + r")", re.I),
    }


@cache
def severity_words() -> tuple[dict[str, int], dict[str, int], frozenset[str]]:
    a = assertions()
    return (
        dict(a["item_severity"]["updrs"]),
        dict(a["item_severity"]["pdq8"]),
        frozenset(a["domain_severity"]),
    )


@cache
def comparative_words() -> tuple[dict[str, int], dict[str, int]]:
    """word -> +1 (greater/max) or -1 (smaller/min)."""
    a = assertions()
    comp = {w: 1 for w in a["comparative"]["greater"]} | {
        w: -1 for w in a["comparative"]["smaller"]
    }
    sup = {w: 1 for w in a["superlative"]["max"]} | {w: -1 for w in a["superlative"]["min"]}
    return comp, sup
