"""Item-level findings of one patient: what a clinician reports beyond the domain scores.

Owns, computed in code from the fact table F and the red-flag rows:
- items at or above `findings.high_item_min` (3 = moderate / often) at the latest assessment of
  each instrument, with the anchor word of the scale (contexts/thresholds.json `item_anchors`);
- items up `findings.item_rise_min` (2) points or more since the instrument's first assessment;
- new onset (`findings.new_onset`): an item at 0 at every earlier assessment and >= 1 now;
- red flags grouped per item and rule, each with one status (`flag_status`) from the item at the
  latest assessment that scored it and is not possibly missing data: current (at or above the
  threshold), resolved (0), below (above 0, under the threshold); unscored when the latest
  assessment left it blank; unconfirmed when every later score is possibly missing data;
- pertinent negatives: the safety items (`findings.pertinent_negatives`) scored 0 at the latest
  assessment that is not possibly missing data (engine.clinical.course zeros), naming the
  suspect assessments skipped.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.clinical.course import InstrumentCourse, compute_courses, course_rules
from engine.contexts import Contexts
from engine.types import Fact, RedFlagRow
from kb_store.profiles import load_profile


@dataclass(frozen=True)
class ItemFinding:
    patient: int
    instrument: str
    domain: str
    item: str
    label: str
    value: float
    visit: int
    word: str  # anchor word of the value
    first_value: float | None = None  # for rises: the value at the first assessment
    first_visit: int | None = None


@dataclass
class FlagGroup:
    patient: int
    rule: str
    label: str
    item: str
    item_label: str
    domain: str
    visits: list[int] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    threshold: float = 0
    current: bool = False
    why: str = ""
    source: str = ""
    status: str = "resolved"  # current | resolved | below | unscored | unconfirmed (flag_status)
    # unconfirmed: the later visits, all possibly missing data; unscored: the later visits where
    # the item was not scored
    suspect_after: list[int] = field(default_factory=list)
    # the latest assessment after the flag that scored the item and is not possibly missing data
    latest_visit: int | None = None
    latest_value: float | None = None


@dataclass(frozen=True)
class FallsPoint:
    visit: int
    value: float
    label: str  # the item's label
    suspect: bool  # the assessment is possibly missing data


@dataclass
class Findings:
    high: list[ItemFinding] = field(default_factory=list)
    rises: list[ItemFinding] = field(default_factory=list)
    new_onset: list[dict[str, Any]] = field(default_factory=list)  # red-flag shaped rows
    flags: list[FlagGroup] = field(default_factory=list)
    negatives: list[tuple[str, str, int]] = field(default_factory=list)  # (code, words, visit)
    # visit of a negative -> the later assessments skipped as possibly missing data
    negatives_skipped: dict[int, list[int]] = field(default_factory=dict)
    # the falls item (red-flag rule `falls`) at every assessment (for the final agent's facts)
    falls: list[FallsPoint] = field(default_factory=list)


def anchor_word(rules: Mapping[str, Any], instrument: str, value: float) -> str:
    words = rules["findings"]["item_anchors"]["pdq8" if instrument == "pdq8" else "updrs"]["words"]
    i = int(round(value))
    return words[i] if 0 <= i < len(words) else ""


def _latest_by_instrument(facts: Sequence[Fact]) -> dict[str, int]:
    out: dict[str, int] = {}
    for f in facts:
        out[f.instrument] = max(out.get(f.instrument, 0), f.visit)
    return out


def flag_row(
    f: Fact,
    code: str,
    value: float,
    threshold: float,
    rule: str,
    label: str,
    why: str,
    source: str,
) -> RedFlagRow:
    """The red-flag row of item `code` of fact `f` (one shape for every rule)."""
    return {
        "patient": f.patient,
        "visit": f.visit,
        "date": f.date,
        "domain": f.domain,
        "item": code,
        "item_label": load_profile(f.profile).item(code).label,
        "value": value,
        "threshold": threshold,
        "rule": rule,
        "label": label,
        "why": why,
        "source": source,
    }


def new_onset_rows(facts: Sequence[Fact], ctx: Contexts) -> list[dict[str, Any]]:
    """Red-flag rows for new onset: 0 at every earlier assessment (at least one), >= 1 now."""
    rules = course_rules(ctx)["findings"]["new_onset"]
    out = []
    by: dict[tuple[int, str], list[Fact]] = defaultdict(list)
    for f in facts:
        by[(f.patient, f.profile)].append(f)
    for (_p, prof), fs in by.items():
        fs = sorted(fs, key=lambda f: f.visit)
        for rule in rules:
            for code in rule["items"].get(prof, ()):
                seen = [(f, f.items.get(code)) for f in fs if f.items.get(code) is not None]
                for k, (f, x) in enumerate(seen):
                    if k == 0 or x < 1:  # type: ignore[operator]
                        continue
                    if all(y == 0 for _, y in seen[:k]):
                        out.append(
                            flag_row(
                                f,
                                code,
                                float(x),
                                1,
                                rule["id"],
                                rule["label"],
                                rule["why"],
                                rule["source"],
                            )
                        )
                    break
    return sorted(out, key=lambda r: (r["patient"], r["visit"], r["item"]))


Suspect = Callable[[str, str, int], bool]


def _item_findings(
    patient: int,
    inst: str,
    fs: Sequence[Fact],
    last_v: int,
    rules: Mapping[str, Any],
    out: Findings,
) -> None:
    """Items at or above `high_item_min` at the latest assessment, and items up `item_rise_min`
    or more since the instrument's first assessment that scored them (appended to `out`)."""
    fr = rules["findings"]
    hi_min = float(fr["high_item_min"])
    rise_min = float(fr["item_rise_min"])
    prof = load_profile(fs[0].profile)
    for f in fs:
        if f.visit != last_v:
            continue
        for code, x in f.items.items():
            if x is None:
                continue
            label, word = prof.item(code).label, anchor_word(rules, inst, x)
            if x >= hi_min:
                out.high.append(ItemFinding(patient, inst, f.domain, code, label, x, f.visit, word))
            first = next(
                (
                    (g.visit, g.items.get(code))
                    for g in fs
                    if g.domain == f.domain and g.items.get(code) is not None
                ),
                None,
            )
            if first is not None and first[0] != f.visit and x - first[1] >= rise_min:  # type: ignore[operator]
                out.rises.append(
                    ItemFinding(
                        patient, inst, f.domain, code, label, x, f.visit, word, first[1], first[0]
                    )
                )


