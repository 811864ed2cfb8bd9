"""Cohort questions over an item: "Which patients have falls?", "Who has hallucinations now?",
"Which patients have any item at 4?".

The item concept is a red-flag rule of contexts/thresholds.json (`red_flags`, read through
engine.contexts): its item codes per profile and its threshold. `Plan.statistic` names it as
"item:<rule id>" ("item:falls", "item:hallucinations", "item:severe_item"); the rules planner finds
it from the clinical words of the query (engine.clinical.concepts) or from "any item at N".

For each patient and item of the concept, over the plan's sessions (OFF/untreated, visit filter
applied): the current score (the latest assessment that scored the item, with its visit and date),
the highest rating and its first visit, and whether it was ever at or above the threshold. Listed:
the items rated above zero now (a rule over every item of a profile, "any item at 4": the items at
or above the threshold now), highest first; counted: patients scored on the item, listed, current
(at or above the threshold now) and ever at or above it. One function computes the answer from
item points; the points come from Fact objects (`item_cohort_facts`) or from the session table's
selection (`item_cohort_table`, items read once per table generation), and both give the same
answer (tests/engine/test_item_cohort.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from engine.clinical.concepts import match_concepts
from engine.clinical.findings import running_label
from engine.clinical.series import fmt
from engine.contexts import RedFlagRule
from engine.types import CohortAnswer, Fact, FactValue
from kb_store.profiles import DOMAINS, load_profile

PREFIX = "item:"
STATISTIC = "item"  # CohortAnswer.statistic of an item answer
STATISTIC_RE = re.compile(r"^item:[a-z0-9_]+$")
LIST_MAX = 20  # patients an answer lists by name (the rest are counted)
ANY_ITEM_RE = re.compile(
    r"\bany\s+(?:single\s+)?items?\s+(?:at|of|scored|rated|=)\s*(?:a\s+)?([0-9])\b", re.I
)

#: (patient, visit, date, item code, value, domain, profile)
Point = tuple[int, int, str, str, float, str, str]


@dataclass(frozen=True)
class ItemConcept:
    id: str
    label: str
    threshold: float
    codes: Mapping[str, tuple[str, ...]]  # profile -> item codes (a rule's "*" expanded)
    group: bool  # every item of a profile ("*", or all of them): listed at or above threshold
    wildcard: bool  # the rule says "*" (any item)
    source: str

    def listed(self, value: float) -> bool:
        return value >= self.threshold if self.group else value > 0


@cache
def _profile_codes(profile: str) -> tuple[str, ...]:
    return tuple(i.code for i in load_profile(profile).items if i.domain in DOMAINS)


def concept_of_rule(rule: RedFlagRule) -> ItemConcept:
    codes: dict[str, tuple[str, ...]] = {}
    group = wildcard = False
    for prof, cs in rule.items.items():
        every = _profile_codes(prof)
        if "*" in cs:
            codes[prof], group, wildcard = every, True, True
            continue
        codes[prof] = tuple(cs)
        group = group or set(cs) >= set(every)
    return ItemConcept(rule.id, rule.label, rule.min, codes, group, wildcard, rule.source)


def item_concepts(rules: Sequence[RedFlagRule]) -> dict[str, ItemConcept]:
    """Every red-flag rule as an item concept, by rule id, in the file's order."""
    return {r.id: concept_of_rule(r) for r in rules}


def concept_id(statistic: str) -> str | None:
    """The concept of an item statistic ("item:falls" -> "falls"); None for any other."""
    return statistic[len(PREFIX) :] if statistic.startswith(PREFIX) else None


def concept_for(statistic: str, rules: Sequence[RedFlagRule]) -> ItemConcept:
    concepts = item_concepts(rules)
    cid = concept_id(statistic)
    if cid not in concepts:
        raise ValueError(
            f"unknown item concept {cid!r}: use one of {', '.join(concepts)} "
            "(the red-flag rules of contexts/thresholds.json)"
        )
    return concepts[cid]


