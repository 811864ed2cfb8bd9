"""Grounding hot paths: the per-run memo and the literal pre-tests change no result.

The pre-tests skip a regex only when it cannot match (a literal word it needs is absent from an
ASCII text); these tests compare against the full scans on texts that contain lexicon and item
words in several cases, and check the memo's scope (one run) and sharing rules."""

from __future__ import annotations

import pytest

from engine.grounding import cues as cues_mod
from engine.grounding import lexicon
from engine.grounding.lexicon import ContentHit, content_hits, content_patterns
from engine.grounding.run_memo import cached, memoised, run_memo
from engine.grounding.vocabulary import item_vocabulary

TEXTS = [
    "Patient 5's motor score rose from 20 at visit 1 to 31 at visit 6 (+11 points), above the MCID.",
    "He was started on levodopa 100 mg by his neurologist at the university hospital; cost $40.",
    "Falls (NP2WALK) and freezing of gait worsened; rigidity of the neck improved due to exercise.",
    "FREEZING OF GAIT, Tremor At Rest and speech were unchanged; we recommend a DaTscan.",
    "Patient 3 is 67 years old, a retired nurse with mild cognitive impairment (PD-MCI).",
    "Postural stability declined; arising from chair and finger-tapping scores fluctuated.",
    "The fee was 30 usd at the clinic. Dr. Smith, Pharmacare Ltd, advised physical activity.",
    "Non-ASCII text: the café patient’s gait – worse; Levodopa ſtarted; KINETIC tremor.",
    "She meets the clinical criteria for PD-MCI at disease stage 2; a 71-year-old on 250mg; 5 usd.",
    # a long facts-text paragraph: many item names, repeated first words, hyphens, line breaks
    "At visit 4, the latest assessment, items rated moderate or worse. Motor: facial expression "
    "severe (4); global spontaneity of movement (body bradykinesia) severe (4); kinetic tremor, "
    "left hand severe (4); posture severe (4); rest tremor amplitude, left arm severe (4); rest "
    "tremor amplitude, right arm severe (4); toe tapping, left foot severe (4); toe-tapping "
    "right foot (3); finger tapping, right hand moderate (3); hand movements, left\nhand moderate "
    "(3). ADL: eating tasks moderate (3); handwriting moderate (3). Red flag (current): walking "
    "and balance at or above 2 at visits 1, 2 and 4 (falls and injury); freezing of gait; "
    "Freezing Of Gait; rest-tremor; tremor tremor; rigidity of the neck, rigidity - neck.",
]


def _full_hits(text: str) -> tuple[ContentHit, ...]:
    out = [
        ContentHit(cat, m.start(), m.end(), m.group(), reason)
        for cat, (pat, reason) in content_patterns().items()
        for m in pat.finditer(text)
    ]
    out.sort(key=lambda h: h.start)
    return tuple(out)


@pytest.mark.parametrize("text", TEXTS + [t.upper() for t in TEXTS] + [t.title() for t in TEXTS])
def test_content_hits_same_as_the_full_scan(text):
    assert lexicon._all_content_hits(text) == _full_hits(text)


def test_content_hits_found_at_all():
    assert {h.category for t in TEXTS for h in content_hits(t)} >= {
        "medication",
        "people",
        "institution",
        "price",
        "cause",
    }


def test_item_cues_same_without_the_pre_test(monkeypatch):
    texts = TEXTS + [t.upper() for t in TEXTS]
    with_pre = [cues_mod.find_cues(t) for t in texts]
    n = len(item_vocabulary())
    monkeypatch.setattr(cues_mod, "item_literals", lambda: tuple(() for _ in range(n)))
    without = [cues_mod.find_cues(t) for t in texts]
    assert with_pre == without
    assert sum(c.kind == "item" for cs in with_pre for c in cs) >= 6


def test_memo_lives_for_one_run_block():
    calls: list[str] = []

    @memoised
    def f(text: str) -> tuple[str, ...]:
        calls.append(text)
        return (text,)

    f("a")
    f("a")
    assert calls == ["a", "a"]  # outside a run: no memo
    with run_memo():
        f("a")
        f("a")
        with run_memo():  # nested: the outer memo
            f("a")
        f("b")
        assert cached("k", lambda: 1) == 1
        assert cached("k", lambda: 2) == 1
    assert calls == ["a", "a", "a", "b"]
    with run_memo():  # a new run computes again
        f("a")
        assert cached("k", lambda: 3) == 3
    assert calls == ["a", "a", "a", "b", "a"]


