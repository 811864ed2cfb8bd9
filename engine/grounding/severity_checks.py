"""Severity words ("mild", "moderate", "severe", "slight"; the PDQ-8 answers "never" ...
"always") checked against the ledger: an item's word against its rating's anchor (MDS-UPDRS 0
normal ... 4 severe, PDQ-8 0 never ... 4 always), a domain's word against its published severity
band (none exist for the MA-RAG 44-item scale: unsupported there). This module owns which
severity words are ratings at all (not the size of a change, a threshold, the scale's own
wording) and what each one rates: the score or item number beside it, else the clause's
subject at the clause's visit(s)."""

from __future__ import annotations

import re
from functools import lru_cache

from engine.grounding import literal_scan
from engine.grounding.claim import Claim
from engine.grounding.facts_view import FactsView, num_text
from engine.grounding.lexicon import direction_patterns, severity_words
from engine.grounding.sentence_scope import (
    SentenceCtx,
    at_visit,
    listed_visits,
    patients_for,
    subjects_of,
)
from engine.grounding.sentence_verdict import SentenceVerdict, assertion_record
from engine.types import FactValue

#: (patient, domain, items, visit, phrase) of one thing a severity word may rate
Target = tuple[int, str | None, frozenset[str] | None, int | None, str]

SEVERITY_RE = re.compile(
    r"(?<![\w-])(normal|slight(?:ly)?|minimal|mild(?:ly)?|moderate(?:ly)?|severe(?:ly)?|marked(?:ly)?|"
    r"never|occasionally|sometimes|often|always)(?![\w-])",
    re.I,
)
SEVERITY_SKIP_AFTER = re.compile(
    r"^\s*(?:cut-?offs?|thresholds?|levels?|or (?:worse|above|higher|more)|range|"
    r"improv\w*|worsen\w*|chang\w*|increas\w*|decreas\w*|ris\w*|declin\w*|drop\w*|reduc\w*|"
    r"fluctuat\w*|deteriorat\w*|progress\w*|lower|higher|better|worse|fell|rose|above|below)\b",
    re.I,
)
_FREQUENCY_WORDS = ("often", "always", "never", "sometimes", "occasionally")

_LAST_WORD = re.compile(r"(\w+)\s+$")
_MEANS_BEFORE = re.compile(r"\b(?:means?|meaning|is defined as|anchor(?:ed)? at)\s+$", re.I)
_CLINICALLY_AFTER = re.compile(r"\s+clinically", re.I)
_OR_WORSE_AFTER = re.compile(r"\s+or\s+(?:always|worse|severe|above|higher)", re.I)
_LEVEL_OR_BEFORE = re.compile(r"\b(?:often|moderate|mild|slight)\s+or\s+$", re.I)
_OR_AND_BEFORE = re.compile(r"\b(?:or|and)\s+$")
_OR_AND_AFTER = re.compile(r"\s*(?:or|and)\b")
_ANSWERED_BEFORE = re.compile(r"\b(?:answered|rated|or)\s+$")
_OR_ALWAYS_AFTER = re.compile(r"\s+or\s+(?:always|worse)")
_QUOTED_ANSWER_BEFORE = re.compile(
    r"\b(?:answered|rated|reported|responded|scored)\b[^.;]{0,20}$", re.I
)


@lru_cache(maxsize=4096)
def _is_direction_word(word: str) -> bool:
    """Whether a whole word is one of the direction words ("dropped", "improved")."""
    return any(p.fullmatch(word) for p, _ in direction_patterns())


def check_severity(
    ctx: SentenceCtx,
    view: FactsView,
    claims: list[Claim],
    only_patient: int | None,
    v: SentenceVerdict,
) -> int:
    """The severity words of the sentence; returns how many held (failures go into `v`)."""
    n = 0
    for m in literal_scan.finditer(SEVERITY_RE, ctx.text, ctx.low, ctx.s0, ctx.s1):
        word = m.group(1).lower()
        after = ctx.text[m.end() : m.end() + 30]
        before = ctx.text[max(ctx.s0, m.start() - 20) : m.start()]
        if not _is_rating(word, before, after):
            continue
        ca, cb = ctx.clause(m.start())
        checks = _severity_targets(ctx, claims, m, ca, cb, only_patient)
        if not checks:
            v.fail("severity", f"'{m.group(1)}': cannot tell which item or domain it rates")
            continue
        for group in _candidate_groups(view, checks):
            n += _severity_group(group, ctx, view, v, m, word, ca, cb)
    return n


def _is_rating(word: str, before: str, after: str) -> bool:
    """Whether a severity word (lower-cased) rates a value, read from the text `before` and
    `after` it; not when it is the size of a change ("dropped markedly"), the scale's own
    wording ("the anchor means severe"), a threshold ("moderate or worse") or an unquoted
    frequency adverb."""
    prev_word = _LAST_WORD.search(before)
    if prev_word and _is_direction_word(prev_word.group(1)):
        return False  # "dropped markedly", "improved slightly": the size of a change
    if _MEANS_BEFORE.search(before):
        return False  # "(the anchor itself means severe)": the scale's wording, not a rating
    if word == "minimal" and _CLINICALLY_AFTER.match(after):
        return False
    if _OR_WORSE_AFTER.match(after) or _LEVEL_OR_BEFORE.search(before):
        return False  # "answered often or always", "rated moderate or worse": a threshold
    if _is_level_or_range(before, after):
        return False
    # frequency adverbs count only when they quote a PDQ-8 answer
    return not (word in _FREQUENCY_WORDS and not (_QUOTED_ANSWER_BEFORE.search(before)))


