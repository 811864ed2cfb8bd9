"""What a word in a sentence is about, for the statement checker: its clause, the patient(s)
(nearest patient cue before it in the paragraph, else the plan's only patient), the subject (the
domain and item cues of its clause, else the nearest in the sentence; "all domains" = every
domain, "all three parts" = the three UPDRS parts) and the visit span (the clause's visits; "baseline" = the series' first visit)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.grounding.cues import Cue as _Cue

DOMAINS = ("motor", "adl", "nonmotor", "qol")
#: clause marks; also "and" before a second verb of the same subject ("fell from 10 at visit 1 to
#: 5 at visit 2 and was unchanged at 5 at visit 3": each verb has its own visits)
CLAUSE_SPLIT = re.compile(
    r"[;,]|\s(?:while|whereas|but|although|though)\s|:\s"
    r"|\sand\s+(?=(?:then\s+)?(?:was|were|remained|stayed)\s+(?:unchanged|stable|steady|flat)\b)",
    re.I,
)
ALL_DOMAINS = re.compile(
    r"\b(?:all|every|each|both)\s+(?:four\s+|4\s+|three\s+|3\s+)?domains?\b|\bacross (?:the )?domains\b|\bacross the board\b",
    re.I,
)

#: "all three parts", "every part of the UPDRS": the three parts the MA-RAG scale sums
UPDRS_PARTS = ("motor", "adl", "nonmotor")
ALL_PARTS = re.compile(
    r"\b(?:all|every|each|both)\s+(?:of\s+the\s+)?(?:(?:three|3)\s+)?parts?\b", re.I
)


@dataclass
class SentenceCtx:
    """One sentence of a paragraph's work text, for the word checks: its bounds `[s0, s1)`, its
    cues and the paragraph's (for the patient carried over from earlier sentences)."""

    text: str
    s0: int
    s1: int
    paragraph: int
    cues: list[_Cue]
    all_cues: list[_Cue]
    #: the sentence's domain and item cues, in text order
    subject_cues: list[_Cue] = field(init=False)
    #: the text lower-cased when it is ASCII (literal_scan), None otherwise
    low: str | None = None

    def __post_init__(self) -> None:
        self.subject_cues = [c for c in self.cues if c.kind in ("domain", "item")]

    def clause(self, pos: int) -> tuple[int, int]:
        """The bounds of the clause of the sentence that holds `pos`."""
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


def subjects_of(
    ctx: SentenceCtx, a: int, b: int, pos: int
) -> list[tuple[str | None, frozenset[str] | None, str]]:
    """(domain, items, phrase) cues in [a, b); the clause first, then the sentence."""

    def subj(c: _Cue) -> tuple[str | None, frozenset[str] | None, str]:
        if c.kind == "domain":
            return (c.value, None, ctx.text[c.start : c.end])
        codes, _doms, phrase = c.value
        return (None, codes, phrase)

    subjects = ctx.subject_cues
    found = [subj(c) for c in subjects if a <= c.start < b]
    if found:
        return found
    if ALL_DOMAINS.search(ctx.text, ctx.s0, ctx.s1):
        return [(d, None, d) for d in DOMAINS]
    if ALL_PARTS.search(ctx.text, ctx.s0, ctx.s1):
        return [(d, None, d) for d in UPDRS_PARTS]
    before = [c for c in subjects if c.start < pos]
    if before:
        return [subj(before[-1])]
    after = [c for c in subjects if c.start >= pos]
    return [subj(after[0])] if after else []


def visits_in(ctx: SentenceCtx, a: int, b: int) -> tuple[list[tuple[str, Any, str]], bool]:
    """Visit cues in [a, b) as (kind, value, text); whether a 'latest' cue is among them."""
    out = []
    for c in ctx.cues:
        if a <= c.start < b and c.kind in ("visit", "ref_visit"):
            out.append((c.kind, c.value, ctx.text[c.start : c.end]))
    return out, any(v == "latest" for _, v, _ in out)


def resolve_visit(value: Any, cue_text: str, series: Mapping[int, Any]) -> int | None:
    """The visit of `series` a visit cue names ("latest" = its last visit, "baseline" = its
    first); None for "the previous visit", a list of visits, or no value."""
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