def _negatives(
    inst: str, fs: Sequence[Fact], rules: Mapping[str, Any], suspect: Suspect, out: Findings
) -> None:
    """Pertinent negatives: each safety item at 0 at the latest assessment of its domain that is
    not possibly missing data, naming the suspect assessments skipped."""
    items = rules["findings"]["pertinent_negatives"]["items"].get(fs[0].profile, [])
    for code, words in dict((c, w) for c, w in items).items():
        with_item = [f for f in fs if code in f.items]
        skipped: list[int] = []
        for f in sorted(with_item, key=lambda f: -f.visit):
            if suspect(inst, f.domain, f.visit):
                skipped.append(f.visit)
                continue
            if f.items.get(code) == 0:
                out.negatives.append((code, words, f.visit))
                if skipped:
                    out.negatives_skipped[f.visit] = sorted(skipped)
            break


def _falls(mine: Sequence[Fact], ctx: Contexts, suspect: Suspect) -> list[FallsPoint]:
    """The falls item (red-flag rule `falls`) at every assessment."""
    fall_rule = next((r for r in ctx.red_flags if r.id == "falls"), None)
    out = []
    for f in sorted(mine, key=lambda f: f.visit):
        for code in fall_rule.items.get(f.profile, ()) if fall_rule else ():
            x = f.items.get(code)
            if x is not None:
                label = load_profile(f.profile).item(code).label
                out.append(FallsPoint(f.visit, x, label, suspect(f.instrument, f.domain, f.visit)))
    return out


