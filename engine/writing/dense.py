"""The facts backend: deterministic prose for every agent and the final summary (zero LLM calls).

Used as the whole text when no LLM is configured (cfg.llm == "facts") and as the grounding guard's
fallback for each agent. Every number is stated with its context (patient, visit, date, domain,
reference visit, MCID) and comes from the computed series, table B or cohort statistics, so every
number here is in the run's ledger. Structure follows the paper's synthesis modes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from engine.clinical.cohort import render_cohort_facts, value_text
from engine.clinical.item_cohort import is_item_answer, item_finding, item_lines
from engine.clinical.monitor import MonitorItem
from engine.clinical.series import change_phrase, fmt, fmt_signed, score_phrase, unread_phrase
from engine.clinical.statements import Statements
from engine.contexts import Contexts
from engine.types import Fact, SeriesRow
from engine.writing.citing import cite
from kb_store.profiles import DOMAIN_WORDS, DOMAINS, load_profile

NOTABLE_ITEM_LEVEL = 3  # item rating listed as notable: 3 = moderate (MDS-UPDRS) / often (PDQ-8)
Series = Mapping[tuple[int, str], Sequence[SeriesRow]]


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]


def _visit_sentence(r: SeriesRow) -> str:
    base = ", baseline" if r.visit == 1 else ""
    ch = change_phrase(r)
    return f"visit {r.visit} ({r.date}{base}): {score_phrase(r)}" + (f", {ch}" if ch else "") + "."


def _about(sts: Statements | None, patient: int | None, subject: str | None = None) -> list:
    return sts.about(patient, subject) if sts is not None else []


def domain_text(
    domain: str, rows: Sequence[SeriesRow], ctx: Contexts, sts: Statements | None = None
) -> str:
    """N_d for one domain: every visit of every patient, with change from the previous visit and
    from the reference (baseline) visit."""
    if not rows:
        return ""
    word = DOMAIN_WORDS[domain]
    by_p: dict[int, list[SeriesRow]] = {}
    for r in rows:
        by_p.setdefault(r.patient, []).append(r)
    paras = []
    for p, rs in by_p.items():
        sents = [f"Patient {p}, {_visit_sentence(r)}" for r in rs]
        paras.append(cite(" ".join(sents), _about(sts, p, domain)))
    profiles = {r.profile for r in rows}
    tail = []
    for prof in sorted(profiles):
        if ctx.mcid_for(prof, domain) is None:
            tail.append(
                f"No verified minimal clinically important difference exists for the {word} "
                "scale, so changes are reported by direction only."
            )
        elif ctx.mcid[prof][domain].basis != "published":  # type: ignore[union-attr]
            tail.append(
                f"The {word} MCID is a reference value borrowed from the MDS-UPDRS "
                "(not validated on this scale)."
            )
        if not ctx.severity.get(prof, {}).get(domain) and domain != "qol":
            tail.append(
                f"No published severity cut-offs apply to the {word} domain of this scale, "
                "so no severity level is given."
            )
    return f"{_cap(word)}: " + "\n".join(paras) + ("\n" + " ".join(tail) if tail else "")


def comparison_text(series: Series, patients: Sequence[int], sts: Statements | None = None) -> str:
    """Summary part of O: one paragraph per domain contrasting the patients, then discordance.
    Written once per run (the comparison agent's text, the dense and the readable final texts
    repeat it): kept in the run's statements memo."""
    if sts is None:
        return _comparison_text(series, patients, None)
    key = ("comparison text", str(id(series)), *map(str, patients))
    got = sts.memo.get(key)
    if got is None:
        got = sts.memo[key] = _comparison_text(series, patients, sts)
    return got  # type: ignore[return-value]


