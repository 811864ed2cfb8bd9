"""Claim-level grounding (issue 6): each number in a text is read with its context and checked
against the fact for that context in the run's ledger.

A *claim* is one number plus what the text says it is: patient, visit (number, "baseline", "latest",
or a date), reference visit for changes, domain or item, and kind (score, item, change from the
previous visit, change from baseline, slope per visit/per year, mean/max/min, rank, count,
threshold, PDQ-8 summary index), plus a direction word ("improved", "worsened", ...) when one is
bound to it. Identifiers are claims too: a patient id must be in the plan, a visit must exist for
the patient, a date must be that patient's (and that visit's) date.

Scoping rule (docs/grounding.md):
- The *patient* carries over within a paragraph (until another patient cue); a cue naming several
  patients ("patients 3 and 8") clears it.
- *Visit*, *domain* and *item* carry over within a sentence, left to right. Cues inside
  parentheses apply inside them only (the state is restored at ")"). An item ends at ";", at a new
  domain or item cue, and at the end of the sentence.
- A visit written right after a number ("14 at visit 3", "9 at baseline", "12 (visit 2)") binds
  to that number and becomes the running visit.
- Kind cues are read in the window after the number (up to the next number, 60 characters) and
  then in the words just before it: "from baseline"/"since visit 1" (cumulative), "from the
  previous visit"/"from visit k" (change from visit k), "per visit"/"slope", "per year", "MCID",
  "cut-off", "average", "highest", "lowest", "ranked", "N visits/patients". A signed number or a
  change verb before it ("increased by") makes a change whose reference is unknown (accepted as
  a change from the previous visit or from baseline).
- A direction word binds to the nearest change claim before it in the sentence (else the next
  one after it) and must agree with the sign of the fact (decrease = improvement).
A number with neither a domain/item, an explicit kind nor a visit has *no recoverable context*:
it falls back to the lenient check (its value occurs among the ledger's numeric tokens) and is
counted separately. A claim with partial context is checked against every fact consistent with
the context it has.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from engine.grounding.numbers import NumberToken, canonical, extract_numbers, normalise
from engine.plan import WORD_ORDINALS
from engine.types import FactValue, Plan

CHANGE_KINDS = ("delta", "cumulative", "change", "pair")
SIGNED_KINDS = CHANGE_KINDS + ("slope", "slope_year")
ROUNDED_KINDS = ("slope", "slope_year", "mean", "pdq8_si", "threshold")

# ---------------------------------------------------------------- vocabularies

DOMAIN_CUES: tuple[tuple[str, str], ...] = (
    (r"motor experiences of daily living", "adl"),
    (r"activities of daily living|daily living|\badls?\b|part\s+(?:ii|2)\b|updrs[- ]?ii\b", "adl"),
    (r"non[- ]?motor|part\s+(?:i|1)\b|updrs[- ]?i\b", "nonmotor"),
    (r"quality[- ]of[- ]life|\bqol\b|pdq[- ]?8|pdq8", "qol"),
    (r"\bmotor\b|part\s+(?:iii|3)\b|updrs[- ]?iii\b", "motor"),
    (r"total burden|\bupdrs total\b|\btotal score\b|\btotal\b", "total"),
)
DOMAIN_RE = [(re.compile(p, re.I), d) for p, d in DOMAIN_CUES]

#: Symptom words that are not items of any profile in use: a number attached to one is a made-up item.
UNKNOWN_ITEMS = (
    "dyskinesia",
    "dyskinesias",
    "dystonia",
    "akinesia",
    "memory",
    "balance score",
    "orthostatic",
    "weight",
    "mood score",
    "hand tremor",
)


PATIENT_RE = re.compile(
    r"\b(?:patient|participant|subject|proj(?:ect)?[ _-]?id|pt\.?)\s*(?:id\s*)?#?\s*(\d+)(?![\d.]\d)",
    re.I,
)
PATIENTS_RE = re.compile(
    r"\b(?:patients|participants|proj(?:ect)?[ _-]?ids)\s+#?(\d+)((?:\s*(?:,|and|&|vs\.?|versus)\s*#?\d+)+)",
    re.I,
)
VISIT_WORD = r"(?:visit|session|assessment|v)"
VISITS_RE = re.compile(
    rf"\b{VISIT_WORD}s\s*#?\s*(\d+)((?:\s*(?:-|to|through|and|,|&)\s*(?:{VISIT_WORD}\s*)?\d+)*)(?![\d.]\d)"
    rf"|\b{VISIT_WORD}\s*#?\s*(\d+)((?:\s*(?:-|through)\s*\d+)?)(?![\d.]\d)",
    re.I,
)
ORD_VISIT_RE = re.compile(
    r"\b(?:(\d+)(?:st|nd|rd|th)|(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth))"
    r"\s+(?:visit|session|assessment)",
    re.I,
)
BASELINE_RE = re.compile(r"\bbaseline\b", re.I)
LATEST_RE = re.compile(
    r"\b(?:latest|last|most recent|final|current)\s+(?:visit|session|assessment)\b", re.I
)
REF_BEFORE_RE = re.compile(
    r"(?:from|since|vs\.?|versus|relative to|compared (?:with|to)|over|than(?: at)?|between)\s+(?:the\s+)?$",
    re.I,
)

KIND_AFTER: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p, re.I), k)
    for p, k in (
        (r"per\s+year|/\s*y(?:ea)?r\b|a\s+year\b|per\s+annum|annuali[sz]ed|yearly", "slope_year"),
        (r"per\s+visit|/\s*visit|each\s+visit|a\s+visit\b|\bslope\b", "slope"),
        (r"^\s*(?:visits|sessions|assessments)\b", "count_visits"),
        (r"^\s*(?:patients|participants|subjects)\b", "count_patients"),
        (r"^\s*(?:of\s+\d+\s+)?items?\b", "count_items"),
        (r"summary index|\bSI\b", "pdq8_si"),
    )
)
KIND_BEFORE: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p, re.I), k)
    for p, k in (
        (r"\bslope\b[^.;]{0,40}$", "slope"),
        (
            r"\b(?:mcid|minimal clinically important difference|cut-?off|threshold)s?\s*(?:of|is|=|:|at)?\s*"
            r"(?:about\s+)?$",
            "threshold",
        ),
        (r"\bat or (?:above|below)\s*$|(?:>=|<=|\u2265|\u2264)\s*$", "threshold"),
        (r"(?:hoehn (?:and|&) yahr|h&y|\bstage)\s*$", "stage"),
        (r"\b(?:average|mean|avg)\b[^.;]{0,45}$", "mean"),
        (r"\b(?:highest|maximum|max|peak|largest|greatest|worst)\b[^.;]{0,45}$", "max"),
        (r"\b(?:lowest|minimum|min|smallest|best)\b[^.;]{0,45}$", "min"),
        (r"\brank(?:ed|s|ing)?\b[^.;]{0,15}$", "rank"),
        (r"summary index[^.;]{0,15}$|\bSI\b[^.;]{0,10}$", "pdq8_si"),
        (
            r"\b(?:increase[sd]?|decrease[sd]?|rose|rise[sn]?|fell|fall(?:s|en)?|drop(?:ped|s)?|"
            r"change[sd]?|improv\w*|worsen\w*|declin\w*|gain(?:ed)?|los[st]|reduc\w*|went (?:up|down))"
            r"\s*(?:of|by)?\s*(?:about\s+)?$",
            "change",
        ),
        (
            r"\b(?:a|an)\s+(?:increase|decrease|change|rise|drop|reduction|improvement|worsening)\s+of\s*$",
            "change",
        ),
    )
)
DIRECTION_RE = re.compile(
    r"\b(improv\w*|better|decreas\w*|reduc\w*|fell|dropped|lower(?:ed)?|declin\w*|"
    r"worsen\w*|worse|deteriorat\w*|increas\w*|rose|risen|higher|progressed)\b",
    re.I,
)
NEGATIVE_DIR = ("improv", "better", "decreas", "reduc", "fell", "dropped", "lower")
POSITIVE_DIR = ("worsen", "worse", "deteriorat", "increas", "rose", "risen", "higher", "progress")


@cache
def item_vocabulary() -> tuple[tuple[re.Pattern[str], frozenset[str], frozenset[str]], ...]:
    """(phrase pattern, item codes, their domains) from every instrument profile, longest first."""
    from kb_store.profiles import PROFILE_DIR, load_profile

    phrases: dict[str, tuple[set[str], set[str]]] = {}

    def add(phrase: str, code: str, domain: str) -> None:
        phrase = phrase.strip().lower()
        if len(phrase) < 4 or phrase in {"tremor score", "part"}:
            return
        codes, doms = phrases.setdefault(phrase, (set(), set()))
        codes.add(code)
        doms.add(domain)

    for path in sorted(PROFILE_DIR.glob("*.json")):
        prof = load_profile(path.stem)
        for it in prof.items:
            label = it.label
            add(label, it.code, it.domain)
            head = re.split(r",|\s\(", label)[0]
            add(head, it.code, it.domain)
            if " and " in head:
                add(head.split(" and ")[0], it.code, it.domain)
            for par in re.findall(r"\(([^)]+)\)", label):
                if par.lower() not in {"examination", "activities of daily living"}:
                    add(par, it.code, it.domain)
            add(it.code, it.code, it.domain)
            for a in it.aliases:
                add(a, it.code, it.domain)
            m = re.match(r"(\w+) tremor", head.lower())
            if m:
                add("tremor", it.code, it.domain)
    out = []
    for phrase in sorted(phrases, key=len, reverse=True):
        codes, doms = phrases[phrase]
        pat = re.compile(
            r"(?<![\w-])" + re.escape(phrase).replace(r"\ ", r"[\s-]+") + r"s?(?![\w-])", re.I
        )
        out.append((pat, frozenset(codes), frozenset(doms)))
    for w in UNKNOWN_ITEMS:
        out.append(
            (
                re.compile(r"(?<![\w-])" + re.escape(w) + r"(?![\w-])", re.I),
                frozenset(),
                frozenset(),
            )
        )
    return tuple(out)


# ---------------------------------------------------------------- records


@dataclass
class Claim:
    """One number and what the text claims it is, with the check's verdict."""

    text: str
    start: int
    end: int
    value: float
    role: str  # patient | visit | date | value
    kind: str | None = (
        None  # score item delta cumulative change pair slope slope_year mean max min rank count ...
    )
    patient: int | None = None
    visit: int | None = None
    ref_visit: int | None = None
    domain: str | None = None
    items: frozenset[str] | None = None
    item_phrase: str = ""
    direction: int | None = None  # +1 increase/worsening, -1 decrease/improvement
    direction_word: str = ""
    signed: bool = False
    decimals: int = 0
    date: str | None = None
    context: bool = True
    reference: bool = False  # a visit named as the reference of a change ("from visit 2")
    visit_list: list[int] = field(
        default_factory=list
    )  # "rated 3 at visits 2, 3 and 4": holds at each
    status: str = ""  # correct | wrong | lenient_supported | lenient_unsupported
    reason: str = ""
    expected: list[str] = field(default_factory=list)
    paragraph: int = 0
    sentence: int = 0

    @property
    def supported(self) -> bool:
        return self.status in ("correct", "lenient_supported")

    def describe(self) -> str:
        parts = []
        if self.patient is not None:
            parts.append(f"patient {self.patient}")
        if self.visit is not None:
            parts.append(f"visit {self.visit}")
        if self.ref_visit is not None:
            parts.append(f"from visit {self.ref_visit}")
        if self.domain:
            parts.append(self.domain)
        if self.item_phrase:
            parts.append(f"item '{self.item_phrase}'")
        if self.kind and self.role == "value":
            parts.append(self.kind)
        return ", ".join(parts) or "no context"

    def to_dict(self) -> dict[str, Any]:
        return {
            "span": [self.start, self.end],
            "text": self.text,
            "role": self.role,
            "kind": self.kind,
            "patient": self.patient,
            "visit": self.visit,
            "ref_visit": self.ref_visit,
            "domain": self.domain,
            "items": sorted(self.items) if self.items is not None else None,
            "direction": self.direction,
            "context": self.context,
            "status": self.status,
            "reason": self.reason,
            "expected": self.expected,
        }