def detect_concept(query: str, rules: Sequence[RedFlagRule]) -> str | None:
    """The item concept a cohort question names: "any item at N" -> the rule over every item
    with threshold N; else the rule (not over every item) whose items the query's clinical words
    name most ("falls" -> falls, "hallucinations" -> hallucinations); None when none."""
    concepts = item_concepts(rules)
    m = ANY_ITEM_RE.search(query)
    if m:
        n = float(m.group(1))
        return next((c.id for c in concepts.values() if c.wildcard and c.threshold == n), None)
    matched = {(x.profile, x.code) for x in match_concepts(query)}
    best, hits = None, 0
    for c in concepts.values():
        if c.group:
            continue
        n_hit = sum((p, code) in matched for p, cs in c.codes.items() for code in cs)
        if n_hit > hits:
            best, hits = c.id, n_hit
    return best


# ---------------------------------------------------------------------------------------------
# points: from Fact objects, or from the session table's selection
# ---------------------------------------------------------------------------------------------


def fact_points(facts: Sequence[Fact], concept: ItemConcept) -> list[Point]:
    """The scored items of the concept in the plan's facts."""
    out: list[Point] = []
    for f in facts:
        for c in concept.codes.get(f.profile, ()):
            x = f.items.get(c)
            if x is not None:
                out.append((f.patient, f.visit, f.date, c, float(x), f.domain, f.profile))
    return out


def _item_columns(table: Any, codes: Sequence[str]) -> dict[str, np.ndarray]:
    """One float column per item code (NaN = blank), parsed from the table's items_json once per
    table generation (kept on the table object, like its cohort index)."""
    cache_ = table.__dict__.setdefault("_item_columns", {})
    todo = [c for c in dict.fromkeys(codes) if c not in cache_]
    if todo:
        raw = table.frame()["items_json"].tolist()
        cols = {c: np.full(len(raw), np.nan) for c in todo}
        for i, s in enumerate(raw):
            d = json.loads(s or "{}")
            for c in todo:
                x = d.get(c)
                if x is not None:
                    cols[c][i] = float(x)
        cache_.update(cols)
    if "_profile" not in table.__dict__:
        table.__dict__["_profile"] = table.frame()["profile"].to_numpy(dtype=object)
    return cache_


def table_points(table: Any, selection: Any, concept: ItemConcept) -> list[Point]:
    """The scored items of the concept in a cohort plan's selection of the session table (the
    rows `selection.kept` holds whose item's domain is scored, as `row_facts` keeps them)."""
    cols = _item_columns(table, [c for cs in concept.codes.values() for c in cs])
    a = selection.index.a
    profile = table.__dict__["_profile"]
    out: list[Point] = []
    for prof, codes in concept.codes.items():
        in_prof = selection.kept & (profile == prof)
        for c in codes:
            dom = load_profile(prof).item(c).domain
            has = a.get(f"has_{dom}")
            if has is None:
                continue
            rows = np.flatnonzero(in_prof & has & ~np.isnan(cols[c]))
            out += [
                (p, v, d, c, x, dom, prof)
                for p, v, d, x in zip(
                    a["proj_id"][rows].tolist(),
                    a["visit"][rows].tolist(),
                    a["date"][rows].tolist(),
                    cols[c][rows].tolist(),
                    strict=True,
                )
            ]
    return out


# ---------------------------------------------------------------------------------------------
# the answer
# ---------------------------------------------------------------------------------------------


def _row(pts: Sequence[Point], concept: ItemConcept) -> dict[str, Any]:
    p, visit, date, code, value, dom, prof = pts[-1]
    peak = max(pts, key=lambda t: (t[4], -t[1]))  # the highest rating, its first visit
    return {
        "patient": p,
        "item": code,
        "item_label": load_profile(prof).item(code).label,
        "domain": dom,
        "profile": prof,
        "value": value,
        "visit": visit,
        "date": date,
        "peak": peak[4],
        "peak_visit": peak[1],
        "peak_date": peak[2],
        "n_assessments": len(pts),
        "current": value >= concept.threshold,
        "ever": peak[4] >= concept.threshold,
    }


