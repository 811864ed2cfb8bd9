"""The record an answer carries of a rejected row names file, row, column and rule and describes
the cell: no text of the source row (formula, HTML, Markdown image) reaches `excluded_sessions`,
the JSON result or the audit trail; the build's validation report keeps the full message."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from engine.config import Config
from engine.pipeline import Engine
from kb_store.documents import build_documents
from kb_store.exclusions import UNREADABLE_DATE, described, excluded_from_ingest, for_patients
from kb_store.ingest import load_sources
from kb_store.profiles import load_profile
from kb_store.reader import InMemoryKB

PAYLOADS = [
    '=HYPERLINK("http://x.example","y")',
    "<img src=x onerror=alert(1)>",
    "![i](http://x.example/i.png)",
]


def _source(tmp_path: Path) -> Path:
    items = [i.code for i in load_profile("pdq8").items]
    rows = [["proj_id", "date", *items]]
    rows += [["1", f"2021-0{m}-01", *["1"] * len(items)] for m in (1, 2, 3)]
    rows += [["1", p, *["1"] * len(items)] for p in PAYLOADS]
    path = tmp_path / "s.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        csv.writer(f, lineterminator="\n").writerows(rows)
    return path


def test_a_rejected_rows_cells_never_reach_the_answer(tmp_path):
    src = _source(tmp_path)
    res = load_sources([src])
    report = " ".join(i.message for i in res.issues)
    assert "x.example" in report  # the data steward's report names the cell
    rows = excluded_from_ingest(res, [src])
    assert len(rows) == 3 and all(r["date"] == UNREADABLE_DATE for r in rows)
    assert {(r["file"], r["column"], r["rule"]) for r in rows} == {
        ("s.csv", "date", "unparseable_date")
    }
    kb = InMemoryKB(build_documents(res.sessions), rows)
    result = Engine(Config.load(env={}), kb, None).ask("patient 1 trajectory")
    out = json.dumps(result.to_json())
    assert len(result.excluded_sessions) == 3
    for needle in ("x.example", "onerror", "HYPERLINK", "<img"):
        assert needle not in out


def test_a_readable_date_is_kept_as_written_and_old_records_are_described():
    old = {"patient": 4, "date": "03/04/2021", "rule": "duplicate_session", "message": "'x' dup"}
    assert described(old)["date"] == "03/04/2021"
    assert "'x'" not in described(old)["message"]
    raw = {"patient": 4, "date": "<b>", "rule": "unparseable_date", "message": "'<b>' bad"}
    (got,) = for_patients([raw], [4])
    assert got["date"] == UNREADABLE_DATE and "<b>" not in json.dumps(got)