@dataclass
class ClaimReport:
    claims: list[Claim]
    order_violations: list[dict[str, Any]]
    temporal_fidelity: float
    temporal_fidelity_strict: float

    @property
    def with_context(self) -> list[Claim]:
        return [c for c in self.claims if c.context]

    @property
    def without_context(self) -> list[Claim]:
        return [c for c in self.claims if not c.context]

    @property
    def claim_accuracy(self) -> float:
        ctx = self.with_context
        return sum(c.status == "correct" for c in ctx) / len(ctx) if ctx else 1.0

    @property
    def unsupported(self) -> list[Claim]:
        return [c for c in self.claims if not c.supported]


# ---------------------------------------------------------------- ledger index


class LedgerIndex:
    """Look-ups over the ledger: facts by kind and context, patients, visits, dates, tokens."""

    def __init__(self, ledger: Sequence[FactValue]):
        self.ledger = list(ledger)
        self.patients = {f.patient for f in self.ledger if f.patient is not None}
        self.visits: dict[int | None, set[int]] = {}
        self.dates: dict[int | None, dict[str, int | None]] = {}
        self.items_known = {f.item for f in self.ledger if f.kind == "item" and f.item}
        for f in self.ledger:
            if f.visit is not None:
                self.visits.setdefault(f.patient, set()).add(int(f.visit))
                self.visits.setdefault(None, set()).add(int(f.visit))
            if f.kind == "visit" and f.patient is not None:
                self.visits.setdefault(f.patient, set()).add(int(f.value))
                self.visits.setdefault(None, set()).add(int(f.value))
            if f.date:
                self.dates.setdefault(f.patient, {})[f.date] = f.visit
                self.dates.setdefault(None, {})[f.date] = f.visit
        self.tokens = ledger_tokens(self.ledger)
        self._by_kind: dict[str, list[FactValue]] = {}
        self._by_kp: dict[tuple[str, int | None], list[FactValue]] = {}
        for f in self.ledger:
            self._by_kind.setdefault(f.kind, []).append(f)
            self._by_kp.setdefault((f.kind, f.patient), []).append(f)

    def find(
        self, kinds: Iterable[str], *, patient=None, visit=None, domain=None, items=None
    ) -> list[FactValue]:
        out = []
        for kind in dict.fromkeys(kinds):
            pool = (
                self._by_kp.get((kind, patient), []) + self._by_kp.get((kind, None), [])
                if patient is not None
                else self._by_kind.get(kind, [])
            )
            out.extend(self._filter(pool, patient, visit, domain, items))
        return out

    @staticmethod
    def _filter(pool: list[FactValue], patient, visit, domain, items) -> list[FactValue]:
        out = []
        for f in pool:
            if patient is not None and f.patient is not None and f.patient != patient:
                continue
            if visit is not None and f.visit != visit:
                continue
            if domain is not None and f.domain is not None and f.domain != domain:
                continue
            if (
                domain is not None
                and f.domain is None
                and f.kind in ("score", "item", "delta", "cumulative")
            ):
                continue
            if items is not None and f.item not in items:
                continue
            out.append(f)
        return out

    def latest_visit(self, patient: int | None) -> int | None:
        vs = self.visits.get(patient) if patient is not None else None
        return max(vs) if vs else None

    def visit_of_date(self, patient: int | None, iso: str) -> int | None:
        return self.dates.get(patient, {}).get(iso)


