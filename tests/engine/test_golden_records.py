"""The facts backend's output is unchanged unless a commit regenerates the golden snapshot on
purpose (tools/golden_records.py): every run of both datasets and both red-team sets compared."""

from __future__ import annotations

import pytest

from tools import golden_records

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not golden_records.STUDY.exists(), reason="MA-RAG study data not in ../shared"
    ),
]


def test_every_facts_run_matches_the_golden_snapshot() -> None:
    new = golden_records.collect()
    old = golden_records.load()
    diffs = golden_records.differences(old, new)
    assert len(new["runs"]) == len(old["runs"]) >= 300
    assert not diffs, "\n\n".join(diffs[:20]) + f"\n({len(diffs)} differences; regenerate with "
    "`python tools/golden_records.py --write` only for an intended change)"
