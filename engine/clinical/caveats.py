"""Which part scores are not read: partial parts and implausible zeros (one rule, every analysis).

A part score of one session carries a caveat, decided here once over the patient's whole record
of the instrument (OFF/untreated sessions, before any visit filter), so that the trajectory, the
single session, the comparison and both cohort paths (Fact objects and the session table) read
the same scores (docs/engine.md "Partial sessions and implausible zeros"):

- ``partial``: more than ``course.partial_blank_share`` of the part's items are blank
  (contexts/thresholds.json, with its clinical reason and source);
- ``zero_session``: every item of the session is 0 and the latest earlier non-zero session of
  the instrument scored at least ``course.zero_after_points`` in total;
- ``zero_always``: the part is 0 on every item at every (>= 2) assessment while another part of
  the same instrument was not;
- ``zero_part``: the part is 0 on every item and its latest earlier non-zero score was at least
  ``course.zero_after_points`` (a 1 -> 0 or 2 -> 0 fall is a plausible change, not a caveat).

From a score with a caveat no MCID label, band, slope or cohort rank is read; the texts state
its value with the caveat. The rule is one vectorised function (`caveat_codes`) over session rows
sorted by group (patient x instrument) and visit; `mark_facts` applies it to Fact objects and the
session table's cohort index to its rows.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.types import Fact

NONE, PARTIAL, ZERO_SESSION, ZERO_ALWAYS, ZERO_PART = 0, 1, 2, 3, 4
NAMES = {NONE: "", PARTIAL: "partial", ZERO_SESSION: "zero_session"}
NAMES |= {ZERO_ALWAYS: "zero_always", ZERO_PART: "zero_part"}
ZEROS = frozenset({"zero_session", "zero_always", "zero_part"})


@dataclass(frozen=True)
class CaveatRule:
    partial_share: float  # more than this share of a part's items blank -> partial
    zero_after: float  # an all-zero part after a non-zero score of at least this is suspect

    @classmethod
    def of(cls, rules: Mapping[str, Any]) -> CaveatRule:
        """From the `course` section the validated contexts loader read."""
        c = rules["course"]
        return cls(float(c["partial_blank_share"]), float(c["zero_after_points"]))


def is_partial(missing: int, n_items: int, rule: CaveatRule) -> bool:
    return n_items > 0 and missing / n_items > rule.partial_share


def _last_nonzero_before(gid: np.ndarray, vals: np.ndarray) -> np.ndarray:
    """Per row, the latest non-zero value of the earlier rows of its group (-1 when none): the
    score a fall to 0 is read against (a run of zeros after it keeps the same reference)."""
    n = len(vals)
    if not n:
        return vals.copy()
    at = np.arange(n)
    idx = np.where(~np.isnan(vals) & (vals > 0), at, -1)
    prev = np.r_[-1, np.maximum.accumulate(idx)[:-1]]
    start = np.maximum.accumulate(np.where(np.r_[True, gid[1:] != gid[:-1]], at, 0))
    return np.where(prev >= start, vals[np.maximum(prev, 0)], -1.0)


def _group_all(gid: np.ndarray, flag: np.ndarray, n_groups: int) -> np.ndarray:
    """Per group: whether every row has `flag` (False for an empty group)."""
    bad = np.bincount(gid, weights=(~flag).astype(float), minlength=n_groups)
    cnt = np.bincount(gid, minlength=n_groups)
    return (bad == 0) & (cnt > 0)


def caveat_codes(
    gid: np.ndarray,
    scores: Mapping[str, np.ndarray],
    missing: Mapping[str, np.ndarray],
    n_items: Mapping[str, np.ndarray],
    rule: CaveatRule,
) -> dict[str, np.ndarray]:
    """The caveat code of each row's part score (module docstring), over session rows sorted by
    group id `gid` (0..k-1, contiguous) and visit. `scores[d]` is NaN where the row does not
    score part d (absent, or every item blank); `missing[d]` / `n_items[d]` count its items."""
    n = len(gid)
    k = int(gid.max()) + 1 if n else 0
    doms = list(scores)
    has = {d: ~np.isnan(scores[d]) for d in doms}
    any_scored = np.zeros(n, dtype=bool)
    all_zero = np.ones(n, dtype=bool)
    total = np.zeros(n)
    for d in doms:
        any_scored |= has[d]
        all_zero &= ~has[d] | (scores[d] == 0)
        total += np.where(has[d], scores[d], 0.0)
    session_zero = any_scored & all_zero
    session_zero &= (
        _last_nonzero_before(gid, np.where(any_scored, total, np.nan)) >= rule.zero_after
    )
    nonzero_of = {
        d: np.bincount(gid[has[d]], weights=(scores[d][has[d]] > 0), minlength=k) > 0 for d in doms
    }
    out: dict[str, np.ndarray] = {}
    for d in doms:
        s, h = scores[d], has[d]
        code = np.zeros(n, dtype=np.int8)
        zero = h & (s == 0)
        part = zero & (_last_nonzero_before(gid, np.where(h, s, np.nan)) >= rule.zero_after)
        code[part] = ZERO_PART
        count = np.bincount(gid[h], minlength=k)
        always_g = (count >= 2) & _group_all(gid[h], s[h] == 0, k)
        others = np.zeros(k, dtype=bool)
        for o in doms:
            if o != d:
                others |= nonzero_of[o]
        code[zero & (always_g & others)[gid]] = ZERO_ALWAYS
        code[h & session_zero] = ZERO_SESSION
        with np.errstate(invalid="ignore", divide="ignore"):
            share = np.where(n_items[d] > 0, missing[d] / np.maximum(n_items[d], 1), 0.0)
        code[h & (share > rule.partial_share)] = PARTIAL
        out[d] = code
    return out


def mark_facts(facts: Sequence[Fact], rule: CaveatRule) -> list[Fact]:
    """The facts with their `caveat` set, judged over these facts (one patient's whole OFF
    record); order kept."""
    if not facts:
        return list(facts)
    sessions = sorted({(f.patient, f.instrument, f.visit) for f in facts})
    groups = {key: i for i, key in enumerate(dict.fromkeys((p, i) for p, i, _ in sessions))}
    row_of = {s: j for j, s in enumerate(sessions)}
    doms = sorted({f.domain for f in facts})
    n = len(sessions)
    scores = {d: np.full(n, np.nan) for d in doms}
    missing = {d: np.zeros(n) for d in doms}
    n_items = {d: np.zeros(n) for d in doms}
    for f in facts:
        j = row_of[(f.patient, f.instrument, f.visit)]
        if f.score is not None:
            scores[f.domain][j] = f.score
        missing[f.domain][j] = f.missing
        n_items[f.domain][j] = len(f.items)
    gid = np.array([groups[(p, i)] for p, i, _ in sessions], dtype=np.int64)
    codes = caveat_codes(gid, scores, missing, n_items, rule)
    out = []
    for f in facts:
        c = NAMES[int(codes[f.domain][row_of[(f.patient, f.instrument, f.visit)]])]
        out.append(f if c == f.caveat or f.score is None else dataclasses.replace(f, caveat=c))
    return out


def caveat_phrase(caveat: str, missing: int = 0) -> str:
    """The words a text uses for a score with a caveat (no MCID label, band or slope from it)."""
    if caveat == "partial":
        return f"partial: {missing} item(s) missing, no band from it"
    if caveat in ZEROS:
        return "every item 0: possibly not examined or missing data"
    return ""


def rule_of(ctx: Any | None) -> CaveatRule:
    """The rule of a run's contexts (engine.contexts.Contexts), or of the shipped contexts."""
    if ctx is not None:
        return CaveatRule.of(ctx.rules)
    return _default_rule()


@functools.lru_cache(maxsize=1)
def _default_rule() -> CaveatRule:
    from engine.config import REPO_ROOT
    from engine.contexts import load_contexts

    return CaveatRule.of(load_contexts(REPO_ROOT / "contexts").rules)