def _is_level_or_range(before: str, after: str) -> bool:
    """A severity word naming a level, a cut-off or a change ("moderate range", "mild or
    moderate", "rated often or always") rather than rating a value."""
    if (
        SEVERITY_SKIP_AFTER.match(after)
        or _OR_AND_BEFORE.search(before)
        and _OR_AND_AFTER.match(after)
    ):
        return True
    return bool(_ANSWERED_BEFORE.search(before) and _OR_ALWAYS_AFTER.match(after))


def _severity_targets(
    ctx: SentenceCtx,
    claims: list[Claim],
    m: re.Match[str],
    ca: int,
    cb: int,
    only_patient: int | None,
) -> list[Target]:
    """What the severity word `m` rates: the score or item number next to it in its clause (the
    item(s) the number was found to be), else each patient's subjects of the clause."""
    bound = [
        c
        for c in claims
        if c.role == "value"
        and c.kind in ("score", "item")
        and c.supported
        and (m.start() - 25 <= c.end <= m.start() or m.end() <= c.start <= m.end() + 25)
        and ";" not in ctx.text[min(c.end, m.end()) : max(c.start, m.start())]
    ]
    subjects = subjects_of(ctx, ca, cb, m.start())
    patients = patients_for(ctx, m.start(), only_patient)
    checks: list[Target] = []
    if bound:
        c = min(bound, key=lambda cl: min(abs(m.start() - cl.end), abs(cl.start - m.end())))
        items = c.items if c.kind == "item" else None
        matched = [f for f in c.matched if f.kind == "item" and f.item]
        if items and matched:  # an ambiguous label: the item(s) the number was found to be
            items = frozenset(f.item for f in matched)
        visit = c.visit if c.visit is not None or not matched else matched[0].visit
        for p in [c.patient] if c.patient is not None else patients:
            checks.append((p, c.domain, items, visit, c.text))
    else:
        for p in patients:
            for dom, items, phrase in subjects:
                checks.append((p, dom, items, None, phrase))
    return checks


def _candidate_groups(view: FactsView, checks: list[Target]) -> list[list[Target]]:
    """Each target as a group of candidates: one per item of the facts when it names several
    ("rigidity" names several items: any of them may hold)."""
    expanded = []
    for p, dom, items, visit, phrase in checks:
        codes = [c for c in sorted(items or ()) if (p, c) in view.items]
        if items and len(codes) > 1:  # "rigidity" names several items: any of them may hold
            expanded.append([(p, dom, frozenset({c}), visit, phrase) for c in codes])
        else:
            expanded.append([(p, dom, items, visit, phrase)])
    return expanded


def _severity_group(
    group: list[Target],
    ctx: SentenceCtx,
    view: FactsView,
    v: SentenceVerdict,
    m: re.Match[str],
    word: str,
    ca: int,
    cb: int,
) -> int:
    """One severity statement over one or more candidate items: it holds when any holds."""
    updrs_words, pdq_words, dom_words = severity_words()
    fails: list[str] = []
    for p, dom, items, visit, phrase in group:
        series, what = view.series(p, dom, items)
        if not series:
            if items is not None:
                v.fail("severity", f"'{m.group(1)}' for '{phrase}': no such item in the facts")
            continue
        if visit is not None and visit in series:
            ats: list[int | None] = [visit]
        else:  # "severe at visits 2 and 3": the word holds at each listed visit
            ats = list(listed_visits(ctx, ca, cb)) or [at_visit(ctx, ca, cb, series)]
        missing = next((at for at in ats if at is None or at not in series), "none")
        if missing != "none":
            v.fail("severity", f"'{m.group(1)}' ({what}, patient {p}): no value at visit {missing}")
            continue
        rated = [(at, series[at]) for at in ats if at is not None]
        if items:
            scale = pdq_words if (rated[0][1].domain == "qol") else updrs_words
            if word not in scale:
                v.fail("severity", f"'{m.group(1)}' is not a rating of the {what} scale")
                continue
        elif word not in dom_words:
            v.fail("severity", f"'{m.group(1)}' is not a domain severity level")
            continue
        elif not view.bands.get(dom or ""):
            v.fail(
                "severity",
                f"'{m.group(1)}' ({dom}, patient {p}): no published severity cut-offs "
                "apply to this scale",
            )
            continue
        wrong = [d for at, f in rated if (d := _severity_miss(word, f, at, items, dom, what, view))]
        if not wrong:
            span = (rated[0][0], rated[-1][0])
            facts = [f for _at, f in rated]
            v.facts.append(assertion_record("severity", m.group(1), p, series, span, facts))
            return 1
        fails.append(f"'{m.group(1)}' ({what}, patient {p}): {wrong[0]}")
    if fails:
        v.fail("severity", fails[0])
    return 0


def _severity_miss(
    word: str,
    f: FactValue,
    at: int,
    items: frozenset[str] | None,
    dom: str | None,
    what: str,
    view: FactsView,
) -> str | None:
    """Why `word` does not rate the value `f` at visit `at` (None when it does): an item's
    anchor, or a domain score's published band."""
    updrs_words, pdq_words, _dom_words = severity_words()
    val = float(f.value)
    if items:
        expect = (pdq_words if f.domain == "qol" else updrs_words)[word]
        ok = val == expect or (word.startswith("marked") and val >= 3)
        return None if ok else f"{what} is {num_text(val)} at visit {at}"
    level = view.band(dom, val) if dom else None
    if level is not None and word.startswith(level):
        return None
    return f"{dom} {num_text(val)} at visit {at} is {level or 'outside every band'}"