def ledger_tokens(ledger: Sequence[FactValue]) -> set[str]:
    """N_facts: the numeric tokens of the (extended) fact table: every ledger value, patient id,
    visit index and date part; non-integer values also as shown rounded to 0, 1 and 2 decimals."""
    toks: set[str] = set()
    for f in ledger:
        v = float(f.value)
        if f.kind != "date":
            toks.add(canonical(v))
            if not v.is_integer():
                for d in (0, 1, 2):
                    toks.add(canonical(round(v, d)))
        if f.patient is not None:
            toks.add(canonical(f.patient))
        if f.visit is not None:
            toks.add(canonical(f.visit))
        if f.date:
            toks.update(canonical(float(p)) for p in f.date.split("-") if p.isdigit())
    return toks


# ---------------------------------------------------------------- extraction


@dataclass
class _State:
    patient: int | None = None
    visit: int | None = None
    domain: str | None = None
    items: frozenset[str] | None = None
    item_phrase: str = ""


@dataclass
class _Cue:
    start: int
    end: int
    kind: (
        str  # patient, patients, visit, ref_visit, domain, item, paren_open, paren_close, semicolon
    )
    value: Any = None
    num_spans: tuple[tuple[int, int], ...] = ()
    range_end: bool = False  # end of a span ("between baseline and visit 4") or a list: no anchor


def _sentences(text: str) -> list[tuple[int, int, int]]:
    """(paragraph index, start, end) of each sentence."""
    out = []
    for pi, pm in enumerate(re.finditer(r"(?:[^\n]|\n(?!\s*\n))+", text)):
        pstart = pm.start()
        para = pm.group()
        last = 0
        for sm in re.finditer(r"(?<=[.!?:])\s+(?=[A-Z(*\-•#\d])|\n", para):
            if sm.start() > last:
                # don't split after "vs." or "e.g."
                prev = para[max(0, sm.start() - 4) : sm.start()].lower()
                if (
                    prev.endswith(("vs.", "e.g.", "i.e."))
                    or para[sm.start() - 1] == ":"
                    and "\n" not in sm.group()
                ):
                    continue
                out.append((pi, pstart + last, pstart + sm.start()))
            last = sm.end()
        if last < len(para):
            out.append((pi, pstart + last, pstart + len(para)))
    return out


