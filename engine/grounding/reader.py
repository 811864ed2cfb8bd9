"""The claim reader: text -> claims. Each number is read with its context under the scoping rules
of docs/grounding.md (summarised in claim_report.py): the patient carries over within a
paragraph, visit/domain/item within a sentence, parentheses scope their cues, a visit written
right after a number binds to it, kind cues are read around the number, direction words bind to
the nearest change. The reader also collects the visit anchors behind temporal fidelity.
Nothing here decides whether a claim is right: that is verdict.py.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass, field

from engine.clinical.concepts import same_concept
from engine.grounding import literal_scan
from engine.grounding.chains import rebind
from engine.grounding.claim import Claim, variant
from engine.grounding.cues import Cue, clause_patient, find_cues, kind_for, next_domain, sentences
from engine.grounding.ledger_index import LedgerIndex
from engine.grounding.numbers import NumberToken, extract_numbers
from engine.grounding.vocabulary import (
    COUNT_INSTRUMENT_RE,
    COUNT_LABEL_RE,
    DIRECTION_RE,
    NEGATIVE_DIR,
    POSITIVE_DIR,
    SIGNED_KINDS,
    THRESHOLD_FOR,
    code_domains,
    codes_in_domain,
)

#: (paragraph, patient, domain) -> visits mentioned in that scope, in order
AnchorKey = tuple[int, int | None, str | None]
Anchor = tuple[AnchorKey, int, int]  # (key, visit, position)
_ANCHORED_KINDS = ("score", "item", "delta", "cumulative", "pair", "change")
_POSTFIX_GAP = re.compile(
    r"\s*(?:points?\s*|pts\s*)?(?:again\s+)?(?:\(|,)?\s*(?:at|in|on|during|for|by)?\s*(?:the\s+)?",
    re.I,
)
#: "23 on 8 May 2021", "10 (8 May 2021)", "1 at patient 3's assessment on 7 March 2020": a day
#: that dates the number before it
_DATE_GAP = re.compile(
    r"\s*(?:points?\s*)?(?:on\s+|\(\s*(?:on\s+)?|at\s+(?:the\s+|his\s+|her\s+|their\s+"
    r"|(?:patient|participant)\s+#?\d+['’]s\s+)?(?:assessment|visit|session)\s+(?:on|of)\s+)",
    re.I,
)
_PART_SCORE = re.compile(r"\s+(?:examination\s+)?(?:score|total|subscore)\b", re.I)
_DATE_LIST_GAP = re.compile(r"\s*(?:,|and|to|-|through|until)?\s*(?:and\s*)?")
_NEGATED_BEFORE = re.compile(r"\bnot\b|\bno\b|\bneither\b")
_CLAUSE_MARK = re.compile(r"[;:]")
_SCORES_HAVE_END = re.compile(r"scores?\s*(?:has|have)?\s*$")
_FROM_END = re.compile(r"\bfrom\s+$", re.I)
_TO_NUMBER = re.compile(r"\s*(?:points?\s+)?to\s+[-+]?\d", re.I)
_FROM_N_TO_END = re.compile(r"\bfrom\s+[-+]?\d+(?:\.\d+)?\s*(?:points?\s+)?to\s+$", re.I)
_DOMAIN_GAP = re.compile(r"\s*(?:points?\s+)?(?:on|in|for)\s+(?:the\s+)?(?:MDS-UPDRS\s+)?", re.I)


@dataclass
class Scope:
    """What the running text is about at one point of a sentence."""

    patient: int | None = None
    visit: int | None = None
    domain: str | None = None
    items: frozenset[str] | None = None
    item_phrase: str = ""

    def copy(self) -> Scope:
        return Scope(self.patient, self.visit, self.domain, self.items, self.item_phrase)


@dataclass
class Reading:
    """The claims of a text (in text order) and its visit anchors."""

    text: str
    claims: list[Claim] = field(default_factory=list)
    anchors: list[Anchor] = field(default_factory=list)
    all_visits: list[int] = field(default_factory=list)

    def anchor(self, key: AnchorKey, visit: int, pos: int, *, mention: bool = True) -> None:
        """A visit the text is about at `pos`; `mention` when the visit is written (or dated)
        there, not only implied by a number's running context."""
        self.anchors.append((key, int(visit), pos))
        if mention:
            self.all_visits.append(int(visit))


