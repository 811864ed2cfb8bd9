"""Deep links of the analysis pages: which values a link may carry, checked before anything runs.

Owns the check of the URL query parameters that the Patient, Compare and Cohort pages bind to their
widgets (`bind="query-params"`). Streamlit drops a bound value that is not one of the widget's
options and draws the widget's default instead, so `?patient=999&run=1` would run the first patient
of the KB without a word. `check_link` runs before the widgets are drawn: every value that is not
a patient of the knowledge base (the engine's ids, `services.patient_ids`), an instrument or an
analysis of the page, or a visit filter of the plan grammar (`engine.types.VISIT_FILTER_RE`) is
named in one error on the page; `run=1` is dropped from the URL and the page's Run step runs
nothing (`session.link_rejected`), so no engine run and no audit entry follow from a bad link. The
widgets are drawn as usual, for the user to correct and run. Nothing clinical is computed here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import streamlit as st

from dashboard import session, widgets
from engine.types import INSTRUMENTS, VISIT_FILTER_RE

#: how many valid patient ids an error lists before it says "..."
MAX_LISTED_IDS = 12


@dataclass(frozen=True)
class PageLink:
    """The query parameters one analysis page binds to its plan widgets."""

    patients: str  # the patient widget's key (and query parameter)
    single_patient: bool = False  # a selectbox of one patient rather than a list
    analyses: tuple[str, ...] = ()  # the analysis radio's choices; () = no analysis widget
    statistic: bool = False  # the cohort "Rank by" widget


def _is_int(value: str) -> bool:
    try:
        int(value)
    except ValueError:
        return False
    return True


def _ids_text(ids: Sequence[int]) -> str:
    shown = ", ".join(map(str, ids[:MAX_LISTED_IDS]))
    more = f", ... ({len(ids)} in all)" if len(ids) > MAX_LISTED_IDS else ""
    return f"{shown}{more}" if ids else "none"


def _patient_problems(values: Sequence[str], link: PageLink, ids: Sequence[int]) -> list[str]:
    known = set(ids)
    out = []
    if link.single_patient and len(values) > 1:
        out.append(f"`{link.patients}` takes one patient, the link gives {len(values)}")
    for v in values:
        if not v and not link.single_patient:
            continue  # an empty list parameter clears the widget
        if not (_is_int(v) and int(v) in known):
            out.append(
                f"patient `{v}` is not in the knowledge base (its patients: {_ids_text(ids)})"
            )
    return out


def _choice_problems(
    param: str, what: str, values: Sequence[str], labels: Mapping[str, str], *, multi: bool
) -> list[str]:
    """Values of a widget whose URL form is its label (`labels`: plan value -> label)."""
    out = []
    if not multi and len(values) > 1:
        out.append(f"`{param}` takes one {what}, the link gives {len(values)}")
    choices = ", ".join(f"`{lab}`" for lab in labels.values())
    for v in values:
        if v in labels.values() or (multi and not v):
            continue
        hint = f" (write it as `{labels[v]}`)" if v in labels else ""
        out.append(f"unknown {what} `{v}`{hint}; choose one of {choices}")
    return out


def _visit_problems(params: Mapping[str, Sequence[str]]) -> list[str]:
    """`visits` (a label of widgets.VISIT_KINDS) and `n` must make a visit filter of the grammar."""
    out = []
    kinds = {label: kind for kind, label in widgets.VISIT_KINDS.items()}
    if len(params.get("visits", ())) > 1:
        out.append(f"`visits` takes one visit filter, the link gives {len(params['visits'])}")
    for v in params.get("visits", ()):
        if v in kinds:
            continue
        hint = ""
        if VISIT_FILTER_RE.match(v):  # the plan's form: say how a link writes it
            kind, n = widgets.split_visit_filter(v)
            hint = f" (write it as `visits={widgets.VISIT_KINDS[kind]}`"
            hint += f" and `n={n}`)" if "N" in kind else ")"
        choices = ", ".join(f"`{lab}`" for lab in kinds)
        out.append(f"unknown visit filter `{v}`{hint}; choose one of {choices}")
    lo, hi = widgets.N_RANGE
    for v in params.get("n", ()):
        if not (_is_int(v) and lo <= int(v) <= hi):
            out.append(f"visit number / count `n={v}` is not a whole number from {lo} to {hi}")
    return out


def link_problems(
    params: Mapping[str, Sequence[str]], link: PageLink, ids: Sequence[int]
) -> list[str]:
    """One line per bad value in `params` (query parameter -> its values) for this page; [] when
    the link is valid. `ids` are the knowledge base's patient ids."""
    out = _patient_problems(params.get(link.patients, ()), link, ids)
    if link.analyses:
        labels = {a: widgets.ANALYSIS_LABELS[a] for a in link.analyses}
        out += _choice_problems(
            "analysis", "analysis", params.get("analysis", ()), labels, multi=False
        )
    instruments = {i: widgets.INSTRUMENT_LABELS[i] for i in INSTRUMENTS}
    out += _choice_problems(
        "instruments", "instrument", params.get("instruments", ()), instruments, multi=True
    )
    if link.statistic:
        out += _choice_problems(
            "statistic",
            "ranking statistic",
            params.get("statistic", ()),
            widgets.STATISTIC_LABELS,
            multi=False,
        )
    return out + _visit_problems(params)


def check_link(link: PageLink, ids: Sequence[int]) -> bool:
    """Check this page's link (call before its widgets are drawn). True when it is valid; else
    the error names each bad value, `run=1` leaves the URL and this script run runs nothing."""
    params = {k: st.query_params.get_all(k) for k in st.query_params}
    problems = link_problems(params, link, ids)
    session.set_link_rejected(bool(problems))
    if not problems:
        return True
    if "run" in st.query_params:
        del st.query_params["run"]
    st.error(
        "**This link was not run.** "
        + ("It has a value" if len(problems) == 1 else "It has values")
        + " the dashboard does not know:\n\n"
        + "\n".join(f"- {p}" for p in problems)
        + "\n\nNothing was run or recorded. Check the plan below, then press **Run**.",
        icon=":material/link_off:",
    )
    return False