def _ranked(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Highest current rating first (competition rank), then patient, then visit."""
    rows = sorted(rows, key=lambda r: (-r["value"], r["patient"], r["visit"]))
    prev, rank = None, 0
    for i, r in enumerate(rows, start=1):
        if r["value"] != prev:
            rank, prev = i, r["value"]
        r["rank"] = rank
    return rows


def _patients(rows: Sequence[Mapping[str, Any]]) -> list[int]:
    return list(dict.fromkeys(r["patient"] for r in rows))


def item_answer(
    points: Sequence[Point], concept: ItemConcept, n_patients: int, notes: Sequence[str] = ()
) -> CohortAnswer:
    """The answer record (the CohortAnswer keys, `item` holding the concept, counts and rows)."""
    order = {(p, c): i for p, cs in concept.codes.items() for i, c in enumerate(cs)}
    by: dict[tuple[int, str], list[Point]] = {}
    for pt in sorted(points, key=lambda t: (t[0], order[(t[6], t[3])], t[1])):
        by.setdefault((pt[0], pt[3]), []).append(pt)
    rows = [_row(pts, concept) for pts in by.values()]
    listed = [r for r in rows if concept.listed(r["value"])]
    ranking = _ranked(listed)
    named = set(_patients(ranking))
    # at or above the threshold at some assessment, no item listed now
    earlier = [r for r in rows if r["ever"] and r["patient"] not in named]
    counts = {
        "scored": len(_patients(rows)),
        "listed": len(_patients(ranking)),
        "current": len(_patients([r for r in rows if r["current"]])),
        "ever": len(_patients([r for r in rows if r["ever"]])),
        "earlier": len(_patients(earlier)),  # ever at or above it, none listed now
    }
    top = ranking[0] if ranking else None
    domains = sorted({r["domain"] for r in rows})
    out_notes = list(notes)
    if not rows:
        out_notes.append(f"No session in the selection scored {concept.label}.")
    return {
        "statistic": STATISTIC,
        "statistic_flag": PREFIX + concept.id,
        "first_visit": None,
        "last_visit": None,
        "domain": domains[0] if len(domains) == 1 else "items",
        "label": f"{concept.label} at the latest assessment that scored it",
        "patient": top["patient"] if top else None,
        "value": top["value"] if top else None,
        "visit": top["visit"] if top else None,
        "ties": [],
        "ranking": ranking,
        "n_patients": n_patients,
        "domain_stats": {},
        "slopes": [],
        "notes": out_notes,
        "item": {
            "concept": concept.id,
            "label": concept.label,
            "threshold": concept.threshold,
            "group": concept.group,
            "source": concept.source,
            "counts": counts,
            "earlier": _ranked(earlier),
        },
    }


def item_cohort_facts(facts: Sequence[Fact], concept: ItemConcept) -> CohortAnswer:
    """The item answer from Fact objects (the per-fact cohort path)."""
    return item_answer(fact_points(facts, concept), concept, len({f.patient for f in facts}))


def item_cohort_table(table: Any, selection: Any, concept: ItemConcept) -> CohortAnswer:
    """The item answer from a cohort plan's selection of the session table."""
    return item_answer(table_points(table, selection, concept), concept, selection.n_patients)


def is_item_answer(cohort: Mapping[str, Any] | None) -> bool:
    return bool(cohort) and cohort.get("statistic") == STATISTIC and "item" in cohort  # type: ignore[union-attr]


def _shown(cohort: Mapping[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(listed rows, earlier rows) of the patients the answer names: the first LIST_MAX listed
    patients and the first LIST_MAX patients flagged earlier only."""
    named = set(_patients(cohort["ranking"])[:LIST_MAX])
    earlier = cohort["item"]["earlier"]
    named_earlier = set(_patients(earlier)[:LIST_MAX])
    return (
        [r for r in cohort["ranking"] if r["patient"] in named],
        [r for r in earlier if r["patient"] in named_earlier],
    )


def item_scope(cohort: Mapping[str, Any]) -> list[int]:
    """The patients an item answer names (bounded by LIST_MAX twice)."""
    listed, earlier = _shown(cohort)
    return sorted({int(r["patient"]) for r in [*listed, *earlier]})


# ---------------------------------------------------------------------------------------------
# ledger values and text
# ---------------------------------------------------------------------------------------------


def _item_value(r: Mapping[str, Any], peak: bool = False) -> FactValue:
    k = "peak_" if peak else ""
    what = "highest rating" if peak else "rating at the latest assessment that scored it"
    return FactValue.make(
        "item",
        float(r["peak" if peak else "value"]),
        int(r["patient"]),
        int(r[f"{k}visit"]),
        r["domain"],
        r["item"],
        r[f"{k}date"],
        label=f"item {r['item']}, {what}",
        source="computed",
    )


def _count(value: int, label: str) -> FactValue:
    return FactValue.make("count", float(value), label=label, source="computed")


def item_values(cohort: Mapping[str, Any], scope: Collection[int] | None = None) -> list[FactValue]:
    """What an item answer states: each named patient's item ratings (current; the highest when
    it differs), the counts and the threshold. `scope` (the answer's named patients) is the
    default; None = every patient of the ranking (the evidence's full ledger)."""
    it = cohort["item"]
    if scope is None:
        listed, earlier = list(cohort["ranking"]), list(it["earlier"])
    else:
        keep = set(scope)
        listed = [r for r in cohort["ranking"] if r["patient"] in keep]
        earlier = [r for r in it["earlier"] if r["patient"] in keep]
    out: list[FactValue] = []
    for r in sorted([*listed, *earlier], key=lambda r: (r["patient"], r["visit"], r["item"])):
        out.append(_item_value(r))
        if r["peak"] != r["value"]:
            out.append(_item_value(r, peak=True))
    n = it["counts"]
    out += [
        _count(n["scored"], f"patients scored on {it['label']}"),
        _count(n["listed"], "patients listed (rated above zero now)"),
        _count(n["current"], "patients at or above the threshold now"),
        _count(n["ever"], "patients ever at or above the threshold"),
        _count(n["earlier"], "patients at or above the threshold earlier only"),
        _count(int(cohort.get("n_patients", 0)), "patients in the cohort"),
    ]
    shown_listed, shown_earlier = _shown(cohort)
    for more, what in (
        (n["listed"] - len(_patients(shown_listed)), "listed patients not named"),
        (n["earlier"] - len(_patients(shown_earlier)), "earlier-only patients not named"),
    ):
        if more > 0:
            out.append(_count(more, what))
    out.append(
        FactValue(
            "threshold",
            float(it["threshold"]),
            item=f"red_flag_{it['concept']}",
            label=it["label"],
            source="contexts/thresholds.json",
        )
    )
    return out


def _what(it: Mapping[str, Any]) -> str:
    thr = fmt(it["threshold"])
    if not it["group"]:
        return f"{it['label']} (red-flag threshold {thr})"
    return "any item at or above " + thr


def item_finding(cohort: Mapping[str, Any]) -> str:
    """The finding: who is listed and the counts, in words the claim reader checks."""
    it, n = cohort["item"], cohort["item"]["counts"]
    thr = fmt(it["threshold"])
    if not n["scored"]:
        return (
            f"{_what(it)}: none of the {cohort.get('n_patients', 0)} patients in the selection "
            "has an assessment that scores the item"
        )
    if it["group"]:
        head = (
            f"{_what(it)} at the latest assessment that scored the item: "
            f"{n['listed']} patients, of {n['scored']} patients scored"
        )
    else:
        head = (
            f"{_what(it)} at the latest assessment that scored it: rated above zero in "
            f"{n['listed']} patients, at or above {thr} (current) in {n['current']} patients, "
            f"of {n['scored']} patients scored on the item"
        )
    return head + f"; at or above {thr} at some assessment: {n['ever']} patients"


def _history(rs: Sequence[Mapping[str, Any]]) -> str:
    """One item: its ratings in visit order ("falling item: 3 at visit 3 (date), 1 at visit 6
    (date)"); several items: per visit, in visit order, so that no visit is written after a later
    one ("at visit 2 (date): saliva item 4, salivation item 4; at visit 11 (date): ...")."""
    if len(rs) > 1:
        return _per_visit(rs)
    parts = []
    for r in rs:
        seen = [f"{fmt(r['value'])} at visit {r['visit']} ({r['date']})"]
        if r["peak"] != r["value"]:
            seen.insert(0, f"{fmt(r['peak'])} at visit {r['peak_visit']} ({r['peak_date']})")
        parts.append(f"{running_label(r['item_label'])} item: " + ", ".join(seen))
    return "; ".join(parts)


def _per_visit(rs: Sequence[Mapping[str, Any]]) -> str:
    seen: dict[tuple[int, str], list[str]] = {}
    for r in sorted(rs, key=lambda r: r["item"]):
        pts = {(r["visit"], r["date"]): r["value"]}
        if r["peak"] != r["value"]:
            pts[(r["peak_visit"], r["peak_date"])] = r["peak"]
        for at, x in pts.items():
            seen.setdefault(at, []).append(f"{running_label(r['item_label'])} item {fmt(x)}")
    return "; ".join(
        f"at visit {v} ({d}): " + ", ".join(items) for (v, d), items in sorted(seen.items())
    )


def _status(rs: Sequence[Mapping[str, Any]], thr: str) -> str:
    if any(r["current"] for r in rs):
        return f"current (at or above {thr})"
    if any(r["value"] > 0 for r in rs):
        was = "at or above " + thr + " earlier" if any(r["ever"] for r in rs) else ""
        return "below the flag threshold now, " + (was or "never at or above " + thr)
    return f"at or above {thr} earlier, zero now"


def _by_patient(rows: Sequence[Mapping[str, Any]]) -> list[list[Mapping[str, Any]]]:
    by: dict[int, list[Mapping[str, Any]]] = {}
    for r in rows:
        by.setdefault(r["patient"], []).append(r)
    return [sorted(rs, key=lambda r: (r["visit"], r["item"])) for rs in by.values()]


def item_lines(cohort: Mapping[str, Any]) -> tuple[list[str], list[str], list[str]]:
    """(listed patients' lines, earlier-only patients' lines, the lines saying how many more were
    not named): one line per patient, the items in visit order with their visits and dates."""
    it = cohort["item"]
    thr = fmt(it["threshold"])
    listed, earlier = _shown(cohort)
    if it["group"]:
        now = [f"Patient {rs[0]['patient']}, {_history(rs)}." for rs in _by_patient(listed)]
        before = [
            f"Patient {rs[0]['patient']}, at or above {thr} earlier only: {_history(rs)}."
            for rs in _by_patient(earlier)
        ]
    else:
        now, before = (
            [f"Patient {rs[0]['patient']}, {_history(rs)}; {_status(rs, thr)}." for rs in group]
            for group in (_by_patient(listed), _by_patient(earlier))
        )
    n = it["counts"]
    more = []
    for left, what in (
        (n["listed"] - len(now), "listed now"),
        (n["earlier"] - len(before), f"at or above {thr} earlier only"),
    ):
        if left > 0:
            more.append(f"{left} more patients {what} are not named here.")
    return now, before, more


def render_item_facts(cohort: Mapping[str, Any]) -> tuple[str, str]:
    """(statistic line, listing block) for the cohort prompt, as render_cohort_facts gives them."""
    now, before, more = item_lines(cohort)
    return item_finding(cohort), "\n".join([*now, *before, *more])