def test_item_matches_at_first_word_positions_equal_the_full_scan():
    """cues._item_matches (the pattern tried only where its first word occurs) yields what
    pattern.finditer yields, for every item pattern, on every text and its case variants."""
    from engine.grounding.vocabulary import item_literals

    texts = TEXTS + [t.upper() for t in TEXTS] + [t.title() for t in TEXTS]
    n = 0
    for text in texts:
        low = text.lower() if text.isascii() else None
        for (pat, _c, _d), words in zip(item_vocabulary(), item_literals(), strict=True):
            fast = [m.span() for m in cues_mod._item_matches(pat, text, low, words)]
            assert fast == [m.span() for m in pat.finditer(text)], (pat.pattern, text[:60])
            n += len(fast)
    assert n >= 40


def test_date_pre_tests_change_no_token(monkeypatch):
    """The date scans skipped for want of '/', '.' or a month name find nothing anyway."""
    from engine.grounding import numbers

    texts = TEXTS + [
        "Seen on 2021-03-15, 15/03/2021, 03/2021, 15.03.2021, March 15, 2021 and 15 March 2021.",
        "Sept. 2020 to Jan 2021; 2020/11; visits in may 2021 (May 2021); 1 Feb. 2022 at 09:30.",
        "Motor 12.5 (+2.5) on 2021-02-27; 40.62 SI; 3rd visit; 25 %; 1999 and 2031.",
    ]
    with_pre = [numbers._extract_numbers(t) for t in texts]
    nones = tuple(None for _ in numbers._DATE_NEEDS)
    monkeypatch.setattr(numbers, "_DATE_NEEDS", nones)
    assert [numbers._extract_numbers(t) for t in texts] == with_pre
    assert sum(t.kind == "date" for ts in with_pre for t in ts) >= 12


def test_not_numbers_possessive_letters_match_the_backtracking_pattern():
    """NOT_NUMBERS reads a letters-then-digits word with a possessive `[A-Za-z]++` (no
    backtracking: a letter given back could never be the digit that must follow)."""
    import random
    import re

    from engine.grounding import numbers

    old = re.compile(numbers.NOT_NUMBERS.pattern.replace("[A-Za-z]++", "[A-Za-z]+"), re.I)
    rng = random.Random(7)
    alphabet = "abcXYZ019 -_.vVſK\u212a"
    texts = TEXTS + ["".join(rng.choice(alphabet) for _ in range(80)) for _ in range(300)]
    texts += ["NP3GAIT 3, PDQ-8 39, MDS-UPDRS v2 V12 part 3 Q4_1 SmolLM2-135M abc123def x9"]
    for t in texts:
        assert [m.span() for m in numbers.NOT_NUMBERS.finditer(t)] == [
            m.span() for m in old.finditer(t)
        ], t


KIND_TEXTS = TEXTS + [
    "Motor trend: -0.8 per visit, -5.86 per year; slope of 1.2 points a visit; 3 visits, 4 patients.",
    "At or above MCID 3.25; cut-off of 12; threshold: 5; >= 3; Hoehn and Yahr stage 2; 40.62 SI.",
    "The average motor score was 21.4, the highest 38 and the lowest 4; ranked 2nd; rank 1: patient "
    "7, 18. Motor increased by 3, fell 2, a decrease of 4, went up 5; summary index 28.12.",
]


def test_content_hits_within_the_whole_text_equal_the_sentence_scan():
    """A sentence's content words, tried only for the alternatives present in its whole text,
    are the sentence's own full scan."""
    from engine.grounding.cues import sentences

    texts = TEXTS + [t.upper() for t in TEXTS] + [t.title() for t in TEXTS]
    whole = "\n\n".join(texts)
    n = 0
    with run_memo():
        for text in [*texts, whole]:
            for _p, a, b in sentences(text):
                sent = text[a:b]
                got = tuple(content_hits(sent, within=text))
                assert got == _full_hits(sent), sent[:60]
                n += len(got)
    assert n >= 20


