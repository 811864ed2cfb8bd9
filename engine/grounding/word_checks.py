"""The word assertions of a sentence, each checked against the ledger for what it is about
(sentence_scope.py): direction words, severity words, presence or absence of a symptom,
comparatives and superlatives, periods. Each check returns how many assertions held and writes
every failure, with its reason, into the sentence's verdict."""

from __future__ import annotations

import datetime as dt
import re
from functools import lru_cache

from engine.grounding import literal_scan
from engine.grounding.claim import Claim
from engine.grounding.facts_view import FactsView, _fv, _num
from engine.grounding.lexicon import (
    comparative_words,
    direction_patterns,
    direction_prefixes,
    presence_patterns,
    severity_words,
)
from engine.grounding.sentence_scope import (
    DOMAINS,
    _at_visit,
    _listed_visits,
    _resolve_visit,
    _SentenceCtx,
    _span,
    _subjects,
    _visits_in,
    _who,
)
from engine.grounding.sentence_verdict import SentenceVerdict, _assertion, _fail

CHANGE_KINDS = ("delta", "cumulative", "change", "pair", "since")
NEGATION = re.compile(r"\b(?:not|no|never|neither|nor|without|none)\b[^.;,]{0,14}$", re.I)
SCORE_NOUN = re.compile(
    r"^[\s\w()-]{0,40}?\b(?:scores?|burden|totals?|ratings?|severity|impairment|"
    r"improvement|worsening|declines?|changes?|deterioration|increases?|decreases?|rise|drop|"
    r"reduction|slope|impact|difficult\w*)\b",
    re.I,
)
PERIOD_RE = re.compile(
    r"\b(?:over|across|within|in|during|spanning|after)\s+(?:about\s+|roughly\s+|nearly\s+|almost\s+)?(?:(\d+)|a|one)\s+(months?|years?|weeks?)\b",
    re.I,
)


def _check_words(
    ctx: _SentenceCtx,
    view: FactsView,
    claims: list[Claim],
    only_patient: int | None,
    v: SentenceVerdict,
) -> int:
    """Direction, severity, presence, comparative and superlative words; returns how many
    assertions were verified (failures go into `v`)."""
    n = 0
    n += _check_directions(ctx, view, claims, only_patient, v)
    n += _check_severity(ctx, view, claims, only_patient, v)
    n += _check_presence(ctx, view, claims, only_patient, v)
    n += _check_comparisons(ctx, view, only_patient, v)
    n += _check_zero_latest(ctx, view, only_patient, v)
    return n


# ---------------------------------------------------------------- direction


_THAN_AFTER = re.compile(r"\s*(?:\w+\s+){0,3}?than\b", re.I)
_COMPARATIVE_WORD = re.compile(r"(?:lower|higher|better|worse)$", re.I)
_CHANGE_VERB_BEFORE = re.compile(
    r"(?:\b(?:is|was|were|are|became|got|slightly|much|somewhat|scores?)|:)\s+$", re.I
)
_OVERALL_AFTER = re.compile(r"\s+overall\b", re.I)
_DECLIN = re.compile(r"declin", re.I)
_SCORES_HAVE_BEFORE = re.compile(r"\bscores?\s*(?:has|have|had)?\s*$", re.I)
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


def _direction_words(ctx: _SentenceCtx) -> list[tuple[int, int, str, str]]:
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
            after = ctx.text[m.end() : m.end() + 30]
            if label in ("improved", "worsened") and _THAN_AFTER.match(after):
                continue  # a comparative ("higher than"): checked as a comparison
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


