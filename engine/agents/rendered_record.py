"""The release record of a rendered text, looked up from its citations (no prose is parsed).

A writer returns its text with the statements each span renders (engine.writing.citing). Every
number of the text is checked by lookup:
- a number inside a cited span must be one of the cited statements' values (signed as written,
  or its size when written without a sign; within the value's tolerance), or an identifier of
  them: a visit number after "visit(s)", a patient id after "patient(s)", a date of one of their
  sessions; the innermost citation is tried first, then the ones around it;
- a number outside every citation is unsupported ("not rendered from a statement").
Each number becomes a claim with the ledger values it matched (the provenance view links them),
each sentence a verdict (supported when it cites and every number in it holds; neutral when it
has neither), and the coverage is the share of the agent's key statements the text cites. The
record has the shape of the prose checker's (engine.grounding.guard), which stays for model text,
`marag check` and the evaluation; tests run it over every rendered text as an oracle.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.agents.statement_lookup import Pool, RunIndex
from engine.clinical.key_facts import DOMAIN_AGENTS, in_digest
from engine.clinical.statements import Statement, Statements
from engine.grounding.numbers import NumberToken, extract_numbers, paper_tokens
from engine.grounding.sentences import split_sentences
from engine.metrics import in_order
from engine.types import FactValue
from engine.writing.citing import Citation, Rendered

_LIST = r"(?:\d+(?:,\s*|\s+and\s+))*"
#: a visit number as the writers write it: "visit 3", "visits 2, 3 and 4"
VISIT_BEFORE = re.compile(rf"\b(?:visit\s+|visits\s+{_LIST})$", re.I)
#: a patient id: "patient 4", "patients 3 and 8", "proj id 23"
PATIENT_BEFORE = re.compile(rf"\b(?:patient\s+#?|proj id\s+|patients\s+{_LIST})$", re.I)


@dataclass(slots=True)
class _Claim:
    tok: NumberToken
    role: str
    matched: list[FactValue] = field(default_factory=list)
    ids: tuple[str, ...] = ()
    reason: str = ""
    total: int = 0  # matched values after narrowing (the record lists MAX_MATCHED of them)

    @property
    def supported(self) -> bool:
        return not self.reason

    def to_dict(self, fv_dict: _ValueDicts) -> dict[str, Any]:
        fv = self.matched[0] if self.matched else None
        out = {
            "span": [self.tok.start, self.tok.end],
            "text": self.tok.text,
            "value": self.tok.value,
            "role": self.role,
        }
        out.update(fv_dict.context(fv, self.role == "value"))  # "kind" to "context"
        if out["items"] is not None:
            out["items"] = list(out["items"])  # each claim its own list, as before
        out["status"] = "correct" if not self.reason else "wrong"
        out["reason"] = self.reason
        out["expected"] = []
        out["matched"] = [fv_dict(f) for f in self.matched[:MAX_MATCHED]]
        out["matched_total"] = len(self.matched)
        out["statements"] = list(self.ids)
        return out


class _ValueDicts:
    """A ledger value as the record writes it, made once per run and value (the run's texts
    match the same values again and again); the record's readers never change them."""

    def __init__(self) -> None:
        self.made: dict[int, dict[str, Any]] = {}
        self.contexts: dict[tuple[int, bool], dict[str, Any]] = {}

    def __call__(self, f: FactValue) -> dict[str, Any]:
        got = self.made.get(id(f))
        if got is None:
            got = self.made[id(f)] = dict(vars(f))
        return got

    def context(self, fv: FactValue | None, value_role: bool) -> dict[str, Any]:
        """A claim's fields from "kind" to "context", which follow from its first matched
        value and whether it is a value (copied into each claim; made once per run)."""
        key = (id(fv), value_role)
        got = self.contexts.get(key)
        if got is None:
            got = self.contexts[key] = {
                "kind": fv.kind if fv and value_role else None,
                "patient": fv.patient if fv else None,
                "visit": fv.visit if fv else None,
                "ref_visit": None,
                "domain": fv.domain if fv else None,
                "items": None,
                "direction": None,
                "date": fv.date if fv else None,
                "reference": False,
                "context": True,
            }
            if fv and fv.kind == "item" and fv.item:
                got["items"] = [fv.item]
        return got


def _ends_with(pat: re.Pattern[str], before: str, words: tuple[str, ...]) -> bool:
    """`pat.search(before)` for a pattern anchored at the end whose every match starts with one
    of `words` and continues with list characters only (digits, commas, "and"): such a match
    starts at the last occurrence of one of the words, so only that start is tried."""
    if not before.isascii():
        return pat.search(before) is not None
    low = before.lower()
    j = max(low.rfind(w) for w in words)
    return j >= 0 and pat.match(before, j) is not None


