"""Comparatives ("higher than patient 8", "lower at visit 3 than at visit 1") and superlatives
("the highest motor score", "the largest improvement") checked against values computed from the
ledger series: a score at a visit (the latest by default) or a change over the series. This
module owns what is compared with what (the patients and visits on each side of "than", the
patients or visits a superlative ranks) and the ranking itself; word_checks.py runs it after
the other word checks."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from engine.grounding import literal_scan
from engine.grounding.cues import Cue
from engine.grounding.facts_view import FactsView, fact_dict, num_text
from engine.grounding.lexicon import comparative_words
from engine.grounding.mcid_claims import mcid_claim_spans
from engine.grounding.sentence_scope import (
    DOMAINS,
    SentenceCtx,
    patients_for,
    resolve_visit,
    subjects_of,
    visits_in,
)
from engine.grounding.sentence_verdict import SentenceVerdict
from engine.types import FactValue

#: (patient, other patient, visit cue, other visit cue) of the two sides of a comparative
Sides = tuple[int | None, int | None, Cue | None, Cue | None]
#: (domain, items, phrase) of what is compared (sentence_scope.subjects_of)
Subject = tuple[str | None, frozenset[str] | None, str]

COMPARATIVE_RE = re.compile(
    r"(?<![\w-])(higher|greater|larger|bigger|more|worse|heavier|lower|smaller|less|fewer|better|milder)"
    r"(?:\s+[\w-]+){0,4}?\s+than\b",
    re.I,
)
SUPERLATIVE_RE = re.compile(
    r"(?<![\w-])(highest|greatest|largest|biggest|most|worst|heaviest|lowest|smallest|least|fewest|best|mildest)(?![\w-])"
    r"|(?<=\bthe )(larger|greater|bigger|higher|lower|smaller)(?![\w-])(?![^.;]{0,40}\bthan\b)",
    re.I,
)
CHANGE_NOUN = re.compile(
    r"improv\w*|worsen\w*|declin\w*|deteriorat\w*|increas\w*|decreas\w*|chang\w*|rise|drop|reduction|progress\w*",
    re.I,
)
SCORE_NOUN = re.compile(
    r"^[\s\w()-]{0,40}?\b(?:scores?|burden|totals?|ratings?|severity|impairment|"
    r"improvement|worsening|declines?|changes?|deterioration|increases?|decreases?|rise|drop|"
    r"reduction|slope|impact|difficult\w*)\b",
    re.I,
)
#: comparative words that compare the size of a change (its absolute value)
_SIZE_WORDS = ("larger", "greater", "bigger", "more", "smaller", "less")
#: superlative (and "the larger") words that rank the size of a change
_SIZE_RANK_WORDS = (
    "largest",
    "greatest",
    "biggest",
    "most",
    "smallest",
    "least",
    "larger",
    "greater",
    "bigger",
    "smaller",
)


def _metric(
    view: FactsView,
    p: int,
    dom: str | None,
    items: frozenset[str] | None,
    visit: int | None,
    change: bool,
) -> tuple[float | None, list[FactValue]]:
    """The value compared for patient `p`: the change over the whole series (`change`), else
    the score at `visit` (the latest when the series has no such visit); with the values used."""
    series, _ = view.series(p, dom, items)
    if not series:
        return None, []
    vs = sorted(series)
    if change:
        if len(vs) < 2:
            return None, []
        return float(series[vs[-1]].value) - float(series[vs[0]].value), [
            series[vs[0]],
            series[vs[-1]],
        ]
    at = visit if visit in series else vs[-1]
    return float(series[at].value), [series[at]]


def check_comparisons(
    ctx: SentenceCtx, view: FactsView, only_patient: int | None, v: SentenceVerdict
) -> int:
    """The comparatives, then the superlatives, of the sentence; returns how many held
    (failures go into `v`)."""
    comp, sup = comparative_words()
    n = 0
    in_mcid = mcid_claim_spans(ctx)
    for m in literal_scan.finditer(COMPARATIVE_RE, ctx.text, ctx.low, ctx.s0, ctx.s1):
        if any(a <= m.start() < b for a, b in in_mcid):
            continue  # "larger than the MCID": an MCID claim (mcid_claims.py)
        if re.match(r"\s*[-+]?\d", ctx.text[m.end() : m.end() + 6]):
            continue  # "more than 2 points": a bound, judged with the number
        n += _check_comparative(ctx, view, m, comp[m.group(1).lower()], only_patient, v)
    for m in literal_scan.finditer(SUPERLATIVE_RE, ctx.text, ctx.low, ctx.s0, ctx.s1):
        after = ctx.text[m.end() : m.end() + 60]
        if not _ranks_a_value(ctx, m, after):
            continue
        if re.search(r"\bslope|\bstable\b|per visit|per year", ctx.text[ctx.s0 : ctx.s1], re.I):
            continue  # slope rankings: the claim reader checks the slope and the rank
        sword = (m.group(1) or m.group(2)).lower()
        sign = sup.get(sword) or comp[sword]
        n += _check_superlative(ctx, view, m, after, sword, sign, only_patient, v)
    return n


# ---------------------------------------------------------------- comparatives


def _check_comparative(
    ctx: SentenceCtx,
    view: FactsView,
    m: re.Match[str],
    sign: int,
    only_patient: int | None,
    v: SentenceVerdict,
) -> int:
    """One comparative ("higher than"): the subject's value on its left side against the one
    on its right (another patient, or another visit); 1 when the facts bear it out."""
    ca, cb = ctx.clause(m.start())
    right = [
        c
        for c in ctx.cues
        if m.end() <= c.start < cb and c.kind in ("patient", "visit", "ref_visit")
    ]
    left = [
        c
        for c in ctx.cues
        if ca <= c.start < m.start() and c.kind in ("patient", "patients", "visit", "ref_visit")
    ]
    if not any(c.kind in ("visit", "ref_visit") for c in left):
        left += [c for c in ctx.cues if ctx.s0 <= c.start < ca and c.kind in ("visit", "ref_visit")]
    region = ctx.text[m.start() : m.end()]
    is_change = bool(CHANGE_NOUN.search(region)) or bool(
        CHANGE_NOUN.search(ctx.text[ca : m.start()][-40:])
    )
    subjects = subjects_of(ctx, ca, cb, m.start())
    if not right or not subjects:
        v.fail("comparison", f"'{m.group(0)}': cannot tell what is compared with what")
        return 0
    sides = _compared_sides(ctx, m, right[0], left, only_patient)
    return _compare_sides(ctx, view, m, sides, subjects[0], is_change, sign, v)


def _compared_sides(
    ctx: SentenceCtx, m: re.Match[str], r: Cue, left: list[Cue], only_patient: int | None
) -> Sides:
    """The two sides of a comparative whose right side starts with the cue `r`: two patients at
    the same visit (if any), or one patient at two visits."""
    if r.kind == "patient":
        lp = patients_for(ctx, m.start(), only_patient)
        lv = [c for c in left if c.kind in ("visit", "ref_visit")] or [
            c for c in ctx.cues if m.end() <= c.start < ctx.s1 and c.kind == "visit"
        ]
        at = lv[-1] if lv else None
        return (lp[0] if lp else None, r.value, at, at)
    lv = [c for c in left if c.kind in ("visit", "ref_visit")]
    p = patients_for(ctx, m.start(), only_patient)
    return (p[0] if p else None, p[0] if p else None, lv[-1] if lv else None, r)


def _compare_sides(
    ctx: SentenceCtx,
    view: FactsView,
    m: re.Match[str],
    sides: Sides,
    subject: Subject,
    is_change: bool,
    sign: int,
    v: SentenceVerdict,
) -> int:
    """The values of the two sides compared in the comparative's sense: 1 when it holds."""
    pa, pb, va, vb = sides
    dom, items, phrase = subject
    if pa is None or pb is None:
        v.fail("comparison", f"'{m.group(0)}': cannot tell which patient")
        return 0
    sa, _ = view.series(pa, dom, items)
    sb, _ = view.series(pb, dom, items)
    if not sa or not sb:
        v.fail("comparison", f"'{m.group(0)}' ({phrase}): no values to compare")
        return 0
    visa = resolve_visit(va.value, ctx.text[va.start : va.end], sa) if va else None
    visb = resolve_visit(vb.value, ctx.text[vb.start : vb.end], sb) if vb else None
    xa, fa = _metric(view, pa, dom, items, visa, is_change and va is None)
    xb, fb = _metric(view, pb, dom, items, visb, is_change and vb is None)
    if xa is None or xb is None:
        v.fail("comparison", f"'{m.group(0)}' ({phrase}): no values to compare")
        return 0
    if is_change and m.group(1).lower() in _SIZE_WORDS:
        ok = (abs(xa) > abs(xb)) if sign > 0 else (abs(xa) < abs(xb))
    else:
        ok = xa > xb if sign > 0 else xa < xb
    if ok:
        v.facts += [fact_dict(f) for f in fa + fb]
        return 1
    v.fail(
        "comparison",
        f"'{m.group(0)}' ({phrase}): the facts give {num_text(xa)} against {num_text(xb)}",
    )
    return 0