def _check_directions(ctx, view, claims, only_patient, v) -> int:
    n = 0
    words = _direction_words(ctx)
    for a, b, word, label in words:
        neg = bool(NEGATION.search(ctx.text[max(ctx.s0, a - 24) : a]))
        if neg and re.fullmatch(r"\w+(?:ment|ing|ion)", word, re.I):
            continue  # "possibly missing data, not improvement": denies a reading, asserts none
        bound = _bound_change(claims, a, b, ctx.text)
        if bound is not None and label in ("improved", "worsened", "stable", "unchanged"):
            change = (
                bound.value
                if bound.signed or bound.direction is None
                else bound.value * bound.direction
            )
            if not bound.signed and bound.direction is None:
                continue  # an unsigned value with no direction: the claim reader judged it
            ok = _direction_ok(label, view.label(bound.domain, change), change, neg)
            if ok:
                n += 1
            else:
                _fail(
                    v,
                    "direction",
                    f"'{word}' does not fit the change it describes ({bound.text}, "
                    f"{bound.describe()}: {view.label(bound.domain, change)})",
                )
            continue
        if re.search(r"\bslope|per visit|per year", ctx.text[ctx.s0 : ctx.s1], re.I):
            continue  # a rate ("fastest worsening ... slope 7.00"): the slope's sign is checked
        if re.match(r"\s*(?:most|least|more|less)\s+$", ctx.text[max(ctx.s0, a - 6) : a], re.I):
            continue  # "most stable": a ranking by slope, checked with its numbers
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
        subjects = _subjects(ctx, ca, cb, a)
        patients = _who(ctx, a, only_patient)
        if not subjects or not patients:
            if label in ("improved", "worsened") and re.match(
                r"(?:better|worse|lower|higher)$", word, re.I
            ):
                continue
            if neg:
                continue  # "not read as improvement": denies a reading, asserts no change
            _fail(v, "direction", f"'{word}': cannot tell which patient and domain it describes")
            continue
        for p in patients:
            for dom, items, phrase in subjects:
                series, what = view.series(p, dom, items)
                if not series:
                    if items is not None and not items:
                        _fail(
                            v, "direction", f"'{word}' about '{phrase}': no such item in the facts"
                        )
                    continue
                span = _span(ctx, ca, cb, series)
                if span is not None and span[0] == span[1] and label != "peaked":
                    _fail(
                        v,
                        "direction",
                        f"'{word}' ({what}, patient {p}): a change needs two assessments; the "
                        f"sentence spans visit {span[0]} only",
                    )
                    continue
                res = _direction_span(
                    view,
                    series,
                    span,
                    label,
                    neg,
                    dom or view.item_domain.get(next(iter(items or ()), ""), None),
                    ctx,
                    ca,
                    cb,
                )
                if res is None:
                    _fail(
                        v,
                        "direction",
                        f"'{word}' ({what}, patient {p}): no score at the visits it spans",
                    )
                elif res[0]:
                    n += 1
                    v.facts.append(_assertion("direction", word, p, series, span, res[1], view))
                else:
                    _fail(
                        v,
                        "direction",
                        f"'{word}' ({what}, patient {p}, visits {span[0]} to {span[1]}): "
                        f"the facts say {res[2]}",
                    )
    return n


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


def _direction_span(view, series, span, label, neg, domain, ctx, ca, cb):
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
    visits = [x for x in sorted(series) if a <= x <= b] if a < b else sorted(series)
    vals = [float(series[x].value) for x in visits]
    desc = f"{_num(fa.value)} at visit {a} to {_num(fb.value)} at visit {b} ({fact_label})"
    if label == "fluctuating":  # a pattern of the whole selected series
        visits = sorted(series)
        vals = [float(series[x].value) for x in visits]
        d = [y - x for x, y in zip(vals, vals[1:], strict=False)]
        ok = any(x > 0 for x in d) and any(x < 0 for x in d)
        return (
            (not ok if neg else ok),
            [series[x] for x in visits],
            desc + ", no change of direction" if not ok else desc,
        )
    if label == "peaked":
        cues, _ = _visits_in(ctx, ca, cb)
        named = [_resolve_visit(vv, t, series) for k, vv, t in cues if k == "visit"]
        named = [x for x in named if x is not None]
        visits = sorted(series)  # a peak is the highest value of the whole series
        vals = [float(series[x].value) for x in visits]
        top = max(vals)
        peaks = [x for x in visits if float(series[x].value) == top]
        ok = any(x in peaks for x in named) if named else (top > vals[0] and top > vals[-1])
        return (
            ok,
            [series[x] for x in peaks],
            f"the highest value {_num(top)} is at visit(s) {', '.join(map(str, peaks))}",
        )
    ok = _direction_ok(label, fact_label, change, neg)
    return ok, [fa, fb], desc