def _role(text: str, tok: NumberToken, start: int) -> str:
    before = text[max(start, tok.start - 60) : tok.start]
    if tok.kind == "date":
        # a bare year's digits after "patient" are a patient id (patient 1916 of 10,000)
        year = tok.date is not None and len(tok.date) == 4 and tok.text.isdigit()
        if year and _ends_with(PATIENT_BEFORE, before, ("patient", "proj id")):
            return "patient"
        return "date"
    if _ends_with(VISIT_BEFORE, before, ("visit",)):
        return "visit"
    if _ends_with(PATIENT_BEFORE, before, ("patient", "proj id")):
        return "patient"
    return "value"


def _claim(
    r: Rendered, sts: Statements, tok: NumberToken, pools: dict, cits: Sequence[Citation]
) -> _Claim:
    """One number's claim; `cits` are the citations holding it, innermost first."""
    if not cits:
        return _Claim(tok, "value", reason="not rendered from a statement")
    role = _role(r.text, tok, cits[-1].start)
    for c in cits:  # innermost first
        pool = pools.get(c.ids)
        if pool is None:
            # a pool of every statement of the run: those in the run's order
            whole = len(c.ids) == len(sts)
            run = pools.get(("index",))
            if run is None:
                run = pools[("index",)] = RunIndex(sts)
            pool = pools[c.ids] = Pool(
                sts.items if whole else [sts.get(i) for i in c.ids], run, whole
            )
        if role == "patient":  # an identifier: no ledger value to link
            if tok.value in pool.patients:
                return _Claim(tok, role, [], c.ids)
            continue
        hit = pool.match(role, tok)
        if hit:
            return _Claim(tok, role, hit, c.ids)
    what = {"value": "a value", "visit": "a visit", "patient": "a patient", "date": "a date"}[role]
    return _Claim(
        tok, role, ids=cits[0].ids, reason=f"{tok.text} is not {what} of the cited statements"
    )


def _holding(r: Rendered, toks: Sequence[NumberToken]) -> list[list[Citation]]:
    """For each token (in text order), the citations holding it, innermost first (`r.at` of
    each, in one sweep over the citations sorted by start)."""
    cits = r.citations
    k, active, out = 0, [], []
    for t in toks:
        p = t.start
        while k < len(cits) and cits[k].start <= p:
            active.append(cits[k])
            k += 1
        active = [c for c in active if c.end > p]
        out.append(sorted(active, key=_outer_first_neg) if len(active) > 1 else list(active))
    return out


def _outer_first_neg(c: Citation) -> int:
    return -c.depth


def _claims(r: Rendered, sts: Statements, toks: Sequence[NumberToken], pools: dict) -> list[_Claim]:
    """The claims of every token. A claim depends only on its token, the text and citations of
    its outermost citation and the cited statements, so a citation whose text, inner citations
    and tokens another text of the run already had (the final text repeats the agents' texts)
    reuses that text's claims, before narrowing (engine runs are read once per run: `pools`)."""
    holding = _holding(r, toks)
    cit_starts = [c.start for c in r.citations]  # sorted by start (engine.writing.citing.finish)
    out: list[_Claim] = []
    i, n = 0, len(toks)
    while i < n:
        outer = holding[i][-1] if holding[i] else None
        if outer is None:
            out.append(_claim(r, sts, toks[i], pools, ()))
            i += 1
            continue
        j = i + 1
        while j < n and holding[j] and holding[j][-1] is outer:
            j += 1
        a = outer.start
        key = (
            "claims",
            r.text[a : outer.end],
            outer.ids,
            tuple(
                (c.start - a, c.end - a, c.ids, c.depth)
                for c in r.citations[
                    bisect_left(cit_starts, a) : bisect_left(cit_starts, outer.end)
                ]
                if c.end <= outer.end and c is not outer
            ),
            tuple(
                (t.start - a, t.end - a, t.text, t.value, t.kind, t.signed, t.decimals, t.date)
                for t in toks[i:j]
            ),
        )
        got = pools.get(key)
        if got is None:
            made = [_claim(r, sts, toks[k], pools, holding[k]) for k in range(i, j)]
            got = pools[key] = [(c.role, c.matched, c.ids, c.reason) for c in made]
            out.extend(made)
        else:
            out.extend(
                _Claim(t, role, matched, ids, reason)
                for t, (role, matched, ids, reason) in zip(toks[i:j], got, strict=True)
            )
        i = j
    return out


