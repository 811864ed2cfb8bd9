"""Cited statements: a model given citable lines writes "[S4]" before each clause; a cited sentence
is checked by lookup (not read by the prose checker), repaired by the facts text's rendering of its
statements, and the released text shows no marker (engine.agents.cited*, engine.agents.citable)."""

from __future__ import annotations

import re

import marag_engine_fixtures as fx
import pytest
from fakes import FakeLLM

from engine.agents.citable import statement_line, statement_numbers
from engine.agents.cited import read_cited
from engine.agents.cited_check import NOT_GIVEN, cited_record
from engine.clinical.key_facts import in_digest
from engine.llm.base import CITE_MARKER
from engine.types import Plan

TRAJ = Plan((1,), "trajectory", ("updrs", "pdq8"), "none", "Show me the trajectory of patient 1")


@pytest.fixture(scope="module")
def facts_run():
    return fx.engine().run(TRAJ)


def _motor_change(sts):
    """The key statement of patient 1's motor change from baseline (worsened, +10)."""
    return next(s for s in sts if s.key and s.kind == "change" and s.subject == "motor")


def _line_id(req, pattern: str) -> str:
    m = re.search(r"^\[(S\d+)\] " + pattern, req.user, re.M)
    assert m, req.user
    return m.group(1)


def test_markers_become_spans_and_leave_no_trace():
    c = read_cited(
        "[S1] Motor rose to 30 at visit 4, [S2] a worsening. No flag was seen.", {"S1", "S2"}
    )
    assert c.text == "Motor rose to 30 at visit 4, a worsening. No flag was seen."
    spans = [(c.text[x.start : x.end], x.ids) for x in c.rendered.citations]
    assert spans == [("Motor rose to 30 at visit 4, ", ("S1",)), ("a worsening.", ("S2",))]
    assert not c.strays
    two = read_cited("Scores [S1,S9] rose.", {"S1"})
    assert two.text == "Scores rose." and two.rendered.citations[0].ids == ("S1",)
    assert [s.ids for s in two.strays] == [("S9",)]


def test_a_line_copied_whole_is_within_its_numbers(facts_run):
    """Every number a line writes (the 8 of "PDQ-8" included) is one a clause citing it may
    write, so citation-safe decoding never pushes a copy of the line off it."""
    from engine.llm.number_safe import extract_numbers

    for st in facts_run.statements:
        body = statement_line(st).split("] ", 1)[1]
        assert set(extract_numbers(body)) <= statement_numbers(st), (st.id, body)
    qol = next(s for s in facts_run.statements if s.subject == "qol" and s.kind == "change")
    assert "PDQ-8" in statement_line(qol) and "8" in statement_numbers(qol)


def test_a_change_whose_direction_is_not_read_writes_no_change_value(facts_run):
    """An all-zero latest session: the change is "possible missing data", not a change to
    copy (reference/clinical-summary-style.md: a blank or all-zero session is not change)."""
    from dataclasses import replace

    st = replace(_motor_change(facts_run.statements), label="possible missing data")
    line = statement_line(st)
    assert "+10" not in line and "change" not in line, line
    assert line.endswith("score 30 at visit 4, possible missing data.")


def test_statement_line_and_numbers(facts_run):
    st = _motor_change(facts_run.statements)
    line = statement_line(st)
    assert line == (
        f"[{st.id}] Patient 1, motor: score 20 at visit 1, score 30 at visit 4, "
        "change from baseline +10, worsened."
    )  # a sentence of its own, visits in order; the MCID is said by its label, no count
    assert {"1", "4", "20", "30", "+10", "10", "2021"} <= statement_numbers(st)


def _record(text, sts, given, seen):
    def prose(t):
        seen.append(t)
        return {
            "claims": [],
            "unsupported": [],
            "numbers_without_context": 0,
            "temporal_fidelity": 1.0,
            "statements": {
                "sentences": [
                    {
                        "text": t,
                        "span": [0, len(t)],
                        "status": "neutral",
                        "reasons": [],
                        "facts": [],
                    }
                ],
                "removable": [],
                "coverage_detail": {"value": 0.0, "stated": 0, "total": 0, "missing": []},
            },
        }

    return cited_record(read_cited(text, given), sts, prose, agent="motor", plan_patients=(1,))


def test_true_cited_sentence_passes_by_lookup_without_the_prose_checker(facts_run):
    st = _motor_change(facts_run.statements)
    seen: list[str] = []
    rec = _record(
        f"[{st.id}] Patient 1's motor score rose from 20 at visit 1 to 30 at visit 4, "
        "a worsening of +10.",
        facts_run.statements,
        {st.id},
        seen,
    )
    assert seen == []  # the prose checker never read it
    (s,) = rec["statements"]["sentences"]
    assert s["status"] == "supported" and s["checked_by"] == "lookup"
    assert not rec["unsupported"] and rec["statements_passed"]
    assert rec["cited"] == {"sentences": 1, "total": 1, "share": 1.0}
    assert {c["text"] for c in rec["claims"]} == {"1", "20", "30", "4", "+10"}


