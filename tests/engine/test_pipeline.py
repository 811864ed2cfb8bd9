"""The runner: call counts per analysis, batching, patient scope, guard integration, progress hooks."""

from __future__ import annotations

import json

import marag_engine_fixtures as fx
import pytest
from fakes import FakeLLM

from engine.agents.citable import MAX_LINES
from engine.llm.base import CITE_MARKER
from engine.plan import UnknownPatientError
from engine.types import Plan

TRAJ = Plan((1,), "trajectory", ("updrs", "pdq8"), "none", "Show me the trajectory of patient 1")


def planner_json(analysis: str, instruments=("updrs", "pdq8"), vf="none") -> str:
    return json.dumps(
        {"patients": [], "analysis": analysis, "instruments": list(instruments), "visit_filter": vf}
    )


def scripted(plan_json: str | None = None):
    def script(req):
        if req.agent == "planner":
            return plan_json or "unparseable"
        return fx.echo_facts(req)  # a writer whose text passes the grounding check

    return script


def test_facts_backend_makes_no_llm_call():
    r = fx.engine().run(TRAJ)
    assert r.llm_calls == 0 and r.backend == "facts"
    assert set(r.narratives) == {"motor", "adl", "nonmotor", "qol"}
    assert (
        "Patient 1, visit 4 (2021-07-01): motor 30 (mild), +4 from visit 3 (stable; below MCID 4.63), "
        "+10 from baseline (worsened; at or above MCID 4.63)." in r.narratives["motor"]
    )
    assert "Decision support only" in r.summary and r.screening == []
    assert [t.node for t in r.trace] == ["retrieve", "route", "domain_agents", "final_agent"]
    assert r.verification["call_counts"] == {
        "planner": 0,
        "agents": 0,
        "final": 0,
        "regenerations": 0,
        "total": 0,
        "skipped_prompt_too_long": 0,
    }


def test_trajectory_batches_four_domain_agents():
    """The final digest needs no narrative (it is written from the key statements), so it is
    generated in the domain agents' batch: one batch of 5; the trace still counts its call
    under the final agent, which releases it."""
    llm = FakeLLM(scripted())
    r = fx.engine(llm).run(TRAJ)
    assert llm.batches == [5]
    assert [c.agent for c in llm.calls] == ["motor", "adl", "nonmotor", "qol", "final"]
    assert r.llm_calls == 5
    assert {t.node: t.llm_calls for t in r.trace} == {
        "retrieve": 0,
        "route": 0,
        "domain_agents": 4,
        "final_agent": 1,
    }


def test_unbatched_domain_agents_one_call_each():
    llm = FakeLLM(scripted())
    r = fx.engine(llm, batch_domain_agents=False).run(TRAJ)
    assert llm.batches == [1, 1, 1, 1, 1] and r.llm_calls == 5
    assert [t.node for t in r.trace][2:6] == [
        "motor_agent",
        "adl_agent",
        "nonmotor_agent",
        "qol_agent",
    ]


def test_empty_subset_skips_agent():
    llm = FakeLLM(scripted())
    r = fx.engine(llm).run(Plan((1,), "trajectory", ("updrs",), "none", "q"))
    assert llm.batches == [4] and "qol" not in r.narratives and r.llm_calls == 4


@pytest.mark.parametrize(
    ("query", "analysis", "calls"),
    [
        ("Show me the trajectory of patient 1", "trajectory", 6),
        ("What is the baseline status of patient 1?", "single_session", 6),
        ("Compare patients 1 and 2", "comparison", 3),
        ("Which patient has the highest UPDRS score?", "cohort", 3),
    ],
)
def test_call_counts_match_paper_with_llm_planner(query, analysis, calls):
    vf = "baseline" if analysis == "single_session" else "none"
    llm = FakeLLM(scripted(planner_json(analysis, vf=vf)))
    r = fx.engine(llm, planner="llm").ask(query)
    assert r.plan.analysis == analysis
    assert r.llm_calls == calls and len(llm.calls) == calls
    assert r.trace[0].node == "plan" and r.trace[0].llm_calls == 1
    assert r.verification["call_counts"]["planner"] == 1
    # with the rules planner the planner makes no call
    llm2 = FakeLLM(scripted())
    r2 = fx.engine(llm2).ask(query)
    assert (
        r2.llm_calls == calls - 1
        and r2.trace[0].llm_calls == 0
        and "no LLM call" in r2.trace[0].note
    )


def test_llm_planner_garbage_gives_safe_default():
    llm = FakeLLM(scripted("no idea"))
    r = fx.engine(llm, planner="llm").ask("compare patients 1 and 2 at the latest visit")
    assert r.plan.to_dict() == {
        "patients": [1, 2],
        "analysis": "trajectory",
        "instruments": ["updrs", "pdq8"],
        "visit_filter": "none",
    }
    assert "safe default" in r.trace[0].note


