"""The CSV table reader every ingest format shares: bytes -> header + numbered rows.

Owns `Table`, its compact `Rows` (each row kept as its line where that line alone gives its
cells) and `read_table`. It handles a UTF-8 BOM, UTF-16 and Windows-1252 files, CRLF/CR/LF
line ends, ',' ';' or tab delimiters, duplicate header names (renamed `NAME.1`, `NAME.2` as pandas
does, so a raw duplicate `SPEECH_PROB` header and a pandas-written `SPEECH_PROB.1` read the same),
blank lines (skipped, counted), Excel's `sep=,` first line (it names the delimiter), short rows
(padded, with a warning), long rows (`extra_cells`: rejected, the cells are shifted), a stray quote
that merged lines (the opening row rejected, the swallowed lines read as rows of their own) and a
quoted line break followed by a row-shaped line (`line_break_in_cell`: the record rejected with the
lines it spans). A row's number is the physical line it starts on: header = line 1 (the spreadsheet
row unless a quoted cell spans lines). A file that cannot be read at all raises `IngestError` with
one line naming the file. Kept apart from the formats (kb_store.ingest_generic, ingest_marag,
ingest_ppmi) because all of them, and the exclusion list (kb_store.exclusions), read files with it.
"""

from __future__ import annotations

import csv
import re
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kb_store.dates import DateOrder, DateParseError, numeric_parts, parse_date
from kb_store.model import ValidationIssue
from kb_store.profiles import normalise_column
from kb_store.validation import IngestError, issue


def _split(line: str, delimiter: str) -> list[str]:
    """The cells of one physical line read alone."""
    return next(csv.reader([line], delimiter=delimiter, strict=False), [])


class Rows:
    """The data rows of a table: (physical line the row starts on, cells fitted to the header),
    in file order, kept compact. A row whose cells are exactly those of its one physical line read
    alone (nearly every row) keeps only that line and is split again when iterated; any other row
    (padded, spanning lines) keeps its cells. A list of cells per row costs about 1 KB for a
    70-column file; the line costs its length (docs/data-ingest.md, "Memory and file size")."""

    __slots__ = ("_cells", "_delimiter", "_lines", "_numbers")

    def __init__(self, delimiter: str = ",") -> None:
        self._numbers = array("q")
        self._lines: list[str | None] = []
        self._cells: dict[int, list[str]] = {}  # index -> cells, of the rows kept as cells
        self._delimiter = delimiter

    def append(self, row: int, cells: list[str], line: str | None = None) -> None:
        """Add row `row` with its `cells`; `line` is the physical line they were read from."""
        if line is not None and _split(line, self._delimiter) == cells:
            self._lines.append(line)
        else:
            self._cells[len(self._lines)] = cells
            self._lines.append(None)
        self._numbers.append(row)

    def _cells_at(self, i: int) -> list[str]:
        line = self._lines[i]
        return self._cells[i] if line is None else _split(line, self._delimiter)

    def numbers(self) -> Iterator[int]:
        """The rows' line numbers, without splitting any row."""
        return iter(self._numbers)

    def __len__(self) -> int:
        return len(self._numbers)

    def __iter__(self) -> Iterator[tuple[int, list[str]]]:
        for i, row in enumerate(self._numbers):
            yield row, self._cells_at(i)

    def __getitem__(self, i: int) -> tuple[int, list[str]]:
        return self._numbers[i], self._cells_at(i if i >= 0 else len(self) + i)