# ---------------------------------------------------------------- severity

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


def _check_severity(ctx, view, claims, only_patient, v) -> int:
    updrs_words, pdq_words, dom_words = severity_words()
    n = 0
    for m in literal_scan.finditer(SEVERITY_RE, ctx.text, ctx.low, ctx.s0, ctx.s1):
        word = m.group(1).lower()
        after = ctx.text[m.end() : m.end() + 30]
        before = ctx.text[max(ctx.s0, m.start() - 20) : m.start()]
        prev_word = _LAST_WORD.search(before)
        if prev_word and _is_direction_word(prev_word.group(1)):
            continue  # "dropped markedly", "improved slightly": the size of a change
        if _MEANS_BEFORE.search(before):
            continue  # "(the anchor itself means severe)": the scale's wording, not a rating
        if word == "minimal" and _CLINICALLY_AFTER.match(after):
            continue
        if _OR_WORSE_AFTER.match(after) or _LEVEL_OR_BEFORE.search(before):
            continue  # "answered often or always", "rated moderate or worse": a threshold
        if (
            SEVERITY_SKIP_AFTER.match(after)
            or _OR_AND_BEFORE.search(before)
            and _OR_AND_AFTER.match(after)
        ):
            continue
        if _ANSWERED_BEFORE.search(before) and _OR_ALWAYS_AFTER.match(after):
            continue
        if word in ("often", "always", "never", "sometimes", "occasionally") and not (
            _QUOTED_ANSWER_BEFORE.search(before)
        ):
            continue  # frequency adverbs count only when they quote a PDQ-8 answer
        ca, cb = ctx.clause(m.start())
        bound = [
            c
            for c in claims
            if c.role == "value"
            and c.kind in ("score", "item")
            and c.supported
            and (m.start() - 25 <= c.end <= m.start() or m.end() <= c.start <= m.end() + 25)
            and ";" not in ctx.text[min(c.end, m.end()) : max(c.start, m.start())]
        ]
        subjects = _subjects(ctx, ca, cb, m.start())
        patients = _who(ctx, m.start(), only_patient)
        checks: list[tuple[int, str | None, frozenset[str] | None, int | None, str]] = []
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
        if not checks:
            _fail(v, "severity", f"'{m.group(1)}': cannot tell which item or domain it rates")
            continue
        expanded = []
        for p, dom, items, visit, phrase in checks:
            codes = [c for c in sorted(items or ()) if (p, c) in view.items]
            if items and len(codes) > 1:  # "rigidity" names several items: any of them may hold
                expanded.append([(p, dom, frozenset({c}), visit, phrase) for c in codes])
            else:
                expanded.append([(p, dom, items, visit, phrase)])
        for group in expanded:
            n += _severity_group(group, ctx, view, v, m, word, ca, cb)
    return n


