"""Provenance links, summary highlighting, table colouring and the exported reports (pure)."""

from __future__ import annotations

import io
import json
import sys

import pandas as pd

from dashboard import export, number_links, tables
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
    md = export.report(r, "md", user="dr.a").decode()
    assert r.digest.split(".")[0] in md.replace("\\", "")
    assert "## Current flags" in md and "Incongruence:" in md  # the incongruence flag rows
    html = export.report(r, "html").decode()
    assert html.startswith("<!DOCTYPE html>") and "<h2>Provenance</h2>" in html
    record = json.loads(export.verification_json(r))
    assert record["verification"] == r.verification and '"per_agent"' not in html
    facts = pd.read_csv(io.StringIO(export.facts_csv(r)))
    assert len(facts) == len(r.facts)
    assert set(facts.doc_id) == {f.doc_id for f in r.facts}
    prov = pd.read_csv(io.StringIO(export.provenance_csv(r)))
    assert set(prov["number"].astype(str)) >= {"35", "40"}