def _cues(text: str, ledger: LedgerIndex, patient: int | None) -> list[_Cue]:
    cues: list[_Cue] = []
    taken = [False] * len(text)

    def mark(a: int, b: int) -> bool:
        if any(taken[a:b]):
            return False
        for i in range(a, b):
            taken[i] = True
        return True

    for m in PATIENTS_RE.finditer(text):
        if mark(m.start(), m.end()):
            nums = [(x.start(), x.end()) for x in re.finditer(r"\d+", m.group())]
            spans = tuple((m.start() + a, m.start() + b) for a, b in nums)
            cues.append(
                _Cue(m.start(), m.end(), "patients", [int(text[a:b]) for a, b in spans], spans)
            )
    for m in PATIENT_RE.finditer(text):
        if mark(m.start(), m.end()):
            cues.append(
                _Cue(m.start(), m.end(), "patient", int(m.group(1)), ((m.start(1), m.end(1)),))
            )
    for m in VISITS_RE.finditer(text):
        if not mark(m.start(), m.end()):
            continue
        spans = tuple(
            (m.start() + x.start(), m.start() + x.end()) for x in re.finditer(r"\d+", m.group())
        )
        vals = [int(text[a:b]) for a, b in spans]
        if (
            len(vals) == 2
            and re.search(r"\d\s*(?:-|to|through)\s*\d", m.group())
            and vals[1] > vals[0]
        ):
            vals_all = list(range(vals[0], vals[1] + 1))
        else:
            vals_all = vals
        before = text[max(0, m.start() - 40) : m.start()]
        onward = re.match(r"\s*(?:onwards?|on)\b", text[m.end() : m.end() + 10], re.I)
        span_end = re.search(
            r"(?:between|from)\s+(?:the\s+)?(?:baseline|(?:visit|session|assessment)\s*\d+)"
            r"\s+(?:and|to|through)\s+(?:the\s+)?$",
            before,
            re.I,
        )
        if len(vals) == 1 and REF_BEFORE_RE.search(before) and not onward and not span_end:
            cues.append(_Cue(m.start(), m.end(), "ref_visit", vals[0], spans))
        elif re.search(r"\bbetween\s+$", before, re.I) and len(vals) == 2:
            cues.append(_Cue(m.start(), m.end(), "ref_visit", vals[0], spans[:1]))
            cues.append(
                _Cue(
                    m.start(),
                    m.end(),
                    "visit",
                    vals[1],
                    spans[1:],
                )
            )
        else:
            cues.append(
                _Cue(
                    m.start(),
                    m.end(),
                    "visit",
                    vals_all if len(vals_all) > 1 else vals[0],
                    spans,
                    range_end=bool(span_end) or len(vals_all) > 1,
                )
            )
    for m in ORD_VISIT_RE.finditer(text):
        if mark(m.start(), m.end()):
            v = int(m.group(1)) if m.group(1) else WORD_ORDINALS[m.group(2).lower()]
            spans = ((m.start(1), m.end(1)),) if m.group(1) else ()
            before = text[max(0, m.start() - 40) : m.start()]
            kind = "ref_visit" if REF_BEFORE_RE.search(before.replace("the ", "")) else "visit"
            cues.append(_Cue(m.start(), m.end(), kind, v, spans))
    for m in BASELINE_RE.finditer(text):
        if mark(m.start(), m.end()):
            before = text[max(0, m.start() - 40) : m.start()]
            kind = "ref_visit" if REF_BEFORE_RE.search(before) else "visit"
            cues.append(_Cue(m.start(), m.end(), kind, 1))
    for m in re.finditer(
        r"\b(?:the\s+)?(?:previous|prior|preceding)\s+(?:visit|session|assessment)\b", text, re.I
    ):
        if mark(m.start(), m.end()):
            cues.append(_Cue(m.start(), m.end(), "ref_visit", "previous"))
    for m in LATEST_RE.finditer(text):
        if mark(m.start(), m.end()):
            cues.append(_Cue(m.start(), m.end(), "visit", "latest"))
    for pat, codes, doms in item_vocabulary():
        for m in pat.finditer(text):
            if mark(m.start(), m.end()):
                cues.append(_Cue(m.start(), m.end(), "item", (codes, doms, m.group())))
    for pat, dom in DOMAIN_RE:
        for m in pat.finditer(text):
            if mark(m.start(), m.end()):
                cues.append(_Cue(m.start(), m.end(), "domain", dom))
    for m in re.finditer(r"[();]", text):
        if not taken[m.start()]:
            cues.append(
                _Cue(
                    m.start(),
                    m.end(),
                    {"(": "paren_open", ")": "paren_close", ";": "semicolon"}[m.group()],
                )
            )
    cues.sort(key=lambda c: (c.start, c.end))
    return cues


def _kind_for(
    tok: NumberToken, text: str, s_start: int, prev_end: int, next_start: int
) -> tuple[str | None, str]:
    if re.search(
        r"\brank\s+\d+\s*:\s*patient\s+\d+\s*,\s*$",
        text[max(s_start, tok.start - 40) : tok.start],
        re.I,
    ):
        return "ranked", ""
    after = re.split(r"[,;]|\s(?:and|while|but)\s", text[tok.end : min(next_start, tok.end + 60)])[
        0
    ]
    before = text[max(s_start, prev_end, tok.start - 50) : tok.start]
    for pat, k in KIND_AFTER:
        if pat.search(after):
            return k, after
    for pat, k in KIND_BEFORE:
        if pat.search(before):
            return k, after
    if tok.kind == "percent":
        return "percent", after
    if tok.kind == "ordinal":
        return "rank", after
    if tok.signed:
        return "change", after
    return None, after


def extract_claims(
    text: str, ledger: Sequence[FactValue] | LedgerIndex, plan: Plan | Sequence[int] | None = None
) -> list[Claim]:
    """Claims of `text`, each checked against `ledger` (see module docstring for the rules)."""
    return check_text(text, ledger, plan).claims