def _comparison_text(series: Series, patients: Sequence[int], sts: Statements | None) -> str:
    paras = []
    latest_label: dict[str, dict[int, str]] = {}
    for dom in DOMAINS:
        parts = []
        for p in patients:
            rs = [r for r in series.get((p, dom), []) if r.score is not None]
            if not rs:
                continue
            first, last = rs[0], rs[-1]
            if first is last:
                parts.append(
                    f"patient {p} has one selected visit, visit {first.visit} ({first.date}), "
                    f"{fmt(first.score)}"
                )
                continue
            c = last.cumulative
            if not unread_phrase(last, first):
                # no label from a partial or possibly-not-examined score: not a discordance
                latest_label.setdefault(dom, {})[p] = c.label if c else "n/a"
            parts.append(
                f"patient {p} went from {fmt(first.score)} at visit {first.visit} ({first.date}) "
                f"to {fmt(last.score)} at visit {last.visit} ({last.date}), {_overall(first, last)}"
            )
        if parts:
            pool = [x for p in patients for x in _about(sts, p, dom)]
            paras.append(cite(f"{_cap(DOMAIN_WORDS[dom])}: " + "; ".join(parts) + ".", pool))
    disc = []
    for dom, labels in latest_label.items():
        if len(set(labels.values())) > 1:
            disc.append(
                f"{DOMAIN_WORDS[dom]} ("
                + ", ".join(f"patient {p} {lab}" for p, lab in labels.items())
                + ")"
            )
    if disc:
        paras.append(
            cite(
                "Discordance between patients over the selected visits: " + "; ".join(disc) + ".",
                [x for p in patients for x in _about(sts, p)],
            )
        )
    elif latest_label:
        paras.append(
            "No discordance: the patients' overall changes carry the same label in every domain."
        )
    return "\n\n".join(paras)


def partial_direction(dc: Any) -> str:
    """The direction words of a course whose first or latest score is partial
    (engine.clinical.caveats): no MCID label, band or trend is read from it."""
    latest = dc.last.visit in dc.partial
    when = "the latest" if latest else "the first"
    if dc.domain == "total":
        return f"parts partial at {when} assessment, so the total is not read as a change"
    blank, _ = dc.partial[dc.last.visit if latest else dc.first.visit]
    return (
        f"partial at {when} assessment ({blank} item(s) missing): no MCID label, band or "
        "trend from it"
    )


def si_sentences(si: Mapping[int, float], visits: Sequence[int], where: Any) -> list[str]:
    """The PDQ-8 Summary Index at `visits` (100 x sum / 32, Jenkinson et al. 1997), and where
    it is not given: the index needs every item scored (no pro-rating rule is on file)."""
    out = []
    have = [v for v in visits if v in si]
    if have:
        out.append(
            "PDQ-8 Summary Index " + "; ".join(f"at visit {v}, {si[v]:.2f} SI" for v in have) + "."
        )
    no_si = [v for v in visits if v not in si]
    if no_si:
        out.append(
            f"No PDQ-8 Summary Index at {where(no_si)}: items were left blank, and the index "
            "needs every item scored."
        )
    return out


def _overall(first: SeriesRow, last: SeriesRow) -> str:
    """The change first -> last with its MCID label, or with the caveat that withholds it."""
    why = unread_phrase(last, first)
    c = last.cumulative
    if why and c is not None:
        return f"{fmt_signed(c.value)} from {last.ref_word} ({why})"
    return change_phrase(last).split(", ")[-1]


def cohort_text(cohort: Mapping[str, Any], sts: Statements | None = None) -> str:
    """G: the statistic, the patient it concerns, the ranking and the cohort statistics."""
    if is_item_answer(cohort):
        return item_text(cohort, sts, head=_cap(item_finding(cohort)) + ".")
    stat, ranking = render_cohort_facts(dict(cohort), top_n=5)
    return cite(f"{_cap(stat)}.\n\n" + _cohort_blocks(ranking), _cohort_pool(sts))


def item_text(cohort: Mapping[str, Any], sts: Statements | None, head: str) -> str:
    """An item question's text: the finding, one line per listed patient (its items with visits
    and dates, current or below the flag threshold now), the patients at or above the threshold
    earlier only, and how many were not named. Each line is its own citation (its visits)."""
    pool = _cohort_pool(sts)
    now, before, more = item_lines(cohort)
    blocks = [head] * bool(head) + [
        "\n".join(cite(ln, pool) for ln in lines) for lines in (now, before) if lines
    ]
    if more:
        blocks.append(" ".join(more))
    return cite("\n\n".join(blocks), pool)


def cohort_head(c: Mapping[str, Any], sts: Statements | None = None) -> str:
    """The cohort finding in one or two sentences (the cohort answer's digest)."""
    if c["patient"] is None:
        head = f"Cohort finding: the {c['label']} is {value_text(dict(c))} across {c['n_patients']} patients."
    else:
        at = f" at visit {c['visit']}" if c.get("visit") else ""
        head = (
            f"Cohort finding: patient {c['patient']} has the {c['label']}, {value_text(dict(c))}{at}, "
            f"rank 1 of {len(c['ranking'])} patients ranked."
        )
        if c["ties"]:
            head += f" Tied at rank 1: patients {', '.join(map(str, c['ties']))}."
    return cite(head, _cohort_pool(sts))