def _severity_group(group, ctx, view, v, m, word, ca, cb) -> int:
    """One severity statement over one or more candidate items: it holds when any holds."""
    updrs_words, pdq_words, dom_words = severity_words()
    fails: list[str] = []
    for p, dom, items, visit, phrase in group:
        series, what = view.series(p, dom, items)
        if not series:
            if items is not None:
                _fail(v, "severity", f"'{m.group(1)}' for '{phrase}': no such item in the facts")
            continue
        if visit is not None and visit in series:
            ats: list[int | None] = [visit]
        else:  # "severe at visits 2 and 3": the word holds at each listed visit
            ats = list(_listed_visits(ctx, ca, cb)) or [_at_visit(ctx, ca, cb, series)]
        missing = next((at for at in ats if at is None or at not in series), "none")
        if missing != "none":
            _fail(
                v, "severity", f"'{m.group(1)}' ({what}, patient {p}): no value at visit {missing}"
            )
            continue
        rated = [(at, series[at]) for at in ats if at is not None]
        if items:
            scale = pdq_words if (rated[0][1].domain == "qol") else updrs_words
            if word not in scale:
                _fail(v, "severity", f"'{m.group(1)}' is not a rating of the {what} scale")
                continue
        elif word not in dom_words:
            _fail(v, "severity", f"'{m.group(1)}' is not a domain severity level")
            continue
        elif not view.bands.get(dom or ""):
            _fail(
                v,
                "severity",
                f"'{m.group(1)}' ({dom}, patient {p}): no published severity cut-offs "
                "apply to this scale",
            )
            continue
        wrong = [d for at, f in rated if (d := _severity_miss(word, f, at, items, dom, what, view))]
        if not wrong:
            span = (rated[0][0], rated[-1][0])
            facts = [f for _at, f in rated]
            v.facts.append(_assertion("severity", m.group(1), p, series, span, facts, view))
            return 1
        fails.append(f"'{m.group(1)}' ({what}, patient {p}): {wrong[0]}")
    if fails:
        _fail(v, "severity", fails[0])
    return 0


def _severity_miss(word, f, at, items, dom, what, view) -> str | None:
    """Why `word` does not rate the value `f` at visit `at` (None when it does): an item's
    anchor, or a domain score's published band."""
    updrs_words, pdq_words, _dom_words = severity_words()
    val = float(f.value)
    if items:
        expect = (pdq_words if f.domain == "qol" else updrs_words)[word]
        ok = val == expect or (word.startswith("marked") and val >= 3)
        return None if ok else f"{what} is {_num(val)} at visit {at}"
    level = view.band(dom, val) if dom else None
    if level is not None and word.startswith(level):
        return None
    return f"{dom} {_num(val)} at visit {at} is {level or 'outside every band'}"


# ---------------------------------------------------------------- presence


def _check_presence(ctx, view, claims, only_patient, v) -> int:
    pats = presence_patterns()
    n = 0
    for c in ctx.cues:
        if c.kind != "item":
            continue
        codes, _doms, phrase = c.value
        before = ctx.text[max(ctx.s0, c.start - 30) : c.start]
        after = ctx.text[c.end : c.end + 40]
        absent = bool(pats["absent_before"].search(before) or pats["absent_after"].match(after))
        present = not absent and bool(
            pats["present_before"].search(before) or pats["present_after"].match(after)
        )
        if not (absent or present):
            continue
        ca, cb = ctx.clause(c.start)
        if any(
            cl.role == "value" and ca <= cl.start < cb and cl.items is not None for cl in claims
        ):
            continue  # a number states the rating: the claim reader checked it
        if not codes:
            _fail(v, "presence", f"'{phrase}': no item of the instruments records it")
            continue
        for p in _who(ctx, c.start, only_patient):
            series, what = view.series(p, None, codes)
            if not series:
                continue
            at = _at_visit(ctx, ca, cb, series)
            f = series.get(at) if at is not None else None
            if f is None:
                continue
            ok = (float(f.value) == 0) if absent else (float(f.value) > 0)
            if ok:
                n += 1
                v.facts.append(_assertion("presence", phrase, p, series, (at, at), [f], view))
            else:
                _fail(
                    v,
                    "presence",
                    f"'{phrase}' {'absent' if absent else 'present'} (patient {p}, visit {at}): "
                    f"{what} is rated {_num(f.value)}",
                )
    return n


# ---------------------------------------------------------------- comparisons

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


def _metric(view: FactsView, p: int, dom, items, visit: int | None, change: bool):
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


