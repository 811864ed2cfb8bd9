"""Per-user state in `st.session_state`: results keyed by plan + backend, the current result shown
to QA reviewers, a plan parsed from words waiting to be applied to a page's widgets, and whether
this run of an analysis page opened a link with a bad value (dashboard.link_params).

A result is stored under `result_key(plan, backend)`, so a widget change that leaves the plan and
backend as they were (chart options, tabs, the highlighted patient) re-renders from the stored
result without another engine run or LLM call.
"""

from __future__ import annotations

import json
from collections import OrderedDict

import streamlit as st

from engine.types import Plan, Result

RESULTS = "marag_results"
CURRENT = "marag_current"
PENDING = "marag_pending_plan"
LINK_REJECTED = "marag_link_rejected"
MAX_RESULTS = 24


def result_key(plan: Plan, backend: str) -> str:
    return json.dumps(
        {"plan": plan.to_dict(), "query": plan.query, "backend": backend}, sort_keys=True
    )


def _results() -> OrderedDict[str, Result]:
    if RESULTS not in st.session_state:
        st.session_state[RESULTS] = OrderedDict()
    return st.session_state[RESULTS]


def store_result(plan: Plan, backend: str, result: Result) -> str:
    res = _results()
    key = result_key(plan, backend)
    res[key] = result
    res.move_to_end(key)
    while len(res) > MAX_RESULTS:
        res.popitem(last=False)
    st.session_state[CURRENT] = key
    return key


def get_result(plan: Plan, backend: str) -> Result | None:
    return _results().get(result_key(plan, backend))


def set_current(plan: Plan, backend: str) -> None:
    key = result_key(plan, backend)
    if key in _results():
        st.session_state[CURRENT] = key


def current_result() -> Result | None:
    key = st.session_state.get(CURRENT)
    return _results().get(key) if key else None


def clear_results() -> None:
    _results().clear()
    st.session_state.pop(CURRENT, None)


def set_pending(plan: Plan) -> None:
    st.session_state[PENDING] = plan


def pop_pending(analyses: tuple[str, ...]) -> Plan | None:
    """The plan parsed from words, if it belongs to a page handling one of `analyses`."""
    plan = st.session_state.get(PENDING)
    if plan is not None and plan.analysis in analyses:
        del st.session_state[PENDING]
        return plan
    return None


def set_link_rejected(rejected: bool) -> None:
    """Set by dashboard.link_params on every run of an analysis page, before its widgets."""
    st.session_state[LINK_REJECTED] = rejected


def link_rejected() -> bool:
    """True in the script run of an analysis page whose link had a bad value: nothing runs."""
    return bool(st.session_state.get(LINK_REJECTED))


DERIVED = "marag_derived"
MAX_DERIVED = 16


def derived(result: Result, name: str, build):  # noqa: ANN001, ANN201 - any pure builder
    """`build()` computed once per stored result and name (frames and figures of a page), so a
    rerun without a new run re-renders a 10,000-patient cohort without rebuilding its tables.
    Kept beside a reference to the result, so an id is never reused for another result."""
    memo = st.session_state.setdefault(DERIVED, OrderedDict())
    key = (id(result), name)
    hit = memo.get(key)
    if hit is not None and hit[0] is result:
        memo.move_to_end(key)
        return hit[1]
    value = build()
    memo[key] = (result, value)
    while len(memo) > MAX_DERIVED:
        memo.popitem(last=False)
    return value