def test_no_out_of_plan_fact_reaches_any_prompt_or_output():
    outsider = [fx.updrs_session(9, v, motor=57, adl=19, nonmotor=17) for v in (1, 2)]
    llm = FakeLLM(scripted())
    eng = fx.engine(llm, extra=outsider)
    for plan in (
        Plan((1, 2), "comparison", ("updrs", "pdq8"), "none", "compare 1 and 2"),
        Plan((1,), "trajectory", ("updrs",), "none", "patient 1"),
        Plan((1, 2, 3), "cohort", ("updrs",), "none", "which of 1, 2, 3 is worst"),
    ):
        llm.calls.clear()
        r = eng.run(plan)
        prompts = "\n".join(c.system + c.user for c in llm.calls)
        out = r.to_json()
        out.pop("trace")  # timings are not facts
        everything = prompts + json.dumps(out, default=str)
        for needle in ("Patient 9", "patient 9", "s-9-"):
            assert needle not in everything, needle
        assert "57" not in CITE_MARKER.sub("", prompts)  # a statement id ("[S57]") is no value
        assert {f.patient for f in r.facts} <= set(plan.patients)
        assert {v.patient for v in r.ledger if v.patient is not None} <= set(plan.patients)
        assert all(row["patient"] in plan.patients for rows in r.flags.values() for row in rows)
        assert all(row["patient"] in plan.patients for row in r.table_b)


def test_guard_regenerates_then_falls_back_to_facts_text():
    def script(req):
        if req.agent == "motor":
            return "Patient 1 had a motor score of 99 at visit 2."
        return fx.echo_facts(req)

    llm = FakeLLM(script)
    r = fx.engine(llm).run(TRAJ)
    facts_run = fx.engine().run(TRAJ)
    assert r.narratives["motor"] == facts_run.narratives["motor"]
    v = r.verification
    assert v["rounds"] == 2 and v["fallback_used"] and v["fallback_agents"] == ["motor"]
    assert v["per_agent"]["motor"]["rejected"]["unsupported"][0]["text"] == "99"
    motor_calls = [c for c in llm.calls if c.agent == "motor"]
    assert len(motor_calls) == 3 and "Critique of your previous answer" in motor_calls[1].user
    assert "99" in motor_calls[1].user  # the critique names the wrong number
    assert r.llm_calls == 7 and {t.node: t.llm_calls for t in r.trace}["domain_agents"] == 6
    assert v["call_counts"]["regenerations"] == 2


def test_guard_accepts_a_corrected_regeneration():
    answers = iter(["Patient 1 had a motor score of 99 at visit 2.", None])

    def script(req):
        if req.agent == "motor":
            # the corrected answer restates the motor facts (it must state its key facts)
            return next(answers) or fx.echo_facts(req)
        return fx.echo_facts(req)

    r = fx.engine(FakeLLM(script)).run(TRAJ)
    # the corrected answer cites (fx.echo_facts restates the cited lines)
    assert r.narratives["motor"].startswith("Patient 1, motor: score 20")
    assert r.verification["released"]["motor"] == "regenerated"
    assert r.verification["rounds"] == 1 and not r.verification["fallback_used"]


def test_guard_off_keeps_the_text_and_measures_it():
    def script(req):
        return (
            "Patient 1 had a motor score of 99 at visit 2." if req.agent == "motor" else "Nothing."
        )

    r = fx.engine(FakeLLM(script)).run(TRAJ, guard=False)
    assert "99" in r.narratives["motor"] and r.llm_calls == 5
    assert (
        r.verification["unsupported"][0]["agent"] == "motor"
        and r.verification["hallucination_rate"] > 0
    )


def test_uncited_domain_prompt_carries_the_facts_table_and_the_reference_text():
    """The facts backend records the table prompt (no model writes, no statements to cite)."""
    motor = fx.engine().run(TRAJ).prompts["motor"]
    assert "Patient 1, visit 3 (2021-05-20): motor 26 (mild), +4 from visit 2" in motor
    assert "Horvath et al. 2015" in motor and "Part III" in motor  # C_motor


def test_prompts_carry_statements_and_allowed_numbers():
    """A model's domain request lists the domain's statements to cite (their labels apply
    C_d), without the facts table or the reference text; its allowed numbers are the table's."""
    llm = FakeLLM(scripted())
    fx.engine(llm).run(TRAJ)
    motor = next(c for c in llm.calls if c.agent == "motor")
    assert "Patient 1, motor: score 26 at visit 3." in motor.user
    assert "Patient 1, visit 3 (2021-05-20): motor 26 (mild)" not in motor.user  # no table
    assert "Horvath et al. 2015" not in motor.system  # no C_motor text
    assert "motor specialist" in motor.system and motor.citable
    assert {"20", "22", "26", "30", "+4", "4.63"} <= motor.allowed_numbers
    assert "14" not in motor.allowed_numbers  # a qol value is not in the motor facts
    final = llm.calls[-1]
    assert final.agent == "final" and "trajectory" in final.user
    # the digest is written from the key statements, not from the narratives
    assert "Patient 1, motor: score 20 at visit 1" in final.user
    assert "Patient 1, visit 4 (2021-07-01): motor 30 (mild)" not in final.user
    assert {"20", "30", "+10"} <= final.allowed_numbers and final.citable