def check_text(
    text: str, ledger: Sequence[FactValue] | LedgerIndex, plan: Plan | Sequence[int] | None = None
) -> ClaimReport:
    """Extract and check every claim; also the visit-order check behind temporal fidelity."""
    idx = ledger if isinstance(ledger, LedgerIndex) else LedgerIndex(ledger)
    plan_patients = set(plan.patients) if isinstance(plan, Plan) else set(plan or ())
    allowed = plan_patients or idx.patients
    text = normalise(text)
    tokens = extract_numbers(text)
    cues = _cues(text, idx, None)
    claims: list[Claim] = []
    anchors: list[tuple[tuple, int, int]] = []  # (key, visit, pos)
    all_visits: list[int] = []
    para_patient: dict[int, int | None] = {}
    cur_para = -1
    patient: int | None = None
    for si, (pi, s0, s1) in enumerate(_sentences(text)):
        if pi != cur_para:
            cur_para, patient = pi, None
        s_cues = [c for c in cues if s0 <= c.start < s1]
        st = _State(patient=_clause_patient(s_cues, s0, patient))
        stack: list[_State] = []
        s_toks = [t for t in tokens if s0 <= t.start < s1]
        cue_nums = {span for c in s_cues for span in c.num_spans}
        events: list[tuple[int, int, Any]] = [(c.start, 0, c) for c in s_cues]
        events += [(t.start, 1, t) for t in s_toks if (t.start, t.end) not in cue_nums]
        events.sort(key=lambda e: (e[0], e[1]))
        sentence_claims: list[Claim] = []
        bound_visit_spans: set[int] = set()
        postfix_visits: set[int] = set()  # visit cues bound to the number before them
        value_toks = [t for t in s_toks if (t.start, t.end) not in cue_nums]
        for _pos, typ, ev in events:
            if typ == 0:
                c: _Cue = ev
                if c.kind == "paren_open":
                    stack.append(_State(st.patient, st.visit, st.domain, st.items, st.item_phrase))
                elif c.kind == "paren_close":
                    if stack:
                        keep_patient = st.patient
                        st = stack.pop()
                        st.patient = keep_patient
                elif c.kind == "semicolon":
                    st.items, st.item_phrase = None, ""
                    st.patient = _clause_patient(s_cues, c.end, st.patient)
                elif c.kind == "patient":
                    if st.patient != c.value:
                        st.visit = None
                    st.patient = c.value
                    claims_p = _id_claim(text, c, "patient", c.value, st, pi, si)
                    sentence_claims.extend(claims_p)
                elif c.kind == "patients":
                    for (a, b), v in zip(c.num_spans, c.value, strict=False):
                        sentence_claims.append(
                            Claim(
                                text[a:b],
                                a,
                                b,
                                float(v),
                                "patient",
                                patient=v,
                                paragraph=pi,
                                sentence=si,
                            )
                        )
                    st.patient = None
                elif c.kind == "visit":
                    if c.start in bound_visit_spans:
                        continue
                    v = None if c.value == "latest" else c.value
                    vals = v if isinstance(v, list) else [v]
                    for a, b in c.num_spans:
                        vv = int(text[a:b])
                        sentence_claims.append(
                            Claim(
                                text[a:b],
                                a,
                                b,
                                float(vv),
                                "visit",
                                patient=st.patient,
                                visit=vv,
                                paragraph=pi,
                                sentence=si,
                            )
                        )
                    adom = _next_domain(text, s_cues, c, st.domain)
                    for vv in vals:
                        if vv is not None and c.start not in postfix_visits and not c.range_end:
                            anchors.append(((pi, st.patient, adom), int(vv), c.start))
                            all_visits.append(int(vv))
                    st.visit = vals[-1] if not isinstance(v, list) else None
                elif c.kind == "ref_visit":
                    for a, b in c.num_spans:
                        sentence_claims.append(
                            Claim(
                                text[a:b],
                                a,
                                b,
                                float(c.value),
                                "visit",
                                patient=st.patient,
                                visit=c.value,
                                paragraph=pi,
                                sentence=si,
                                reference=True,
                            )
                        )
                elif c.kind == "domain":
                    if not (st.items and {_code_domains().get(k) for k in st.items} == {c.value}):
                        st.items, st.item_phrase = None, ""
                    st.domain = c.value
                elif c.kind == "item":
                    codes, doms, phrase = c.value
                    known = codes & idx.items_known
                    if known:
                        codes = known
                    doms = {_code_domains()[k] for k in codes}
                    if len(doms) > 1 and st.domain in doms:
                        narrowed = _codes_in_domain(codes, st.domain)
                        if narrowed & idx.items_known or not known:
                            codes, doms = narrowed, {st.domain}
                    st.domain = next(iter(doms)) if len(doms) == 1 else None
                    st.items, st.item_phrase = codes, phrase
                continue
            tok: NumberToken = ev
            if tok.kind == "date":
                cl = Claim(
                    tok.text,
                    tok.start,
                    tok.end,
                    tok.value,
                    "date",
                    patient=st.patient,
                    visit=st.visit,
                    date=tok.date,
                    paragraph=pi,
                    sentence=si,
                )
                if st.visit is None and tok.date and st.patient is not None:
                    dv = idx.visit_of_date(st.patient, tok.date)
                    if dv is not None:
                        st.visit = dv
                        anchors.append(((pi, st.patient, st.domain), int(dv), tok.start))
                        all_visits.append(int(dv))
                sentence_claims.append(cl)
                continue
            vi = value_toks.index(tok)
            prev_end = value_toks[vi - 1].end if vi > 0 else s0
            next_start = value_toks[vi + 1].start if vi + 1 < len(value_toks) else s1
            kind, after = _kind_for(tok, text, s0, prev_end, next_start)
            cl = Claim(
                tok.text,
                tok.start,
                tok.end,
                tok.value,
                "value",
                kind=kind,
                patient=st.patient,
                visit=st.visit,
                domain=st.domain,
                items=st.items,
                item_phrase=st.item_phrase,
                signed=tok.signed,
                decimals=tok.decimals,
                paragraph=pi,
                sentence=si,
            )
            # a visit written right after the number binds to it
            post = [
                c
                for c in s_cues
                if tok.end <= c.start < min(next_start, tok.end + 30)
                and c.kind in ("visit", "ref_visit")
            ]
            gap_ok = post and re.fullmatch(
                r"\s*(?:points?\s*|pts\s*)?(?:\(|,)?\s*(?:at|in|on|during|for|by)?\s*(?:the\s+)?",
                text[tok.end : post[0].start],
                re.I,
            )
            pre = text[max(s0, tok.start - 8) : tok.start]
            post_txt = text[tok.end : tok.end + 20]
            if (
                re.search(r"\bfrom\s+$", pre, re.I)
                and re.match(r"\s*(?:points?\s+)?to\s+[-+]?\d", post_txt, re.I)
            ) or re.search(
                r"\bfrom\s+[-+]?\d+(?:\.\d+)?\s*(?:points?\s+)?to\s+$",
                text[max(s0, tok.start - 30) : tok.start],
                re.I,
            ):
                cl.visit = None  # "from X to Y": the two ends are not at the running visit
            if post and gap_ok and post[0].kind == "visit" and isinstance(post[0].value, list):
                cl.visit, cl.visit_list = None, [v for v in post[0].value if v is not None]
                postfix_visits.add(post[0].start)
            elif post and gap_ok and post[0].kind == "visit":
                pc = post[0]
                v = None if pc.value == "latest" else pc.value
                cl.visit = v
                st.visit = v
                postfix_visits.add(pc.start)
            pdom = [c for c in s_cues if tok.end <= c.start < tok.end + 40 and c.kind == "domain"]
            if pdom and re.fullmatch(
                r"\s*(?:points?\s+)?(?:on|in|for)\s+(?:the\s+)?(?:MDS-UPDRS\s+)?",
                text[tok.end : pdom[0].start],
                re.I,
            ):
                cl.domain = st.domain = pdom[0].value
            refs = [
                c
                for c in s_cues
                if tok.end <= c.start < tok.end + len(after) and c.kind == "ref_visit"
            ]
            if refs:
                r = refs[0].value
                cl.ref_visit = (cl.visit - 1 if cl.visit else None) if r == "previous" else r
                if r == "previous" and cl.kind in (None, "change", "mean", "max", "min"):
                    cl.kind = "delta"
                elif cl.kind is None and not cl.signed:
                    cl.kind = (
                        "since"  # "gait 4 from visit 3": the value since visit 3, or the change
                    )
                elif cl.kind in (None, "change", "mean", "max", "min"):
                    cl.kind = "pair"
                    # "from baseline to visit 3": a visit after the reference is this number's visit
                    later = [
                        c
                        for c in s_cues
                        if refs[0].end <= c.start < tok.end + len(after) + 20
                        and c.kind == "visit"
                        and not isinstance(c.value, list)
                        and re.match(
                            r"\s*(?:to|and)\s*(?:the\s+)?$", text[refs[0].end : c.start], re.I
                        )
                    ]
                    if later:
                        lv = None if later[0].value == "latest" else later[0].value
                        cl.visit = lv
                        bound_visit_spans.add(later[0].start)
                        for a, b in later[0].num_spans:
                            sentence_claims.append(
                                Claim(
                                    text[a:b],
                                    a,
                                    b,
                                    float(lv or 0),
                                    "visit",
                                    patient=st.patient,
                                    visit=lv,
                                    paragraph=pi,
                                    sentence=si,
                                )
                            )
                        st.visit = lv
                        if lv is not None:
                            anchors.append(((pi, st.patient, st.domain), int(lv), later[0].start))
                            all_visits.append(int(lv))
            if cl.kind is None:
                cl.kind = "item" if cl.items is not None else "score"
                if cl.domain is None and cl.items is None and cl.visit is None:
                    cl.context = False
            if cl.kind == "stage":
                cl.context = False
            if cl.kind == "percent":
                if cl.domain == "qol":
                    cl.kind = "pdq8_si"
                else:
                    cl.context = False
            if cl.visit is not None and cl.kind in (
                "score",
                "item",
                "delta",
                "cumulative",
                "pair",
                "change",
            ):
                anchors.append(((pi, cl.patient, cl.domain), int(cl.visit), tok.start))
            sentence_claims.append(cl)
        _bind_directions(text, s0, s1, sentence_claims, s_cues)
        claims.extend(sentence_claims)
        patient = st.patient if not stack else stack[0].patient
        para_patient[pi] = patient
    claims.sort(key=lambda c: c.start)
    for cl in claims:
        _check(cl, idx, allowed)
    violations = _order_violations(anchors)
    strict = 1.0 if all(a <= b for a, b in zip(all_visits, all_visits[1:], strict=False)) else 0.0
    return ClaimReport(claims, violations, 0.0 if violations else 1.0, strict)


