"""Bad-input and fault campaign, compact and repeatable: counts what the note reports.

Bad inputs: ~45 mutated CSV files (stray quotes, date orders, ids, digit scripts, encodings, line
ends, shapes, values, same-name sources, the real study file with a deleted quote) are ingested
in-process. A case is *handled cleanly* when ingest returns a result or raises IngestError with a
one-line message (never another exception). *Rows lost* counts data rows that are in no session and
in no issue, plus physical lines that no header, row or blank line accounts for.

Faults, each through the real `marag` CLI in subprocesses on a hashing-embedding KB:
- kill -9 of a build at a random moment (N runs), then the KB must verify, answer `marag ask`, and
  the next build must succeed and leave one generation;
- disk full during a build (an embedding function raising ENOSPC, in-process; a real tmpfs is not
  mountable here without privileges), then the previous KB must be intact;
- corrupt KB files (truncated / zeroed chroma.sqlite3, garbled manifest.json / hashes.json, dangling
  CURRENT, partial generation left behind): reads exit 2 with one line, the rebuild repairs;
- two concurrent builds: one refuses (exit 2), the KB verifies;
- query and --patients inputs (control characters, other digit scripts, empty lists, overlong
  text, adversarial regex input): exit 0 or 2 with one line, never a traceback, never a plan widened
  to every patient when an id was written.

Usage (repository root):  HF_HUB_OFFLINE=1 .venv/bin/python bench/campaign.py [--kills 8]
Prints the figures and writes JSON with --json-out.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
STUDY = REPO.parent / "shared" / "data" / "ma-rag"
ENV = {
    **{k: v for k, v in os.environ.items() if not k.startswith("MARAG_")},
    "PYTHONPATH": str(REPO),
    "HF_HUB_OFFLINE": "1",
    "ANONYMIZED_TELEMETRY": "False",
}


# ------------------------------------------------------------------ bad inputs


def _base_rows(n_pat: int = 5, visits: int = 4) -> tuple[list[str], list[list[str]]]:
    from kb_store.profiles import load_profile

    updrs = [i.code for i in load_profile("mds-updrs").items if not i.code.startswith("NP4")]
    pdq = [i.code for i in load_profile("pdq8").items]
    header = ["proj_id", "date", *updrs, *pdq]
    rows = []
    for p in range(1, n_pat + 1):
        for v in range(visits):
            rows.append([str(p), f"2021-{1 + 2 * v:02d}-10"] + ["1"] * (len(updrs) + len(pdq)))
    return header, rows


def _csv(header, rows, lineterminator="\n", delimiter=",") -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator=lineterminator, delimiter=delimiter)
    w.writerow(header)
    w.writerows(rows)
    return buf.getvalue()


def bad_inputs(tmp: Path) -> list[tuple[str, list[Path]]]:
    """(name, files) of every bad-input case."""
    header, rows = _base_rows()
    text = _csv(header, rows)
    lines = text.split("\n")
    cases: list[tuple[str, list[Path]]] = []

    def add(name: str, content: str | bytes, fname: str = "s.csv") -> None:
        d = tmp / name
        d.mkdir(parents=True)
        p = d / fname
        p.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
        cases.append((name, [p]))

    def mutate_row(i: int, fn) -> str:
        ls = list(lines)
        ls[i] = fn(ls[i])
        return "\n".join(ls)

    for at in (1, 4, 10, 19, 20):
        add(f"stray_quote_row{at + 1}", mutate_row(at, lambda s: s.replace(",2021", ',"2021', 1)))
    add("stray_quote_eof", text + '6,"2021-01-10\n')
    noted = ["note," + lines[0]] + [
        ('"tremor, worse\nat night, 2 falls",' if ln.startswith("1,") else '"",') + ln
        for ln in lines[1:]
        if ln
    ]
    add("quoted_newline_text_first_column", "\n".join(noted) + "\n")
    add(
        "quoted_newline_text_last_column",
        "\n".join([lines[0] + ",note"] + [ln + ',"a,\nb, c"' for ln in lines[1:] if ln]) + "\n",
    )
    day_first = [
        [r[0], f"{10 + i % 15:02d}/{1 + i % 12:02d}/2021", *r[2:]] for i, r in enumerate(rows)
    ]
    add("day_first_dates", _csv(header, day_first))
    mixed = [
        [r[0], ["15/01/2021", "01/20/2021", "03/04/2021", "2021-05-05"][i % 4], *r[2:]]
        for i, r in enumerate(rows)
    ]
    add("mixed_date_orders", _csv(header, mixed))
    undecided = [
        [r[0], f"0{1 + i % 9}/0{1 + (i + 3) % 9}/2021", *r[2:]] for i, r in enumerate(rows)
    ]
    add("undecidable_date_order", _csv(header, undecided))
    ids = [
        "9007199254740993",
        "9007199254740992",
        "1e1",
        "1_0",
        "-0",
        "+3",
        "0x1",
        "9" * 5000,
        "\u0663",
        "\uff14",
    ]
    add("patient_id_spellings", _csv(header, [[i, *rows[0][1:]] for i in ids]))
    add("arabic_indic_items", _csv(header, [[*r[:2], "\u0661", *r[3:]] for r in rows[:4]]))
    add("fullwidth_items", _csv(header, [[*r[:2], "\uff12", *r[3:]] for r in rows[:4]]))
    add(
        "arabic_indic_dates",
        _csv(header, [[r[0], "\u0662\u0660\u0662\u0661-01-10", *r[2:]] for r in rows[:2]]),
    )
    add("utf16_bom", text.encode("utf-16"))
    add("utf16_le", text.encode("utf-16-le"))
    add("utf16_be", text.encode("utf-16-be"))
    add(
        "cp1252",
        text.replace("proj_id", "proj_id", 1).encode("cp1252")
        + "7,2021-01-10,caf\xe9\n".encode("cp1252"),
    )
    add("bom_crlf", b"\xef\xbb\xbf" + _csv(header, rows, "\r\n").encode())
    add("cr_only", _csv(header, rows, "\r"))
    add("semicolon", _csv(header, rows, delimiter=";"))
    add("tab", _csv(header, rows, delimiter="\t"))
    add("blank_lines", "\n\n" + text.replace("\n", "\n\n", 5))
    add(
        "short_rows",
        "\n".join(ln[: len(ln) // 2] if i % 3 == 1 else ln for i, ln in enumerate(lines)),
    )
    add("extra_cells", "\n".join(ln + ",9,9" if i % 4 == 2 else ln for i, ln in enumerate(lines)))
    add("truncated_mid_row", text[: len(text) // 2])
    add("out_of_range", _csv(header, [[*r[:2], "7", *r[3:]] for r in rows]))
    add(
        "non_numeric",
        _csv(
            header,
            [
                [*r[:2], v, *r[3:]]
                for r, v in zip(rows, ["x", "nan", "inf", "1e1", "1_0", "--"] * 4, strict=False)
            ],
        ),
    )
    add("duplicates", _csv(header, rows + rows[:5]))
    add(
        "implausible_and_future",
        _csv(
            header,
            [
                [r[0], d, *r[2:]]
                for r, d in zip(
                    rows, ["1900-01-01", "2099-01-01", "21/13/2021", "03/15/21"] * 5, strict=False
                )
            ],
        ),
    )
    add("no_patient_column", _csv(["pid", *header[1:]], rows))
    add("no_date_column", _csv(["proj_id", "when", *header[2:]], rows))
    add("header_only", lines[0] + "\n")
    add("empty", "")
    add("binary", bytes(range(256)) * 4)
    add(
        "control_chars",
        _csv(header, [[r[0] + "\x00", *r[1:]] for r in rows[:3]]).replace("\x00", "\x1b"),
    )
    add("huge_cell", _csv(header, [[*r[:2], "1" + " " * 1_000_000, *r[3:]] for r in rows[:1]]))
    add("nul_bytes", text.encode() + b"\x00")
    # same base name in two folders
    d = tmp / "same_name"
    (d / "a").mkdir(parents=True)
    (d / "b").mkdir(parents=True)
    (d / "a" / "s.csv").write_text(_csv(header, rows[:8]))
    (d / "b" / "s.csv").write_text(_csv(header, [[str(int(r[0]) + 10), *r[1:]] for r in rows[:8]]))
    cases.append(("same_name_two_folders", [d / "a", d / "b"]))
    cases.append(("same_file_twice", [d / "a" / "s.csv", d / "a" / "s.csv", d / "a"]))
    # the real study file with one closing quote deleted, at three places
    src = STUDY / "UPDRS_one2one_summaries.csv"
    if src.is_file():
        study = src.read_text(encoding="utf-8-sig").split("\n")
        for at in (21, 80, 150):
            ls = list(study)
            i = ls[at - 1].rfind('"')
            ls[at - 1] = ls[at - 1][:i] + ls[at - 1][i + 1 :]
            add(f"study_quote_deleted_line{at}", "\n".join(ls), src.name)
        cases.append(("study_files_as_is", [STUDY]))
    return cases


def second_campaign_inputs(tmp: Path) -> list[tuple[str, list[Path]]]:
    """(name, files) of the second campaign's shapes: rows that must never become sessions as
    written (a stray quote closed by the next row's note, shifted cells), folder files that must
    not be skipped in silence (an Excel `sep=,` line, a title line), a date column whose order
    nothing decides beside a day-first sibling, one id spelled nine ways, invalid clock times and
    offsets, and a rejected date cell holding formula / HTML / Markdown payloads."""
    header, rows = _base_rows()
    cases: list[tuple[str, list[Path]]] = []

    def folder(name: str, files: dict[str, str]) -> None:
        d = tmp / name
        d.mkdir(parents=True)
        for fname, content in files.items():
            (d / fname).write_text(content, encoding="utf-8")
        cases.append((name, [d]))

    with_note = ["proj_id", "note", "date", *header[2:]]
    noted = [[r[0], "seen", *r[1:]] for r in rows]
    text = _csv(with_note, noted).split("\n")
    text[3] = text[3].replace(",seen,", ',"seen, stray,', 1)  # closed by the next row's note
    text[4] = text[4].replace(",seen,", ',seen",', 1)
    folder("stray_quote_closed_by_next_note", {"s.csv": "\n".join(text)})
    shifted = _csv(with_note, noted).split("\n")
    shifted[5] = shifted[5].replace(",seen,", ",seen, and walking,", 1)  # an unquoted comma
    folder("unquoted_comma_shifts_cells", {"s.csv": "\n".join(shifted)})
    folder(
        "excel_sep_line",
        {"a.csv": _csv(header, rows[:8]), "b.csv": "sep=,\n" + _csv(header, rows[8:])},
    )
    folder(
        "title_line_above_header",
        {"a.csv": _csv(header, rows[:8]), "b.csv": "Export of 2021\n" + _csv(header, rows[8:])},
    )
    first = [[r[0], f"{13 + i % 10}/0{1 + i % 9}/2021", *r[2:]] for i, r in enumerate(rows[:8])]
    low = [
        [str(int(r[0]) + 10), f"0{1 + i % 9}/0{1 + (i + 4) % 9}/2021", *r[2:]]
        for i, r in enumerate(rows[8:14])
    ]
    folder(
        "undecidable_sibling_of_day_first",
        {"a.csv": _csv(header, first), "b.csv": _csv(header, low)},
    )
    spellings = ["7", "007", "0007", "7.0", "7\t", "7\u00a0", '"7"', " 7", "7 "]
    folder(
        "nine_spellings_of_one_id",
        {
            "s.csv": _csv(
                header, [[s, f"2021-{1 + i:02d}-10", *rows[0][2:]] for i, s in enumerate(spellings)]
            )
        },
    )
    times = [
        "2021-01-10 24:00",
        "2021-02-10 25:61:99",
        "2021-03-10T10:00+25:00",
        "2021-04-10 23:59:59",
    ]
    folder(
        "clock_times_and_offsets",
        {"s.csv": _csv(header, [[rows[0][0], d, *rows[0][2:]] for d in times])},
    )
    payloads = [
        '=HYPERLINK("http://x.example","y")',
        "<img src=x onerror=alert(1)>",
        "![i](http://x.example/i.png)",
    ]
    folder(
        "payloads_in_rejected_dates",
        {"s.csv": _csv(header, rows[:4] + [[rows[0][0], pl, *rows[0][2:]] for pl in payloads])},
    )
    return cases


#: data rows of cases whose physical lines are not their rows (quoted line breaks in a cell)
EXPECTED_ROWS = {"quoted_newline_text_first_column": 20, "quoted_newline_text_last_column": 20}


def lost_rows(res, name: str, paths: list[Path]) -> int:
    """Data rows written into the case's files that end in no session and no issue, counted
    outside the ingest code: the rows a file holds are its non-blank physical lines after the
    header (what was written), or EXPECTED_ROWS; the rows accounted for are the distinct (file,
    row) pairs in sessions and issues (a file-level error accounts for all of its rows)."""
    import re

    from kb_store.validation import source_refs

    covered = {ref for s in res.sessions for ref in source_refs(s)}
    reported = {(i.file, i.row) for i in res.issues if i.row is not None}
    for i in res.issues:  # a record rejected over several lines ("lines 4-5") covers each
        m = re.search(r"\blines (\d+)-(\d+)", i.message)
        if m and i.row is not None:
            reported |= {(i.file, r) for r in range(int(m.group(1)), int(m.group(2)) + 1)}
    file_err = {i.file for i in res.issues if i.row is None and i.severity == "error"}
    skipped = set(res.stats.get("files_skipped", []))
    names = {f["file"] for f in res.stats["files"]}
    written = accounted = 0
    for p in dict.fromkeys(x.resolve() for x in _files(paths)):
        key = p.name if p.name in names else str(p)
        data = p.read_bytes()
        encs = ["utf-8-sig", "cp1252"]
        if b"\x00" in data[:64]:  # UTF-16 (ASCII text has a zero byte in every pair)
            bom = data[:2] in (b"\xff\xfe", b"\xfe\xff")
            encs = ["utf-16" if bom else ("utf-16-le" if data[1:2] == b"\x00" else "utf-16-be")]
        for enc in encs:
            try:
                text = data.decode(enc)
                break
            except UnicodeDecodeError:
                continue
        lines = [ln for ln in re.split(r"\r\n|\r|\n", text.lstrip("\ufeff")) if ln.strip()]
        if lines and lines[0].lower().startswith("sep="):  # Excel's delimiter line: no row
            lines = lines[1:]
        rows = max(0, len(lines) - 1)
        written += rows
        if key in file_err or key in skipped:
            accounted += rows
        else:
            accounted += len({r for f, r in covered | reported if f == key})
    if name in EXPECTED_ROWS:
        written = EXPECTED_ROWS[name]
    return max(0, written - accounted)


def _delim(text: str) -> str:
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    return max((",", ";", "\t"), key=lambda d: (first.count(d), d == ","))


def run_bad_inputs(tmp: Path) -> dict:
    from kb_store.ingest import IngestError, load_sources

    out = {"inputs": 0, "clean": 0, "rows_lost": 0, "cases": []}
    for name, paths in [*bad_inputs(tmp), *second_campaign_inputs(tmp / "second")]:
        out["inputs"] += 1
        rec: dict = {"case": name}
        try:
            res = load_sources(paths)
        except IngestError as exc:
            rec.update(result="IngestError", message=str(exc)[:160])
            rec["clean"] = "\n" not in str(exc) and len(str(exc)) < 500
        except Exception as exc:  # noqa: BLE001 - counted as not clean
            rec.update(result=f"{type(exc).__name__}: {exc}"[:200], clean=False)
        else:
            lost = lost_rows(res, name, paths)
            rec.update(
                result="ok",
                clean=True,
                sessions=len(res.sessions),
                errors=len(res.errors),
                rows_read=res.stats["rows_read"],
                rows_lost=lost,
                build_refused=bool(getattr(res, "blocking", [])),
                rows_rejected=res.stats.get("rows_rejected", 0),
                warnings=sum(1 for i in res.issues if i.severity == "warning"),
            )
            out["rows_lost"] += lost
        out["clean"] += bool(rec["clean"])
        out["cases"].append(rec)
    return out


def _files(paths: list[Path]) -> list[Path]:
    out = []
    for p in paths:
        if p.is_dir():
            out += sorted(f for f in p.iterdir() if f.suffix.lower() in (".csv", ".txt", ".tsv"))
        else:
            out.append(p)
    return out


# ------------------------------------------------------------------ faults through the CLI


def marag(*args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "engine.cli", *args],
        env=ENV,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def one_line_error(r: subprocess.CompletedProcess) -> bool:
    return r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr


def kb_ok(kb: Path) -> bool:
    v = marag("kb", "verify", "--kb-dir", str(kb), "--embedding", "hashing")
    a = marag(
        "ask",
        "How has patient 3 changed?",
        "--llm",
        "facts",
        "--json",
        "--kb-dir",
        str(kb),
        "--embedding",
        "hashing",
    )
    return v.returncode == 0 and a.returncode == 0 and '"summary"' in a.stdout


def run_faults(tmp: Path, kills: int, seed: int) -> dict:
    rng = random.Random(seed)
    small, big = tmp / "small.csv", tmp / "big.csv"
    for n, p in ((44, small), (300, big)):
        r = marag("kb", "synth", "--patients", str(n), "--out", str(p))
        assert r.returncode == 0, r.stderr
    kb = tmp / "kb"
    kbargs = ["--kb-dir", str(kb), "--embedding", "hashing"]
    assert marag("kb", "build", "--source", str(small), *kbargs).returncode == 0
    faults: list[dict] = []

    # kill -9 during a build
    for k in range(kills):
        src = big if k % 2 == 0 else small
        proc = subprocess.Popen(
            [sys.executable, "-m", "engine.cli", "kb", "build", "--source", str(src), *kbargs],
            env=ENV,
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        delay = rng.uniform(1.0, 6.0)
        time.sleep(delay)
        killed = proc.poll() is None
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        ok_after_kill = kb_ok(kb)
        nxt = marag("kb", "build", "--source", str(small), *kbargs)
        gens = sorted(p.name for p in kb.glob("gen-*"))
        faults.append(
            {
                "fault": f"kill -9 after {delay:.1f} s ({'mid-build' if killed else 'build had finished'})",
                "survived": ok_after_kill and nxt.returncode == 0 and len(gens) == 1 and kb_ok(kb),
            }
        )

    # disk full (injected ENOSPC while writing the new generation)
    code = (
        "import errno,sys;from kb_store import chroma_kb;"
        "from kb_store.embeddings import HashingEmbeddingFunction as H\n"
        "class F(H):\n def __call__(self,input): raise OSError(errno.ENOSPC,'No space left on device','x')\n"
        "chroma_kb.make_embedding_function=lambda n:F()\n"
        "from engine.cli import main;sys.exit(main(sys.argv[1:]))"
    )
    r = subprocess.run(
        [sys.executable, "-c", code, "kb", "build", "--source", str(big), *kbargs],
        env=ENV,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    faults.append(
        {"fault": "disk full (ENOSPC) during build", "survived": one_line_error(r) and kb_ok(kb)}
    )

    # corrupt KB files
    def damage(kind: str) -> None:
        gen = next(kb.glob("gen-*"))
        if kind == "truncated sqlite":
            db = gen / "chroma.sqlite3"
            os.truncate(db, db.stat().st_size // 3)
        elif kind == "zeroed sqlite header":
            with open(gen / "chroma.sqlite3", "r+b") as fh:
                fh.write(b"\0" * 100)
        elif kind == "garbled manifest.json":
            (gen / "manifest.json").write_text("{garbled")
        elif kind == "garbled hashes.json":
            (gen / "hashes.json").write_text("[1,")
        elif kind == "CURRENT names a missing generation":
            (kb / "CURRENT").write_text("gen-009999\n")
        elif kind == "partial generation left behind":
            (kb / "gen-000777").mkdir()
            (kb / "gen-000777" / ".partial").write_text("1\n")
            (kb / "gen-000777" / "chroma.sqlite3").write_bytes(b"partial")

    for kind in (
        "truncated sqlite",
        "zeroed sqlite header",
        "garbled manifest.json",
        "garbled hashes.json",
        "CURRENT names a missing generation",
        "partial generation left behind",
    ):
        damage(kind)
        read = marag(
            "ask", "patient 3", "--llm", "facts", "--kb-dir", str(kb), "--embedding", "hashing"
        )
        read_ok = read.returncode == 0 or one_line_error(read)
        b = marag("kb", "build", "--source", str(small), *kbargs)
        repaired = b.returncode == 0 and kb_ok(kb)
        if kind == "CURRENT names a missing generation":
            # the intact generation was kept, not deleted; clean up the extra one for later cases
            repaired = repaired and len(list(kb.glob("gen-*"))) == 2
            cur = (kb / "CURRENT").read_text().strip()
            for g in kb.glob("gen-*"):
                if g.name != cur:
                    shutil.rmtree(g)
        if kind == "partial generation left behind":
            repaired = repaired and not (kb / "gen-000777").exists()
        faults.append({"fault": kind, "survived": read_ok and repaired})
        if kind == "partial generation left behind":
            # a build with no change keeps the live generation; force one that changes
            marag("kb", "build", "--source", str(big), *kbargs)
            marag("kb", "build", "--source", str(small), *kbargs)

    # two concurrent builds
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "engine.cli", "kb", "build", "--source", str(s), *kbargs],
            env=ENV,
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for s in (big, small)
    ]
    results = [(p.wait(timeout=600), p.stderr.read()) for p in procs]
    one_refused = sorted(rc for rc, _ in results) in ([0, 2], [0, 0])
    faults.append({"fault": "two concurrent builds", "survived": one_refused and kb_ok(kb)})
    return {"faults": len(faults), "survived": sum(f["survived"] for f in faults), "detail": faults}


def run_queries(tmp: Path) -> dict:
    kb = tmp / "kb"
    kbargs = ["--kb-dir", str(kb), "--embedding", "hashing", "--llm", "facts"]
    cases = [
        ("ask", "How has patient 3 changed?"),
        ("ask", "patient\x01 3"),
        ("ask", "patient\x1b3"),
        ("ask", "patient\u200b3"),
        ("ask", "patient \u0663"),
        ("ask", "patient " + "9" * 40),
        ("ask", "patient " + "9" * 5000),
        ("ask", "patient " + "1 and " * 400),
        ("ask", "patients " + " " * 3000 + "x"),
        ("ask", ""),
        ("ask", "compare patients 3 and 8"),
        ("ask", "patient 99999"),
        ("ask", "all patients: who worsened fastest?"),
    ]
    flags = [",", "", "3,,4", "\u00b2", "\u0663", "1e1", "9" * 5000, "3", "3,8", "99999", "-1"]
    out = {"inputs": 0, "clean": 0, "widened": 0, "detail": []}
    for cmd, q in cases + [("ask --patients", f) for f in flags]:
        argv = (
            ["ask", "trajectory", "--patients", q, *kbargs]
            if cmd.endswith("--patients")
            else [cmd, q, "--json", *kbargs]
        )
        r = marag(*argv)
        clean = (r.returncode == 0 or one_line_error(r)) and "Traceback" not in r.stderr
        widened = False
        if r.returncode == 0 and any(ch.isdigit() for ch in q):
            with contextlib.suppress(json.JSONDecodeError):
                widened = not json.loads(r.stdout).get("plan", {}).get("patients")
        out["inputs"] += 1
        out["clean"] += clean
        out["widened"] += widened
        out["detail"].append(
            {"argv": repr(argv[:2])[:80], "rc": r.returncode, "clean": clean, "widened": widened}
        )
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kills", type=int, default=8)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--json-out", default=None)
    ap.add_argument("--skip-faults", action="store_true")
    a = ap.parse_args()
    t0 = time.time()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        bad = run_bad_inputs(tmp / "bad")
        print(
            f"bad inputs: {bad['inputs']} tried, {bad['clean']} handled cleanly, "
            f"{bad['rows_lost']} rows lost, "
            f"{sum(1 for c in bad['cases'] if c.get('build_refused'))} builds refused"
        )
        for c in bad["cases"]:
            if not c["clean"] or c.get("rows_lost"):
                print("  NOT CLEAN:", c)
        res = {"bad_inputs": bad}
        if not a.skip_faults:
            faults = run_faults(tmp / "f", a.kills, a.seed)
            print(f"faults: {faults['faults']} injected, {faults['survived']} survived")
            for f in faults["detail"]:
                print(f"  {'ok  ' if f['survived'] else 'FAIL'} {f['fault']}")
            q = run_queries(tmp / "f")
            print(
                f"query inputs: {q['inputs']} tried, {q['clean']} handled cleanly, "
                f"{q['widened']} widened to every patient"
            )
            for x in q["detail"]:
                if not x["clean"] or x["widened"]:
                    print("  NOT CLEAN:", x)
            res.update(faults=faults, queries=q)
    print(f"campaign took {time.time() - t0:.0f} s")
    if a.json_out:
        Path(a.json_out).write_text(json.dumps(res, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