def test_screening_pre_tests_change_no_finding(monkeypatch):
    """Screening rules skipped for want of a drug, surgery or diagnosis word find nothing."""
    from engine.grounding import screening
    from engine.types import Plan

    texts = KIND_TEXTS + [
        "We should start levodopa 100 mg per day; the dose of pramipexole must be increased.",
        "Findings consistent with Parkinson's disease dementia; has PD-MCI; suffers from psychosis.",
        "Deep brain stimulation (DBS) or focused ultrasound; Alzheimer's disease; L-dopa, MAO-B "
        "inhibitors and COMT inhibitors could be switched. Patient 99 and patients 3, 4 or 12.",
        "Non-ASCII: the médication should be stopped; ſtroke; KELVIN K; dose.",
    ]
    texts += [t.upper() for t in texts]
    plan = Plan((3, 4), "comparison")
    with_pre = [screening.screen(t, plan) for t in texts]
    monkeypatch.setattr(screening, "_RULE_NEEDS", tuple(None for _ in screening.RULES))
    assert [screening.screen(t, plan) for t in texts] == with_pre
    rules = {f["rule"] for fs in with_pre for f in fs}
    assert rules == {"prescriptive_treatment", "unsupported_diagnosis", "out_of_plan_patient"}


def _plain_kind_for(tok, text: str, s_start: int, prev_end: int, next_start: int):
    """kind_for as plain ordered loops of `search` (no pre-test, no literal scan)."""
    from engine.grounding.vocabulary import KIND_AFTER, KIND_BEFORE

    ranked = text[max(s_start, tok.start - 40) : tok.start]
    if cues_mod._RANKED_BEFORE.search(ranked):
        return "ranked", ""
    window = text[tok.end : min(next_start, tok.end + 60)]
    cut = cues_mod._AFTER_END.search(window)
    after = window[: cut.start()] if cut else window
    before = text[max(s_start, prev_end, tok.start - 50) : tok.start]
    for pat, k in KIND_AFTER:
        if pat.search(after):
            return k, after
    for pat, k in KIND_BEFORE:
        if pat.search(before):
            return k, after
    by_token = {"percent": "percent", "ordinal": "rank"}
    if tok.kind in by_token:
        return by_token[tok.kind], after
    return ("change" if tok.signed else None), after


def test_kind_pre_tests_change_no_kind():
    """kind_for (the ordered loops behind one alternation pre-test) gives the plain ordered
    loops' kinds, on the test texts, their case variants and facts-text sentences of every kind
    cue."""
    from engine.grounding.numbers import extract_numbers

    extra = [
        "3 visits, 4 patients, 2 UPDRS assessments, 5 of 6 items; 1 item; 2 study sessions.",
        "Patient 3, visit 2 (2021-03-04): motor 38 (moderate), -9 from baseline (improved; "
        "at or above MCID 3.25). 40.62 SI at visit 4; summary index 50.00; 12 pts a visit.",
        "Motor trend: +2.1 per visit, +13.92 per year; 7/visit; 3 /yr; rank 2: patient 7, 18.",
    ]
    texts = KIND_TEXTS + extra
    n = 0
    kinds = set()
    for text in texts + [t.upper() for t in texts] + [t.lower() for t in texts]:
        toks = extract_numbers(text)
        for i, tok in enumerate(toks):
            prev_end = toks[i - 1].end if i else 0
            nxt = toks[i + 1].start if i + 1 < len(toks) else len(text)
            got = cues_mod.kind_for(tok, text, 0, prev_end, nxt)
            assert got == _plain_kind_for(tok, text, 0, prev_end, nxt), (text[:50], tok)
            kinds.add(got[0])
            n += 1
    assert n > 200
    assert kinds >= {"slope", "slope_year", "threshold", "mean", "max", "change", "count_visits"}
    assert kinds >= {"count_patients", "count_items", "pdq8_si", "ranked", "rank", "min"}


def test_neutral_alternation_equals_any_form():
    """is_neutral's one alternation matches exactly where one of the listed forms does."""
    import re

    from engine.grounding.cues import sentences
    from engine.grounding.lexicon import is_neutral, neutral_patterns

    texts = TEXTS + KIND_TEXTS
    texts += [
        "Decision support only: this summary restates recorded assessment scores.",
        "Motor examination (Part III):",
        "**Summary**",
        "Red-flag items: none.",
    ]
    sents = [t[a:b] for t in texts for _p, a, b in sentences(t)]
    sents += [s.upper() for s in sents]
    for s in sents:
        norm = re.sub(r"\s+", " ", s.strip().strip("*").strip())
        assert is_neutral(s) == any(p.match(norm) for p in neutral_patterns()), s
    assert any(is_neutral(s) for s in sents)


def test_span_test_equals_the_scan():
    import random

    from engine.grounding.coverage import _SpanTest

    rng = random.Random(3)
    for _ in range(200):
        spans, pos = [], 0
        for _ in range(rng.randint(0, 8)):
            a = pos + rng.randint(0, 5)
            b = a + rng.randint(0, 9)
            spans.append((a, b))
            pos = b
        if rng.random() < 0.3:
            rng.shuffle(spans)  # out of order: the scan
        test = _SpanTest(spans)
        for p in range(-2, pos + 3):
            assert test(p) == any(a <= p < b for a, b in spans), (spans, p)