def _next_domain(text: str, s_cues: list[_Cue], c: _Cue, default: str | None) -> str | None:
    """The domain a visit mention introduces: the first domain cue after it, before the next
    visit or patient cue of the sentence ("visit 1 (date), ADL = 23"); else the running one."""
    for o in s_cues:
        if o.start <= c.start:
            continue
        if o.kind in ("visit", "patient", "patients"):
            break
        if o.kind == "domain":
            gap = re.sub(r"\([^()]*\)", "", text[c.end : o.start])
            return o.value if re.fullmatch(r"[\s,:=-]*", gap) else default
    return default


def _clause_patient(s_cues: list[_Cue], pos: int, default: int | None) -> int | None:
    """The first patient cue of the clause starting at `pos` (up to ";" or sentence end) governs
    the clause from its start ("rank 2: patient 7, 18"); else the running patient."""
    for c in s_cues:
        if c.start < pos:
            continue
        if c.kind == "semicolon":
            break
        if c.kind == "patient":
            return c.value
        if c.kind == "patients":
            return None
    return default


def _id_claim(
    text: str, c: _Cue, role: str, value: int, st: _State, pi: int, si: int
) -> list[Claim]:
    ((a, b),) = c.num_spans
    return [Claim(text[a:b], a, b, float(value), role, patient=value, paragraph=pi, sentence=si)]


@cache
def _code_domains() -> dict[str, str]:
    from kb_store.profiles import PROFILE_DIR, load_profile

    return {
        it.code: it.domain
        for path in sorted(PROFILE_DIR.glob("*.json"))
        for it in load_profile(path.stem).items
    }


def _codes_in_domain(codes: frozenset[str], domain: str) -> frozenset[str]:
    return frozenset(k for k in codes if _code_domains().get(k) == domain) or codes