def test_on_node_progress_and_unknown_patient():
    seen = []
    fx.engine().ask("Show me the trajectory of patient 1", on_node=lambda n, s: seen.append((n, s)))
    assert seen[0] == ("plan", "start") and seen[-1] == ("final_agent", "done")
    assert ("domain_agents", "start") in seen
    with pytest.raises(UnknownPatientError, match="valid ids: 1-4"):
        fx.engine().ask("Show me patient 12")


def test_result_json_has_contract_keys():
    r = fx.engine().ask("Compare patients 1 and 2")
    j = json.loads(json.dumps(r.to_json(), default=str))
    for k in (
        "plan",
        "facts",
        "table_b",
        "cohort",
        "flags",
        "narratives",
        "summary",
        "verification",
        "llm_calls",
        "trace",
    ):
        assert k in j
    assert set(j["flags"]) == {"incongruence", "red_flags"}
    for k in (
        "numbers",
        "unsupported",
        "fact_precision",
        "hallucination_rate",
        "temporal_fidelity",
        "fallback_used",
        "rounds",
        "per_agent",
    ):
        assert k in j["verification"]
    assert set(j["facts"][0]) >= {
        "patient",
        "visit",
        "date",
        "instrument",
        "domain",
        "score",
        "items",
        "doc_id",
    }
    assert set(j["table_b"][0]) >= {"patient", "visit", "domain", "score", "delta", "change"}
    assert j["narratives"]["comparison"].startswith("Table B")


def test_screening_flags_treatment_advice_in_final_text():
    def script(req):
        return "Patient 1 should start levodopa." if req.agent == "final" else fx.echo_facts(req)

    # unguarded, the advice is released and screening flags it
    r = fx.engine(FakeLLM(script)).run(TRAJ, guard=False)
    assert r.summary.startswith("Patient 1 should start levodopa.")
    assert r.screening and r.screening[0]["rule"] == "prescriptive_treatment"
    assert "Decision support only" in r.summary
    # guarded, the statement check never releases it: the facts text replaces it
    g = fx.engine(FakeLLM(script)).run(TRAJ)
    assert "levodopa" not in g.summary and g.verification["released"]["final"] == "replaced"
    rej = g.verification["per_agent"]["final"]["rejected"]["unsupported_sentences"][0]
    assert any("recommendation" in x or "medication" in x for x in rej["reasons"])


def test_cohort_final_prompt_is_bounded():
    llm = FakeLLM(scripted())
    r = fx.engine(llm).run(
        Plan((), "cohort", ("updrs",), "none", "Which patient has the highest UPDRS score?")
    )
    final = llm.calls[-1].user
    assert "Patient 2, total: rank 1, score 58 at visit 4." in final and r.cohort["patient"] == 2
    assert len(llm.calls[-1].citable) <= MAX_LINES
    assert len(r.flags["incongruence"]) == 2  # Result.flags keeps every flag


def test_prompt_longer_than_the_context_releases_the_facts_text():
    """A backend that cannot take a prompt (PromptTooLongError) costs no call for it; the other
    domain agents of the batch still run, and the facts text is released for the long one."""
    from engine.llm.base import PromptTooLongError

    def script(req):
        if req.agent == "adl":
            raise PromptTooLongError(
                "prompt of 9000 tokens leaves no room in the 8192-token context"
            )
        return fx.echo_facts(req)

    llm = FakeLLM(script)
    r = fx.engine(llm).run(TRAJ)
    facts_run = fx.engine().run(TRAJ)
    v = r.verification
    assert r.narratives["adl"] == facts_run.narratives["adl"]
    assert v["fallback_agents"] == ["adl"] and v["per_agent"]["adl"]["fallback_used"]
    assert any("adl: prompt of 9000 tokens" in n for n in v["notes"])
    # batch of 4 failed -> one by one; adl is skipped at each attempt, never counted as a call
    assert r.narratives["motor"].startswith("Patient 1, motor: score 20")  # the model's text
    skipped = v["call_counts"]["skipped_prompt_too_long"]
    assert skipped == 1 + v["per_agent"]["adl"]["rounds"]
    assert r.llm_calls == 4  # motor, nonmotor, qol, final