@dataclass
class Table:
    path: Path
    name: str  # file name used in reports and SourceRef
    header: list[str]
    rows: Rows  # (physical line the row starts on, cells fitted to header)
    blank_rows: int = 0
    issues: list[ValidationIssue] = field(default_factory=list)
    #: physical lines of the file, and how they were used: `lines == header_lines + row_lines`
    #: (row_lines counts data, blank and broken rows' lines) is checked by kb_store.ingest.
    lines: int = 0
    header_lines: int = 0
    row_lines: int = 0
    #: issues found while the format parser reads rows (date order of a column), collected by
    #: kb_store.ingest after parsing
    late_issues: list[ValidationIssue] = field(default_factory=list)
    #: rows rejected while reading (broken quote; every line of a `line_break_in_cell` record);
    #: their issue is in `issues`
    broken_rows: list[int] = field(default_factory=list)
    date_orders: dict[int, DateOrder] = field(default_factory=dict)
    delimiter: str = ","
    #: the day/month order given for columns whose own values do not decide it (--date-order)
    given_date_order: str | None = None
    #: row -> (raw patient-id cell, id read): the spellings kb_store.ingest reports when one id
    #: is written several ways
    raw_ids: dict[int, tuple[str, int]] = field(default_factory=dict)
    id_column: str | None = None
    #: raw id cell -> its (raw, id) pair, shared by every row that writes the id alike
    id_pairs: dict[str, tuple[str, int]] = field(default_factory=dict, repr=False)

    def record_id(self, row: int, raw: str, pid: int) -> None:
        """Record the raw patient-id cell of `row` (read as `pid`) in `raw_ids`."""
        pair = self.id_pairs.get(raw)
        if pair is None or pair[1] != pid:
            pair = self.id_pairs[raw] = (raw, pid)
        self.raw_ids[row] = pair

    def columns(self) -> dict[str, int]:
        """Normalised header name -> index of its first occurrence."""
        out: dict[str, int] = {}
        for i, h in enumerate(self.header):
            out.setdefault(normalise_column(h), i)
        return out

    def find(self, aliases: Sequence[str]) -> int | None:
        cols = self.columns()
        for a in aliases:
            idx = cols.get(normalise_column(a))
            if idx is not None:
                return idx
        return None


