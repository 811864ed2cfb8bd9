"""Direction words ("improved", "worsened", "declined", "stable", "unchanged", "fluctuating",
"peaked") checked against the ledger. A word beside a change number is bound to it (the number's
sign, the domain's MCID); any other word is checked against the subject's change over the visit
span of its clause (sentence_scope.py). This module owns the direction-word scan and its reading
rules (a comparative with "than" is a comparison, "lower scores" describes, "scores declined" is
an improvement), so that word_checks.py only runs the checks in turn."""

from __future__ import annotations

import re
from collections.abc import Mapping

from engine.grounding import literal_scan
from engine.grounding.claim import Claim
from engine.grounding.facts_view import FactsView, num_text
from engine.grounding.lexicon import direction_patterns, direction_prefixes
from engine.grounding.sentence_scope import (
    SentenceCtx,
    patients_for,
    resolve_visit,
    subjects_of,
    visit_span,
    visits_in,
)
from engine.grounding.sentence_verdict import SentenceVerdict, assertion_record
from engine.grounding.vocabulary import THRESHOLD_FOR
from engine.types import FactValue

#: (start, end, word, label) of a direction word in the text
DirectionWord = tuple[int, int, str, str]
#: (domain, items, phrase) of a word's subject (sentence_scope.subjects_of)
Subject = tuple[str | None, frozenset[str] | None, str]

CHANGE_KINDS = ("delta", "cumulative", "change", "pair", "since")
NEGATION = re.compile(r"\b(?:not|no|never|neither|nor|without|none)\b[^.;,]{0,14}$", re.I)

_THAN_AFTER = re.compile(r"\s*(?:\w+\s+){0,3}?than\b", re.I)
_COMPARATIVE_WORD = re.compile(r"(?:lower|higher|better|worse)$", re.I)
_CHANGE_VERB_BEFORE = re.compile(
    r"(?:\b(?:is|was|were|are|became|got|slightly|much|somewhat|scores?)|:)\s+$", re.I
)
#: "never rose above 2", "never fell below 10": the word moves to a bound, it states no change
_BOUND_AFTER = re.compile(r"\s+(?:above|over|beyond|below|under)\s+\d", re.I)
_NEVER_BEFORE = re.compile(r"\bnever\s+(?:once\s+)?$", re.I)
_OVERALL_AFTER = re.compile(r"\s+overall\b", re.I)
_DECLIN = re.compile(r"declin", re.I)
_SCORES_HAVE_BEFORE = re.compile(r"\bscores?\s*(?:has|have|had)?\s*$", re.I)
#: "over the same visits": "the same" names a span, not an unchanged value (chains.py reads it)
_SAME_SPAN_AFTER = re.compile(
    r"\s+(?:visits?|period|interval|assessments?|time\s+span|months|weeks|years)\b", re.I
)


def _direction_words(ctx: SentenceCtx) -> list[DirectionWord]:
    taken: list[tuple[int, int]] = []
    out = []
    sent = ctx.text[ctx.s0 : ctx.s1]
    low = sent.lower() if sent.isascii() else None  # skip patterns that cannot match (lexicon)
    for (pat, label), pre in zip(direction_patterns(), direction_prefixes(), strict=True):
        if low is not None and pre not in low:
            continue
        for m in literal_scan.finditer(pat, ctx.text, ctx.low, ctx.s0, ctx.s1):
            if any(a < m.end() and m.start() < b for a, b in taken):
                continue
            word = m.group(0)
            if THRESHOLD_FOR.search(ctx.text[max(ctx.s0, m.start() - 45) : m.start()]):
                continue  # "the 2.51-point MCID for worsening": names the threshold
            after = ctx.text[m.end() : m.end() + 30]
            if (
                label == "unchanged"
                and word.lower() == "the same"
                and _SAME_SPAN_AFTER.match(after)
            ):
                continue  # "over the same visits": the span of the change, not "unchanged"
            if label in ("improved", "worsened") and _THAN_AFTER.match(after):
                continue  # a comparative ("higher than"): checked as a comparison
            if _BOUND_AFTER.match(after) and _NEVER_BEFORE.search(
                ctx.text[max(ctx.s0, m.start() - 12) : m.start()]
            ):
                continue  # "never rose above 2": a bound on the values (series_bounds.py)
            if (
                _COMPARATIVE_WORD.match(word)
                and not _CHANGE_VERB_BEFORE.search(
                    ctx.text[max(ctx.s0, m.start() - 20) : m.start()]
                )
                and not _OVERALL_AFTER.match(after)
            ):
                continue  # "higher items", "lower scores": descriptive, not a change
            if _DECLIN.match(word) and _SCORES_HAVE_BEFORE.search(
                ctx.text[max(ctx.s0, m.start() - 20) : m.start()]
            ):
                label = "improved"
            taken.append((m.start(), m.end()))
            out.append((m.start(), m.end(), word, label))
    return sorted(out)