@dataclass
class ParagraphReading(Reading):
    """The reading of one paragraph on its own (paragraph index 0, offsets into it)."""

    sentences: int = 0


def read_paragraph(para: str, idx: LedgerIndex) -> ParagraphReading:
    """The claims of one paragraph, read as a text of its own; the claims are fresh objects."""
    out = ParagraphReading(para)
    tokens = extract_numbers(para)
    cues = find_cues(para)
    patient = None
    spans = sentences(para)
    low = para.lower() if para.isascii() else None
    for si, (pi, s0, s1) in enumerate(spans):
        reader = _SentenceReader(para, idx, out, pi, si, s0, s1, cues, tokens, patient)
        reader.low = low
        reader.read()
        out.claims.extend(reader.claims)
        patient = reader.scope.patient if not reader.stack else reader.stack[0].patient
    out.claims.sort(key=lambda c: c.start)
    out.sentences = len(spans)
    return out


def shifted_claim(c: Claim, d: int, paragraph: int, sentence0: int) -> Claim:
    """A copy of `c` at offset `d` in its text, in the given paragraph, its sentence index moved
    by `sentence0` (the other fields are shared: read-only after the verdict)."""
    return variant(
        c, start=c.start + d, end=c.end + d, paragraph=paragraph, sentence=c.sentence + sentence0
    )


def _start(x: Cue | NumberToken) -> int:
    return x.start


