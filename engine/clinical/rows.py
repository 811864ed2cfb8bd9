"""Row tables of a cohort answer held as columns: the ranking, the PDQ-8 ranking and the slopes
of Result.cohort over the session table (engine.clinical.table_stats).

A 10,000-patient cohort has 10,000 ranking rows and ~50,000 slope rows; an answer reads the top
of the ranking and the rows of the few patients it names, so the rows stay numpy columns and a
row's dict is built when it is read. Both classes are read-only sequences of dicts equal to the
list of their dicts (`to_list`, which Result.to_json writes); `of_patients` gives the rows of
some patients in row order without building the others. `rows_of` does the same for a plain
list (the per-fact path of engine.clinical.cohort).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

CHUNK = 256  # rows built at a time while iterating (a prefix read stays cheap)


class Rows(Sequence[dict[str, Any]]):
    """Rows as numpy columns in row order (dict keys in column order); `nullable` columns read
    NaN as None."""

    def __init__(self, columns: Mapping[str, np.ndarray], nullable: Collection[str] = ()):
        self._cols = dict(columns)
        self._n = len(next(iter(self._cols.values()))) if self._cols else 0
        self._nullable = frozenset(nullable)
        self._list: list[dict[str, Any]] | None = None

    def __len__(self) -> int:
        return self._n

    def column(self, name: str) -> list[Any]:
        """One column as a list, in row order (no row dicts built)."""
        return self._values(name, self._cols[name])

    def _values(self, name: str, part: np.ndarray) -> list[Any]:
        vals = part.tolist()
        if name in self._nullable:
            return [None if x != x else x for x in vals]
        return vals

    def _build(self, cols: Mapping[str, np.ndarray]) -> list[dict[str, Any]]:
        names = list(cols)
        vals = [self._values(k, v) for k, v in cols.items()]
        return [dict(zip(names, row, strict=True)) for row in zip(*vals, strict=True)]

    def _between(self, start: int, stop: int) -> list[dict[str, Any]]:
        if self._list is not None:
            return self._list[start:stop]
        return self._build({k: v[start:stop] for k, v in self._cols.items()})

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            r = range(self._n)[i]
            if r.step == 1:
                return self._between(r.start, r.stop)
            return [self[j] for j in r]
        j = range(self._n)[i]  # IndexError as a list's
        return self._between(j, j + 1)[0]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        if self._list is not None:
            yield from self._list
            return
        for s in range(0, self._n, CHUNK):
            yield from self._between(s, s + CHUNK)

    def to_list(self) -> list[dict[str, Any]]:
        """Every row (built once, then kept)."""
        if self._list is None:
            self._list = self._build(self._cols)
        return self._list

    def of_patients(self, patients: Collection[int]) -> list[dict[str, Any]]:
        """The rows whose "patient" is one of `patients`, in row order."""
        want = np.fromiter((int(p) for p in patients), dtype=np.int64)
        pos = np.flatnonzero(np.isin(self._cols["patient"], want))
        return self._build({k: v[pos] for k, v in self._cols.items()})

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (Rows, LazyRows)):
            return self.to_list() == other.to_list()
        if isinstance(other, list):
            return self.to_list() == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Rows({self._n} rows: {', '.join(self._cols)})"


class LazyRows(Sequence[dict[str, Any]]):
    """`Rows` computed on first read (`build`); `of_patients` computes only those patients' rows
    (`subset`) until then. The length is known up front."""

    def __init__(
        self,
        length: int,
        build: Callable[[], Rows],
        subset: Callable[[Collection[int]], list[dict[str, Any]]],
    ):
        self._n = length
        self._make = build
        self._subset = subset
        self._rows: Rows | None = None

    def rows(self) -> Rows:
        if self._rows is None:
            self._rows = self._make()
        return self._rows

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i: Any) -> Any:
        return self.rows()[i]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.rows())

    def to_list(self) -> list[dict[str, Any]]:
        return self.rows().to_list()

    def of_patients(self, patients: Collection[int]) -> list[dict[str, Any]]:
        if self._rows is not None:
            return self._rows.of_patients(patients)
        return self._subset(patients)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (Rows, LazyRows)):
            return self.to_list() == other.to_list()
        if isinstance(other, list):
            return self.to_list() == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"LazyRows({self._n} rows)"


def rows_of(rows: Sequence[Mapping[str, Any]], patients: Collection[int]) -> list[Any]:
    """The rows of `patients` in row order: a row table's own selection, or a list's filter."""
    pick = getattr(rows, "of_patients", None)
    if pick is not None:
        return pick(patients)
    keep = set(patients)
    return [r for r in rows if r["patient"] in keep]


def column_of(rows: Sequence[Mapping[str, Any]], name: str) -> list[Any]:
    """`name` of every row: a Rows table's column, or read row by row from a list."""
    if isinstance(rows, Rows):
        return rows.column(name)
    return [r[name] for r in rows]