def _utf16(data: bytes) -> str | None:
    """'utf-16' (with BOM), 'utf-16-le' or 'utf-16-be' when the bytes look like UTF-16 text."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return "utf-16"
    sample = data[:4096]
    if len(sample) >= 4 and len(sample) % 2 == 0:
        even, odd = sample[0::2], sample[1::2]
        if odd.count(0) > 0.9 * len(odd) and even.count(0) < 0.1 * len(even):
            return "utf-16-le"
        if even.count(0) > 0.9 * len(even) and odd.count(0) < 0.1 * len(odd):
            return "utf-16-be"
    return None


def _decode(path: Path, data: bytes) -> tuple[str, str]:
    """The text and the encoding it was read with ('' for UTF-8)."""
    enc = _utf16(data)
    if enc:
        try:
            return data.decode(enc).lstrip("\ufeff"), "UTF-16"
        except UnicodeDecodeError as exc:
            raise IngestError(
                f"{path}: cannot read: looks like UTF-16 text but does not decode ({exc.reason} "
                f"at byte {exc.start}); save it as UTF-8"
            ) from None
    if b"\x00" in data:
        raise IngestError(f"{path}: cannot read: binary content (NUL bytes), not a CSV text file")
    try:
        return data.decode("utf-8-sig"), ""
    except UnicodeDecodeError:
        pass
    try:
        return data.decode("cp1252"), "Windows-1252"
    except UnicodeDecodeError as exc:
        raise IngestError(
            f"{path}: cannot read: neither UTF-8 nor Windows-1252 text ({exc})"
        ) from None


def _dedupe_header(raw: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out: list[str] = []
    for i, h in enumerate(raw):
        name = h.strip().lstrip("\ufeff") or f"Unnamed: {i}"
        if name in seen:
            seen[name] += 1
            new = f"{name}.{seen[name]}"
            while new in seen:
                seen[name] += 1
                new = f"{name}.{seen[name]}"
            name = new
        seen.setdefault(name, 0)
        out.append(name)
    return out


_LINE_END = re.compile(r"\r\n|\r|\n")
#: one line with its line end (as io.StringIO(text, newline="") yields it), or a last line without
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")
#: Excel's delimiter line (`sep=;`), written above the header by some exports
_SEP_HINT = re.compile(r"sep=([,;\t|])", re.IGNORECASE)


#: Largest cell read (csv's default, 128 KiB, rejects a whole file for one long summary cell)
MAX_CELL_CHARS = 16 * 1024 * 1024


def _records(p: Path, text: str, delimiter: str) -> Iterator[tuple[int, int, list[str]]]:
    """(first physical line, last physical line, cells) of every CSV record, lines 1-based."""
    if csv.field_size_limit() < MAX_CELL_CHARS:
        csv.field_size_limit(MAX_CELL_CHARS)
    # lines as io.StringIO(text, newline="") yields them, without its copy of the whole text
    lines = (m.group() for m in _LINE.finditer(text))
    reader = csv.reader(lines, delimiter=delimiter, strict=False)
    prev = 0
    try:
        for rec in reader:
            yield prev + 1, reader.line_num, rec
            prev = reader.line_num
    except csv.Error as exc:
        raise IngestError(f"{p}: cannot read as CSV (line {reader.line_num}): {exc}") from None


def _merged_rows(lines: list[str], cells: int, delimiter: str, width: int) -> bool:
    """True when a multi-line record swallowed lines that are rows of their own (a stray quote).

    `lines` are the record's continuation lines. A line wholly inside the quoted cell (all but the
    last) that, read alone, has at least half the header's cells is a swallowed row; so is the last
    line when the record does not have the header's width (the cell closed at a quote inside a later
    row, whose remaining cells were appended). A quoted line break inside a text cell leaves lines of
    prose and a record of the header's width."""
    need = max(2, (width + 1) // 2)

    def row_like(ln: str) -> bool:
        return len(next(csv.reader([ln], delimiter=delimiter, strict=False), [])) >= need

    if any(row_like(ln) for ln in lines[:-1]):
        return True
    return cells != width and bool(lines) and row_like(lines[-1])


_ID = re.compile(r"[0-9]+(?:\.0+)?")


def _kind(cell: str) -> str:
    """'id' (a whole number), 'date' (a date, or shaped like a numeric one) or '' (other text)."""
    text = cell.strip()
    if _ID.fullmatch(text):
        return "id"
    try:
        parse_date(text)
    except DateParseError:
        return "date" if numeric_parts(text) is not None else ""
    return "date"


def _lead(cells: list[str]) -> tuple[str, ...] | None:
    """The kinds of the first two cells when they are an id and a date (either order), else None."""
    kinds = tuple(_kind(c) for c in cells[:2])
    return kinds if sorted(kinds) == ["date", "id"] else None


def _row_after_break(rec: list[str], delimiter: str, width: int) -> bool:
    """True when a cell of the record `rec` holds a line break followed by text shaped like a data
    row of this file: read alone, it has at least half the header's cells (and 3), its first two
    cells are an id and a date as the record's own first two are, or (`_same_prefix`) it is the
    start of a row up to this cell. Two rows joined by a stray quote look so; a note with a line
    break followed by prose does not."""
    need = max(3, (width + 1) // 2)
    lead = _lead(rec)
    for j, cell in enumerate(rec):
        for after in _LINE_END.split(cell)[1:]:
            cells = next(csv.reader([after], delimiter=delimiter, strict=False), [])
            if len(cells) >= need or (lead is not None and _lead(cells) == lead):
                return True
            if _same_prefix(rec, j, cells):
                return True
    return False


def _same_prefix(rec: list[str], j: int, cells: list[str]) -> bool:
    """True when `cells` (the text after a line break in cell `j`) are cells 0..j of a row: as many
    as cell `j` is preceded by, plus the start of cell `j`, and the same kinds as the record's own
    cells 0..j-1 (an id where it has an id, a date where it has a date), one of them an id or a
    date. A stray quote in cell `j` closed by the next row's cell `j` leaves exactly that."""
    if j == 0 or len(cells) != j + 1:
        return False
    kinds = [_kind(c) for c in rec[:j]]
    return any(kinds) and kinds == [_kind(c) for c in cells[:j]]


def _reject_line_break(table: Table, first: int, last: int) -> None:
    """Reject a record whose quoted line break is followed by a row-shaped line: one error naming
    its lines; every line counts as a rejected row (the build refuses: kb_store.ingest_report)."""
    table.issues.append(
        issue(
            table.name,
            first,
            None,
            "line_break_in_cell",
            f"lines {first}-{last}: a quoted cell holds a line break followed by a line shaped "
            "like a data row of this file (a stray quote may have joined rows); the record is "
            f"rejected and no session is made from lines {first}-{last}; fix the quotes in the "
            "file",
        )
    )
    table.broken_rows.extend(range(first, last + 1))
    table.row_lines += last - first + 1


def _fit(table: Table, n: int, rec: list[str], width: int) -> list[str] | None:
    """Pad a short row (with the warning that says so); None for a row with more cells than the
    header, rejected with an `extra_cells` error: an unquoted delimiter inside a cell shifts every
    later cell one column, so no cell of the row can be trusted to be in its column."""
    if len(rec) < width:
        table.issues.append(
            issue(
                table.name,
                n,
                None,
                "short_row",
                f"{len(rec)} cells for {width} columns; the absent cells are read as blank",
            )
        )
        return rec + [""] * (width - len(rec))
    if len(rec) > width:
        extra = [c for c in rec[width:] if c.strip()]
        shown = ", ".join(repr(c[:20]) for c in extra[:3]) if extra else "blank"
        table.issues.append(
            issue(
                table.name,
                n,
                None,
                "extra_cells",
                f"{len(rec)} cells for {width} columns (extra: {shown}): an unquoted "
                f"{table.delimiter!r} inside a cell shifts the cells after it, so the row is "
                "rejected; quote the cell that holds it",
            )
        )
        table.broken_rows.append(n)
        return None
    return rec


def _split_broken_quote(
    table: Table, physical: list[str], lines: tuple[int, int], delimiter: str
) -> None:
    """A stray quote swallowed the lines after `first`: reject the row that opened it (row
    `first`), read every swallowed line as its own row (numbered by its line), and let the build
    refuse (kb_store.ingest)."""
    first, last = lines
    width = len(table.header)
    table.issues.append(
        issue(
            table.name,
            first,
            None,
            "broken_quote",
            f"line {first}: a quote opened here is closed only on line {last} (or never), "
            f"so the CSV reader merged lines {first}-{last} into one row; this row is "
            f"rejected and lines {first + 1}-{last} are read as rows of their own; fix "
            "the quote in the file",
        )
    )
    table.broken_rows.append(first)
    table.row_lines += 1
    for k in range(first + 1, last + 1):
        table.row_lines += 1
        sub = _split(physical[k - 1], delimiter)
        if not any(c.strip() for c in sub):
            table.blank_rows += 1
            continue
        fitted = _fit(table, k, sub, width)
        if fitted is not None:
            table.rows.append(k, fitted, physical[k - 1])


def _add_record(
    table: Table, physical: list[str], lines: tuple[int, int], rec: list[str], delimiter: str
) -> None:
    """One data record (physical lines `lines`): a blank row, a broken quote split into its lines,
    a `line_break_in_cell` rejection, or a row numbered by the line it starts on."""
    first, last = lines
    width = len(table.header)
    cont = physical[first:last]  # the record's continuation lines
    if not any(c.strip() for c in rec):
        table.blank_rows += 1
        table.row_lines += last - first + 1
    elif cont and _merged_rows(cont, len(rec), delimiter, width):
        _split_broken_quote(table, physical, lines, delimiter)
    elif cont and _row_after_break(rec, delimiter, width):
        _reject_line_break(table, first, last)
    else:
        table.row_lines += last - first + 1
        fitted = _fit(table, first, rec, width)
        if fitted is not None:
            table.rows.append(first, fitted, physical[first - 1] if first == last else None)


def read_table(path: str | Path, name: str | None = None) -> Table:
    """Read one CSV file; raise `IngestError` (one line naming the file) when it cannot be read.
    `name` keys the file in reports and sources (default: its base name)."""
    p = Path(path)
    name = name or p.name
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise IngestError(f"{p}: cannot read: {exc.strerror or exc}") from None
    text, encoding = _decode(p, data)
    del data  # the text is all that is read from here on
    if not text.strip():
        raise IngestError(f"{p}: cannot read: the file is empty (no header row)")
    physical = _LINE_END.split(text)
    if physical and physical[-1] == "":
        physical.pop()  # the final line end closes the last line; it opens none
    hint = _SEP_HINT.fullmatch(physical[0].strip()) if physical else None
    if hint:  # Excel's `sep=,` first line: it names the delimiter and is no header
        delimiter = hint[1]
        text = text[len(physical[0]) :]  # the line's end stays: read as a blank line
    else:
        first_line = next((ln for ln in physical if ln.strip()), "")
        delimiter = max((",", ";", "\t"), key=lambda d: (first_line.count(d), d == ","))
    table = Table(p, name, [], Rows(delimiter), lines=len(physical), delimiter=delimiter)
    if encoding:
        table.issues.append(issue(name, None, None, "encoding", f"decoded as {encoding}"))
    header_at = None
    for first, last, rec in _records(p, text, delimiter):
        if header_at is not None:
            _add_record(table, physical, (first, last), rec, delimiter)
        elif any(c.strip() for c in rec):
            header_at = first
            table.header = _dedupe_header(rec)
            table.header_lines = last  # with any blank lines above it
    if header_at is None:
        raise IngestError(f"{p}: cannot read: no header row")
    return table