# ---------------------------------------------------------------- superlatives

#: "their highest motor score", "its own lowest value": each patient ranked within their own series
_OWN_BEFORE = re.compile(r"\b(?:their|his|her|its)\s+(?:own\s+)?$", re.I)


def _ranks_a_value(ctx: SentenceCtx, m: re.Match[str], after: str) -> bool:
    """Whether the superlative `m` ranks a score or a change: a visit, a score noun or a domain
    or item cue follows it (not "most closely", "most recent")."""
    if re.match(r"\s+(?:closely|recent|likely|often)\b", after, re.I):
        return False
    if re.match(
        r"\s+(?:at|on|in)\s+(?:the\s+)?(?:visit|baseline|latest|last|first|final)", after, re.I
    ):
        return True
    if SCORE_NOUN.match(after):
        return True
    if re.match(r"\s+(?:value|level|reading)\b", after, re.I) and _OWN_BEFORE.search(
        ctx.text, max(ctx.s0, m.start() - 16), m.start()
    ):
        return True  # "the Summary Index reached its highest value"
    return any(c.kind in ("domain", "item") and m.end() <= c.start < m.end() + 40 for c in ctx.cues)


def _superlative_patients(
    ctx: SentenceCtx, view: FactsView, m: re.Match[str], only_patient: int | None
) -> list[int]:
    """The patient(s) a superlative is about; with several patients and none named before it in
    the sentence, the first patient named after it ("the highest score was patient 8's")."""
    patients = patients_for(ctx, m.start(), only_patient)
    if not patients or len(view.patients) > 1 and not ctx.patients_at(m.start(), ctx.s0):
        later = [c for c in ctx.cues if c.start > m.start() and c.kind == "patient"]
        if later:
            patients = [later[0].value]
    return patients