def _flag_groups(
    patient: int,
    rows: Sequence[Mapping[str, Any]],
    latest: Mapping[str, int],
    visit_inst: Mapping[tuple[int, str], str],
) -> dict[tuple[str, str], FlagGroup]:
    """Red-flag rows grouped per rule and item; a group is current when one of its rows is at the
    latest assessment of its instrument."""
    groups: dict[tuple[str, str], FlagGroup] = {}
    for r in rows:
        if r["patient"] != patient:
            continue
        key = (r["rule"], r["item"])
        g = groups.get(key)
        if g is None:
            g = groups[key] = FlagGroup(
                patient,
                r["rule"],
                r["label"],
                r["item"],
                r["item_label"],
                r["domain"],
                threshold=r["threshold"],
                why=r["why"],
                source=r["source"],
            )
        g.visits.append(r["visit"])
        g.values.append(r["value"])
        inst = visit_inst.get((r["visit"], r["domain"]))
        if inst is not None and latest.get(inst) == r["visit"]:
            g.current = True
    return groups


def flag_status(
    latest_value: float | None,
    reliable_value: float | None,
    threshold: float,
    reliable_is_latest: bool,
) -> str:
    """The one status rule of a red flag (../shared/reference/clinical-summary-style.md).

    `latest_value`: the item at the latest assessment of its instrument (None: blank there);
    `reliable_value`: the item at the latest assessment after the flag that scored it and is not
    possibly missing data (None: no such assessment); `reliable_is_latest`: that assessment is
    the latest. Unscored when the latest value is blank; unconfirmed when every later score is
    possibly missing data, or when the item is still at or above the threshold but the latest
    assessment is possibly missing data; current at or above the threshold at the latest
    assessment; resolved only at 0; below when above 0 but under the threshold."""
    if latest_value is None:
        return "unscored"
    if reliable_value is None:
        return "unconfirmed"
    if reliable_value >= threshold:
        return "current" if reliable_is_latest else "unconfirmed"
    return "resolved" if reliable_value == 0 else "below"


def _settle_status(
    g: FlagGroup,
    mine: Sequence[Fact],
    visit_inst: Mapping[tuple[int, str], str],
    latest: Mapping[str, int],
    suspect: Suspect,
) -> None:
    """A group's status by `flag_status`, with the later visits its wording names; a new-onset
    group whose item is still at or above its threshold is current."""
    if g.current:
        g.status = "current"
        return
    last = max(g.visits)
    inst = visit_inst.get((last, g.domain))
    mine_d = [f for f in mine if f.instrument == inst and f.domain == g.domain]
    after = [f for f in mine if f.instrument == inst and f.visit > last]
    later = sorted(f.visit for f in mine_d if f.visit > last and f.items.get(g.item) is not None)
    reliable = [v for v in later if not suspect(str(inst), g.domain, v)]
    lv = latest.get(inst) if inst is not None else None
    by_visit = {f.visit: f.items.get(g.item) for f in mine_d}
    if reliable:
        g.latest_visit, g.latest_value = reliable[-1], by_visit[reliable[-1]]
    g.status = flag_status(
        by_visit.get(lv) if lv is not None else None,
        g.latest_value,
        g.threshold,
        bool(reliable) and reliable[-1] == lv,
    )
    if g.status == "current":
        g.current = True
    elif g.status == "unconfirmed":
        g.suspect_after = later
    elif g.status == "unscored":
        g.suspect_after = sorted({f.visit for f in after})


def patient_findings(
    patient: int,
    facts: Sequence[Fact],
    red_flag_rows: Sequence[Mapping[str, Any]],
    ctx: Contexts,
    courses: Mapping[tuple[int, str], InstrumentCourse] | None = None,
) -> Findings:
    rules = course_rules(ctx)
    mine = [f for f in facts if f.patient == patient]
    latest = _latest_by_instrument(mine)

    def suspect(inst: str, domain: str, visit: int) -> bool:
        ic = (courses or {}).get((patient, inst))
        return ic is not None and ic.is_suspect(domain, visit)

    out = Findings()
    by_inst: dict[str, list[Fact]] = defaultdict(list)
    for f in mine:
        by_inst[f.instrument].append(f)
    for inst, fs in by_inst.items():
        fs = sorted(fs, key=lambda f: f.visit)
        _item_findings(patient, inst, fs, latest[inst], rules, out)
        _negatives(inst, fs, rules, suspect, out)
    out.falls = _falls(mine, ctx, suspect)
    out.new_onset = list(new_onset_rows(mine, ctx))
    visit_inst = {(f.visit, f.domain): f.instrument for f in mine}
    groups = _flag_groups(patient, [*red_flag_rows, *out.new_onset], latest, visit_inst)
    for g in groups.values():
        _settle_status(g, mine, visit_inst, latest, suspect)
    out.flags = sorted(groups.values(), key=lambda g: (not g.current, g.visits[0], g.item))
    return out