def _bound_change(claims: list[Claim], a: int, b: int, text: str) -> Claim | None:
    changes = [c for c in claims if c.role == "value" and c.kind in CHANGE_KINDS and c.supported]
    before = [
        c
        for c in changes
        if a - 45 <= c.end <= a
        and (";" not in text[c.end : a] or "(" in text[c.end : a])
        and ")" not in text[c.end : a]
        and not any(c.end <= o.start < a for o in changes)
    ]
    if before:
        return before[-1]
    after = [
        c for c in changes if b <= c.start <= b + 45 and not re.search(r"[;:),]", text[b : c.start])
    ]
    return after[0] if after else None


def check_directions(
    ctx: SentenceCtx,
    view: FactsView,
    claims: list[Claim],
    only_patient: int | None,
    v: SentenceVerdict,
) -> int:
    """The direction words of the sentence; returns how many held (failures go into `v`)."""
    n = 0
    words = _direction_words(ctx)
    for w in words:
        a, b, word, label = w
        neg = bool(NEGATION.search(ctx.text[max(ctx.s0, a - 24) : a]))
        if neg and re.fullmatch(r"\w+(?:ment|ing|ion)", word, re.I):
            continue  # "possibly missing data, not improvement": denies a reading, asserts none
        bound = _bound_change(claims, a, b, ctx.text)
        if bound is not None and label in ("improved", "worsened", "stable", "unchanged"):
            n += _check_bound_direction(view, bound, word, label, neg, v)
            continue
        if re.search(r"\bslope|per visit|per year", ctx.text[ctx.s0 : ctx.s1], re.I):
            continue  # a rate ("fastest worsening ... slope 7.00"): the slope's sign is checked
        if re.match(r"\s*(?:most|least|more|less)\s+$", ctx.text[max(ctx.s0, a - 6) : a], re.I):
            continue  # "most stable": a ranking by slope, checked with its numbers
        n += _check_span_direction(ctx, view, words, w, neg, only_patient, v)
    return n


def _check_bound_direction(
    view: FactsView, bound: Claim, word: str, label: str, neg: bool, v: SentenceVerdict
) -> int:
    """A direction word against the change number it is bound to: 1 when it fits."""
    change = (
        bound.value if bound.signed or bound.direction is None else bound.value * bound.direction
    )
    if not bound.signed and bound.direction is None:
        return 0  # an unsigned value with no direction: the claim reader judged it
    fact_label = view.label(bound.domain, change)
    if _direction_ok(label, fact_label, change, neg):
        return 1
    v.fail(
        "direction",
        f"'{word}' does not fit the change it describes ({bound.text}, "
        f"{bound.describe()}: {fact_label})",
    )
    return 0


def _direction_clause(
    ctx: SentenceCtx, words: list[DirectionWord], a: int, b: int
) -> tuple[int, int]:
    """The part of the sentence a direction word at [a, b) is about: its clause, cut at the other
    direction words, or the list after it ("stable: motor, ADL; improved: non-motor")."""
    ca, cb = ctx.clause(a)
    others = [w for w in words if w[0] != a]
    if any(ca <= w[0] and w[1] <= a for w in others):
        ca = a  # "improved from A to B and then worsened to C at visit 7": after the verb
    cb = min([cb] + [w[0] for w in others if w[0] >= b])
    listed = re.match(r"(?:\s*\([^)]*\))?\s*:\s", ctx.text[b : b + 40])
    if listed:  # "stable: motor, ADL; improved: non-motor"
        ca = b + listed.end()
        semi = ctx.text.find(";", ca, ctx.s1)
        cb = semi if semi >= 0 else ctx.s1
    return ca, cb


def _check_span_direction(
    ctx: SentenceCtx,
    view: FactsView,
    words: list[DirectionWord],
    w: DirectionWord,
    neg: bool,
    only_patient: int | None,
    v: SentenceVerdict,
) -> int:
    """A direction word with no change number: against each patient's and subject's series over
    the visit span of its clause; returns how many held."""
    a, b, word, label = w
    ca, cb = _direction_clause(ctx, words, a, b)
    subjects = subjects_of(ctx, ca, cb, a)
    patients = patients_for(ctx, a, only_patient)
    if not subjects or not patients:
        if label in ("improved", "worsened") and re.match(
            r"(?:better|worse|lower|higher)$", word, re.I
        ):
            return 0
        if neg:
            return 0  # "not read as improvement": denies a reading, asserts no change
        v.fail("direction", f"'{word}': cannot tell which patient and domain it describes")
        return 0
    n = 0
    for p in patients:
        for subject in subjects:
            n += _check_series_direction(ctx, view, p, subject, w, neg, (ca, cb), v)
    return n