def _check_superlative(
    ctx: SentenceCtx,
    view: FactsView,
    m: re.Match[str],
    after: str,
    sword: str,
    sign: int,
    only_patient: int | None,
    v: SentenceVerdict,
) -> int:
    """One superlative: the patient's value ranked among the patients' (several patients, no
    visit named after the patient), else among its own visits, items or domains; 1 when it
    holds."""
    ca, cb = ctx.clause(m.start())
    subjects = subjects_of(ctx, ca, cb, m.start())
    patients = _superlative_patients(ctx, view, m, only_patient)
    if not subjects or not patients:
        v.fail("comparison", f"'{m.group(0)}': cannot tell what it ranks")
        return 0
    dom, items, phrase = subjects[0]
    is_change = bool(CHANGE_NOUN.search(after[:30]))
    if _OWN_BEFORE.search(ctx.text, max(ctx.s0, m.start() - 16), m.start()):
        own = patients_for(ctx, m.start(), only_patient)
        return _check_own_best(ctx, view, m, own, subjects[0], (after, is_change, sign), v)
    cues, _ = visits_in(ctx, ca, cb)
    multi = len({pp for pp in view.patients if view.series(pp, dom, items)[0]}) > 1
    p = patients[0]
    numbered = [
        vv
        for k, vv, t in cues
        if k == "visit" and isinstance(vv, int) and "baseline" not in t.lower()
    ]
    generic = [
        t for k, vv, t in cues if k == "visit" and (vv == "latest" or "baseline" in t.lower())
    ]
    patient_first = bool(ctx.patients_at(m.start(), ctx.s0))
    if multi and (not numbered or not patient_first):
        ranked = _rank_patients(view, p, (dom, items), numbered, generic, is_change, sword, sign)
        if ranked is None:
            v.fail("comparison", f"'{m.group(0)}' ({phrase}): patient {p} has no value")
            return 0
        ok, desc = ranked
    else:
        series, _ = view.series(p, dom, items)
        if not series:
            return 0
        ok, desc = _rank_within(view, p, (dom, items), series, cues, after, is_change, sign)
    if ok:
        return 1
    v.fail("comparison", f"'{m.group(0)}' ({phrase}): the facts give {desc}")
    return 0