# ---- paragraphs: a reading is local to a paragraph (docs/grounding.md, scoping rule 7)

PARA_TEXT = (
    "Patient 6, visit 1 (2021-03-13, baseline): motor 26 (mild). Patient 6, visit 2 (2021-05-09): "
    "motor 23 (mild), -3 from baseline (stable; below MCID 3.25).\n\n"
    "Items up two points or more by visit 4. Motor: postural stability increased by 3 since "
    "visit 1, now moderate.\n\n"
    "Motor: patient 6 went from 26 at visit 1 (2021-03-13) to 21 at visit 4 (2021-08-29), -5 "
    "from baseline (improved; at or above MCID 3.25)."
)


def test_cues_and_numbers_are_the_paragraphs_shifted():
    from engine.grounding.numbers import extract_numbers
    from engine.grounding.paragraphs import paragraphs

    text = PARA_TEXT + "\n\n" + TEXTS[-1]
    cues, nums = cues_mod.find_cues(text), extract_numbers(text)
    want_cues, want_nums = [], []
    for p0, para in paragraphs(text):
        want_cues += [(c.start + p0, c.end + p0, c.kind, c.value) for c in cues_mod.find_cues(para)]
        want_nums += [(t.start + p0, t.end + p0, t.value, t.kind) for t in extract_numbers(para)]
    assert [(c.start, c.end, c.kind, c.value) for c in cues] == want_cues
    assert [(t.start, t.end, t.value, t.kind) for t in nums] == want_nums
    assert len(paragraphs(text)) == 4


def test_nothing_carries_across_a_blank_line():
    """A look-back window stops at the paragraph: 'compared with' at the end of one paragraph
    does not make the next paragraph's opening visit a reference visit; a date is not read
    across a blank line."""
    one = cues_mod.find_cues("Scores compared with visit 3: motor 20.")
    two = cues_mod.find_cues("Scores compared with\n\nvisit 3: motor 20.")
    assert [c.kind for c in one if c.value == 3] == ["ref_visit"]
    assert [c.kind for c in two if c.value == 3] == ["visit"]
    from engine.grounding.numbers import extract_numbers

    assert [t.kind for t in extract_numbers("seen March 15, 2021")] == ["date"]
    assert "date" not in [t.kind for t in extract_numbers("seen March\n\n15, 2021")][:1]


def test_claim_report_is_the_same_with_and_without_the_run_memo(monkeypatch):
    """Within a run each distinct paragraph is read and judged once; the reports of the texts
    that share it equal those computed without the memo."""
    from engine.grounding import claim_report
    from engine.grounding.ledger_index import LedgerIndex
    from engine.types import FactValue

    ledger = [
        FactValue("score", 26, 6, 1, "motor"),
        FactValue("score", 23, 6, 2, "motor"),
        FactValue("score", 21, 6, 4, "motor"),
        FactValue("cumulative", -3, 6, 2, "motor"),
        FactValue("cumulative", -5, 6, 4, "motor"),
        FactValue("threshold", 3.25, None, None, "motor"),
        FactValue("visit", 1, 6, 1),
        FactValue("visit", 2, 6, 2),
        FactValue("visit", 4, 6, 4),
    ]
    idx = LedgerIndex(ledger)
    a = PARA_TEXT
    b = PARA_TEXT.split("\n\n")[2] + "\n\n" + PARA_TEXT.split("\n\n")[0] + "\n\nNo change."

    def flat(rep):
        return (
            [(c.start, c.end, c.paragraph, c.sentence, c.status, c.describe()) for c in rep.claims],
            rep.order_violations,
            rep.temporal_fidelity_strict,
        )

    plain = [flat(claim_report.check_text(t, idx, [6])) for t in (a, b)]
    calls: list[str] = []
    real = claim_report._judged_paragraph

    def spy(para, idx, allowed):
        calls.append(para)
        return real(para, idx, allowed)

    monkeypatch.setattr(claim_report, "_judged_paragraph", spy)
    with run_memo():
        memo = [flat(claim_report.check_text(t, idx, [6])) for t in (a, b)]
    assert memo == plain
    assert len(calls) == len(set(calls)) == 4  # 3 paragraphs of a, 1 new one of b
    assert any(c[4] == "correct" for c in plain[1][0])


