"""Whether a symptom or a score is there at all: presence and absence words against an item's
rating ("no hallucinations" = rated 0), and the facts text's zero caveats ("zero at the latest
assessment", "zero on every item at every assessment", "... while other parts were not")
against the subject's series. Both read a value as zero or above zero, not its size, so they
live apart from the severity and direction checks."""

from __future__ import annotations

import re

from engine.clinical.concepts import same_concept
from engine.grounding import literal_scan
from engine.grounding.claim import Claim
from engine.grounding.facts_view import FactsView, num_text
from engine.grounding.lexicon import presence_patterns
from engine.grounding.sentence_scope import SentenceCtx, at_visit, patients_for, subjects_of
from engine.grounding.sentence_verdict import SentenceVerdict, assertion_record


def check_presence(
    ctx: SentenceCtx,
    view: FactsView,
    claims: list[Claim],
    only_patient: int | None,
    v: SentenceVerdict,
) -> int:
    """Each symptom the sentence says is present or absent ("no hallucinations", "reports
    falls"), against its item at the clause's visit (else the latest; every visit of the item
    under "at any assessment", "throughout"): absent = rated 0. An item the phrase names in
    another instrument's words is the facts' item of the same concept (engine.clinical.concepts);
    a symptom the facts hold no rating of at that visit is unverifiable, never supported.
    Returns how many held (failures go into `v`)."""
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
            v.fail("presence", f"'{phrase}': no item of the instruments records it")
            continue
        every = _EVERY_VISIT.search(ctx.text, c.end, cb) is not None
        for p in patients_for(ctx, c.start, only_patient):
            n += _check_one_presence(ctx, view, p, (codes, phrase), (ca, cb), absent, every, v)
    for m in literal_scan.finditer(_NONE_OF_ITEMS, ctx.text, ctx.low, ctx.s0, ctx.s1):
        n += _check_no_items(ctx, view, m, only_patient, v)
    return n


#: "endorsed none of the eight PDQ-8 items": every item of the questionnaire rated 0 (its total 0)
_NONE_OF_ITEMS = re.compile(
    r"\b(?:endorsed|reported|scored\s+on|rated|marked|answered)\s+none\s+of\s+(?:the\s+|its\s+|"
    r"their\s+|his\s+|her\s+)?(?:\d+\s+)?(?:(?P<pdq>PDQ-?8)\s+)?(?:items|questions)\b",
    re.I,
)


def _check_no_items(
    ctx: SentenceCtx,
    view: FactsView,
    m: re.Match[str],
    only_patient: int | None,
    v: SentenceVerdict,
) -> int:
    """1 when the PDQ-8 total is 0 at the clause's visit (else the latest) for each patient; the
    items of another instrument or part are not read (unverifiable)."""
    said = m.group(0)
    patients = patients_for(ctx, m.start(), only_patient)
    if not m.group("pdq") or not patients:
        v.fail("presence", f"'{said}': cannot tell whose items of which questionnaire it means")
        return 0
    ca, cb = ctx.clause(m.start())
    for p in patients:
        series = view.scores.get((p, "qol"), {})
        at = at_visit(ctx, ca, cb, series)
        f = series.get(at) if at is not None else None
        if f is None or float(f.value) != 0:
            got = "no PDQ-8 total" if f is None else f"a PDQ-8 total of {num_text(f.value)}"
            v.fail("presence", f"'{said}' (patient {p}, visit {at}): {got}")
            return 0
        v.facts.append(assertion_record("presence", said, p, series, (at, at), [f]))
    return 1


#: "not recorded at any MDS-UPDRS assessment", "absent throughout", "at every visit": the claim
#: holds at each visit of the item, not one
_EVERY_VISIT = re.compile(
    r"\b(?:(?:at|in|on|across|during|for)\s+(?:any|every|all|each)(?:\s+of)?"
    r"(?:\s+(?:the|its|his|her|their))?(?:\s+[\w-]+){0,2}?\s+"
    r"(?:assessments?|visits?|questionnaires?|sessions?|examinations?)\b|throughout\b)",
    re.I,
)


def _item_series(
    view: FactsView, p: int, codes: frozenset[str], phrase: str
) -> list[tuple[dict, str]]:
    """The patient's series of the items a phrase names: the cue's own codes the facts hold,
    else the codes of the same concept in another instrument's words."""
    known = [k for k in sorted(codes) if view.items.get((p, k))]
    if not known:
        known = [k for k in sorted(same_concept(phrase)) if view.items.get((p, k))]
    return [(view.items[(p, k)], f"item {k}") for k in known]