def _bind_directions(text: str, s0: int, s1: int, claims: list[Claim], s_cues: list[_Cue]) -> None:
    changes = [c for c in claims if c.role == "value" and c.kind in SIGNED_KINDS]
    if not changes:
        return
    for m in DIRECTION_RE.finditer(text, s0, s1):
        word = m.group(1).lower()
        before = text[max(s0, m.start() - 25) : m.start()].lower()
        if re.search(r"\bnot\b|\bno\b|\bneither\b", before[-12:]):
            continue
        if word.startswith("declin"):
            sign = -1 if re.search(r"scores?\s*(?:has|have)?\s*$", before) else 1
        elif word.startswith(NEGATIVE_DIR):
            sign = -1
        elif word.startswith(POSITIVE_DIR):
            sign = 1
        else:
            continue

        def between(a: int, b: int, kinds: tuple[str, ...]) -> bool:
            return any(a <= c.start < b and c.kind in kinds for c in s_cues)

        prev = [
            c
            for c in changes
            if m.start() - 40 <= c.end <= m.start()
            and ";" not in text[c.end : m.start()]
            and not between(c.end, m.start(), ("patient", "patients", "domain", "item"))
        ]
        nxt = [
            c
            for c in changes
            if m.end() <= c.start <= m.end() + 40
            and not re.search(r"[;:]", text[m.end() : c.start])
            and not between(m.end(), c.start, ("patient", "patients"))
        ]
        target = prev[-1] if prev else (nxt[0] if nxt else None)
        if target is not None and target.direction is None:
            target.direction = sign
            target.direction_word = m.group(1)


# ---------------------------------------------------------------- checking


def _fmt(x: float) -> str:
    from kb_store.documents import fmt_num

    return ("+" if x > 0 else "") + fmt_num(x) if x else "0"


def _value_ok(claimed: float, fact: float, tol: float, cl: Claim, signed_kind: bool) -> bool:
    rnd = (
        0.5 * 10 ** (-cl.decimals)
        if cl.kind in ROUNDED_KINDS or not float(fact).is_integer()
        else 0.0
    )
    tol = max(tol, rnd, 1e-9)
    if cl.kind == "threshold":
        return abs(abs(claimed) - abs(fact)) <= tol
    if not signed_kind:
        return abs(abs(claimed) - fact) <= tol if fact >= 0 else abs(claimed - fact) <= tol
    if cl.signed:
        ok = abs(claimed - fact) <= tol
    elif cl.direction is not None:
        ok = abs(cl.direction * abs(claimed) - fact) <= tol
    else:
        ok = abs(abs(claimed) - abs(fact)) <= tol
    if ok and cl.direction is not None and fact != 0 and (fact > 0) != (cl.direction > 0):
        return False
    return ok


def _check(cl: Claim, idx: LedgerIndex, allowed: set[int]) -> None:
    if cl.role == "patient":
        p = int(cl.value)
        if allowed and p not in allowed:
            cl.status, cl.reason = (
                "wrong",
                f"patient {p} is outside the plan (patients {sorted(allowed)})",
            )
        elif idx.patients and p not in idx.patients:
            cl.status, cl.reason = "wrong", f"patient {p} has no facts"
        else:
            cl.status = "correct"
        return
    if cl.role == "visit":
        v = int(cl.value)
        known = idx.visits.get(cl.patient if cl.patient in idx.visits else None, set())
        if not idx.visits:
            cl.status, cl.context = (
                ("lenient_supported" if canonical(v) in idx.tokens else "lenient_unsupported"),
                False,
            )
        elif v in known:
            cl.status = "correct"
        else:
            who = f"patient {cl.patient}" if cl.patient is not None else "any patient"
            cl.status, cl.reason = "wrong", f"{who} has no visit {v} (visits {sorted(known)})"
        return
    if cl.role == "date":
        iso = cl.date or ""
        dates = idx.dates.get(cl.patient if cl.patient in idx.dates else None, {})
        hits = [d for d in dates if d.startswith(iso)]
        if cl.visit is not None:
            vis_hits = [d for d in hits if dates[d] in (cl.visit, None)]
        else:
            vis_hits = hits
        if not idx.dates:
            cl.context = False
            cl.status = (
                "lenient_supported"
                if all(canonical(float(p)) in idx.tokens for p in iso.split("-"))
                else "lenient_unsupported"
            )
        elif vis_hits:
            cl.status = "correct"
        else:
            cl.status = "wrong"
            exp = [d for d, v in dates.items() if cl.visit is None or v == cl.visit]
            cl.reason = f"date {iso} is not a visit date of {cl.describe()}"
            cl.expected = sorted(exp)[:6]
        return
    # value claims
    if not cl.context:
        cl.status = (
            "lenient_supported" if canonical(cl.value) in idx.tokens else "lenient_unsupported"
        )
        if cl.status == "lenient_unsupported":
            cl.reason = f"{cl.text} occurs nowhere in the facts"
        return
    if cl.items is not None and not cl.items:
        cl.status, cl.reason = (
            "wrong",
            f"'{cl.item_phrase}' is not an item of the assessed instruments",
        )
        return
    if cl.items is not None and cl.kind in ("score", "item") and not (cl.items & idx.items_known):
        cl.status, cl.reason = "wrong", f"no item '{cl.item_phrase}' in the facts"
        return
    if cl.visit_list:
        from dataclasses import replace

        missing = [v for v in cl.visit_list if not _good(replace(cl, visit=v, visit_list=[]), idx)]
        if missing:
            cl.status = "wrong"
            cl.reason = f"{cl.text} does not hold for {cl.describe()} at visit(s) {missing}"
        else:
            cl.status = "correct"
        return
    facts = _candidates(cl, idx)
    signed_kind = cl.kind in SIGNED_KINDS
    good = _good(cl, idx, facts)
    if good:
        cl.status = "correct"
        return
    cl.status = "wrong"
    cl.expected = [
        f"{f.label or f.kind}: {_fmt(float(f.value)) if signed_kind else _plain(f.value)}"
        for f in facts[:6]
    ]
    if (
        signed_kind
        and cl.direction is not None
        and any(
            _value_ok(cl.value, float(f.value), f.tolerance, _replace_dir(cl), True) for f in facts
        )
    ):
        cl.reason = (
            f"'{cl.direction_word}' contradicts the sign of the change ({cl.describe()}); "
            "a decrease is an improvement, an increase a worsening"
        )
    elif not facts:
        cl.reason = f"no fact for {cl.describe()}"
    else:
        cl.reason = f"{cl.text} does not match the fact for {cl.describe()}"


