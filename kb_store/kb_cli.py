"""`marag kb synth | build | report | verify`: the knowledge-base subcommands (engine.cli dispatches here
with the parsed arguments and the `KBSettings` that engine.config built from flags and MARAG_*).

Owns what each command prints and writes; the work itself lives in kb_store.synth (cohort),
kb_store.ingest (sources -> sessions + validation issues), kb_store.ingest_report (report text/JSON)
and kb_store.chroma_kb (atomic incremental build, reached through KBSettings). Each function returns the process exit code; problems
the user can fix raise ValueError subclasses (the CLI prints one line and exits 2).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import shutil
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path

from kb_store import synth as synth_mod
from kb_store.exclusions import excluded_from_ingest, write_excluded
from kb_store.ingest_report import IngestResult, format_report, report_dict
from kb_store.settings import KBSettings

log = logging.getLogger("marag.kb")

SYNTHETIC = "synthetic"
REPORT_TXT = "validation_report.txt"
REPORT_JSON = "validation_report.json"


class SourceError(ValueError):
    """A --source that does not exist or cannot be read."""


def synth(args: argparse.Namespace, _kb: KBSettings) -> int:
    """`marag kb synth`: write the synthetic sample CSV (the KB settings are not needed)."""
    df = synth_mod.generate(patients=args.patients, visits=args.visits, seed=args.seed)
    out = synth_mod.write_csv(df, args.out)
    print(
        f"wrote {out}: {df['proj_id'].nunique()} patients, {len(df)} visit rows "
        f"(seed {args.seed}, up to {args.visits} visits each)"
    )
    return 0


def resolve_sources(sources: list[str] | None) -> list[Path]:
    """`--source` values as paths; 'synthetic' (the default) is the shipped sample."""
    out: list[Path] = []
    for s in sources or [SYNTHETIC]:
        p = synth_mod.default_sample_path() if s == SYNTHETIC else Path(s).expanduser()
        if not p.exists():
            raise SourceError(
                f"source {s} does not exist (expected a CSV file, a folder or 'synthetic')"
            )
        if p.is_file() and not os.access(p, os.R_OK):
            raise SourceError(f"source {p} cannot be read (permission denied)")
        out.append(p)
    return out


def load(args: argparse.Namespace, kb: KBSettings, *, keys_only: bool = False) -> IngestResult:
    """Ingest the sources named by the arguments; `keys_only` (a report: nothing is built) keeps
    of each session only what the rules and the report read (kb_store.ingest.load_sources)."""
    from kb_store.ingest import load_sources

    window = (
        args.visit_window_days
        if getattr(args, "visit_window_days", None) is not None
        else kb.visit_window_days
    )
    try:
        return load_sources(
            resolve_sources(args.source),
            args.format,
            visit_window_days=window,
            date_order=getattr(args, "date_order", None),
            allow_skipped_files=bool(getattr(args, "allow_skipped_files", False)),
            keys_only=keys_only,
        )
    except (OSError, UnicodeError) as e:  # unreadable file: one line, exit 2
        raise SourceError(f"cannot read source: {e}") from e


def summary_lines(result: IngestResult) -> list[str]:
    """The counts part of the validation report (everything before the issue lists)."""
    text = format_report(result)
    head = text.split("\n\n", 1)[0].splitlines()
    return [ln for ln in head if not set(ln) <= {"="}]


def write_reports(result: IngestResult, kb_dir: Path) -> tuple[Path, Path]:
    kb_dir.mkdir(parents=True, exist_ok=True)
    txt, js = kb_dir / REPORT_TXT, kb_dir / REPORT_JSON
    _atomic_write(txt, format_report(result) + "\n")
    _atomic_write(js, json.dumps(report_dict(result), indent=1, default=str) + "\n")
    return txt, js


def build(args: argparse.Namespace, kb: KBSettings) -> int:
    from kb_store.kb_lock import build_lock

    if kb.chroma_url:
        return _build(args, kb)
    with build_lock(kb.kb_dir):  # taken before ingest: one build at a time, sources to switch
        return _build(args, kb)


@contextlib.contextmanager
def embedding_bar() -> Iterator[Callable[[int, int], None]]:
    """A tqdm bar on stderr for the documents embedded (a build embeds for a minute or two); it
    draws only on a terminal, and its closing line is logged."""
    from tqdm import tqdm

    width = shutil.get_terminal_size((100, 20)).columns  # a terminal that reports 0 columns
    bar = tqdm(total=0, unit="doc", desc="embedding", file=sys.stderr, disable=None, ncols=width)
    seen = [0, 0]  # done, total (tqdm counts nothing when it is disabled off a terminal)

    def progress(done: int, total: int) -> None:
        if seen[1] != total:
            bar.reset(total=total)
        bar.update(done - seen[0])
        seen[:] = [done, total]

    try:
        yield progress
    finally:
        bar.close()
        log.info("embedded %d of %d documents", *seen)


def _build(args: argparse.Namespace, kb: KBSettings) -> int:
    if args.if_missing and kb.exists():
        print(
            f"KB already exists at {kb.location} (collection {kb.collection}); "
            "nothing to do (--if-missing)"
        )
        return 0
    result = load(args, kb)
    for ln in summary_lines(result):
        print(ln)
    if result.blocking:
        raise SourceError(refusal(result))
    if not result.sessions:
        sev = Counter(i.severity for i in result.issues)
        raise SourceError(
            f"no valid sessions in the sources ({sev.get('error', 0)} errors); "
            "run `marag kb report` for the full report"
        )
    with embedding_bar() as progress:
        stats = kb.build(result.sessions, progress=progress)
    txt, js = write_reports(result, Path(kb.kb_dir))
    # the sessions rejected at ingest, for every answer that names their patient
    write_excluded(excluded_from_ingest(result, resolve_sources(args.source)), Path(kb.kb_dir))
    print(f"full validation report: {txt} (JSON: {js})")
    print(stats.line())
    return 0


def refusal(result: IngestResult) -> str:
    """The one line of a refused build: how many blocking issues, the first, and the way out."""
    first = result.blocking[0]
    where = f"{first.file}, row {first.row}" if first.row is not None else first.file
    rules = {i.rule for i in result.blocking}
    ways = ["fix the file (`marag kb report` lists them)"]
    if "ambiguous_date_order" in rules:
        ways.append("give the day/month order (--date-order dmy|mdy)")
    if "unrecognised_file" in rules:
        ways.append("allow skipped files (--allow-skipped-files)")
    return (
        f"build refused: {len(result.blocking)} issue(s) would lose rows or store dates read "
        f"in a guessed order (first: {where}: [{first.rule}]); {' or '.join(ways)}; "
        "the KB is unchanged"
    )


def verify(args: argparse.Namespace, kb: KBSettings) -> int:
    """`marag kb verify`: check the live KB; exit 0 when healthy, else 2 naming the file."""
    from kb_store.kb_health import KBCorruptError, verify_kb

    v = verify_kb(kb.kb_dir, collection=kb.collection, chroma_url=kb.chroma_url)
    if getattr(args, "json", False):
        print(json.dumps({"ok": v.ok, **asdict(v)}, indent=1))
    elif v.ok:
        print(v.line())
    if not v.ok:
        raise KBCorruptError(v.line())
    return 0


def report(args: argparse.Namespace, kb: KBSettings) -> int:
    result = load(args, kb, keys_only=True)
    if args.json:
        print(json.dumps(report_dict(result), indent=1, default=str))
    else:
        print(format_report(result))
    return 0


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