def _scan_patterns():
    from engine.grounding import vocabulary as voc
    from engine.grounding.lexicon import content_patterns, direction_patterns

    pats = [p for p, _d in voc.DOMAIN_RE]
    pats += [voc.PATIENT_RE, voc.PATIENTS_RE, voc.VISITS_RE, voc.BASELINE_RE, voc.LATEST_RE]
    pats += [voc.DIRECTION_RE, voc.ORD_VISIT_RE, cues_mod._PREVIOUS_VISIT]
    pats += [p for p, _r in content_patterns().values()] + [p for p, _l in direction_patterns()]
    from engine.grounding import number_words, numbers, screening

    pats += [*numbers.DATE_PATTERNS, numbers._MONTH_WORD, screening.PATIENT_CUE]
    pats += [number_words.CARDINAL_RE, number_words.ORDINAL_RE]
    from engine.grounding import (
        comparison_checks,
        presence_checks,
        severity_checks,
        statements,
        word_checks,
    )

    pats += [severity_checks.SEVERITY_RE]
    pats += [comparison_checks.COMPARATIVE_RE, comparison_checks.SUPERLATIVE_RE]
    pats += [word_checks.PERIOD_RE, presence_checks.ZERO_RE, statements._ID_LIST_DECIMAL]
    pats += [cues_mod._ANY_KIND_BEFORE, cues_mod._ANY_KIND_AFTER]
    pats += [p for p, _k in voc.KIND_AFTER + voc.KIND_BEFORE]
    pats += [p for _r, _m, p in screening.RULES]
    return pats


def test_literal_scan_equals_finditer():
    """literal_scan.finditer (the pattern tried only where an alternative's literal prefix
    occurs) yields what pattern.finditer yields, for the reader's patterns, on the test texts,
    their case variants and random strings made of the prefixes, spaces, digits and marks."""
    import random

    from engine.grounding import literal_scan

    pats = _scan_patterns()
    assert sum(literal_scan.first_literals(p) is not None for p in pats) >= 12
    pieces = sorted({w for p in pats for w in (literal_scan.first_literals(p) or ())})
    pieces += [" ", "  ", "s", "es", "-", ".", ",", "(", ")", "3", "12", "visit 2", "\n", "_", "x"]
    pieces += ["2021", "1999", "-03-", "/", "15", " 2020", "mg", "should ", " be started", "'s"]
    pieces += ["twenty", "-one", " hundred", " and ", "third", "ranked ", "the ", " than ", "zero"]
    rng = random.Random(11)
    texts = TEXTS + KIND_TEXTS + [PARA_TEXT]
    texts += [t.upper() for t in texts] + [t.title() for t in texts]
    texts += ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 40))) for _ in range(300)]
    n = 0
    for text in texts:
        for p in pats:
            got = [m.span() for m in literal_scan.finditer(p, text)]
            assert got == [m.span() for m in p.finditer(text)], (p.pattern[:60], text[:80])
            first = literal_scan.search(p, text)
            assert (first and first.span()) == (p.search(text) and p.search(text).span())
            a = rng.randint(0, len(text))
            b = rng.randint(a, len(text))
            window = [m.span() for m in literal_scan.finditer(p, text, None, a, b)]
            assert window == [m.span() for m in p.finditer(text, a, b)], (p.pattern[:60], a, b)
            with run_memo():  # the text's starts once per run, each window by bisection
                for a2, b2 in ((a, b), (0, a), (b, len(text)), (a, b)):
                    got2 = [m.span() for m in literal_scan.finditer(p, text, None, a2, b2)]
                    assert got2 == [m.span() for m in p.finditer(text, a2, b2)], (a2, b2)
            n += len(got)
    assert n > 500