def test_uncited_sentence_goes_through_the_prose_checker(facts_run):
    st = _motor_change(facts_run.statements)
    seen: list[str] = []
    rec = _record(
        f"[{st.id}] Patient 1's motor score rose to 30 at visit 4. The course was long.",
        facts_run.statements,
        {st.id},
        seen,
    )
    assert seen == ["The course was long."]  # only the uncited sentence is read
    by = [(s["text"], s["checked_by"]) for s in rec["statements"]["sentences"]]
    assert by == [
        ("Patient 1's motor score rose to 30 at visit 4.", "lookup"),
        ("The course was long.", "prose"),
    ]
    assert rec["checked_by"] == "lookup+prose" and rec["cited"]["share"] == 0.5


def test_wrong_direction_word_fails(facts_run):
    st = _motor_change(facts_run.statements)
    rec = _record(
        f"[{st.id}] Patient 1's motor score improved to 30 at visit 4.",
        facts_run.statements,
        {st.id},
        [],
    )
    (s,) = rec["statements"]["sentences"]
    assert s["status"] == "unsupported"
    assert any("'improved' disagrees" in r and "worsened" in r for r in s["reasons"])


def test_id_not_given_fails(facts_run):
    st = _motor_change(facts_run.statements)
    rec = _record(
        "[S999] Patient 1's motor score rose to 30 at visit 4.", facts_run.statements, {st.id}, []
    )
    (s,) = rec["statements"]["sentences"]
    assert s["status"] == "unsupported" and any(NOT_GIVEN in r for r in s["reasons"])


def _motor_writer(clause: str):
    """A model whose motor text is one cited sentence (`clause` after the motor change's id);
    the other agents echo their facts (fx.echo_facts)."""

    def script(req):
        if req.agent == "motor":
            sid = _line_id(req, r"Patient 1, motor: score 20")
            return f"[{sid}] " + clause.format(sid=sid)
        return fx.echo_facts(req)

    return script


def test_wrong_number_in_a_cited_clause_is_repaired_by_the_rendering_of_its_statement():
    llm = FakeLLM(
        _motor_writer(
            "Patient 1's motor score rose from 20 at visit 1 to 31 at visit 4. "
            "[{sid}] Patient 1's motor score is a worsening of +10."
        )
    )
    r = fx.engine(llm).run(TRAJ)
    rec = r.verification["per_agent"]["motor"]
    assert rec["released"] == "repaired" and rec["passed"]
    assert r.narratives["motor"].endswith("Patient 1's motor score is a worsening of +10.")
    (removed,) = rec["repairs"][0]["removed"]
    assert any("31" in x for x in removed["reasons"])
    assert removed["replaced_by"] and "31" not in r.narratives["motor"]
    # the replacement is the facts text's sentence citing the statement, checked by lookup
    assert removed["replaced_by"] in fx.engine().run(TRAJ).narratives["motor"]
    assert all(s["checked_by"] == "lookup" for s in rec["statements"]["sentences"])


def test_released_text_has_no_markers_and_citations_point_into_it():
    llm = FakeLLM(
        _motor_writer("Patient 1's motor score rose from 20 at visit 1 to 30 at visit 4.")
    )
    r = fx.engine(llm).run(TRAJ)
    motor = r.narratives["motor"]
    rec = r.verification["per_agent"]["motor"]
    assert rec["released"] == "as_written", rec.get("repairs")
    assert motor == "Patient 1's motor score rose from 20 at visit 1 to 30 at visit 4."
    assert not CITE_MARKER.search(motor) and not CITE_MARKER.search(r.summary)
    (c,) = rec["citations"]
    assert motor[c["span"][0] : c["span"][1]] == motor
    for claim in rec["claims"]:
        a, b = claim["span"]
        assert motor[a:b] == claim["text"]


def test_the_result_digest_is_the_released_one():
    """When a model writes the digest, `Result.digest` (the dashboard's top box, the printable
    report's summary) is the digest released, not the facts digest it was guarded against."""
    from engine.report.model import build_report

    r = fx.engine(FakeLLM(fx.echo_facts)).run(TRAJ)
    facts = fx.engine().run(TRAJ)
    assert r.verification["per_agent"]["final"]["released"] == "as_written"
    assert r.digest and r.digest != facts.digest
    assert r.summary.startswith(r.digest) and r.digest.startswith("Patient 1, motor: score 20")
    assert build_report(r).digest == r.digest


def test_one_batch_of_five_for_a_four_domain_trajectory():
    llm = FakeLLM(fx.echo_facts)
    r = fx.engine(llm).run(TRAJ)
    assert llm.batches == [5]
    assert [c.agent for c in llm.calls] == ["motor", "adl", "nonmotor", "qol", "final"]
    assert all(c.citable for c in llm.calls) and all(c.max_new_tokens for c in llm.calls)
    final = llm.calls[-1]
    keys = {s.id for s in r.statements.key_facts if in_digest(s.kind)}
    assert {i for i, _n in final.citable} == keys  # the digest cites the key statements
    rec = r.verification["per_agent"]["final"]
    assert rec["cited"]["share"] == 1.0 and rec["passed"]
    first = rec["statements"]["sentences"][0]["text"]
    assert r.summary.startswith(first)  # the guarded digest, then the rendered details
    assert r.sections and all(p in r.summary for p in r.sections[0][1][:1])