MAX_MATCHED = 12  # matched values the record lists per number (all are counted)


def _narrow(claims: list[_Claim], sentence: Sequence[int]) -> None:
    """A value that several cited values equal is the one of the patient last named before it
    in the same citation ("patient 23: motor 25"), and the one at the visit written beside it in
    the same sentence: the visit right after it ("12 at visit 3"), else the last one before it
    ("visit 7 (2021-01-23): PDQ-8 1"), when one of them is."""
    patient: float | None = None
    ids: tuple[str, ...] = ()
    last_visit: dict[int, float] = {}  # sentence -> the last visit written in it so far
    for i, c in enumerate(claims):
        if c.ids != ids:
            patient, ids = None, c.ids
        if c.role == "patient":
            patient = c.tok.value
        if c.role == "visit":
            last_visit[sentence[i]] = c.tok.value
        if c.role != "value" or len(c.matched) < 2:
            continue
        if patient is not None and len({v.patient for v in c.matched}) > 1:
            c.matched = [v for v in c.matched if v.patient in (patient, None)] or c.matched
        j = next(
            (j for j in range(i + 1, min(i + 3, len(claims))) if claims[j].role == "visit"), None
        )
        visit = None
        if j is not None and claims[j].ids == c.ids and sentence[j] == sentence[i]:
            visit = claims[j].tok.value
        elif sentence[i] in last_visit:
            visit = last_visit[sentence[i]]
        if visit is not None and len({v.visit for v in c.matched}) > 1:
            c.matched = [v for v in c.matched if v.visit in (visit, None)] or c.matched


def _sentences(r: Rendered, claims: Sequence[_Claim], fv_dict: Any) -> list[dict[str, Any]]:
    """One verdict per sentence; `citations` index the record's citation list."""
    out = []
    starts = [c.tok.start for c in claims]  # in text order
    cits = r.citations  # sorted by start (engine.writing.citing.finish)
    k, active = 0, []  # indexes of the citations started so far that may still reach on
    for _p, a, b in split_sentences(r.text):
        mine = claims[bisect_left(starts, a) : bisect_left(starts, b)]
        while k < len(cits) and cits[k].start < b:
            active.append(k)
            k += 1
        # the citations that start before the sentence ends and end after it starts (sentences
        # come in text order: one that ended before this sentence ends before every later one)
        active = [j for j in active if cits[j].end > a]
        over = list(active)
        cited = bool(over)
        bad = [c for c in mine if not c.supported]
        status = "unsupported" if bad else "supported" if cited else "neutral"
        if not cited and not mine:
            status = "neutral"
        out.append(
            {
                "text": r.text[a:b],
                "span": [a, b],
                "status": status,
                "reasons": [c.reason for c in bad],
                # one matched value per number (the claims list them all)
                "facts": [{"values": [fv_dict(c.matched[0])]} for c in mine if c.matched],
                "citations": over,
            }
        )
    return out


def _key_statements(
    sts: Statements, agent: str, patients: Sequence[int], digest: bool = False
) -> list[Statement]:
    want = set(patients)
    keys = [s for s in sts.key_facts if not want or s.patient in want or s.patient is None]
    if agent in DOMAIN_AGENTS:
        return [s for s in keys if s.kind == "change" and s.subject == agent]
    if digest:  # the final agent's digest: the rendered details state the rest
        keys = [s for s in keys if in_digest(s.kind)]
    return keys if agent == "final" else []


#: value kinds that state a finding (a count, threshold, visit index or date does not)
_STATING = frozenset(
    {
        "score",
        "item",
        "pdq8_si",
        "delta",
        "cumulative",
        "slope",
        "slope_year",
        "rank",
        "mean",
        "max",
        "min",
    }
)


def _coverage(claims: Sequence[_Claim], keys: Sequence[Statement]) -> dict[str, Any]:
    """A key statement is stated when a number of the text, in a citation of it, matched one of
    its finding values (a cohort finding: when it is cited at all)."""
    by_value: dict[int, list[str]] = {}
    for k in keys:
        # "at or above 3 at visit 7" states a flag: its threshold and its visits
        flag = k.kind in ("red_flag", "new_onset")
        for v in k.values:
            if v.kind in _STATING or (flag and v.kind in ("threshold", "visit")):
                by_value.setdefault(id(v), []).append(k.id)
    stated: set[str] = {k.id for k in keys if k.kind == "cohort" and not k.values}
    key_ids = {k.id for k in keys}
    cited_keys: dict[tuple[str, ...], set[str]] = {}  # per cited id set: the key ids in it
    for c in claims:
        mine = cited_keys.get(c.ids)
        if mine is None:
            mine = cited_keys[c.ids] = key_ids.intersection(c.ids)
        if not mine:
            continue
        for v in c.matched:
            for sid in by_value.get(id(v), ()):
                if sid in mine:
                    stated.add(sid)
    if any(k.kind == "cohort" for k in keys):
        cited = {i for c in claims for i in c.ids}
        stated |= {k.id for k in keys if k.kind == "cohort" and k.id in cited}
    missing = [s for s in keys if s.id not in stated]
    n = len(keys) - len(missing)
    return {
        "value": n / len(keys) if keys else 1.0,
        "stated": n,
        "total": len(keys),
        "missing": [_describe(s) for s in missing],
        "missing_ids": [s.id for s in missing],
    }