def test_statement_verdicts_are_the_same_with_and_without_the_run_memo():
    """Sentence verdicts are composed from per-paragraph verdicts (once per run); a text that
    repeats a paragraph gets its own copies, equal to those computed without the memo, and a
    reason added to one text's verdict (verify.py's whole-text checks do) stays in that text."""
    from engine.grounding.ledger_index import LedgerIndex
    from engine.grounding.statements import check_statements
    from engine.types import FactValue

    ledger = [
        FactValue("score", 26, 6, 1, "motor", date="2021-03-13"),
        FactValue("score", 23, 6, 2, "motor", date="2021-05-09"),
        FactValue("score", 21, 6, 4, "motor", date="2021-08-29"),
        FactValue("cumulative", -3, 6, 2, "motor"),
        FactValue("cumulative", -5, 6, 4, "motor"),
        FactValue("threshold", 3.25, None, None, "motor"),
        FactValue("visit", 1, 6, 1),
        FactValue("visit", 2, 6, 2),
        FactValue("visit", 4, 6, 4),
    ]
    idx = LedgerIndex(ledger)
    paras = PARA_TEXT.split("\n\n")
    a = PARA_TEXT
    b = paras[2] + "\n\nPatient 6 takes levodopa.\n\n" + paras[0]

    def flat(rep):
        return [(v.span, v.status, v.reasons, v.facts, v.paragraph) for v in rep.sentences]

    plain = [flat(check_statements(t, idx, [6])) for t in (a, b)]
    with run_memo():
        ra = check_statements(a, idx, [6])
        ra.sentences[0].reasons.append("added by a whole-text check")
        rb = check_statements(b, idx, [6])
    assert flat(rb) == plain[1]
    assert flat(ra)[1:] == plain[0][1:]
    assert any(v[1] == "unsupported" for v in plain[1]) and any(v[3] for v in plain[1])


def test_ledger_index_tokens_and_visits_equal_the_per_value_loop():
    """The index's tokens and visits, built from distinct values, equal the per-value loop."""
    import random

    from engine.grounding.ledger_index import LedgerIndex
    from engine.grounding.numbers import canonical
    from engine.types import FactValue

    rng = random.Random(5)
    kinds = ["score", "item", "delta", "visit", "date", "threshold", "slope"]
    ledger = []
    for _ in range(400):
        kind = rng.choice(kinds)
        patient = rng.choice([None, 1, 2, 3, 44])
        visit = rng.choice([None, 1, 2, 3, 7])
        value = rng.choice([0, 1, 2.5, -3, 3.25, 0.125, 14, 2021, 7.0])
        date = rng.choice([None, "2021-03-13", "2022-11-02", "2021-03"])
        ledger.append(FactValue(kind, value, patient, visit, "motor", date=date))
    idx = LedgerIndex(ledger)
    nums: set[float] = set()
    visits: dict = {}
    for f in ledger:
        v = float(f.value)
        if f.kind != "date":
            nums.add(v)
            if not v.is_integer():
                nums.update(round(v, d) for d in (0, 1, 2))
        if f.patient is not None:
            nums.add(float(f.patient))
        if f.visit is not None:
            nums.add(float(f.visit))
            visits.setdefault(f.patient, set()).add(int(f.visit))
            visits.setdefault(None, set()).add(int(f.visit))
        if f.kind == "visit" and f.patient is not None:
            visits.setdefault(f.patient, set()).add(int(f.value))
            visits.setdefault(None, set()).add(int(f.value))
        if f.date:
            nums.update(float(p) for p in f.date.split("-") if p.isdigit())
    assert idx.tokens == {canonical(x) for x in nums}
    assert idx.visits == visits
    dates: dict = {}
    shared: set = set()
    for f in ledger:  # the per-value loop the index's distinct-triple loop replaced
        if f.date:
            for key in (f.patient, None):
                seen = dates.setdefault(key, {})
                if (key, f.date) in shared:
                    continue
                old = seen.get(f.date)
                if old is not None and f.visit is not None and old != f.visit:
                    shared.add((key, f.date))
                    seen[f.date] = None
                else:
                    seen[f.date] = f.visit if f.visit is not None else old
    assert idx.dates == dates
    assert any(v is None for d in dates.values() for v in d.values())  # a shared day occurs


def test_fact_value_make_is_the_same_value():
    import dataclasses
    import random

    import pytest

    from engine.types import FactValue

    rng = random.Random(9)
    for _ in range(200):
        args = (
            rng.choice(["score", "item", "date"]),
            rng.choice([0, 1.5, -2]),
            rng.choice([None, 3]),
            rng.choice([None, 1, 2]),
            rng.choice([None, "motor"]),
            rng.choice([None, "NP3GAIT"]),
            rng.choice([None, "2021-03-13"]),
        )
        kw = {"label": rng.choice(["", "x"]), "tolerance": rng.choice([0.0, 0.005])}
        a, b = FactValue(*args, **kw), FactValue.make(*args, **kw)
        assert a == b and hash(a) == hash(b) and repr(a) == repr(b)
        assert dataclasses.asdict(a) == dataclasses.asdict(b)
    with pytest.raises(dataclasses.FrozenInstanceError):
        b.value = 1  # type: ignore[misc]


