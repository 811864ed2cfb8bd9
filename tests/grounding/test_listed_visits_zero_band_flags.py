"""Word checks the whole-study sweep of the facts text needed (see test_facts_text_every_patient):
a severity word over a listed span of visits, the zero level of a banded scale, the key facts of a
single-session analysis, the To-monitor list of current red flags, and a facts-text record that
describes the released text (never a repaired copy)."""

from __future__ import annotations

import json

import pytest

from engine.config import REPO_ROOT, Config
from engine.eval.harness import default_marag_dir, open_dataset
from engine.grounding.coverage import key_facts
from engine.grounding.guard import StatementSpec, guard_text
from engine.grounding.lexicon import assertions
from engine.grounding.statements import check_statements
from engine.grounding.verify import verify_text
from engine.pipeline import Engine
from engine.types import FactValue, Plan


def _status(text, ledger, patients=(5, 8)):
    return [(s.status, s.reasons) for s in check_statements(text, ledger, patients).sentences]


@pytest.mark.parametrize(
    ("sentence", "ok"),
    [
        ("Patient 5's gait was moderate at visits 3 and 4.", True),  # NP3GAIT 3, 3
        ("Patient 5's gait was moderate at visits 2 and 3.", False),  # 2 is mild
        ("Patient 8's gait was mild at visits 1, 2, 3 and 4.", True),  # 2 at every visit
        ("Patient 5's gait was mild at visits 1-2.", False),  # 1 is slight
    ],
)
def test_severity_over_a_listed_span_holds_at_each_visit(ledger, sentence, ok):
    ((status, reasons),) = _status(sentence, ledger)
    assert (status == "supported") is ok, reasons


def _banded_ledger() -> list[FactValue]:
    out = [
        FactValue("score", 0, 5, 2, "motor", date="2021-03-15"),
        FactValue("score", 12, 5, 1, "motor", date="2021-01-10"),
        FactValue("visit", 1, 5, 1, date="2021-01-10"),
        FactValue("visit", 2, 5, 2, date="2021-03-15"),
    ]
    for level, lo, hi in (("mild", 0, 32), ("moderate", 33, 58), ("severe", 59, 59)):
        out += [
            FactValue("threshold", lo, domain="motor", item=f"severity_{level}"),
            FactValue("threshold", hi, domain="motor", item=f"severity_{level}"),
        ]
    return out


def test_zero_on_a_banded_scale_is_normal_not_mild():
    led = _banded_ledger()
    assert _status("Patient 5's motor score was normal at visit 2.", led, (5,))[0][0] == "supported"
    assert _status("Patient 5's motor score was mild at visit 2.", led, (5,))[0][0] == "unsupported"
    assert _status("Patient 5's motor score was mild at visit 1.", led, (5,))[0][0] == "supported"
    # the word is the engine's own zero level (contexts/thresholds.json), kept in one place
    thresholds = json.loads((REPO_ROOT / "contexts" / "thresholds.json").read_text())
    assert assertions()["domain_zero_level"]["level"] == thresholds["course"]["zero_level"]["level"]


def test_single_session_final_states_each_sessions_scores_not_change_labels(ledger):
    trajectory = key_facts("final", ledger)
    session = key_facts("final", ledger, analysis="single_session")
    assert {k.kind for k in trajectory} == {"label"}
    assert {k.kind for k in session} == {"score"}
    assert len(session) == 2 * 2 * 4  # patients 5 and 8, motor and ADL, visits 1-4


def _flags(current: bool) -> dict:
    row = {"patient": 5, "visit": 4, "item": "NP3GAIT", "value": 3.0, "domain": "motor"}
    return {"red_flags": [{**row, "current": current}], "incongruence": []}


def test_the_to_monitor_list_names_only_current_red_flags(ledger):
    def status(text, flags):
        rec = verify_text(text, ledger, (5,), flags=flags)
        return [s["status"] for s in rec["sentences"]], rec["sentences"][-1]["reasons"]

    ok, _ = status("Patient 5. To monitor: current red flags (gait).", _flags(True))
    assert ok[-1] != "unsupported"
    bad, why = status("Patient 5. To monitor: current red flags (gait).", _flags(False))
    assert bad[-1] == "unsupported" and "not a current red flag" in why[0]
    bad, why = status("Patient 5. To monitor: current red flags (gait, rigidity).", _flags(True))
    assert bad[-1] == "unsupported" and "rigidity" in why[0]


def test_a_text_released_as_written_keeps_its_own_record(ledger):
    """The facts backend measures its text and releases it as written: the record is that
    text's (its unsupported sentence shows), with no repair applied to a copy."""
    text = "Patient 5's motor score improved from visit 1 to visit 4. Patient 8's ADL rose."
    spec = StatementSpec()
    kept = guard_text(
        text,
        ledger,
        None,
        lambda: text,
        max_rounds=0,
        plan_patients=(5, 8),
        statements=spec,
        repair=False,
    )
    assert kept.text == text and kept.record["repairs"] == []
    assert kept.record["unsupported_sentences"] == 1
    repaired = guard_text(
        text, ledger, None, lambda: text, max_rounds=0, plan_patients=(5, 8), statements=spec
    )
    assert repaired.record["repairs"]  # the LLM path: the false sentence is removed first


def test_red_flag_rows_say_which_are_current():
    if not default_marag_dir().exists():
        pytest.skip(f"MA-RAG study data not found at {default_marag_dir()}")
    eng = Engine(Config.load({}, env={}), open_dataset("marag").kb, None)
    r = eng.run(Plan((53,), "trajectory"))
    rows = r.flags["red_flags"]
    current = {x["item"] for x in rows if x["current"]}
    # proj id 53: falling and the two swallowing items at the latest UPDRS visit (5); cognition,
    # dressing and handwriting resolved before it
    assert current == {"FALL_PROB", "CHEW_SWALLOW_PROB", "SWALLOW_PROB"}
    assert all(x["visit"] == 5 for x in rows if x["current"])
    assert "current red flags (falling, chewing and swallowing, swallowing)" in r.summary