def visit_span(
    ctx: SentenceCtx, a: int, b: int, series: Mapping[int, Any]
) -> tuple[int, int] | None:
    """The (first, last) visits of `series` that the clause [a, b) spans: "from A to B",
    "between A and B", "since A" (to the latest), "at V" (from the previous visit to V); without a
    visit in the clause, the sentence's, else the whole series. None for an empty series."""
    visits = sorted(series)
    if not visits:
        return None
    cues, _ = visits_in(ctx, a, b)
    if not cues:
        # no visit in the clause: the sentence's span when it names one ("from baseline to visit
        # 3, ..., stable"), else the whole selected series ("moderate at the latest assessment;
        # no clinically meaningful change")
        cues, _ = visits_in(ctx, ctx.s0, ctx.s1)
        named = [c for c in cues if c[0] == "ref_visit" or isinstance(c[1], list)]
        if len(cues) < 2 and not named:
            return visits[0], visits[-1]
    refs = [resolve_visit(v, t, series) for k, v, t in cues if k == "ref_visit"]
    ats: list[int | None] = []
    for k, v, t in cues:
        if k == "visit":
            if isinstance(v, list):
                ats += [int(x) for x in v]
            else:
                ats.append(resolve_visit(v, t, series))
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


def listed_visits(ctx: SentenceCtx, a: int, b: int) -> list[int]:
    """The visits of a list cue in the clause [a, b) ("severe at visits 2 and 3"): a word
    scoped by such a list holds at each of them. Empty when the clause names no list."""
    cues, _ = visits_in(ctx, a, b)
    for k, v, _t in reversed(cues):
        if k == "visit" and isinstance(v, list):
            return [int(x) for x in v]
    return []


def at_visit(ctx: SentenceCtx, a: int, b: int, series: Mapping[int, Any]) -> int | None:
    """The one visit of `series` the clause [a, b) (else the sentence) names, its last single
    visit cue; the series' latest visit when it names none (None for an empty series)."""
    cues, _ = visits_in(ctx, a, b)
    if not cues:
        cues, _ = visits_in(ctx, ctx.s0, ctx.s1)
    for k, v, t in reversed(cues):
        if k == "visit" and not isinstance(v, list):
            r = resolve_visit(v, t, series)
            if r is not None:
                return r
    return max(series) if series else None


_GROUP_BEFORE = re.compile(r"\b(?:both|all|each of the|the two)\s+patients\b", re.I)
#: "The PDQ-8 total fell in both patients ...": the group right after the word
_GROUP_AFTER = re.compile(r"\w*\s+(?:in|for)\s+(?:both|all|each of the|the two)\s+patients\b", re.I)


#: "unchanged at 11 in patient 59 and fell from 9 to 8 in patient 10": in a sentence whose parts
#: each name their patient after them, the patient right after the word, before any "and" or
#: clause mark, is the one it describes
_PATIENT_AFTER = re.compile(
    r"\w*(?:(?!\band\b|\bwhile\b|\bbut\b)[^;,.:()])*?\b(?:in|for)\s+(?:patient|participant|subject)"
    r"\s+#?(\d+)\b",
    re.I,
)

_PATIENT_TAIL = re.compile(r"\b(?:in|for)\s+(?:patient|participant|subject)\s+#?\d+", re.I)


def patients_for(ctx: SentenceCtx, pos: int, only_patient: int | None) -> list[int]:
    """The patient(s) a word at `pos` is about: in a sentence of parts that each name their
    patient after them, the one its own part names ("fell from 9 to 8 in patient 10"); else the nearest patient cue before it in the paragraph; for "Both patients improved ...: patient 3 ... and patient 8 ..." (or "improved in
    both patients, ... in patient 3 and ... in patient 8") every patient the rest of the sentence
    names; else the plan's only patient (none when there is neither)."""
    after = _PATIENT_AFTER.match(ctx.text, pos, min(ctx.s1, pos + 60))
    if after and len(_PATIENT_TAIL.findall(ctx.text, ctx.s0, ctx.s1)) >= 2:
        return [int(after.group(1))]
    ps = ctx.patients_at(pos, _para_start(ctx.text, ctx.s0))
    if ps:
        return ps
    if _GROUP_BEFORE.search(ctx.text, ctx.s0, pos) or _GROUP_AFTER.match(ctx.text, pos, ctx.s1):
        named = named_after(ctx, pos)
        if len(named) >= 2:
            return named
    return [only_patient] if only_patient is not None else []


def named_after(ctx: SentenceCtx, pos: int) -> list[int]:
    """The patients named in the sentence after `pos`, in order, once each."""
    out: list[int] = []
    for c in ctx.cues:
        if c.start < pos or c.kind not in ("patient", "patients"):
            continue
        for p in c.value if c.kind == "patients" else [c.value]:
            if p not in out:
                out.append(p)
    return out
