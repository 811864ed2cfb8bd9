"""Provenance links, summary highlighting, table colouring and the exported reports (pure)."""

from __future__ import annotations

import io
import sys

import pandas as pd

from dashboard import export, number_links, tables
from dashboard.clinical import load_refs
from engine.config import Config

h = sys.modules["dash_helpers"]


def test_unsupported_number_highlighted_and_badge_failed():
    r = h.result()
    links = number_links.link_numbers(r)
    bad = [lk for lk in links if not lk.supported]
    assert [lk.text for lk in bad] == ["99"]
    md = number_links.highlighted_markdown(r.summary, links)
    assert ":red-background[**99**]" in md and md.count(":red-background") == 1
    assert number_links.grounding_status(r.verification)[0] == "failed"
    html = number_links.highlighted_html(r.summary, links)
    assert '<mark class="unsupported"' in html and ">99</mark>" in html


def test_supported_numbers_link_to_fact_rows_and_documents():
    r = h.result(summary="Patient 3, visit 2 (2021-04-12): motor 26.")
    links = number_links.link_numbers(r)
    (motor,) = [lk for lk in links if lk.text == "26"]
    assert motor.supported
    assert {(f.patient, f.visit, f.domain) for f in motor.facts} == {(3, 2, "motor")}
    assert motor.doc_ids == ["s-3-v2-updrs"]
    assert number_links.grounding_status(r.verification)[0] == "passed"


def test_only_the_final_agents_spans_mark_the_summary():
    r = h.result(summary="Patient 3: motor 26.")
    r.verification = {
        "per_agent": {
            "final": {"passed": True, "numbers": 2, "unsupported": []},
            "motor": {"passed": False, "unsupported": [{"span": [11, 13]}]},
        },
        "unsupported": [{"agent": "motor", "span": [11, 13], "text": "xx"}],
    }
    assert all(lk.supported for lk in number_links.link_numbers(r))
    assert number_links.grounding_status(r.verification)[0] == "passed"


def test_markdown_escaping_keeps_text_literal():
    r = h.result(summary="Score *not* $5 [x] 99")
    md = number_links.highlighted_markdown(r.summary, number_links.link_numbers(r))
    assert "\\*not\\*" in md and "\\$5" in md and "\\[x\\]" in md


def test_table_b_change_colours():
    assert "DCEFE3" in tables.change_style("improved")
    assert "F6DEDA" in tables.change_style("worsened")
    assert "EEF1F4" in tables.change_style("stable")
    assert tables.change_style("baseline") == ""


def test_reports_contain_summary_flags_table_b_and_provenance():
    from engine.pipeline import Engine
    from engine.types import Plan

    e = Engine(Config.load(env={}), h.kb(), None)
    r = e.run(Plan((3, 8), "comparison"))
    md = export.to_markdown(r)
    assert r.summary.splitlines()[0] in md
    assert "## Table B (comparison)" in md and "| patient | visit |" in md
    assert "Grounding check passed" in md
    assert "Non-motor" in md or "nonmotor" in md  # the incongruence flag rows
    refs = load_refs(Config.load(env={}).contexts_dir)
    html = export.to_html(r, refs)
    assert html.startswith("<!doctype html>") and 'class="worsened"' in html
    assert "plotly" in html.lower() and html.count("<script") >= 1  # charts embedded
    facts = pd.read_csv(io.StringIO(export.facts_csv(r)))
    assert len(facts) == len(r.facts)
    assert set(facts.doc_id) == {f.doc_id for f in r.facts}
    prov = pd.read_csv(io.StringIO(export.provenance_csv(r)))
    assert set(prov["number"].astype(str)) >= {"35", "40"}