def test_item_words_found_by_runs_equal_the_substring_test():
    """The item words of a text, found run by run (cached per run of word characters), are
    exactly the words that occur in it as substrings."""
    words = cues_mod._item_words()
    texts = TEXTS + KIND_TEXTS + [PARA_TEXT]
    texts += [t.upper() for t in texts] + [t.replace(" ", "") for t in texts]
    texts += ["np3gait;walking_prob.1(mobility)/lip/jaw,bed,pdq8_6", "tremortremor rest-tremor"]
    for text in texts:
        low = text.lower()
        if text.isascii():
            assert cues_mod._present_item_words(low) == {w for w in words if w in low}, text[:60]


def test_present_content_prefixes_by_letter_runs_equal_the_substring_test():
    from engine.grounding.lexicon import _content_parts, _present_parts

    texts = TEXTS + KIND_TEXTS + [PARA_TEXT, "l-dopa; Dr. X, aged 70; msd2 trial drug; h&y 3"]
    texts += ["It cost $40, or 30 usd, 5USD, 7 eur and 2 gbp.", "Paid 5usd; 3eur."]
    texts += [t.upper() for t in texts]
    n = 0
    for text in texts:
        if not text.isascii():
            continue
        low = text.lower()
        want = {
            cat: tuple(i for i, ns in enumerate(needles) if any(n in low for n in ns))
            for cat, (_parts, needles) in _content_parts().items()
        }
        assert _present_parts(text) == want, text[:60]
        n += sum(len(v) for v in want.values())
    assert n > 100


def test_price_alternatives_are_pre_tested_by_any_of_their_literals():
    """The price alternatives without a single required literal ("[$...]\\s?\\d",
    "\\d\\s?(?:usd|eur|gbp)") are tried only where "$" or one of the currency words occurs (an
    ASCII text); their hits are the full scan's, and a facts sentence skips the category."""
    from engine.grounding.lexicon import _content_parts
    from engine.grounding.literal_scan import any_literals

    needles = _content_parts()["price"][1]
    assert ("$", "\u00a3", "\u20ac") in needles and ("eur", "gbp", "usd") in needles
    assert all(n != ("",) for _p, ns in _content_parts().values() for n in ns)
    assert any_literals(r"\d(?:mg|)x") == () and any_literals(r"[a-c]x") == ()
    assert any_literals(r"[^$]x") == ()
    texts = ["It cost $40, or 30 usd, 5USD, 7 eur and 2 gbp.", "Paid 5usd; 3eur.", "5 \u20ac"]
    texts += ["Motor 38 (moderate), -9 from baseline (improved; at or above MCID 3.25)."]
    for text in texts + [t.upper() for t in texts]:
        assert lexicon._all_content_hits(text) == _full_hits(text), text
    assert not lexicon._present_parts(texts[-1].lower())["price"]


def test_may_match_is_false_only_when_no_pattern_matches():
    import random

    from engine.grounding import literal_scan

    group = cues_mod._DOMAIN_PATTERNS
    needle = literal_scan.group_needle(group)
    rng = random.Random(4)
    words = ["motor", "Part", "UPDRS", "non", "QoL", "pdq", "total", "visit", "x", " ", "(", "3"]
    texts = TEXTS + [
        "".join(rng.choice(words) for _ in range(rng.randint(1, 12))) for _ in range(300)
    ]
    seen_false = 0
    for text in texts:
        low = text.lower() if text.isascii() else None
        if not literal_scan.may_match(needle, text, low):
            seen_false += 1
            assert not any(p.search(text) for p in group), text
    assert seen_false > 20


def test_ordinal_visits_and_patients_after_their_group_pre_tests():
    cues = cues_mod.find_cues(
        "At the third visit and the 2nd Session, patient 7; Patients 3 and 4."
    )
    assert [(c.kind, c.value) for c in cues if c.kind in ("visit", "patient", "patients")] == [
        ("visit", 3),
        ("visit", 2),
        ("patient", 7),
        ("patients", [3, 4]),
    ]
    assert not [c for c in cues_mod.find_cues("At the third time, no one.") if c.kind == "visit"]


def test_paragraph_runs_equal_the_per_character_pattern():
    """PARAGRAPH takes runs of non-line-break characters whole; its matches are those of the
    per-character form it replaced, on random texts of line breaks, spaces and words."""
    import random
    import re

    from engine.grounding.paragraphs import PARAGRAPH

    per_char = re.compile(r"(?:[^\n]|\n(?!\s*\n))+")
    rng = random.Random(5)
    pieces = ["a", "bc", " ", "\n", "\n\n", " \n", "\t", "\n \n", "x y.", "\r", "\x0b", "\n\t\n"]
    texts = [PARA_TEXT, *TEXTS, "\n\nA.\n\n\nB\nC\n \nD\n"]
    texts += ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 30))) for _ in range(3000)]
    for t in texts:
        assert [m.span() for m in PARAGRAPH.finditer(t)] == [m.span() for m in per_char.finditer(t)]