def cohort_details(c: Mapping[str, Any], sts: Statements | None = None) -> str:
    """The ranking, the cohort statistics and the PDQ-8 ranking of a cohort answer."""
    _, ranking = render_cohort_facts(dict(c), top_n=5)
    return cite(_cohort_blocks(ranking), _cohort_pool(sts))


def cite_all(text: str, sts: Statements | None) -> str:
    """`text` citing what a cohort text renders (`_cohort_pool`)."""
    return cite(text, _cohort_pool(sts))


def _cohort_pool(sts: Statements | None) -> list:
    """What a cohort text renders: the answer's cohort statements (statistics, ranks, ranked
    scores, slopes, counts of the answer's scope: engine.agents.cohort) and the run's counts,
    not the named patients' facts (their item values would match any small number)."""
    return [s for s in sts if s.kind in ("cohort", "count")] if sts is not None else []


def _cohort_blocks(ranking: str) -> str:
    """Ranking lines as one paragraph; cohort statistics and the PDQ-8 ranking as their own."""
    lines = ranking.split("\n")
    ranks = [ln for ln in lines if ln.startswith("rank ")]
    rest = [ln for ln in lines if not ln.startswith("rank ")]
    blocks = [".\n".join(ranks) + "."] if ranks else []
    blocks += [ln.rstrip(".") + "." for ln in rest]
    return "\n\n".join(blocks)


def _progress_line(rs: Sequence[SeriesRow]) -> str:
    scored = [r for r in rs if r.score is not None]
    if not scored:
        return ""
    first, last = scored[0], scored[-1]
    word = DOMAIN_WORDS[first.domain]
    if first is last:
        return f"{word}: only visit {first.visit} ({first.date}) selected, {score_phrase(first)}"
    start = (
        f"baseline (visit 1, {first.date}) {fmt(first.score)}"
        if first.visit == 1
        else f"visit {first.visit} ({first.date}) {fmt(first.score)}"
    )
    c = last.cumulative
    return (
        f"{word}: {start}; visit {last.visit} ({last.date}) {fmt(last.score)}, "
        f"{_overall(first, last)}"
        if c
        else f"{word}: visit {last.visit} {fmt(last.score)}"
    )


def trajectory_text(
    series: Series,
    patients: Sequence[int],
    flags: Mapping[str, Sequence[dict]],
    monitor: Sequence[MonitorItem] = (),
) -> str:
    paras = []
    for p in patients:
        lines = [_progress_line(series.get((p, d), [])) for d in DOMAINS]
        lines = [ln for ln in lines if ln]
        if lines:
            anchored = any(r.visit == 1 for d in DOMAINS for r in series.get((p, d), []))
            head = (
                "anchored to baseline"
                if anchored
                else "over the selected visits (baseline not selected)"
            )
            paras.append(f"Progression for patient {p}, {head}: " + "; ".join(lines) + ".")
    # cross-domain patterns
    for p in patients:
        groups: dict[str, list[str]] = {}
        for d in DOMAINS:
            scored = [r for r in series.get((p, d), []) if r.score is not None]
            if len(scored) < 2 or scored[-1].cumulative is None:
                continue
            c = scored[-1].cumulative
            key = c.label + (" (direction only)" if c.mcid is None else "")
            groups.setdefault(key, []).append(DOMAIN_WORDS[d])
        if groups:
            paras.append(
                f"Cross-domain pattern for patient {p}: "
                + "; ".join(f"{k}: {', '.join(v)}" for k, v in groups.items())
                + "."
            )
    paras.append(_monitor_paragraph(monitor, patients, flags))
    return "\n\n".join(paras)


def monitor_phrase(item: MonitorItem) -> str:
    """One to-monitor item (engine.clinical.monitor) in the words both writers use."""
    if item.kind == "current_flags":
        return f"current red flags ({', '.join(item.items)})"
    if item.kind == "open_flags":
        return f"red flags not confirmed resolved ({', '.join(item.items)})"
    dom = "UPDRS total" if item.domain == "total" else DOMAIN_WORDS[str(item.domain)]
    return f"{dom} ({', '.join(item.reasons)})"


def _monitor_paragraph(
    monitor: Sequence[MonitorItem], patients: Sequence[int], flags: Mapping[str, Sequence[dict]]
) -> str:
    watch = [
        f"patient {m.patient} {monitor_phrase(m)}"
        for p in patients
        for m in monitor
        if m.patient == p
    ]
    out = "Domains to monitor most closely: " + (
        "; ".join(watch) + "."
        if watch
        else "no domain worsened or reached a moderate band, and no red flag is current."
    )
    return out + "\n\n" + flags_text(flags)