def _describe(s: Statement) -> str:
    who = f"patient {s.patient}" if s.patient is not None else "cohort"
    where = f" (visits {', '.join(map(str, s.visits))})" if s.visits else ""
    return f"{who}: {s.kind} {s.subject or ''} {s.label}{where}".replace("  ", " ")


def _scoped_order(r: Rendered, claims: Sequence[_Claim]) -> float:
    """1.0 when within every citation the visits written never go backwards."""
    by: dict[Citation, list[int]] = {}
    for c in claims:
        if c.role == "visit":
            for cit in r.at(c.tok.start)[:1]:
                by.setdefault(cit, []).append(int(c.tok.value))
    return 1.0 if all(in_order(v) for v in by.values()) else 0.0


def rendered_record(
    r: Rendered,
    sts: Statements,
    *,
    agent: str,
    plan_patients: Sequence[int] = (),
    coverage_min: float = 1.0,
    digest: bool = False,
) -> dict[str, Any]:
    """The guard record of a rendered text (see the module docstring); `digest`: the final
    agent's digest, whose key statements leave out those the details state."""
    pools = sts.memo  # one pool per cited set of statements, shared by the run's texts
    claims = _claims(r, sts, extract_numbers(r.text), pools)
    bounds = [b for _p, _a, b in split_sentences(r.text)]
    _narrow(claims, [bisect_right(bounds, c.tok.start) for c in claims])
    bad = [c for c in claims if not c.supported]
    unsupported = [
        {
            "span": [c.tok.start, c.tok.end],
            "text": c.tok.text,
            "reason": c.reason,
            "context": "citation",
            "expected": [],
        }
        for c in bad
    ]
    if not r.text.strip():
        unsupported.append(
            {
                "span": None,
                "text": "",
                "reason": "the text is empty",
                "context": "whole text",
                "expected": [],
            }
        )
    fv_dict = pools.get(("value dicts",))
    if fv_dict is None:
        fv_dict = pools[("value dicts",)] = _ValueDicts()
    sents = _sentences(r, claims, fv_dict)
    cov = _coverage(claims, _key_statements(sts, agent, plan_patients, digest))
    removable = [
        {"text": s["text"], "span": s["span"], "reasons": s["reasons"]}
        for s in sents
        if s["status"] == "unsupported"
    ]
    st_passed = not removable and cov["value"] >= coverage_min and bool(r.text.strip())
    toks = paper_tokens(r.text)
    visits = [int(c.tok.value) for c in claims if c.role == "visit"]
    n = len(sents)
    return {
        "numbers": len(claims),
        "numeric_tokens": len(set(toks)),
        "claims_with_context": len(claims),
        "numbers_without_context": 0,
        "claim_accuracy": (len(claims) - len(bad)) / len(claims) if claims else 1.0,
        "unsupported": unsupported,
        "fact_precision": (len(claims) - len(bad)) / len(claims) if claims else 1.0,
        "hallucination_rate": len(bad) / len(claims) if claims else 0.0,
        "temporal_fidelity": _scoped_order(r, claims),
        "temporal_fidelity_strict": in_order(visits),
        "visit_mentions": visits,
        "claims": [c.to_dict(fv_dict) for c in claims],
        "statements": {
            "passed": st_passed,
            "coverage": cov["value"],
            "coverage_detail": cov,
            "sentences": sents,
            "sentences_total": n,
            "unsupported_sentences": len(removable),
            "unsupported_sentence_rate": len(removable) / n if n else 0.0,
            "removable": removable,
        },
        "coverage": cov["value"],
        "unsupported_sentences": len(removable),
        "sentences_total": n,
        "statements_passed": st_passed,
        "checked_by": "lookup",
        "citations": [{"span": [c.start, c.end], "statements": list(c.ids)} for c in r.citations],
    }
