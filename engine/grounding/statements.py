"""Statement-level grounding (issue 12): a verdict for every sentence of a text.

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

import datetime as dt
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.grounding.claim import Claim
from engine.grounding.claim_report import ClaimReport, check_text
from engine.grounding.cues import Cue as _Cue
from engine.grounding.cues import find_cues
from engine.grounding.ledger_index import LedgerIndex
from engine.grounding.lexicon import (
    assertions,
    comparative_words,
    content_hits,
    direction_patterns,
    is_neutral,
    presence_patterns,
    severity_words,
)
from engine.grounding.number_words import digitise
from engine.grounding.numbers import normalise
from engine.grounding.sentences import split_sentences
from engine.types import FactValue

CHANGE_KINDS = ("delta", "cumulative", "change", "pair", "since")
DOMAINS = ("motor", "adl", "nonmotor", "qol")
CLAUSE_SPLIT = re.compile(r"[;,]|\s(?:while|whereas|but|although|though)\s|:\s", re.I)
NEGATION = re.compile(r"\b(?:not|no|never|neither|nor|without|none)\b[^.;,]{0,14}$", re.I)
ALL_DOMAINS = re.compile(
    r"\b(?:all|every|each|both)\s+(?:four\s+|4\s+|three\s+|3\s+)?domains?\b|\bacross (?:the )?domains\b|\bacross the board\b",
    re.I,
)
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
RED_FLAG_WORDS = re.compile(r"red[- ]flag", re.I)


@dataclass
class SentenceVerdict:
    text: str
    span: tuple[int, int]
    status: str  # supported | neutral | unsupported
    reasons: list[str] = field(default_factory=list)
    facts: list[dict[str, Any]] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)  # which checks failed (for eval / tests)
    paragraph: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "span": list(self.span),
            "status": self.status,
            "reasons": self.reasons,
            "facts": self.facts,
        }


@dataclass
class StatementReport:
    text: str
    sentences: list[SentenceVerdict]
    claims: ClaimReport

    @property
    def unsupported(self) -> list[SentenceVerdict]:
        return [s for s in self.sentences if s.status == "unsupported"]

    @property
    def passed(self) -> bool:
        return not self.unsupported

    @property
    def unsupported_rate(self) -> float:
        n = len(self.sentences)
        return len(self.unsupported) / n if n else 0.0


# ---------------------------------------------------------------- facts view


class FactsView:
    """Series per (patient, domain) and (patient, item), MCIDs, severity bands and dates,
    read once from the ledger (every number here is a ledger value)."""

    def __init__(self, ledger: Sequence[FactValue]):
        self.scores: dict[tuple[int, str], dict[int, FactValue]] = {}
        self.items: dict[tuple[int, str], dict[int, FactValue]] = {}
        self.item_domain: dict[str, str] = {}
        self.mcid: dict[str, dict[str, float]] = {}
        self.bands: dict[str, list[tuple[str, float | None, float | None]]] = {}
        self.dates: dict[int, dict[int, str]] = {}
        bounds: dict[tuple[str, str], list[float]] = {}
        for f in ledger:
            if f.kind == "score" and f.patient is not None and f.visit is not None and f.domain:
                self.scores.setdefault((f.patient, f.domain), {})[int(f.visit)] = f
            elif f.kind == "item" and f.patient is not None and f.visit is not None and f.item:
                self.items.setdefault((f.patient, f.item), {})[int(f.visit)] = f
                if f.domain:
                    self.item_domain[f.item] = f.domain
            elif f.kind == "threshold" and f.domain and f.item:
                if f.item.startswith("mcid_"):
                    self.mcid.setdefault(f.domain, {})[f.item[5:]] = float(f.value)
                elif f.item.startswith("severity_"):
                    bounds.setdefault((f.domain, f.item[9:]), []).append(float(f.value))
            if f.kind == "visit" and f.patient is not None and f.date and f.visit is not None:
                self.dates.setdefault(f.patient, {})[int(f.visit)] = f.date
        for (dom, level), vals in bounds.items():
            self.bands.setdefault(dom, []).append((level, min(vals), max(vals)))
        self.patients = sorted({p for p, _ in self.scores})

    def series(self, patient: int, domain: str | None, items: frozenset[str] | None):
        """(visit -> FactValue, label) of an item (the first one the ledger knows) or a domain."""
        if items:
            for code in sorted(items):
                s = self.items.get((patient, code))
                if s:
                    return s, f"item {code}"
            return None, ""
        if domain:
            s = self.scores.get((patient, domain))
            return (s, domain) if s else (None, "")
        return None, ""

    def label(self, domain: str | None, change: float) -> str:
        m = self.mcid.get(domain or "")
        if not m or "worsening" not in m or "improvement" not in m:
            return "worsened" if change > 0 else "improved" if change < 0 else "unchanged"
        if change >= m["worsening"]:
            return "worsened"
        if change <= m["improvement"]:
            return "improved"
        return "stable"

    def band(self, domain: str, value: float) -> str | None:
        for level, lo, hi in self.bands.get(domain, []):
            # bands are stored by their finite bounds; the open top band has lo == hi
            if lo == hi and value >= lo or lo <= value <= hi:
                return level
        return None


def _claim_facts(c: Claim, idx: LedgerIndex) -> dict[str, Any]:
    """A checked number with the ledger values it matched (none for identifiers and lenient
    numbers without context)."""
    matched = list(c.matched)[:4] if c.role == "value" and c.status == "correct" else []
    return {
        "claim": c.text,
        "span": [c.start, c.end],
        "role": c.role,
        "kind": c.kind,
        "context": c.describe(),
        "values": [_fv(f) for f in matched],
    }


def _assertion(kind, word, patient, series, span, facts, view) -> dict[str, Any]:
    """A verified word assertion with the ledger values it matched."""
    first = next(iter(series.values()))
    item = first.item if first.kind == "item" else None
    return {
        "assertion": kind,
        "word": word,
        "patient": patient,
        "domain": first.domain,
        "item": item,
        "span": list(span) if span else None,
        "values": [_fv(f) for f in facts],
    }


def _fv(f: FactValue) -> dict[str, Any]:
    return {
        "kind": f.kind,
        "value": f.value,
        "patient": f.patient,
        "visit": f.visit,
        "domain": f.domain,
        "item": f.item,
        "label": f.label,
    }


# ---------------------------------------------------------------- the checker


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
    view = FactsView(idx.ledger)
    original = normalise(text)
    work = _homographs(digitise(original))
    rep = check_text(work, idx, list(plan_patients))
    cues = find_cues(work)
    only_patient = (
        plan_patients[0]
        if len(plan_patients) == 1
        else (view.patients[0] if len(view.patients) == 1 else None)
    )
    masked = _masked_spans(work, cues, masked_phrases)
    out: list[SentenceVerdict] = []
    for pi, s0, s1 in split_sentences(work):
        sent = original[s0:s1]
        if not sent.strip():
            continue
        v = SentenceVerdict(sent, (s0, s1), "supported", paragraph=pi)
        if is_neutral(sent):
            v.status = "neutral"
            out.append(v)
            continue
        ctx = _SentenceCtx(work, s0, s1, pi, [c for c in cues if s0 <= c.start < s1], cues)
        claims = [c for c in rep.claims if s0 <= c.start < s1]
        asserted = 0
        period_spans = _check_periods(ctx, view, only_patient, v)
        for c in claims:
            if any(a <= c.start < b for a, b in period_spans):
                continue
            if c.supported:
                # a bare patient id names who the sentence is about; it asserts nothing by itself
                asserted += c.role != "patient"
                v.facts.append(_claim_facts(c, idx))
            else:
                v.reasons.append(f"'{c.text}' ({c.describe()}): {c.reason or c.status}")
                v.categories.append("number" if c.role == "value" else c.role)
        asserted += len(period_spans)
        # visit order (temporal fidelity) is a property of the text's layout, not a falsehood:
        # it stays in the guard's number record and the metrics, not in the sentence verdicts
        for h in content_hits(work[s0:s1], [(a - s0, b - s0) for a, b in masked]):
            v.reasons.append(f"'{h.text}': {h.reason}")
            v.categories.append(h.category)
        asserted += _check_words(ctx, view, claims, only_patient, v)
        if not v.reasons and asserted == 0:
            v.reasons.append(
                "states nothing the facts support (no checked assertion, not a listed safe form)"
            )
            v.categories.append("no assertion")
        if v.reasons:
            v.status = "unsupported"
        out.append(v)
    return StatementReport(original, out, rep)


def _homographs(text: str) -> str:
    for pat, word in assertions()["verb_homographs"].items():
        if pat.startswith("_"):
            continue
        text = re.sub(pat, lambda m, w=word: w.ljust(len(m.group(0))), text, flags=re.I)
    return text


def _masked_spans(text: str, cues: list[_Cue], phrases: Sequence[str]) -> list[tuple[int, int]]:
    spans = [(c.start, c.end) for c in cues if c.kind in ("item", "domain")]
    for p in phrases:
        if p:
            for m in re.finditer(re.escape(p), text, re.I):
                spans.append((m.start(), m.end()))
    return spans


@dataclass
class _SentenceCtx:
    text: str
    s0: int
    s1: int
    paragraph: int
    cues: list[_Cue]
    all_cues: list[_Cue]

    def clause(self, pos: int) -> tuple[int, int]:
        a, b = self.s0, self.s1
        for m in CLAUSE_SPLIT.finditer(self.text, self.s0, self.s1):
            # a comma inside "from 12 at visit 1 to 9" or a list of domains does not end a clause
            if m.end() <= pos:
                a = m.end()
            elif m.start() >= pos:
                b = m.start()
                break
        return a, b

    def patients_at(self, pos: int, sent_start_para: int) -> list[int]:
        """The patient(s) a word at `pos` is about: the nearest patient cue before it in the
        paragraph."""
        best: _Cue | None = None
        for c in self.all_cues:
            if c.start >= pos:
                break
            if c.kind in ("patient", "patients") and c.start >= sent_start_para:
                best = c
        if best is None:
            return []
        return list(best.value) if best.kind == "patients" else [best.value]


def _para_start(text: str, pos: int) -> int:
    i = text.rfind("\n\n", 0, pos)
    return 0 if i < 0 else i


def _subjects(
    ctx: _SentenceCtx, a: int, b: int, pos: int
) -> list[tuple[str | None, frozenset[str] | None, str]]:
    """(domain, items, phrase) cues in [a, b); the clause first, then the sentence."""

    def subj(c: _Cue) -> tuple[str | None, frozenset[str] | None, str]:
        if c.kind == "domain":
            return (c.value, None, ctx.text[c.start : c.end])
        codes, _doms, phrase = c.value
        return (None, codes, phrase)

    found = [subj(c) for c in ctx.cues if a <= c.start < b and c.kind in ("domain", "item")]
    if found:
        return found
    if ALL_DOMAINS.search(ctx.text, ctx.s0, ctx.s1):
        return [(d, None, d) for d in DOMAINS]
    before = [c for c in ctx.cues if c.start < pos and c.kind in ("domain", "item")]
    if before:
        return [subj(before[-1])]
    after = [c for c in ctx.cues if c.start >= pos and c.kind in ("domain", "item")]
    return [subj(after[0])] if after else []


def _visits_in(ctx: _SentenceCtx, a: int, b: int) -> tuple[list[tuple[str, Any, str]], bool]:
    """Visit cues in [a, b) as (kind, value, text); whether a 'latest' cue is among them."""
    out = []
    for c in ctx.cues:
        if a <= c.start < b and c.kind in ("visit", "ref_visit"):
            out.append((c.kind, c.value, ctx.text[c.start : c.end]))
    return out, any(v == "latest" for _, v, _ in out)


def _resolve_visit(value: Any, cue_text: str, series: Mapping[int, Any]) -> int | None:
    visits = sorted(series)
    if not visits:
        return None
    if value == "latest":
        return visits[-1]
    if value == "previous":
        return None
    if re.search(r"baseline", cue_text, re.I):
        return visits[0]
    if isinstance(value, list):
        return None
    return int(value) if value is not None else None


def _span(ctx: _SentenceCtx, a: int, b: int, series: Mapping[int, Any]) -> tuple[int, int] | None:
    visits = sorted(series)
    if not visits:
        return None
    cues, _ = _visits_in(ctx, a, b)
    if not cues:
        cues, _ = _visits_in(ctx, ctx.s0, ctx.s1)
    refs = [_resolve_visit(v, t, series) for k, v, t in cues if k == "ref_visit"]
    ats: list[int | None] = []
    for k, v, t in cues:
        if k == "visit":
            if isinstance(v, list):
                ats += [int(x) for x in v]
            else:
                ats.append(_resolve_visit(v, t, series))
    refs = [r for r in refs if r is not None]
    ats = [x for x in ats if x is not None]
    if refs and ats:
        return refs[0], ats[-1]
    if refs:
        return refs[0], visits[-1]
    if len(ats) >= 2:
        return ats[0], ats[-1]
    if len(ats) == 1:
        prev = [x for x in visits if x < ats[0]]
        return (prev[-1] if prev else ats[0]), ats[0]
    return visits[0], visits[-1]


def _at_visit(ctx: _SentenceCtx, a: int, b: int, series: Mapping[int, Any]) -> int | None:
    cues, _ = _visits_in(ctx, a, b)
    if not cues:
        cues, _ = _visits_in(ctx, ctx.s0, ctx.s1)
    for k, v, t in reversed(cues):
        if k == "visit" and not isinstance(v, list):
            r = _resolve_visit(v, t, series)
            if r is not None:
                return r
    return max(series) if series else None


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
    return n


def _who(ctx: _SentenceCtx, pos: int, only_patient: int | None) -> list[int]:
    ps = ctx.patients_at(pos, _para_start(ctx.text, ctx.s0))
    if ps:
        return ps
    return [only_patient] if only_patient is not None else []


def _fail(v: SentenceVerdict, category: str, reason: str) -> None:
    v.reasons.append(reason)
    v.categories.append(category)


# ---------------------------------------------------------------- direction


def _direction_words(ctx: _SentenceCtx) -> list[tuple[int, int, str, str]]:
    taken: list[tuple[int, int]] = []
    out = []
    for pat, label in direction_patterns():
        for m in pat.finditer(ctx.text, ctx.s0, ctx.s1):
            if any(a < m.end() and m.start() < b for a, b in taken):
                continue
            word = m.group(0)
            after = ctx.text[m.end() : m.end() + 30]
            if label in ("improved", "worsened") and re.match(
                r"\s*(?:\w+\s+){0,3}?than\b", after, re.I
            ):
                continue  # a comparative ("higher than"): checked as a comparison
            if re.match(r"(?:lower|higher|better|worse)$", word, re.I) and not re.search(
                r"\b(?:is|was|were|are|became|got|slightly|much|somewhat|scores?)\s+$",
                ctx.text[max(ctx.s0, m.start() - 20) : m.start()],
                re.I,
            ):
                continue  # "higher items", "lower scores": descriptive, not a change
            if label == "peaked" and re.match(r"\s*(?:at|in)\b", after) is None:
                pass
            if re.match(r"declin", word, re.I) and re.search(
                r"\bscores?\s*(?:has|have|had)?\s*$",
                ctx.text[max(ctx.s0, m.start() - 20) : m.start()],
                re.I,
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


def _num(x: float) -> str:
    x = float(x)
    return str(int(x)) if x.is_integer() else f"{x:g}"


# ---------------------------------------------------------------- severity

SEVERITY_RE = re.compile(
    r"(?<![\w-])(normal|slight(?:ly)?|minimal|mild(?:ly)?|moderate(?:ly)?|severe(?:ly)?|marked(?:ly)?|"
    r"never|occasionally|sometimes|often|always)(?![\w-])",
    re.I,
)
SEVERITY_SKIP_AFTER = re.compile(
    r"^\s*(?:cut-?offs?|thresholds?|levels?|or (?:worse|above|higher|more)|range|bands?|"
    r"improv\w*|worsen\w*|chang\w*|increas\w*|decreas\w*|ris\w*|declin\w*|drop\w*|reduc\w*|"
    r"fluctuat\w*|deteriorat\w*|progress\w*|lower|higher|better|worse|fell|rose|above|below)\b",
    re.I,
)


def _check_severity(ctx, view, claims, only_patient, v) -> int:
    updrs_words, pdq_words, dom_words = severity_words()
    n = 0
    for m in SEVERITY_RE.finditer(ctx.text, ctx.s0, ctx.s1):
        word = m.group(1).lower()
        after = ctx.text[m.end() : m.end() + 30]
        before = ctx.text[max(ctx.s0, m.start() - 20) : m.start()]
        prev_word = re.search(r"(\w+)\s+$", before)
        if prev_word and any(p.fullmatch(prev_word.group(1)) for p, _ in direction_patterns()):
            continue  # "dropped markedly", "improved slightly": the size of a change
        if word == "minimal" and re.match(r"\s+clinically", after, re.I):
            continue
        if re.match(r"\s+or\s+(?:always|worse|severe|above|higher)", after, re.I) or re.search(
            r"\b(?:often|moderate|mild|slight)\s+or\s+$", before, re.I
        ):
            continue  # "answered often or always", "rated moderate or worse": a threshold
        if (
            SEVERITY_SKIP_AFTER.match(after)
            or re.search(r"\b(?:or|and)\s+$", before)
            and re.match(r"\s*(?:or|and)\b", after)
        ):
            continue
        if re.search(r"\b(?:answered|rated|or)\s+$", before) and re.match(
            r"\s+or\s+(?:always|worse)", after
        ):
            continue
        if word in ("often", "always", "never", "sometimes", "occasionally") and not re.search(
            r"\b(?:answered|rated|reported|responded|scored)\b[^.;]{0,20}$", before, re.I
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
            for p in [c.patient] if c.patient is not None else patients:
                checks.append((p, c.domain, c.items if c.kind == "item" else None, c.visit, c.text))
        else:
            for p in patients:
                for dom, items, phrase in subjects:
                    checks.append((p, dom, items, None, phrase))
        if not checks:
            _fail(v, "severity", f"'{m.group(1)}': cannot tell which item or domain it rates")
            continue
        for p, dom, items, visit, phrase in checks:
            series, what = view.series(p, dom, items)
            if not series:
                if items is not None:
                    _fail(
                        v, "severity", f"'{m.group(1)}' for '{phrase}': no such item in the facts"
                    )
                continue
            at = visit if visit is not None and visit in series else _at_visit(ctx, ca, cb, series)
            f = series.get(at) if at is not None else None
            if f is None:
                _fail(
                    v, "severity", f"'{m.group(1)}' ({what}, patient {p}): no value at visit {at}"
                )
                continue
            val = float(f.value)
            if items:
                scale = pdq_words if (f.domain == "qol") else updrs_words
                if word not in scale:
                    _fail(v, "severity", f"'{m.group(1)}' is not a rating of the {what} scale")
                    continue
                expect = scale[word]
                ok = val == expect or (word.startswith("marked") and val >= 3)
                desc = f"{what} is {_num(val)} at visit {at}"
            else:
                if word not in dom_words:
                    _fail(v, "severity", f"'{m.group(1)}' is not a domain severity level")
                    continue
                level = view.band(dom, val) if dom else None
                if not view.bands.get(dom or ""):
                    _fail(
                        v,
                        "severity",
                        f"'{m.group(1)}' ({dom}, patient {p}): no published severity cut-offs "
                        "apply to this scale",
                    )
                    continue
                ok = level is not None and word.startswith(level)
                desc = f"{dom} {_num(val)} at visit {at} is {level or 'outside every band'}"
            if ok:
                n += 1
                v.facts.append(_assertion("severity", m.group(1), p, series, (at, at), [f], view))
            else:
                _fail(v, "severity", f"'{m.group(1)}' ({what}, patient {p}): {desc}")
    return n


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
    for m in COMPARATIVE_RE.finditer(ctx.text, ctx.s0, ctx.s1):
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
        if "better" in region.lower() or "worse" in region.lower() and not is_change:
            pass
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
    for m in SUPERLATIVE_RE.finditer(ctx.text, ctx.s0, ctx.s1):
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
    for m in PERIOD_RE.finditer(ctx.text, ctx.s0, ctx.s1):
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