class _SentenceReader:
    """Reads one sentence: walks its cues and numbers left to right, keeping the Scope."""

    def __init__(
        self,
        text: str,
        idx: LedgerIndex,
        out: Reading,
        pi: int,
        si: int,
        s0: int,
        s1: int,
        cues: list[Cue],
        tokens: list[NumberToken],
        patient: int | None,
    ):
        self.text, self.idx, self.out = text, idx, out
        self.pi, self.si, self.s0, self.s1 = pi, si, s0, s1
        # cues and tokens are in text order: the sentence's are one slice of each (bisect)
        self.cues = cues[bisect_left(cues, s0, key=_start) : bisect_left(cues, s1, key=_start)]
        self.scope = Scope(patient=clause_patient(self.cues, s0, patient))
        self.stack: list[Scope] = []
        cue_nums = {span for c in self.cues for span in c.num_spans}
        s_toks = tokens[bisect_left(tokens, s0, key=_start) : bisect_left(tokens, s1, key=_start)]
        self.value_toks = [t for t in s_toks if (t.start, t.end) not in cue_nums]
        self.cue_starts = [c.start for c in self.cues]  # for the cue windows after a number
        self.claims: list[Claim] = []
        self.bound_visit_spans: set[int] = set()
        self.last_date_end: int | None = None
        self.postfix_visits: set[int] = set()  # visit cues bound to the number before them
        self.postfix_dates: set[int] = set()  # dates bound to the number before them
        self.low: str | None = None  # the text lower-cased when ASCII (literal_scan)

    def read(self) -> None:
        events: list[tuple[int, int, int]] = [(c.start, 0, i) for i, c in enumerate(self.cues)]
        events += [(t.start, 1, i) for i, t in enumerate(self.value_toks)]
        events.sort()
        for _pos, typ, i in events:
            if typ == 0:
                c = self.cues[i]
                _ON_CUE[c.kind](self, c)
            elif self.value_toks[i].kind == "date":
                self._on_date(self.value_toks[i], i)
            else:
                self._on_value(self.value_toks[i], i)
        rebind(self.text, self.s0, self.s1, self.claims, self.idx)
        _bind_directions(self.text, self.s0, self.s1, self.claims, self.cues, self.low)

    def _cues_in(self, a: int, b: int) -> list[Cue]:
        """The sentence's cues that start in [a, b), in text order (bisect over their starts)."""
        starts = self.cue_starts
        return self.cues[bisect_left(starts, a) : bisect_left(starts, b)]

    def _claim(self, a: int, b: int, value: float, role: str, **kw: object) -> Claim:
        cl = Claim(self.text[a:b], a, b, value, role, paragraph=self.pi, sentence=self.si, **kw)  # type: ignore[arg-type]
        self.claims.append(cl)
        return cl

    # ---- cues

    def _on_paren_open(self, _cue: Cue) -> None:
        self.stack.append(self.scope.copy())

    def _on_paren_close(self, _cue: Cue) -> None:
        if self.stack:
            keep_patient = self.scope.patient
            self.scope = self.stack.pop()
            self.scope.patient = keep_patient

    def _on_semicolon(self, c: Cue) -> None:
        self.scope.items, self.scope.item_phrase = None, ""
        self.scope.patient = clause_patient(self.cues, c.end, self.scope.patient)

    def _on_patient(self, c: Cue) -> None:
        if self.scope.patient != c.value:
            self.scope.visit = None
        self.scope.patient = c.value
        ((a, b),) = c.num_spans
        self._claim(a, b, float(c.value), "patient", patient=c.value)

    def _on_patients(self, c: Cue) -> None:
        for (a, b), v in zip(c.num_spans, c.value, strict=False):
            self._claim(a, b, float(v), "patient", patient=v)
        self.scope.patient = None

    def _on_visit(self, c: Cue) -> None:
        if c.start in self.bound_visit_spans:
            return
        sc = self.scope
        v = None if c.value == "latest" else c.value
        vals = v if isinstance(v, list) else [v]
        for a, b in c.num_spans:
            vv = int(self.text[a:b])
            self._claim(a, b, float(vv), "visit", patient=sc.patient, visit=vv)
        adom = next_domain(self.text, self.cues, c, sc.domain)
        for vv in vals:
            if vv is not None and c.start not in self.postfix_visits and not c.range_end:
                self.out.anchor((self.pi, sc.patient, adom), vv, c.start)
        sc.visit = vals[-1] if not isinstance(v, list) else None

    def _on_ref_visit(self, c: Cue) -> None:
        for a, b in c.num_spans:
            self._claim(
                a,
                b,
                float(c.value),
                "visit",
                patient=self.scope.patient,
                visit=c.value,
                reference=True,
            )

    def _on_domain(self, c: Cue) -> None:
        sc = self.scope
        # "rest tremor 2 ..., giving a motor examination score of 5": a part's score ends the item
        own = sc.items and {code_domains().get(k) for k in sc.items} == {c.value}
        if not own or _PART_SCORE.match(self.text, c.end):
            sc.items, sc.item_phrase = None, ""
        sc.domain = c.value

    def _on_item(self, c: Cue) -> None:
        sc = self.scope
        codes, doms, phrase = c.value
        known = codes & self.idx.items_known
        if not known and codes:  # another instrument's name for an item the facts hold
            known = same_concept(phrase) & self.idx.items_known
        if known:
            codes = known
        doms = {code_domains()[k] for k in codes}
        if len(doms) > 1 and sc.domain in doms:
            narrowed = codes_in_domain(codes, sc.domain)
            if narrowed & self.idx.items_known or not known:
                codes, doms = narrowed, {sc.domain}
        sc.domain = next(iter(doms)) if len(doms) == 1 else None
        sc.items, sc.item_phrase = codes, phrase

    # ---- numbers

    def _on_date(self, tok: NumberToken, i: int) -> None:
        sc = self.scope
        nxt = self.value_toks[i + 1] if i + 1 < len(self.value_toks) else None
        if (
            self.last_date_end is not None
            and _DATE_LIST_GAP.fullmatch(self.text[self.last_date_end : tok.start])
        ) or (
            nxt is not None
            and nxt.kind == "date"
            and _DATE_LIST_GAP.fullmatch(self.text[tok.end : nxt.start])
        ):
            sc.visit = None  # a list or range of dates, its first one too: each read on its own
        self.last_date_end = tok.end
        self.claims.append(
            Claim(
                tok.text,
                tok.start,
                tok.end,
                tok.value,
                "date",
                patient=sc.patient,
                visit=sc.visit,
                date=tok.date,
                dates_value=tok.start in self.postfix_dates,
                paragraph=self.pi,
                sentence=self.si,
            )
        )
        if sc.visit is None and tok.date and sc.patient is not None:
            dv = self.idx.visit_of_date(sc.patient, tok.date)
            if dv is not None:
                sc.visit = dv
                self.out.anchor((self.pi, sc.patient, sc.domain), dv, tok.start)

    def _on_value(self, tok: NumberToken, vi: int) -> None:
        sc = self.scope
        prev_end = self.value_toks[vi - 1].end if vi > 0 else self.s0
        next_start = self.value_toks[vi + 1].start if vi + 1 < len(self.value_toks) else self.s1
        kind, after = kind_for(tok, self.text, self.s0, prev_end, next_start)
        cl = Claim(
            tok.text,
            tok.start,
            tok.end,
            tok.value,
            "value",
            kind=kind,
            patient=sc.patient,
            visit=sc.visit,
            domain=sc.domain,
            items=sc.items,
            item_phrase=sc.item_phrase,
            signed=tok.signed,
            decimals=tok.decimals,
            paragraph=self.pi,
            sentence=self.si,
        )
        if kind == "count_visits":  # "6 PDQ-8 questionnaires", "UPDRS: 5 assessments"
            named = COUNT_INSTRUMENT_RE.match(after) or COUNT_LABEL_RE.search(
                self.text, self.s0, tok.start
            )
            cl.instrument = ("pdq8" if named.group(1) else "updrs") if named else None
        if self._is_range_end(tok):
            cl.visit = None  # "from X to Y": the two ends are not at the running visit
        self._bind_postfix_visit(cl, tok, next_start)
        self._bind_postfix_date(cl, tok, vi)
        self._bind_postfix_domain(cl, tok)
        self._bind_reference(cl, tok, after)
        _settle_kind(cl)
        if cl.visit is not None and cl.kind in _ANCHORED_KINDS:
            self.out.anchor((self.pi, cl.patient, cl.domain), cl.visit, tok.start, mention=False)
        self.claims.append(cl)

    def _is_range_end(self, tok: NumberToken) -> bool:
        pre = self.text[max(self.s0, tok.start - 8) : tok.start]
        post_txt = self.text[tok.end : tok.end + 20]
        return bool(_FROM_END.search(pre) and _TO_NUMBER.match(post_txt)) or bool(
            _FROM_N_TO_END.search(self.text[max(self.s0, tok.start - 30) : tok.start])
        )

    def _bind_postfix_visit(self, cl: Claim, tok: NumberToken, next_start: int) -> None:
        """A visit written right after the number binds to it ("14 at visit 3")."""
        post = [
            c
            for c in self._cues_in(tok.end, min(next_start, tok.end + 30))
            if c.kind in ("visit", "ref_visit")
        ]
        if not post or post[0].kind != "visit":
            return
        if not _POSTFIX_GAP.fullmatch(self.text[tok.end : post[0].start]):
            return
        pc = post[0]
        if isinstance(pc.value, list):
            cl.visit, cl.visit_list = None, [v for v in pc.value if v is not None]
        else:
            cl.visit = self.scope.visit = None if pc.value == "latest" else pc.value
        self.postfix_visits.add(pc.start)

    def _bind_postfix_date(self, cl: Claim, tok: NumberToken, vi: int) -> None:
        """A day written right after the number dates it ("23 on 8 May 2021", "10 (8 May
        2021)"): the number is the value at the patient's session of that date (none when the
        date is no visit date of the patient: the date claim then fails on its own). The date
        is read next with no running visit, so that it resolves to the same session."""
        if vi + 1 >= len(self.value_toks):
            return
        nxt = self.value_toks[vi + 1]
        if nxt.kind != "date" or not nxt.date or len(nxt.date) != 10:
            return
        if not _DATE_GAP.fullmatch(self.text[tok.end : nxt.start]):
            return
        cl.visit = self.idx.visit_of_date(self.scope.patient, nxt.date)
        self.scope.visit = None
        self.postfix_dates.add(nxt.start)

    def _bind_postfix_domain(self, cl: Claim, tok: NumberToken) -> None:
        """'3 points on the motor score': a domain right after the number is its domain."""
        pdom = [c for c in self._cues_in(tok.end, tok.end + 40) if c.kind == "domain"]
        if pdom and _DOMAIN_GAP.fullmatch(self.text[tok.end : pdom[0].start]):
            cl.domain = self.scope.domain = pdom[0].value

    def _bind_reference(self, cl: Claim, tok: NumberToken, after: str) -> None:
        """'from baseline', 'since visit 2', 'from the previous visit' after the number."""
        refs = [c for c in self._cues_in(tok.end, tok.end + len(after)) if c.kind == "ref_visit"]
        if not refs:
            return
        r = refs[0].value
        cl.ref_visit = (cl.visit - 1 if cl.visit else None) if r == "previous" else r
        if r == "previous" and cl.kind in (None, "change", "mean", "max", "min"):
            cl.kind = "delta"
        elif cl.kind is None and not cl.signed:
            cl.kind = "since"  # "gait 4 from visit 3": the value since visit 3, or the change
        elif cl.kind in (None, "change", "mean", "max", "min"):
            cl.kind = "pair"
            self._bind_pair_end(cl, refs[0], tok, after)

    def _bind_pair_end(self, cl: Claim, ref: Cue, tok: NumberToken, after: str) -> None:
        """'from baseline to visit 3': a visit after the reference is this number's visit."""
        later = [
            c
            for c in self._cues_in(ref.end, tok.end + len(after) + 20)
            if c.kind == "visit"
            and not isinstance(c.value, list)
            and re.match(r"\s*(?:to|and)\s*(?:the\s+)?$", self.text[ref.end : c.start], re.I)
        ]
        if not later:
            return
        lv = None if later[0].value == "latest" else later[0].value
        cl.visit = lv
        self.bound_visit_spans.add(later[0].start)
        for a, b in later[0].num_spans:
            self._claim(a, b, float(lv or 0), "visit", patient=self.scope.patient, visit=lv)
        self.scope.visit = lv
        if lv is not None:
            self.out.anchor((self.pi, self.scope.patient, self.scope.domain), lv, later[0].start)