def _check_comparisons(ctx, view, only_patient, v) -> int:
    comp, sup = comparative_words()
    n = 0
    for m in literal_scan.finditer(COMPARATIVE_RE, ctx.text, ctx.low, ctx.s0, ctx.s1):
        if re.match(r"\s*[-+]?\d", ctx.text[m.end() : m.end() + 6]):
            continue  # "more than 2 points": a bound, judged with the number
        sign = comp[m.group(1).lower()]
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
            left += [
                c for c in ctx.cues if ctx.s0 <= c.start < ca and c.kind in ("visit", "ref_visit")
            ]
        region = ctx.text[m.start() : m.end()]
        is_change = bool(CHANGE_NOUN.search(region)) or bool(
            CHANGE_NOUN.search(ctx.text[ca : m.start()][-40:])
        )
        subjects = _subjects(ctx, ca, cb, m.start())
        if not right or not subjects:
            _fail(v, "comparison", f"'{m.group(0)}': cannot tell what is compared with what")
            continue
        r = right[0]
        if r.kind == "patient":
            lp = _who(ctx, m.start(), only_patient)
            pairs = [(lp[0] if lp else None, r.value, None, None)]
        else:
            lv = [c for c in left if c.kind in ("visit", "ref_visit")]
            p = _who(ctx, m.start(), only_patient)
            pairs = [(p[0] if p else None, p[0] if p else None, lv[-1] if lv else None, r)]
        if r.kind == "patient":
            lv = [c for c in left if c.kind in ("visit", "ref_visit")] or [
                c for c in ctx.cues if m.end() <= c.start < ctx.s1 and c.kind == "visit"
            ]
            pairs = [
                (pa, pb, lv[-1] if lv else None, lv[-1] if lv else None) for pa, pb, _x, _y in pairs
            ]
        dom, items, phrase = subjects[0]
        for pa, pb, va, vb in pairs:
            if pa is None or pb is None:
                _fail(v, "comparison", f"'{m.group(0)}': cannot tell which patient")
                continue
            sa, _ = view.series(pa, dom, items)
            sb, _ = view.series(pb, dom, items)
            if not sa or not sb:
                _fail(v, "comparison", f"'{m.group(0)}' ({phrase}): no values to compare")
                continue
            visa = _resolve_visit(va.value, ctx.text[va.start : va.end], sa) if va else None
            visb = _resolve_visit(vb.value, ctx.text[vb.start : vb.end], sb) if vb else None
            xa, fa = _metric(view, pa, dom, items, visa, is_change and va is None)
            xb, fb = _metric(view, pb, dom, items, visb, is_change and vb is None)
            if xa is None or xb is None:
                _fail(v, "comparison", f"'{m.group(0)}' ({phrase}): no values to compare")
                continue
            word = m.group(1).lower()
            if is_change and word in ("larger", "greater", "bigger", "more", "smaller", "less"):
                ok = (abs(xa) > abs(xb)) if sign > 0 else (abs(xa) < abs(xb))
            else:
                ok = xa > xb if sign > 0 else xa < xb
            if ok:
                n += 1
                v.facts += [_fv(f) for f in fa + fb]
            else:
                _fail(
                    v,
                    "comparison",
                    f"'{m.group(0)}' ({phrase}): the facts give {_num(xa)} against {_num(xb)}",
                )
    for m in literal_scan.finditer(SUPERLATIVE_RE, ctx.text, ctx.low, ctx.s0, ctx.s1):
        after = ctx.text[m.end() : m.end() + 60]
        if re.match(r"\s+(?:closely|recent|likely|often)\b", after, re.I):
            continue
        at_visit = re.match(
            r"\s+(?:at|on|in)\s+(?:the\s+)?(?:visit|baseline|latest|last|first|final)", after, re.I
        )
        if (
            not at_visit
            and not SCORE_NOUN.match(after)
            and not any(
                c.kind in ("domain", "item") and m.end() <= c.start < m.end() + 40 for c in ctx.cues
            )
        ):
            continue
        if re.search(r"\bslope|\bstable\b|per visit|per year", ctx.text[ctx.s0 : ctx.s1], re.I):
            continue  # slope rankings: the claim reader checks the slope and the rank
        sword = (m.group(1) or m.group(2)).lower()
        sign = sup.get(sword) or comp[sword]
        ca, cb = ctx.clause(m.start())
        subjects = _subjects(ctx, ca, cb, m.start())
        patients = _who(ctx, m.start(), only_patient)
        if not patients or len(view.patients) > 1 and not ctx.patients_at(m.start(), ctx.s0):
            later = [c for c in ctx.cues if c.start > m.start() and c.kind == "patient"]
            if later:
                patients = [later[0].value]
        if not subjects or not patients:
            _fail(v, "comparison", f"'{m.group(0)}': cannot tell what it ranks")
            continue
        dom, items, phrase = subjects[0]
        is_change = bool(CHANGE_NOUN.search(after[:30]))
        cues, _ = _visits_in(ctx, ca, cb)
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
            vals = {}
            for q in view.patients:
                sq, _ = view.series(q, dom, items)
                at = None
                if sq and generic:
                    at = _resolve_visit(
                        "latest" if "baseline" not in generic[-1].lower() else 1, generic[-1], sq
                    )
                elif sq and numbered:
                    at = numbered[-1]
                x, _ = _metric(view, q, dom, items, at, is_change)
                if x is not None:
                    vals[q] = x
            if p not in vals:
                _fail(v, "comparison", f"'{m.group(0)}' ({phrase}): patient {p} has no value")
                continue
            if is_change and sword in (
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
            ):
                key = {q: abs(x) for q, x in vals.items()}
            else:
                key = vals
            target = max(key.values()) if sign > 0 else min(key.values())
            ok = key[p] == target
            desc = f"patient {p}: {_num(vals[p])}; " + ", ".join(
                f"patient {q}: {_num(x)}" for q, x in sorted(vals.items()) if q != p
            )
        else:
            series, _ = view.series(p, dom, items)
            if not series:
                continue
            named = [_resolve_visit(vv, t, series) for k, vv, t in cues if k == "visit"]
            named = [x for x in named if x is not None]
            if named:
                vals_v = {x: float(f.value) for x, f in series.items()}
                target = max(vals_v.values()) if sign > 0 else min(vals_v.values())
                ok = vals_v.get(named[-1]) == target
                desc = ", ".join(f"visit {x}: {_num(y)}" for x, y in sorted(vals_v.items()))
            elif items and re.match(r"[\s\w-]{0,30}\bitems?\b", after, re.I):
                ok, desc = _top_item(view, p, items, series, sign)
            else:
                ok, desc = _top_domain(view, p, dom, items, is_change, sign)
        if ok:
            n += 1
        else:
            _fail(v, "comparison", f"'{m.group(0)}' ({phrase}): the facts give {desc}")
    return n