def _check_own_best(
    ctx: SentenceCtx,
    view: FactsView,
    m: re.Match[str],
    patients: list[int],
    subject: tuple[str | None, frozenset[str] | None, str],
    how: tuple[str, bool, int],
    v: SentenceVerdict,
) -> int:
    """ "Both patients had their highest motor score at visit 3", "the Summary Index reached its
    highest value": each patient's value at the visit the clause (else the sentence) names is the
    top (bottom) of that patient's own series; 1 when it holds for every one."""
    dom, items, phrase = subject
    after, is_change, sign = how
    cues, _ = visits_in(ctx, *ctx.clause(m.start()))
    if not cues:
        cues, _ = visits_in(ctx, ctx.s0, ctx.s1)
    if not patients:
        v.fail("comparison", f"'{m.group(0)}' ({phrase}): cannot tell whose series it ranks")
        return 0
    for p in patients:
        series, _ = view.series(p, dom, items)
        if not series:
            v.fail("comparison", f"'{m.group(0)}' ({phrase}): patient {p} has no such series")
            return 0
        ok, desc = _rank_within(view, p, (dom, items), series, cues, after, is_change, sign)
        if not ok:
            v.fail("comparison", f"'{m.group(0)}' ({phrase}, patient {p}): the facts give {desc}")
            return 0
    return 1


def _rank_patients(
    view: FactsView,
    p: int,
    subject: tuple[str | None, frozenset[str] | None],
    numbered: list[int],
    generic: list[str],
    is_change: bool,
    sword: str,
    sign: int,
) -> tuple[bool, str] | None:
    """(whether patient `p`'s value is the top (bottom) of every patient's, the values); each
    patient's at the sentence's visit, its latest by default; None when `p` has no value."""
    dom, items = subject
    vals = {}
    for q in view.patients:
        sq, _ = view.series(q, dom, items)
        at = None
        if sq and generic:
            at = resolve_visit(
                "latest" if "baseline" not in generic[-1].lower() else 1, generic[-1], sq
            )
        elif sq and numbered:
            at = numbered[-1]
        x, _ = _metric(view, q, dom, items, at, is_change)
        if x is not None:
            vals[q] = x
    if p not in vals:
        return None
    key = {q: abs(x) for q, x in vals.items()} if is_change and sword in _SIZE_RANK_WORDS else vals
    target = max(key.values()) if sign > 0 else min(key.values())
    desc = f"patient {p}: {num_text(vals[p])}; " + ", ".join(
        f"patient {q}: {num_text(x)}" for q, x in sorted(vals.items()) if q != p
    )
    return key[p] == target, desc


def _rank_within(
    view: FactsView,
    p: int,
    subject: tuple[str | None, frozenset[str] | None],
    series: Mapping[int, FactValue],
    cues: list[tuple[str, Any, str]],
    after: str,
    is_change: bool,
    sign: int,
) -> tuple[bool, str]:
    """(whether the superlative holds within patient `p`'s facts, the values): the named
    visit's value is the top (bottom) of the series, else the item of its domain's items, else
    the domain of the patient's domains."""
    dom, items = subject
    named = [resolve_visit(vv, t, series) for k, vv, t in cues if k == "visit"]
    named = [x for x in named if x is not None]
    if named:
        vals_v = {x: float(f.value) for x, f in series.items()}
        target = max(vals_v.values()) if sign > 0 else min(vals_v.values())
        desc = ", ".join(f"visit {x}: {num_text(y)}" for x, y in sorted(vals_v.items()))
        return vals_v.get(named[-1]) == target, desc
    if items and re.match(r"[\s\w-]{0,30}\bitems?\b", after, re.I):
        return _top_item(view, p, items, series, sign)
    return _top_domain(view, p, dom, is_change, sign)


def _top_item(
    view: FactsView, p: int, items: frozenset[str], series: Mapping[int, FactValue], sign: int
) -> tuple[bool, str]:
    """The item is the highest (lowest) of its domain at every visit it was rated."""
    code = next(c for c in sorted(items) if (p, c) in view.items)
    dom = view.item_domain.get(code)
    bad = []
    for visit, f in series.items():
        others = [
            float(s[visit].value)
            for (q, c), s in view.items.items()
            if q == p and c != code and view.item_domain.get(c) == dom and visit in s
        ]
        x = float(f.value)
        if others and (x < max(others) if sign > 0 else x > min(others)):
            bad.append(
                f"visit {visit}: {num_text(x)} against {num_text(max(others) if sign > 0 else min(others))}"
            )
    return (not bad), "; ".join(bad)


def _top_domain(
    view: FactsView, p: int, dom: str | None, is_change: bool, sign: int
) -> tuple[bool, str]:
    """The domain's latest score (or change) is the highest (lowest) of the patient's domains."""
    if dom is None:
        return False, "no domain to rank"
    vals = {}
    for d in DOMAINS:
        x, _ = _metric(view, p, d, None, None, is_change)
        if x is not None:
            vals[d] = abs(x) if is_change else x
    if dom not in vals:
        return False, f"no {dom} value"
    target = max(vals.values()) if sign > 0 else min(vals.values())
    return vals[dom] == target, ", ".join(f"{d}: {num_text(x)}" for d, x in vals.items())
