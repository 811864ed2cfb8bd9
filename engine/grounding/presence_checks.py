"""Whether a symptom or a score is there at all: presence and absence words against an item's
rating ("no hallucinations" = rated 0), and the facts text's zero caveats ("zero at the latest
assessment", "zero on every item at every assessment", "... while other parts were not")
against the subject's series. Both read a value as zero or above zero, not its size, so they
live apart from the severity and direction checks."""

from __future__ import annotations

import re

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
    falls"), against its item at the clause's visit (else the latest): absent = rated 0. Returns
    how many held (failures go into `v`)."""
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
        for p in patients_for(ctx, c.start, only_patient):
            series, what = view.series(p, None, codes)
            if not series:
                continue
            at = at_visit(ctx, ca, cb, series)
            f = series.get(at) if at is not None else None
            if f is None:
                continue
            ok = (float(f.value) == 0) if absent else (float(f.value) > 0)
            if ok:
                n += 1
                v.facts.append(assertion_record("presence", phrase, p, series, (at, at), [f]))
            else:
                v.fail(
                    "presence",
                    f"'{phrase}' {'absent' if absent else 'present'} (patient {p}, visit {at}): "
                    f"{what} is rated {num_text(f.value)}",
                )
    return n


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