def findings_values(all_findings: Mapping[int, Findings]) -> list:
    """Ledger rows for the item rises the text states (change of an item since its first
    assessment: kind cumulative with the item code)."""
    from engine.types import FactValue

    out = []
    for fd in all_findings.values():
        for r in fd.rises:
            # a rise from the previous visit is also a delta: the checker reads "since the
            # previous visit" as one
            kinds = ("cumulative", "delta") if r.first_visit == r.visit - 1 else ("cumulative",)
            for kind in kinds:
                out.append(
                    FactValue(
                        kind,
                        r.value - (r.first_value or 0),
                        r.patient,
                        r.visit,
                        r.domain,
                        r.item,
                        label=f"item change from visit {r.first_visit}",
                        source="computed",
                    )
                )
    return out


def red_flags(facts: Sequence[Fact], ctx: Contexts) -> list[dict[str, Any]]:
    out = []
    for f in facts:
        for rule in ctx.red_flags:
            codes = rule.items.get(f.profile, ())
            for code in tuple(f.items) if codes == ("*",) else codes:  # "*": every item
                val = f.items.get(code)
                if code not in f.items or val is None or val < rule.min:
                    continue
                out.append(
                    flag_row(f, code, val, rule.min, rule.id, rule.label, rule.why, rule.source)
                )
    return sorted(out, key=lambda r: (r["patient"], r["visit"], r["item"]))


def incongruence_flags(facts: Sequence[Fact], ctx: Contexts) -> list[dict[str, Any]]:
    by_visit: dict[tuple[int, int], list[Fact]] = defaultdict(list)
    for f in facts:
        if f.score is not None:
            by_visit[(f.patient, f.visit)].append(f)
    out = []
    for (p, v), fs in sorted(by_visit.items()):
        for z in fs:
            if z.score != 0:
                continue
            for e in fs:
                cut = ctx.moderate_cutoff(e.profile, e.domain)
                if e is z or cut is None or e.score is None or e.score < cut:
                    continue
                out.append(
                    {
                        "patient": p,
                        "visit": v,
                        "date": z.date,
                        "domain": z.domain,
                        "elevated_domain": e.domain,
                        "values": {z.domain: z.score, e.domain: e.score},
                        "cutoff": cut,
                        "rule": ctx.incongruence_rule,
                        "source": "contexts/thresholds.json incongruence.moderate_cutoff."
                        f"{e.profile}: {ctx.moderate_source.get(e.profile, '')}",
                    }
                )
    return out


def course_and_findings(
    facts: Sequence[Fact], ctx: Contexts, patients: Sequence[int]
) -> dict[str, Any]:
    """State fields `courses` and `findings` (findings before red-flag rows: rises, negatives)."""
    courses = compute_courses(facts, ctx)
    rows = red_flags(facts, ctx)
    present = {f.patient for f in facts}
    findings = {p: patient_findings(p, facts, rows, ctx, courses) for p in patients if p in present}
    return {"courses": courses, "findings": findings}


def all_red_flags(rows: list[dict], findings: Mapping[int, Findings]) -> list[dict]:
    """Threshold red flags plus new-onset rows, in patient, visit, item order. Each row says
    whether it is `current`: the row of a current flag group at that group's latest assessment
    (what the summary lists as a current red flag; computed here once, read by the checks)."""
    extra = [r for fd in findings.values() for r in fd.new_onset]
    current = {
        (p, g.item, g.visits[-1])
        for p, fd in findings.items()
        for g in fd.flags
        if g.current and g.visits
    }
    out = sorted([*rows, *extra], key=lambda r: (r["patient"], r["visit"], r["item"]))
    return [{**r, "current": (r["patient"], r["item"], r["visit"]) in current} for r in out]


def running_label(label: str) -> str:
    """Item label in running text: lower case, limb words without the checker's direction words
    ("lower extremity" would read as "lower" = improved)."""
    return (
        label.lower()
        .replace("right lower extremity", "right leg")
        .replace("left lower extremity", "left leg")
        .replace("right upper extremity", "right arm")
        .replace("left upper extremity", "left arm")
    )