def _check_series_direction(
    ctx: SentenceCtx,
    view: FactsView,
    p: int,
    subject: Subject,
    w: DirectionWord,
    neg: bool,
    clause: tuple[int, int],
    v: SentenceVerdict,
) -> int:
    """A direction word against one patient's series of one subject: 1 when it holds."""
    _a, _b, word, label = w
    dom, items, phrase = subject
    ca, cb = clause
    series, what = view.series(p, dom, items)
    if not series:
        if items is not None and not items:
            v.fail("direction", f"'{word}' about '{phrase}': no such item in the facts")
        return 0
    span = visit_span(ctx, ca, cb, series)
    if span is not None and span[0] == span[1] and label != "peaked":
        v.fail(
            "direction",
            f"'{word}' ({what}, patient {p}): a change needs two assessments; the "
            f"sentence spans visit {span[0]} only",
        )
        return 0
    # an item has no MCID of its own: its direction words are read from the change alone
    domain = None if items else dom
    res = _direction_span(view, series, span, label, neg, domain, ctx, ca, cb)
    if res is None:
        v.fail("direction", f"'{word}' ({what}, patient {p}): no score at the visits it spans")
        return 0
    if res[0]:
        v.facts.append(assertion_record("direction", word, p, series, span, res[1]))
        return 1
    v.fail(
        "direction",
        f"'{word}' ({what}, patient {p}, visits {span[0]} to {span[1]}): the facts say {res[2]}",
    )
    return 0


def _direction_ok(label: str, fact_label: str, change: float, neg: bool) -> bool:
    if label == "improved":
        ok = change < 0
        return change >= 0 if neg else ok
    if label == "worsened":
        ok = change > 0
        return change <= 0 if neg else ok
    if label == "stable":
        ok = fact_label in ("stable", "unchanged") or change == 0
        return not ok if neg else ok
    if label == "unchanged":
        ok = change == 0
        return not ok if neg else ok
    return True


def _direction_span(
    view: FactsView,
    series: Mapping[int, FactValue],
    span: tuple[int, int] | None,
    label: str,
    neg: bool,
    domain: str | None,
    ctx: SentenceCtx,
    ca: int,
    cb: int,
) -> tuple[bool, list[FactValue], str] | None:
    """(whether the word holds over `span`, the values shown, what the facts say); None when the
    span has no score at one of its ends."""
    if span is None:
        return None
    a, b = span
    if a not in series or b not in series:
        return None
    fa, fb = series[a], series[b]
    change = float(fb.value) - float(fa.value)
    fact_label = (
        view.label(domain, change)
        if domain
        else ("worsened" if change > 0 else "improved" if change < 0 else "unchanged")
    )
    desc = f"{num_text(fa.value)} at visit {a} to {num_text(fb.value)} at visit {b} ({fact_label})"
    if label == "fluctuating":  # a pattern of the whole selected series
        return _fluctuating(series, neg, desc, view, domain)
    if label == "peaked":
        return _peaked(series, ctx, ca, cb)
    ok = _direction_ok(label, fact_label, change, neg)
    return ok, [fa, fb], desc


def _fluctuating(
    series: Mapping[int, FactValue], neg: bool, desc: str, view: FactsView, domain: str | None
) -> tuple[bool, list[FactValue], str]:
    """ "Fluctuating": the whole selected series swings both ways by the engine's one definition
    (engine.clinical.course.is_fluctuating, through the view's MCID and swing floor)."""
    visits = sorted(series)
    ok = view.fluctuating(domain, [float(series[x].value) for x in visits])
    return (
        (not ok if neg else ok),
        [series[x] for x in visits],
        desc + ", no swing both ways of the size a fluctuating course needs" if not ok else desc,
    )


def _peaked(
    series: Mapping[int, FactValue], ctx: SentenceCtx, ca: int, cb: int
) -> tuple[bool, list[FactValue], str]:
    """ "Peaked": the highest value of the whole series is at a visit the clause names, else
    between its first and last visits."""
    cues, _ = visits_in(ctx, ca, cb)
    named = [resolve_visit(vv, t, series) for k, vv, t in cues if k == "visit"]
    named = [x for x in named if x is not None]
    visits = sorted(series)  # a peak is the highest value of the whole series
    vals = [float(series[x].value) for x in visits]
    top = max(vals)
    peaks = [x for x in visits if float(series[x].value) == top]
    ok = any(x in peaks for x in named) if named else (top > vals[0] and top > vals[-1])
    return (
        ok,
        [series[x] for x in peaks],
        f"the highest value {num_text(top)} is at visit(s) {', '.join(map(str, peaks))}",
    )