def test_ordinal_visit_needle_holds_wherever_an_ordinal_visit_matches():
    import random

    from engine.grounding.vocabulary import ORD_VISIT_RE

    rng = random.Random(9)
    words = ["1st", "2ND", "3rd", "4th", "21st", "first", "Second", "THIRD", "tenth", "ninth"]
    words += ["visit", "Session", "assessment", "visits", " ", "  ", "\n", "the", "x", "-", "."]
    texts = ["".join(rng.choice(words) for _ in range(rng.randint(1, 12))) for _ in range(4000)]
    hits = 0
    for t in texts + KIND_TEXTS:
        if ORD_VISIT_RE.search(t):
            hits += 1
            assert cues_mod._ORDINAL_VISIT_NEEDLE.search(t.lower()), t
    assert hits > 100


def test_kind_alternations_lowered_equal_the_case_insensitive_search():
    """On an ASCII window the kind alternations are searched without IGNORECASE in the
    lower-cased window: the same verdict as the case-insensitive search, on windows cut from the
    test texts in three cases and on random strings of the alternations' words."""
    import random

    from engine.grounding import literal_scan

    pairs = [
        (cues_mod._ANY_KIND_BEFORE, cues_mod._ANY_KIND_BEFORE_LOW),
        (cues_mod._ANY_KIND_AFTER, cues_mod._ANY_KIND_AFTER_LOW),
    ]
    words = sorted({w for p, _low in pairs for w in (literal_scan.first_literals(p) or ())})
    words += ["SI", "Si", "MDS-UPDRS ", "PDQ-8 ", "visits", "Patients", "items", "of 5 ", "per "]
    words += [" ", "  ", ".", ";", ":", "3", "12", "-", "\u2265", "x", "Year", "VISIT", "\n"]
    rng = random.Random(13)
    texts = KIND_TEXTS + [t.upper() for t in KIND_TEXTS] + [t.title() for t in KIND_TEXTS]
    windows = [t[a : a + n] for t in texts for a in range(0, len(t), 7) for n in (12, 30, 55)]
    windows += ["".join(rng.choice(words) for _ in range(rng.randint(1, 8))) for _ in range(3000)]
    hits = 0
    for w in windows:
        for pat, low in pairs:
            want = pat.search(w) is not None
            assert cues_mod._any_kind(pat, low, w) == want, (pat.pattern[:40], w)
            hits += want
    assert hits > 300


def test_lowered_patterns_match_the_same_spans_in_the_lower_cased_text():
    """literal_scan.lowered: the not-a-number names (PDQ-8, MDS-UPDRS, L6, v2, Part 3) and the
    reference words before a visit give the case-insensitive pattern's spans on ASCII texts in
    three cases and on random strings of their words; an upper-case escape is refused."""
    import random
    import re

    from engine.grounding import literal_scan, numbers
    from engine.grounding.vocabulary import REF_BEFORE_RE

    pats = [numbers.NOT_NUMBERS, REF_BEFORE_RE, cues_mod._ANY_KIND_BEFORE, cues_mod._ANY_KIND_AFTER]
    words = ["PDQ-8", "pdq 39", "MDS-UPDRS", "all-MiniLM-L6-v2", "SmolLM2-135M", "MiniLM", "Q4_1"]
    words += ["Part 3", "part  2", "V2", "v12", "NP3GAIT", "abc1x", "from ", "since the ", "vs. "]
    words += ["compared with ", "Relative To ", "than at ", "between ", "over ", " ", "3", "-"]
    rng = random.Random(17)
    texts = TEXTS + KIND_TEXTS + [PARA_TEXT]
    texts += ["".join(rng.choice(words) for _ in range(rng.randint(1, 10))) for _ in range(2000)]
    texts = [t for t in texts + [t.upper() for t in texts] + [t.title() for t in texts]]
    n = 0
    for pat in pats:
        low = literal_scan.lowered(pat)
        for t in texts:
            if not t.isascii():
                continue
            want = [m.span() for m in pat.finditer(t)]
            assert [m.span() for m in low.finditer(t.lower())] == want, (pat.pattern[:40], t)
            n += len(want)
    assert n > 1000
    with pytest.raises(ValueError):
        literal_scan.lowered(re.compile(r"\bA\S+", re.I))