def test_facts_backend_is_unchanged():
    r = fx.engine().run(TRAJ)
    assert r.llm_calls == 0
    for rec in r.verification["per_agent"].values():
        assert rec["checked_by"] == "lookup" and "cited" not in rec


class _Sink:
    """A text sink that keeps what was streamed, per agent."""

    def __init__(self):
        self.text: dict[str, str] = {}

    def on_text(self, agent, chunk):
        self.text[agent] = self.text.get(agent, "") + chunk

    def cancelled(self):
        return False


def test_streamed_run_writes_the_cited_digest_one_request_at_a_time():
    """A streamed run (the dashboard's) sends each agent's request alone, so each text streams
    whole; the final agent's is still the digest request with the key statements citable."""
    llm, sink = FakeLLM(fx.echo_facts), _Sink()
    r = fx.engine(llm).run(TRAJ, sink=sink)
    assert llm.batches == [1, 1, 1, 1, 1]
    final = llm.calls[-1]
    assert final.agent == "final" and final.citable
    assert {i for i, _n in final.citable} == {
        s.id for s in r.statements.key_facts if in_digest(s.kind)
    }
    rec = r.verification["per_agent"]["final"]
    assert rec["released"] == "as_written" and rec["cited"]["share"] == 1.0
    assert "[S" in sink.text["final"] and not CITE_MARKER.search(r.summary)


def test_a_repair_that_would_remove_every_model_sentence_is_no_repair():
    """One wrong sentence and nothing else: replacing it would leave no model text, so the text
    is regenerated and, still wrong, replaced by the facts text (not counted as repaired)."""
    llm = FakeLLM(
        _motor_writer("Patient 1's motor score rose from 20 at visit 1 to 31 at visit 4.")
    )
    r = fx.engine(llm).run(TRAJ)
    rec = r.verification["per_agent"]["motor"]
    assert rec["released"] == "replaced" and rec["fallback_used"] and rec["passed"]
    assert "31" not in r.narratives["motor"]


def test_item_code_of_another_item_fails(facts_run):
    flag = next(s for s in facts_run.statements if s.kind == "red_flag" and s.patient == 1)
    other = "NP3ZZZZ"
    bad = _record(
        f"[{flag.id}] Patient 1, {other}, red flag, current.", facts_run.statements, {flag.id}, []
    )
    (s,) = bad["statements"]["sentences"]
    assert s["status"] == "unsupported" and f"'{other}' is not the item" in " ".join(s["reasons"])
    good = _record(
        f"[{flag.id}] Patient 1, {flag.subject}, red flag, current.",
        facts_run.statements,
        {flag.id},
        [],
    )
    assert not any("is not the item" in r for r in good["statements"]["sentences"][0]["reasons"])


def test_digest_short_of_key_statements_is_completed_by_their_renderings():
    """A digest whose one sentence is true but states only the first key statement: the facts
    digest's sentences that render the missing ones are added after it (released repaired)."""

    def script(req):
        if req.agent == "final" and req.citable:
            first = next(ln for ln in req.user.splitlines() if ln.startswith("[S"))
            sid, line = first[1:].split("] ", 1)
            return f"[{sid}] {line[:1].upper()}{line[1:]}."
        return fx.echo_facts(req)

    r = fx.engine(FakeLLM(script)).run(TRAJ)
    rec = r.verification["per_agent"]["final"]
    assert rec["released"] == "repaired" and rec["passed"] and rec["coverage"] == 1.0
    (rep,) = rec["repairs"]
    assert not rep["removed"] and rep["added"]
    states = {i for a in rep["added"] for i in a["states"]}
    assert states and states <= {s.id for s in r.statements.key_facts}
    first = rec["statements"]["sentences"][0]
    assert first["text"].startswith("Patient 1, motor") and first["checked_by"] == "lookup"
    assert all(a["text"] in r.summary for a in rep["added"])


def test_unfinished_or_percentage_cited_sentence_fails(facts_run):
    """A clause cut off by the length limit, or a number written as a percentage, fails
    whatever it cites (no statement states a percentage)."""
    st = _motor_change(facts_run.statements)
    for text, reason in (
        (f"[{st.id}] Patient 1's motor score rose to 30 at visit 4 and", "unfinished"),
        (f"[{st.id}] Patient 1's motor score rose by 20% at visit 4.", "percentage"),
    ):
        rec = _record(text, facts_run.statements, {st.id}, [])
        (s,) = rec["statements"]["sentences"]
        assert s["status"] == "unsupported" and reason in " ".join(s["reasons"]), text