NO_FLAGS = "No incongruence or red-flag items were found."


def flags_text(
    flags: Mapping[str, Sequence[dict]], *, red_flags: bool = True, sts: Statements | None = None
) -> str:
    """The incongruence list and (with `red_flags`) the red-flag rows, one list per paragraph.
    Without `red_flags` the caller writes the red flags itself (readable_text, per item) and
    gets "" when there is no incongruence."""
    inc = flags.get("incongruence", [])
    red = flags.get("red_flags", []) if red_flags else []
    parts = []
    if inc:
        parts.append(
            "Possible incongruence to verify: "
            + "; ".join(
                f"patient {r['patient']}, visit {r['visit']}: {DOMAIN_WORDS[r['domain']]} "
                f"{fmt(r['values'][r['domain']])} while {DOMAIN_WORDS[r['elevated_domain']]} (moderate cut-off "
                f"{fmt(r['cutoff'])}) is {fmt(r['values'][r['elevated_domain']])}"
                for r in inc
            )
            + "."
        )
    if red:
        parts.append(
            "Red-flag items: "
            + "; ".join(
                f"patient {r['patient']}, visit {r['visit']}: {DOMAIN_WORDS[r['domain']]} item {r['item_label']} "
                f"{fmt(r['value'])} "
                f"(at or above {fmt(r['threshold'])})"
                for r in red
            )
            + "."
        )
    # separate paragraphs: visits restart in each list (the grounding check orders visits per paragraph)
    who = sorted({r["patient"] for r in [*inc, *red]})
    parts = [cite(x, [s for p in who for s in _about(sts, p)]) for x in parts]
    if parts or not red_flags:
        return "\n\n".join(parts)
    return NO_FLAGS


def single_session_text(
    series: Series,
    facts: Sequence[Fact],
    patients: Sequence[int],
    flags: Mapping[str, Sequence[dict]],
    sts: Statements | None = None,
) -> str:
    paras = []
    for p in patients:
        rows = [r for d in DOMAINS for r in series.get((p, d), [])]
        mine = _about(sts, p)
        for v in sorted({r.visit for r in rows}):
            rs = [r for r in rows if r.visit == v]
            base = ", baseline" if v == 1 else ""
            paras.append(
                cite(
                    f"Patient {p}, visit {v} ({rs[0].date}{base}): "
                    + ", ".join(score_phrase(r) for r in rs)
                    + ".",
                    mine,
                )
            )
            high = []
            for f in facts:
                if f.patient == p and f.visit == v:
                    prof = load_profile(f.profile)
                    top = [
                        f"{prof.item(c).label} {fmt(x)}"
                        for c, x in f.items.items()
                        if x is not None and x >= NOTABLE_ITEM_LEVEL
                    ]
                    if top:
                        level = (
                            "answered often or always"
                            if f.domain == "qol"
                            else "rated moderate or worse"
                        )
                        high.append(
                            f"{_cap(DOMAIN_WORDS[f.domain])} items {level} at "
                            f"visit {v}: " + ", ".join(top) + "."
                        )
            if high:
                paras.append(cite(" ".join(high), mine))
    paras.append(flags_text(flags, sts=sts))
    return "\n\n".join(paras)


def final_text(
    mode: str,
    *,
    series: Series,
    facts: Sequence[Fact],
    patients: Sequence[int],
    flags: Mapping[str, Sequence[dict]],
    cohort: Mapping[str, Any] | None = None,
    monitor: Sequence[MonitorItem] = (),
    sts: Statements | None = None,
) -> str:
    """The final summary in the structure of the synthesis mode (`monitor`: the patients'
    to-monitor items, engine.clinical.monitor, for the trajectory)."""
    if mode == "cohort" and is_item_answer(cohort):
        return item_text(cohort, sts, head=f"Cohort finding: {item_finding(cohort)}.")  # type: ignore[arg-type]
    if mode == "cohort" and cohort is not None:
        return cohort_head(cohort, sts) + "\n\n" + cohort_details(cohort, sts)
    if mode == "comparison":
        return comparison_text(series, patients, sts) + "\n\n" + flags_text(flags, sts=sts)
    if mode == "single_session":
        return single_session_text(series, facts, patients, flags, sts)
    return trajectory_text(series, patients, flags, monitor)
