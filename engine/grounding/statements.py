"""Statement-level grounding: a verdict for every sentence of a text.

Each sentence is
- **supported**: every clinical assertion in it maps to ledger facts (numbers through the claim
  reader of `claims.py`; words through the checks below), and it makes at least one;
- **neutral**: one of the listed safe forms (`lexicon/assertions.json`, e.g. the decision-support
  note, section headings);
- **unsupported**: any assertion fails, it states content the fact table cannot support
  (`lexicon/content.json`: medications, other diagnoses, demographics, causes, recommendations,
  lifestyle, people, institutions, prices), or it asserts nothing checkable and is not a safe form.

Word assertions checked against the ledger, each for the patient, domain or item and visit span it
refers to (scoping: the patient is the nearest patient cue before the word in the paragraph, else
the plan's only patient; the subject is the domain and item cues of the word's clause, else of its
sentence; the span is the clause's visits: "from A to B", "between A and B", "since A" (to the
latest), "at V" (from the previous visit to V), none = the first to the latest selected visit):
- direction words (improved, worsened, declined, stable, unchanged, fluctuating, peaked), bound to
  a change number beside them when there is one, else to the subject's change over the span
  (a decrease is an improvement; "stable" needs |change| below the domain's MCID, or 0 without one);
- severity words against the item's rating (MDS-UPDRS 0 normal ... 4 severe; PDQ-8 never ... always)
  or the domain's severity band (none exist for the MA-RAG 44-item scale: unsupported there);
- presence or absence of a symptom ("no hallucinations", "reports falls") against its item
  (absent = rated 0) at the clause's visit, else the latest;
- comparatives ("higher than patient 8", "lower at visit 3 than at visit 1") and superlatives
  ("the highest motor score", "the largest improvement") against the computed values;
- periods ("over 14 months") against the patient's first and last visit dates;
- numbers written as words are read as digits first (`number_words.py`), so counts of visits,
  ranks and values in words are checked like numbers.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from engine.grounding import literal_scan
from engine.grounding.claim import Claim
from engine.grounding.claim_report import allowed_patients, check_text, judged_paragraph
from engine.grounding.cues import Cue as _Cue
from engine.grounding.cues import find_cues
from engine.grounding.facts_view import FactsView, fact_dict
from engine.grounding.ledger_index import LedgerIndex
from engine.grounding.lexicon import assertions, content_hits, is_neutral
from engine.grounding.number_words import digitise
from engine.grounding.numbers import normalise
from engine.grounding.paragraphs import paragraphs
from engine.grounding.run_memo import cached
from engine.grounding.sentence_scope import SentenceCtx
from engine.grounding.sentence_verdict import SentenceVerdict, StatementReport
from engine.grounding.sentences import split_sentences
from engine.grounding.series_bounds import check_series_bounds
from engine.grounding.word_checks import check_periods, check_words
from engine.types import FactValue

__all__ = ["FactsView", "SentenceVerdict", "StatementReport", "check_statements"]


def _claim_facts(c: Claim) -> dict[str, Any]:
    """A checked number with the ledger values it matched (none for identifiers and lenient
    numbers without context)."""
    matched = list(c.matched)[:4] if c.role == "value" and c.status == "correct" else []
    return {
        "claim": c.text,
        "span": [c.start, c.end],
        "role": c.role,
        "kind": c.kind,
        "context": c.describe(),
        "values": [fact_dict(f) for f in matched],
    }


def check_statements(
    text: str,
    ledger: Sequence[FactValue] | LedgerIndex,
    plan_patients: Sequence[int] = (),
    *,
    masked_phrases: Sequence[str] = (),
) -> StatementReport:
    """Verdicts for every sentence of `text` (see the module docstring).

    `masked_phrases`: words of the run's own contexts (red-flag rule texts) that a sentence may
    quote without asserting them (e.g. "possible PD-MCI or dementia" after a red-flag item)."""
    idx = ledger if isinstance(ledger, LedgerIndex) else LedgerIndex(ledger)
    view = idx.view
    original = normalise(text)
    work = _homographs(digitise(original))
    rep = check_text(work, idx, list(plan_patients))
    only_patient = (
        plan_patients[0]
        if len(plan_patients) == 1
        else (view.patients[0] if len(view.patients) == 1 else None)
    )
    allowed = allowed_patients(idx, plan_patients)
    phrases = tuple(masked_phrases)
    out: list[SentenceVerdict] = []
    # each paragraph on its own (paragraphs.py), once per run: the work copy keeps every offset
    for pi, (p0, wpara) in enumerate(paragraphs(work)):
        opara = original[p0 : p0 + len(wpara)]
        part = cached(
            ("statements_paragraph", opara, wpara, idx, allowed, only_patient, phrases),
            lambda opara=opara, wpara=wpara: _paragraph_verdicts(
                opara, wpara, idx, allowed, only_patient, phrases
            ),
        )
        out.extend(_shifted_verdict(v, p0, pi) for v in part)
    return StatementReport(original, out, rep)


def _paragraph_verdicts(
    original: str,
    work: str,
    idx: LedgerIndex,
    allowed: frozenset[int],
    only_patient: int | None,
    masked_phrases: Sequence[str],
) -> tuple[SentenceVerdict, ...]:
    """The verdicts of one paragraph's sentences (paragraph-local spans): `original` as written,
    `work` the same paragraph with number words as digits."""
    view = idx.view
    rep_claims = judged_paragraph(work, idx, allowed).claims
    cues = find_cues(work)
    masked = _masked_spans(work, cues, masked_phrases)
    quoted = _masked_spans(work, [], masked_phrases)  # the contexts' own wording (red-flag whys)
    # a domain named inside a quoted rule ("drives quality of life") is not what a word is about;
    # nor an item named inside a parenthesised rule ("(orthostatic hypotension: falls, ...)")
    in_parens = [(a, b) for a, b in quoted if work.rfind("(", 0, a) > work.rfind(")", 0, a)]
    cues = [
        c
        for c in cues
        if not (c.kind == "domain" and any(a <= c.start < b for a, b in quoted))
        and not (c.kind == "item" and any(a <= c.start < b for a, b in in_parens))
    ]
    cues = _with_dated_visits(cues, rep_claims, idx)
    out: list[SentenceVerdict] = []
    in_sentence = _SpanSlicer(cues)
    claims_in = _SpanSlicer(rep_claims)
    wlow = work.lower() if work.isascii() else None
    for pi, s0, s1 in split_sentences(work):
        sent = original[s0:s1]
        if not sent.strip():
            continue
        v = SentenceVerdict(sent, (s0, s1), "supported", paragraph=pi)
        if is_neutral(sent):
            v.status = "neutral"
            out.append(v)
            continue
        ctx = SentenceCtx(work, s0, s1, pi, in_sentence(s0, s1), cues, wlow)
        claims = claims_in(s0, s1)
        asserted = 0
        period_spans = check_periods(ctx, view, only_patient, v)
        bounds = check_series_bounds(ctx, view, only_patient, v)
        period_spans = [*period_spans, *bounds.spans]
        for c in claims:
            if any(a <= c.start < b for a, b in period_spans):
                continue
            if c.supported:
                # a bare patient id names who the sentence is about; it asserts nothing by itself
                asserted += c.role != "patient"
                v.facts.append(_claim_facts(c))
            else:
                v.reasons.append(f"'{c.text}' ({c.describe()}): {c.reason or c.status}")
                v.categories.append("number" if c.role == "value" else c.role)
        asserted += len(period_spans) - len(bounds.spans) + bounds.held
        # visit order (temporal fidelity) is a property of the text's layout, not a falsehood:
        # it stays in the guard's number record and the metrics, not in the sentence verdicts
        for h in content_hits(work[s0:s1], within=work):
            if any(a <= h.start + s0 < b for a, b in masked):
                continue  # an item label or the contexts' own wording, not the writer's
            v.reasons.append(f"'{h.text}': {h.reason}")
            v.categories.append(h.category)
        for m in literal_scan.finditer(_ID_LIST_DECIMAL, work, wlow, s0, s1):
            v.reasons.append(f"'{m.group(1)}' in a list of patient ids is not a patient id")
            v.categories.append("patient")
        asserted += check_words(ctx, view, claims, only_patient, v)
        if not v.reasons and asserted == 0:
            v.reasons.append(
                "states nothing the facts support (no checked assertion, not a listed safe form)"
            )
            v.categories.append("no assertion")
        _negated_movement(sent, v)
        _not_english(sent, v)
        _change_size(sent, v)
        if v.reasons:
            v.status = "unsupported"
        out.append(v)
    return tuple(out)


#: a negated change of no direction ("did not go from 11 to 39", "never changed from 5"): the
#: numbers it holds are what it denies. Direction words ("did not worsen") are read, negation
#: included, by the direction checks; thresholds ("does not reach the MCID") are not a change
_MOVES = r"(?:go|went|gone|change|changed|move|moved)"
_NEGATED_MOVE = re.compile(
    rf"\b(?:(?:did|does|do|has|have|had|was|were)\s+not|didn't|doesn't|don't|hasn't|haven't|"
    rf"hadn't|never)\s+(?:\w+\s+)?{_MOVES}\b",
    re.I,
)


#: function words of the languages a clinician's text may be written in besides English; the
#: checker reads English only, so a sentence written in another is unverifiable, never supported
def _wordset(text: str) -> frozenset[str]:
    return frozenset(text.split())


_FOREIGN_WORDS = _wordset(
    "der das dem und oder von vom zum zur bei auf mit nach ist wurde nicht "
    "el los las del de la y en por para fue una es "
    "le les du et est dans avec pour sur une pas "
    "il gli della di che sono "
    "het een niet voor"
)
_ENGLISH_WORDS = _wordset(
    "the a an and or of to from at in on with by for per was were is are has had have not no "
    "patient patients visit visits score scores year years trend change"
)
_WORD = re.compile(r"[^\W\d_]+")


#: "increased by 8 points, from 10 (at visit 1) to 18": the size stated against its two ends
#: the first end may be dated ("from 13 on 11 January 2020 to 23 on 8 May 2021"); the size may
#: be written without "by" when "points" follows it ("fell 4 points, from 15 to 11")
_END_AT = (
    r"(?:\s+(?:at|on)\s+(?:visit|baseline)\s*\d*"
    r"|\s+on\s+(?:\d{1,2}\s+[A-Z][a-z]+|[A-Z][a-z]+\s+\d{1,2},?)\s+\d{4})?"
)
_CHANGE_BY = re.compile(
    r"\b(?:increased|decreased|rose|fell|dropped|declined|improved|worsened|changed|went (?:up|down))"
    r"(?:\s+by\s+(\d+(?:\.\d+)?)(?:\s+points?)?|\s+(\d+(?:\.\d+)?)\s+points?)"
    r"(?:\s+between\s+consecutive\s+assessments)?,?\s+from\s+(\d+(?:\.\d+)?)"
    rf"{_END_AT}\s+to\s+(\d+(?:\.\d+)?)",
    re.I,
)


def _with_dated_visits(cues: list[_Cue], claims: Sequence[Claim], idx: LedgerIndex) -> list[_Cue]:
    """The cues and a visit cue for each day that dates the number before it ("eased from 12 at
    baseline to 10 on 8 May 2021": the word checks' span ends at that day's visit)."""
    extra = []
    for c in claims:
        if c.role == "date" and c.dates_value and c.date:
            dv = idx.visit_of_date(c.patient, c.date)
            if dv is not None:
                extra.append(_Cue(c.start, c.end, "visit", dv))
    return sorted([*cues, *extra], key=lambda c: c.start) if extra else cues


def _change_size(sentence: str, v: SentenceVerdict) -> None:
    """A change whose stated size is not the distance between its stated ends fails, whatever
    the facts say (the sentence contradicts itself)."""
    for m in _CHANGE_BY.finditer(sentence):
        said = m.group(1) or m.group(2)
        size, a, b = float(said), float(m.group(3)), float(m.group(4))
        if abs(abs(b - a) - size) > 1e-9:
            v.reasons.append(
                f"'{m.group()}': a change of {said} does not take {m.group(3)} to "
                f"{m.group(4)} (that is {abs(b - a):g})"
            )
            v.categories.append("number")


def _not_english(sentence: str, v: SentenceVerdict) -> None:
    """A sentence whose function words are mostly another language's fails as unverifiable."""
    words = [w.lower() for w in _WORD.findall(sentence)]
    foreign = sum(w in _FOREIGN_WORDS and w not in _ENGLISH_WORDS for w in words)
    english = sum(w in _ENGLISH_WORDS for w in words)
    if foreign >= 3 and foreign > 2 * english:
        v.reasons.append(
            "written in another language: the checker reads English only (unverifiable)"
        )
        v.categories.append("language")


def _negated_movement(sentence: str, v: SentenceVerdict) -> None:
    """A sentence that negates a change and holds numbers fails: contradicted when the facts
    support the change it denies, unverifiable otherwise (the checker reads no negated claim as
    true)."""
    m = _NEGATED_MOVE.search(sentence)
    if m is None or not any(ch.isdigit() for ch in sentence):
        return
    read = [
        f
        for f in v.facts
        if f.get("assertion") in ("direction", "series") and _overlaps(f.get("word", ""), m.group())
    ]
    if read:
        # the direction checks read the negated word ("did not change") and found it true, or
        # the series checks a bound on it ("never moved more than 2 points from one ...")
        return
    denied = [f for f in v.facts if f.get("role") == "value" and f.get("values")]
    if denied:
        v.reasons.append(
            f"'{m.group()}' denies a change the facts support: the sentence is contradicted"
        )
        v.categories.append("negation")
    else:
        v.reasons.append(f"'{m.group()}': a negated change is not verified (unverifiable)")
        v.categories.append("negation")


def _shifted_verdict(v: SentenceVerdict, d: int, paragraph: int) -> SentenceVerdict:
    """A copy of a paragraph's verdict at offset `d` of its text (its own lists: the whole-text
    checks of verify.py add reasons to a copy, never to the run's shared paragraph verdict)."""
    facts = [
        {**f, "span": [f["span"][0] + d, f["span"][1] + d]} if "claim" in f else dict(f)
        for f in v.facts
    ]
    return SentenceVerdict(
        v.text,
        (v.span[0] + d, v.span[1] + d),
        v.status,
        list(v.reasons),
        facts,
        list(v.categories),
        paragraph,
    )


#: "Patients 3, 8, and 3.25": a decimal in a list of patient ids
_ID_LIST_DECIMAL = re.compile(
    r"\b(?:patients|participants|subjects|proj(?:ect)?[ _-]?ids)\s+#?\d+"
    r"(?:\s*(?:,|and|&|or)\s*#?\d+(?![.]\d))*\s*(?:,|and|&|or)\s*(?:and\s+)?#?(\d+\.\d+)",
    re.I,
)


class _SpanSlicer:
    """The items (cues or claims, each with a `start`) that start in [a, b), in their order:
    by bisection when the items are in text order (they are: cues are sorted, claims are read
    left to right), else by a scan."""

    def __init__(self, items: Sequence[Any]):
        self.items = list(items)
        self.starts = [x.start for x in self.items]
        self.ordered = self.starts == sorted(self.starts)

    def __call__(self, a: int, b: int) -> list[Any]:
        if not self.ordered:
            return [x for x in self.items if a <= x.start < b]
        return self.items[bisect_left(self.starts, a) : bisect_left(self.starts, b)]


def _homographs(text: str) -> str:
    for pat, word in assertions()["verb_homographs"].items():
        if pat.startswith("_"):
            continue
        text = re.sub(pat, lambda m, w=word: w.ljust(len(m.group(0))), text, flags=re.I)
    return text


def _masked_spans(text: str, cues: list[_Cue], phrases: Sequence[str]) -> list[tuple[int, int]]:
    spans = [(c.start, c.end) for c in cues if c.kind in ("item", "domain")]
    low = text.lower() if text.isascii() else None
    for p in [*phrases, *assertions()["facts_text_phrases"]["phrases"]]:
        if not p or (low is not None and p.isascii() and p.lower() not in low):
            continue  # an ASCII phrase absent from the lower-cased ASCII text cannot match
        for m in _phrase_re(p).finditer(text):
            spans.append((m.start(), m.end()))
    return spans


@lru_cache(maxsize=1024)
def _phrase_re(phrase: str) -> re.Pattern[str]:
    return re.compile(re.escape(phrase), re.I)


def _overlaps(word: str, said: str) -> bool:
    return bool(word) and (word.lower() in said.lower() or said.lower() in word.lower())