def _check_one_presence(
    ctx: SentenceCtx,
    view: FactsView,
    p: int,
    item: tuple[frozenset[str], str],
    clause: tuple[int, int],
    absent: bool,
    every: bool,
    v: SentenceVerdict,
) -> int:
    """1 when the item is absent (every item of the concept rated 0) or present (one rated
    above 0) as said, at the clause's visit or, with `every`, at each visit of its series."""
    codes, phrase = item
    said = "absent" if absent else "present"
    found = _item_series(view, p, codes, phrase)
    if not found:
        v.fail("presence", f"'{phrase}' {said} (patient {p}): the facts hold no rating of it")
        return 0
    shown = []
    for series, what in found:
        at = at_visit(ctx, clause[0], clause[1], series)
        visits = sorted(series) if every else [at] if at in series else []
        if not visits:
            v.fail(
                "presence", f"'{phrase}' {said} (patient {p}): {what} has no rating at visit {at}"
            )
            return 0
        rated = [(x, series[x]) for x in visits]
        shown.append((series, what, rated))
    nonzero = [(what, x, f) for _s, what, rated in shown for x, f in rated if float(f.value) != 0]
    if absent != bool(nonzero):
        series, _what, rated = shown[0]
        span = (rated[0][0], rated[-1][0])
        v.facts.append(
            assertion_record("presence", phrase, p, series, span, [f for _x, f in rated])
        )
        return 1
    what, x, f = nonzero[0] if nonzero else (shown[0][1], shown[0][2][-1][0], shown[0][2][-1][1])
    v.fail(
        "presence",
        f"'{phrase}' {said} (patient {p}, visit {x}): {what} is rated {num_text(f.value)}",
    )
    return 0


#: the zero caveats of the facts text
ZERO_RE = re.compile(
    r"\bzero(?: on every item)? at (?:the (?:latest|last|most recent) (?:assessment|visit)"
    r"|(?P<every>every (?:assessment|visit)|all (?:assessments|visits)))\b"
    r"(?P<others>,? while (?:the )?other parts (?:were|did) not\b)?",
    re.I,
)
UPDRS_PARTS = ("nonmotor", "adl", "motor")


def check_zero_caveats(
    ctx: SentenceCtx, view: FactsView, only_patient: int | None, v: SentenceVerdict
) -> int:
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
        for p in patients_for(ctx, m.start(), only_patient):
            for dom, items, _phrase in subjects_of(ctx, ca, cb, m.start())[:1]:
                series, what = view.series(p, dom, items)
                if not series:
                    continue
                last = max(series)
                nonzero = [(vis, f) for vis, f in sorted(series.items()) if float(f.value) != 0]
                if m.group("every") and nonzero:
                    vis, f = nonzero[0]
                    v.fail(
                        "number_words",
                        f"'{m.group(0)}' ({what}, patient {p}): {num_text(f.value)} at visit {vis}",
                    )
                    continue
                if not m.group("every") and float(series[last].value) != 0:
                    v.fail(
                        "number_words",
                        f"'{m.group(0)}' ({what}, patient {p}): "
                        f"{num_text(series[last].value)} at visit {last}",
                    )
                    continue
                n += 1
                said = m.group(0)[
                    : (m.start("others") if m.group("others") else m.end()) - m.start()
                ]
                shown = list(series.values()) if m.group("every") else [series[last]]
                v.facts.append(
                    assertion_record("zero", said, p, series, (min(series), last), shown)
                )
                if m.group("others"):
                    n += _check_other_parts(m, view, p, dom or _item_domain(view, items), what, v)
    return n


def _item_domain(view: FactsView, items: frozenset[str] | None) -> str:
    """The domain of the first (sorted) item code, "" when it has none."""
    return view.item_domain.get(min(items or ("",)), "")


def _check_other_parts(
    m: re.Match[str], view: FactsView, p: int, part: str, what: str, v: SentenceVerdict
) -> int:
    """ "... while other parts were not": another MDS-UPDRS part than `part` of patient `p`
    scored above 0 at some visit; 1 when one did."""
    others = [
        (o, vis, f)
        for o in UPDRS_PARTS
        if o != part
        for vis, f in sorted(view.scores.get((p, o), {}).items())
        if float(f.value) != 0
    ]
    if part in UPDRS_PARTS and others:
        f = others[0][2]
        said = m.group("others").strip(", ")
        v.facts.append(assertion_record("zero_others", said, p, {0: f}, None, [f]))
        return 1
    v.fail(
        "number_words",
        f"'{m.group('others').strip(', ')}' ({what}, "
        f"patient {p}): no other MDS-UPDRS part scored above 0",
    )
    return 0
