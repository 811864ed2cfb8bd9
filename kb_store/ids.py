"""Patient-id spellings: one id written several ways (007, 0007, 7.0, 7 with a tab or a no-break
space) is read as one patient (kb_store.validation.parse_patient_id), and only with a report line
naming each spelling and its rows (`id_spelling_issues`), so a merge is never silent.

Kept apart from kb_store.ingest (which calls it once over every file of a run: the spellings of one
patient may be spread over several files) and from the readers (which record each row's raw cell in
`Table.raw_ids` through kb_store.ingest_rows.read_key_cells).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from kb_store.csv_table import Table
from kb_store.model import ValidationIssue
from kb_store.validation import issue

#: rows listed per spelling before "... and N more"
MAX_ROWS_SHOWN = 12


def _show(raw: str) -> str:
    """A spelling for the report: repr (a tab, a no-break space or a quote is visible), cut."""
    return repr(raw) if len(raw) <= 30 else repr(raw[:30]) + "..."


def _rows(refs: list[tuple[str, int]]) -> str:
    by_file: dict[str, list[int]] = defaultdict(list)
    for file, row in refs:
        by_file[file].append(row)
    parts = []
    for file, rows in by_file.items():
        shown = ", ".join(str(r) for r in rows[:MAX_ROWS_SHOWN])
        more = f" and {len(rows) - MAX_ROWS_SHOWN} more" if len(rows) > MAX_ROWS_SHOWN else ""
        parts.append(f"{file} row{'s' if len(rows) > 1 else ''} {shown}{more}")
    return "; ".join(parts)


def id_spelling_issues(tables: Iterable[Table]) -> list[ValidationIssue]:
    """One `id_spellings` warning per patient id written in more than one way across the files:
    every spelling (as written) with its rows; the sessions stay merged into the one patient."""
    spellings: dict[int, dict[str, list[tuple[str, int]]]] = defaultdict(dict)
    first: dict[int, tuple[str, str]] = {}
    for t in tables:
        for row, (raw, pid) in sorted(t.raw_ids.items()):
            spellings[pid].setdefault(raw, []).append((t.name, row))
            first.setdefault(pid, (t.name, t.id_column))
    out = []
    for pid, by_raw in sorted(spellings.items()):
        if len(by_raw) < 2:
            continue
        listed = "; ".join(f"{_show(raw)} ({_rows(refs)})" for raw, refs in by_raw.items())
        file, column = first[pid]
        out.append(
            issue(
                file,
                None,
                column,
                "id_spellings",
                f"patient {pid} is written {len(by_raw)} ways, all read as patient {pid} and "
                f"merged into one patient: {listed}; write one spelling if they are one patient",
            )
        )
    return out
