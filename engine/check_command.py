"""`marag check "QUERY" --text FILE`: verify any text (a clinician's draft, another system's
output) against the facts of the query's plan, with the statement check the product's own texts get.

The plan comes from the query and the same plan flags as `ask`; the facts are computed by the
engine with the facts backend (no LLM call). The text gets the product's statement check: a verdict
per sentence (supported | neutral | unsupported, with reasons and the ledger values each matched)
and the coverage of the final summary's key facts, reported beside the verdict. Exit 0 when it
passes (no unsupported sentence; and coverage at least --coverage-min when that is given: by
default a true text that leaves a key fact out passes, with the missing facts listed), 1 when it
does not, 2 on a user error (missing file, empty text, bad flag, unknown patient).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from engine.config import Config
from engine.query_input import MAX_CHECK_CHARS, QueryInputError, check_checked_text


def read_text(path: str) -> str:
    """The text to check: a file or stdin ("-"), read no further than the cap allows."""
    if path == "-":
        text = sys.stdin.read(MAX_CHECK_CHARS + 1)
    else:
        p = Path(path)
        if not p.is_file():
            raise FileNotFoundError(f"--text: no such file: {path}")
        if p.stat().st_size > 4 * MAX_CHECK_CHARS:  # more characters than the cap in any UTF-8
            raise QueryInputError(
                f"--text: {path} has {p.stat().st_size} bytes; at most {MAX_CHECK_CHARS} "
                "characters are checked (split it into parts)"
            )
        try:
            text = p.read_text(encoding="utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(
                f"--text: {path} is not UTF-8 text ({e.reason} at byte {e.start})"
            ) from e
    if not text.strip():
        raise ValueError(f"--text: {path} is empty")
    return check_checked_text(text, f"--text {path}")


def check_against_result(
    result, text: str, contexts=None, coverage_min: float = 1.0
) -> dict[str, Any]:
    """The check's JSON record for `text` against an existing result's facts (its ledger, flags
    and cohort finding): what `marag check` prints and the dashboard's "Check a text" box shows."""
    from engine.grounding.verify import context_phrases, verify_text

    check_checked_text(text)
    rec = verify_text(
        text,
        result.ledger,
        result.plan.patients,
        agent="final",
        flags=result.flags,
        cohort=result.cohort,
        analysis=result.plan.analysis,
        phrases=context_phrases(contexts),
        coverage_min=coverage_min,
    )
    return {
        "passed": rec["passed"],
        "coverage": rec["coverage"],
        "sentences": rec["sentences"],
        "unsupported_sentences": rec["unsupported_sentences"],
        "sentences_total": rec["sentences_total"],
        "missing_key_facts": rec["coverage_detail"]["missing"],
        "coverage_min": coverage_min,
        "plan": result.plan.to_dict(),
    }


def check_text_against_plan(
    engine, query: str, text: str, plan=None, coverage_min: float = 1.0
) -> dict[str, Any]:
    """The check's JSON record for `text` against the facts of `query`'s plan (`engine` must be
    a facts-backend engine: no model call)."""
    result = engine.ask(query, plan=plan) if plan is not None else engine.ask(query)
    return check_against_result(result, text, engine.contexts, coverage_min)


#: the default --coverage-min of a check: coverage reported beside the verdict, not required
REPORT_ONLY = 0.0


def coverage_line(coverage: float, cov_min: float) -> str:
    """The coverage part of a check's verdict line."""
    if cov_min <= REPORT_ONLY:
        return f"key-fact coverage {coverage:.2f} (reported; --coverage-min requires it)"
    return f"key-fact coverage {coverage:.2f} (needs {cov_min:.2f})"


def check(args: argparse.Namespace, cfg: Config) -> int:
    from engine.engine_factory import open_engine
    from engine.plan import parse_query
    from engine.query_cli import plan_from_args

    query = getattr(args, "query", "") or ""
    text = read_text(args.text)
    # truth and completeness apart: coverage is reported, and fails a text only when asked (the
    # product's own guard keeps requiring cfg.coverage_min of what it writes)
    cov_min = REPORT_ONLY if args.coverage_min is None else args.coverage_min
    if not 0.0 <= cov_min <= 1.0:
        raise ValueError(f"--coverage-min must be between 0 and 1, got {cov_min}")
    overrides = any(
        getattr(args, k, None)
        for k in ("patients", "analysis", "instruments", "visits", "statistic")
    )
    if not query and not overrides:
        raise ValueError("check needs a QUERY or plan flags (--patients, --analysis, ...)")
    engine = open_engine(cfg, llm=None)  # the facts only: no model is loaded
    plan = plan_from_args(args, parse_query(query) if query else None) if overrides else None
    rec = check_text_against_plan(engine, query, text, plan, cov_min)
    # audit trail: every check is recorded before its verdict is shown
    from engine.audit import record

    entry = record(cfg, "check", user=getattr(args, "user", None), result=rec, plan=rec["plan"])
    print(f"[audit entry #{entry.id}]", file=sys.stderr)
    if getattr(args, "json", False):
        print(json.dumps(rec, default=str))
    else:
        for s in rec["sentences"]:
            print(f"[{s['status']}] {s['text']}")
            for r in s["reasons"]:
                print(f"    - {r}")
        for m in rec["missing_key_facts"]:
            print(f"[missing key fact] {m}")
        print(
            f"\n{'PASSED' if rec['passed'] else 'FAILED'}: {rec['unsupported_sentences']} of "
            f"{rec['sentences_total']} sentence(s) unsupported; {coverage_line(rec['coverage'], cov_min)}"
        )
    return 0 if rec["passed"] else 1