#: the reader's step for each kind of cue (cues.Cue.kind): a closed set, one handler each
_ON_CUE: dict[str, Callable[[_SentenceReader, Cue], None]] = {
    "paren_open": _SentenceReader._on_paren_open,
    "paren_close": _SentenceReader._on_paren_close,
    "semicolon": _SentenceReader._on_semicolon,
    "patient": _SentenceReader._on_patient,
    "patients": _SentenceReader._on_patients,
    "visit": _SentenceReader._on_visit,
    "ref_visit": _SentenceReader._on_ref_visit,
    "domain": _SentenceReader._on_domain,
    "item": _SentenceReader._on_item,
}


def _settle_kind(cl: Claim) -> None:
    """The default kind of a number with no kind cue, and the kinds read without context."""
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


def _direction_sign(word: str, before: str) -> int | None:
    if word.startswith("declin"):
        return -1 if _SCORES_HAVE_END.search(before) else 1
    if word.startswith(NEGATIVE_DIR):
        return -1
    if word.startswith(POSITIVE_DIR):
        return 1
    return None


def _bind_directions(
    text: str, s0: int, s1: int, claims: list[Claim], s_cues: list[Cue], low: str | None = None
) -> None:
    """A direction word binds to the nearest change claim before it in the sentence (else the
    next one after it)."""
    changes = [c for c in claims if c.role == "value" and c.kind in SIGNED_KINDS]
    if not changes:
        return

    def between(a: int, b: int, kinds: tuple[str, ...]) -> bool:
        return any(a <= c.start < b and c.kind in kinds for c in s_cues)

    for m in literal_scan.finditer(DIRECTION_RE, text, low, s0, s1):
        before = text[max(s0, m.start() - 25) : m.start()].lower()
        if _NEGATED_BEFORE.search(before[-12:]) or THRESHOLD_FOR.search(before):
            continue  # "the MCID for worsening" names a threshold, not a change's direction
        sign = _direction_sign(m.group(1).lower(), before)
        if sign is None:
            continue
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
            and not _CLAUSE_MARK.search(text[m.end() : c.start])
            and not between(m.end(), c.start, ("patient", "patients"))
        ]
        target = prev[-1] if prev else (nxt[0] if nxt else None)
        if target is not None and target.direction is None:
            target.direction = sign
            target.direction_word = m.group(1)