def _good(cl: Claim, idx: LedgerIndex, facts: list[FactValue] | None = None) -> list[FactValue]:
    facts = _candidates(cl, idx) if facts is None else facts
    return [
        f
        for f in facts
        if _value_ok(
            cl.value,
            float(f.value),
            f.tolerance,
            cl,
            f.kind in ("pair", "delta", "cumulative", "slope", "slope_year")
            if cl.kind == "since"
            else cl.kind in SIGNED_KINDS,
        )
    ]


def _plain(x: float) -> str:
    from kb_store.documents import fmt_num

    return fmt_num(float(x))


def _replace_dir(cl: Claim) -> Claim:
    from dataclasses import replace

    return replace(cl, direction=None, signed=False)


def _candidates(cl: Claim, idx: LedgerIndex) -> list[FactValue]:
    p, v, d, items = cl.patient, cl.visit, cl.domain, cl.items
    if d == "total":
        d = None
        if cl.kind in ("score",):
            return idx.find(
                ["score", "max", "min", "mean", "rank"], patient=p, visit=v, domain="total"
            )
    k = cl.kind
    if k == "item" or (items is not None and k in ("score",)):
        return idx.find(["item"], patient=p, visit=v, domain=d, items=items)
    if k == "score":
        return idx.find(["score"], patient=p, visit=v, domain=d)
    if k == "delta":
        return idx.find(["delta"], patient=p, visit=v, domain=d, items=items)
    if k == "change":
        extra = idx.find(["slope"], patient=p, domain=d) if v is None and items is None else []
        return idx.find(["delta", "cumulative"], patient=p, visit=v, domain=d, items=items) + extra
    if k == "ranked":
        return idx.find(
            ["score", "slope", "slope_year", "max", "min", "mean"], patient=p, domain=d, visit=v
        )
    if k == "pair":
        r = cl.ref_visit
        if r == 1:
            return idx.find(["cumulative"], patient=p, visit=v, domain=d, items=items)
        if r is not None and v is not None and r == v - 1:
            return idx.find(["delta"], patient=p, visit=v, domain=d, items=items)
        return _pair_facts(cl, idx)
    if k == "since":
        pair = _candidates(replace_kind(cl, "pair"), idx)
        kind = ["item"] if items is not None else ["score"]
        return pair + idx.find(kind, patient=p, visit=cl.ref_visit, domain=d, items=items)
    if k == "cumulative":
        return idx.find(["cumulative"], patient=p, visit=v, domain=d, items=items)
    if k in ("slope", "slope_year"):
        return idx.find([k], patient=p, domain=d)
    if k in ("max", "min"):
        return idx.find([k, "score"], patient=p, domain=d, visit=v)
    if k in ("mean", "rank", "pdq8_si"):
        return idx.find([k], patient=p, domain=d, visit=v if k == "pdq8_si" else None)
    if k == "threshold":
        return idx.find(["threshold"], domain=d)
    if k == "count_visits":
        pats = [p] if p is not None else sorted(idx.patients)
        ns = sorted({len(idx.visits.get(q, set())) for q in pats} - {0})
        extra = [FactValue("count", float(n), patient=p, label="number of visits") for n in ns]
        return idx.find(["count"], patient=p) + extra
    if k == "count_items":
        consts = [
            FactValue("count", float(n), domain=d, label=lab, source="kb_store/profiles")
            for n, lab in _item_counts(d)
        ]
        return idx.find(["count"], patient=p, visit=v, domain=d) + consts
    if k == "count_patients":
        return idx.find(["count"]) + [
            FactValue("count", float(len(idx.patients)), label="number of patients")
        ]
    return idx.find([k or "score"], patient=p, visit=v, domain=d)


@cache
def _item_counts(domain: str | None) -> tuple[tuple[int, str], ...]:
    """Instrument constants: number of items of each profile (and of each of its domains)."""
    from kb_store.profiles import PROFILE_DIR, load_profile

    out = []
    for path in sorted(PROFILE_DIR.glob("*.json")):
        prof = load_profile(path.stem)
        if domain is None or domain in prof.domains:
            core = [i for i in prof.items if i.domain in prof.core_domains()]
            out.append((len(core), f"{prof.name}: number of items"))
        for dom in prof.core_domains():
            if domain in (None, dom):
                out.append((len(prof.items_of(dom)), f"{prof.name} {dom}: number of items"))
    return tuple(out)


def replace_kind(cl: Claim, kind: str) -> Claim:
    from dataclasses import replace

    return replace(cl, kind=kind)


def _pair_facts(cl: Claim, idx: LedgerIndex) -> list[FactValue]:
    """Change between two named visits, computed from the two score facts of the ledger."""
    kind = "item" if cl.items is not None else "score"
    out = []
    ends = idx.find([kind], patient=cl.patient, visit=cl.visit, domain=cl.domain, items=cl.items)
    for e in ends:
        for s in idx.find(
            [kind],
            patient=e.patient,
            visit=cl.ref_visit,
            domain=e.domain,
            items=frozenset([e.item]) if e.item else None,
        ):
            if e.visit is not None and s.visit is not None and e.visit > s.visit:
                out.append(
                    FactValue(
                        "pair",
                        e.value - s.value,
                        patient=e.patient,
                        visit=e.visit,
                        domain=e.domain,
                        item=e.item,
                        label=f"{e.domain} change from visit {s.visit} to visit {e.visit}",
                        source="computed",
                    )
                )
    return out


def _order_violations(anchors: list[tuple[tuple, int, int]]) -> list[dict[str, Any]]:
    """Within one paragraph, patient and domain, the visits a text is about must not go backwards."""
    last: dict[tuple, tuple[int, int]] = {}
    out = []
    seen: set[tuple] = set()
    for key, v, pos in sorted(anchors, key=lambda a: a[2]):
        if key in last and v < last[key][0] and (key, v, last[key][0]) not in seen:
            seen.add((key, v, last[key][0]))
            out.append(
                {
                    "span": [pos, pos],
                    "visit": v,
                    "after_visit": last[key][0],
                    "patient": key[1],
                    "domain": key[2],
                    "reason": f"visit {v} is mentioned after visit {last[key][0]} "
                    f"({'patient ' + str(key[1]) if key[1] is not None else 'no patient'}, "
                    f"{key[2] or 'no domain'}): visits out of order",
                }
            )
        last[key] = (max(v, last.get(key, (v, 0))[0]), pos)
    return out
