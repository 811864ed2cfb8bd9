"""format_report / report_dict: counts, severities, one line per issue naming file, row, column, rule."""

import datetime as dt
import json

from kb_store.ingest import load_sources
from kb_store.ingest_report import format_report, report_dict
from kb_store.validation import RULES


def test_report_text_and_dict(write_generic, h):
    rows = [
        h.generic_row(1, "2021-03-15"),
        h.generic_row(1, "2021-03-18", updrs=None),
        h.generic_row(2, "1946/11/11"),
        h.generic_row(3, "03/2021", NP3GAIT=7),
    ]
    p = write_generic(rows)
    r = load_sources([p], visit_window_days=7, today=dt.date(2026, 1, 1))
    text = format_report(r)
    assert "rows read: 4" in text and "rows rejected: 1" in text
    assert f"ERROR {p.name}, row 4, column date: [implausible_date]" in text
    assert f"ERROR {p.name}, row 5, column NP3GAIT: [out_of_range]" in text
    assert "[month_precision_date]" in text
    # a second PDQ-8 within the window is a new visit, never merged
    assert "[visit_joined]" not in text
    assert (
        "patient 1: PDQ-8 of 2021-03-18 is 3 days after the visit of 2021-03-15 (window 7)" in text
    )
    d = report_dict(r)
    json.dumps(d)
    assert (
        d["stats"]["rows_rejected"] == 1 and d["rules"]["implausible_date"]["severity"] == "error"
    )
    assert {i["rule"] for i in d["issues"]} <= set(RULES)
    assert text.index("ERRORS") < text.index("WARNINGS") < text.index("INFO")


def test_report_limits_info_lines(write_generic, h):
    rows = [
        h.generic_row(
            1, f"2021-03-{d:02d}", updrs=(None if d % 2 else 1), pdq=(1 if d % 2 else None)
        )
        for d in range(1, 21)
    ]
    r = load_sources([write_generic(rows)], visit_window_days=1, today=dt.date(2026, 1, 1))
    text = format_report(r, max_info=2)
    assert "more info lines" in text
    assert r.stats["sessions_joined"] == 10 and r.stats["visits"] == 10


def test_every_rule_has_severity_and_meaning():
    for rule, (sev, meaning) in RULES.items():
        assert sev in ("error", "warning", "info") and meaning, rule