def _top_item(view: FactsView, p: int, items, series, sign: int) -> tuple[bool, str]:
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
                f"visit {visit}: {_num(x)} against {_num(max(others) if sign > 0 else min(others))}"
            )
    return (not bad), "; ".join(bad)


def _top_domain(
    view: FactsView, p: int, dom, items, is_change: bool, sign: int
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
    return vals[dom] == target, ", ".join(f"{d}: {_num(x)}" for d, x in vals.items())


def _named_visit_only(cues) -> bool:
    return any(k == "visit" for k, _, _ in cues)


# ---------------------------------------------------------------- periods


def _check_periods(ctx, view, only_patient, v) -> list[tuple[int, int]]:
    spans = []
    for m in literal_scan.finditer(PERIOD_RE, ctx.text, ctx.low, ctx.s0, ctx.s1):
        n_claim = int(m.group(1)) if m.group(1) else 1
        unit = m.group(2).lower().rstrip("s")
        ps = _who(ctx, m.start(), only_patient)
        if not ps:
            _fail(v, "date", f"'{m.group(0)}': cannot tell whose follow-up it measures")
            continue
        dates = sorted(view.dates.get(ps[0], {}).values())
        if len(dates) < 2:
            _fail(v, "date", f"'{m.group(0)}': patient {ps[0]} has one visit date")
            continue
        days = (dt.date.fromisoformat(dates[-1]) - dt.date.fromisoformat(dates[0])).days
        per = {"week": 7, "month": 30.44, "year": 365.25}[unit]
        actual = days / per
        if abs(actual - n_claim) <= 0.75 or (
            n_claim == 1 and m.group(1) is None and abs(actual - 1) <= 0.75
        ):
            spans.append((m.start(), m.end()))
        else:
            _fail(
                v,
                "date",
                f"'{m.group(0)}': patient {ps[0]}'s visits span {days} days "
                f"({dates[0]} to {dates[-1]}, about {actual:.1f} {unit}s)",
            )
    return spans


# ---------------------------------------------------------------- zero scores (issue 11 caveats)

ZERO_RE = re.compile(
    r"\bzero(?: on every item)? at (?:the (?:latest|last|most recent) (?:assessment|visit)"
    r"|(?P<every>every (?:assessment|visit)|all (?:assessments|visits)))\b"
    r"(?P<others>,? while (?:the )?other parts (?:were|did) not\b)?",
    re.I,
)
UPDRS_PARTS = ("nonmotor", "adl", "motor")


def _check_zero_latest(ctx, view, only_patient, v) -> int:
    """The facts text's zero caveats, each against the subject's series: "zero at the latest
    assessment" (the latest score is 0); "zero on every item at every assessment" (every score
    of the span is 0); "... while other parts were not" (another MDS-UPDRS part of the patient
    scored above 0)."""
    n = 0
    for m in literal_scan.finditer(ZERO_RE, ctx.text, ctx.low, ctx.s0, ctx.s1):
        if re.search(
            r"\b(?:parts?|items?|some|every)\b[^.;:]{0,20}$", ctx.text[ctx.s0 : m.start()], re.I
        ):
            continue  # "parts scored zero ...": not the subject's score
        ca, cb = ctx.clause(m.start())
        for p in _who(ctx, m.start(), only_patient):
            for dom, items, _phrase in _subjects(ctx, ca, cb, m.start())[:1]:
                series, what = view.series(p, dom, items)
                if not series:
                    continue
                last = max(series)
                nonzero = [(vis, f) for vis, f in sorted(series.items()) if float(f.value) != 0]
                if m.group("every") and nonzero:
                    vis, f = nonzero[0]
                    _fail(
                        v,
                        "number_words",
                        f"'{m.group(0)}' ({what}, patient {p}): {_num(f.value)} at visit {vis}",
                    )
                    continue
                if not m.group("every") and float(series[last].value) != 0:
                    _fail(
                        v,
                        "number_words",
                        f"'{m.group(0)}' ({what}, patient {p}): "
                        f"{_num(series[last].value)} at visit {last}",
                    )
                    continue
                n += 1
                said = m.group(0)[
                    : (m.start("others") if m.group("others") else m.end()) - m.start()
                ]
                shown = list(series.values()) if m.group("every") else [series[last]]
                v.facts.append(
                    _assertion("zero", said, p, series, (min(series), last), shown, view)
                )
                if m.group("others"):
                    part = dom or view.item_domain.get(min(items or ("",)), "")
                    others = [
                        (o, vis, f)
                        for o in UPDRS_PARTS
                        if o != part
                        for vis, f in sorted(view.scores.get((p, o), {}).items())
                        if float(f.value) != 0
                    ]
                    if part in UPDRS_PARTS and others:
                        n += 1
                        f = others[0][2]
                        said = m.group("others").strip(", ")
                        v.facts.append(_assertion("zero_others", said, p, {0: f}, None, [f], view))
                    else:
                        _fail(
                            v,
                            "number_words",
                            f"'{m.group('others').strip(', ')}' ({what}, "
                            f"patient {p}): no other MDS-UPDRS part scored above 0",
                        )
    return n
