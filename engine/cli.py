"""`marag` command line: argument parsing and dispatch only. Each subcommand's work lives in the
module that owns it (kb_store.kb_cli, engine.query_cli, engine.eval.eval_cli).

Errors that users can fix (bad input, unknown ids, unreadable files, a misconfigured LLM backend)
exit 2 with one line on stderr.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from engine import logs
from engine.audit import cli as audit_cli
from engine.audit.errors import AuditError
from engine.config import Config
from engine.llm.errors import BackendError
from kb_store.ingest_flags import add_ingest_arguments

log = logging.getLogger("marag.cli")
STATISTICS = ["latest", "change", "slope_visit", "slope_year", "mean"]


class UsageError(Exception):
    """A problem the user can fix; printed as one line, exit code 2."""


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--kb-dir", dest="kb_dir", default=None, help="knowledge-base directory (MARAG_KB_DIR)"
    )
    p.add_argument(
        "--chroma-url",
        dest="chroma_url",
        default=None,
        help="use a Chroma server (MARAG_CHROMA_URL)",
    )
    p.add_argument(
        "--embedding",
        choices=["minilm", "hashing"],
        default=None,
        help="embedding model (MARAG_EMBEDDING)",
    )


def _llm_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--llm", choices=["facts", "local", "openai"], default=None, help="LLM backend (MARAG_LLM)"
    )
    p.add_argument("--model", default=None, help="local model directory or GGUF file (MARAG_MODEL)")
    p.add_argument("--openai-base-url", dest="openai_base_url", default=None)
    p.add_argument("--openai-model", dest="openai_model", default=None)
    p.add_argument(
        "--number-safe",
        dest="number_safe",
        choices=["on", "off"],
        default=None,
        help="constrain local decoding to the prompt's allowed numbers (default: on for local)",
    )
    p.add_argument("--planner", choices=["rules", "llm"], default=None)


def _plan_flags(p: argparse.ArgumentParser) -> None:
    """The plan flags `ask` and `check` share: patients, analysis, instruments and visits."""
    p.add_argument("--patients", default=None, help="comma-separated proj ids, e.g. 3,8")
    p.add_argument(
        "--analysis", choices=["trajectory", "comparison", "cohort", "single_session"], default=None
    )
    p.add_argument("--instruments", default=None, help="updrs,pdq8")
    p.add_argument("--visits", default=None, help="visit filter, e.g. baseline, last_3_visits")


def _add_kb_parsers(sub: argparse._SubParsersAction) -> None:
    """`marag kb synth | build | report | verify`."""
    kb = sub.add_parser("kb", help="knowledge base: synthesize, build, report").add_subparsers(
        dest="kb_command", required=True
    )
    synth = kb.add_parser("synth", help="write a seeded synthetic cohort CSV")
    synth.add_argument("--patients", type=int, default=44)
    synth.add_argument("--visits", type=int, default=4)
    synth.add_argument("--seed", type=int, default=7)
    synth.add_argument("--out", required=True)
    build = kb.add_parser("build", help="build or update the persistent KB")
    build.add_argument(
        "--source",
        action="append",
        default=None,
        help="'synthetic' (the shipped default sample) or a CSV file / folder; repeatable",
    )
    build.add_argument("--format", choices=["auto", "generic", "marag", "ppmi"], default="auto")
    build.add_argument(
        "--if-missing", action="store_true", help="do nothing when a KB already exists"
    )
    build.add_argument("--visit-window-days", dest="visit_window_days", type=int, default=None)
    add_ingest_arguments(build)  # --date-order, --allow-skipped-files
    _common(build)
    audit_cli.add_user_flag(build)  # audit trail: the user recorded
    audit_cli.add_audit_db_flag(build)
    report = kb.add_parser(
        "report", help="print the validation report for sources without building"
    )
    report.add_argument("--source", action="append", default=None)
    report.add_argument("--format", choices=["auto", "generic", "marag", "ppmi"], default="auto")
    report.add_argument("--visit-window-days", dest="visit_window_days", type=int, default=None)
    add_ingest_arguments(report)
    report.add_argument("--json", action="store_true")
    verify = kb.add_parser("verify", help="check the live KB (files, SQLite, document count)")
    verify.add_argument("--json", action="store_true")
    _common(verify)


def _add_query_parsers(sub: argparse._SubParsersAction) -> None:
    """`marag plan`, `marag ask` and `marag report`."""
    plan = sub.add_parser("plan", help="parse a query into a plan")
    plan.add_argument("query")
    plan.add_argument("--json", action="store_true")
    _common(plan)
    _llm_flags(plan)

    ask = sub.add_parser("ask", help="run the whole pipeline")
    ask.add_argument("query", nargs="?", default="")
    _plan_flags(ask)
    ask.add_argument("--json", action="store_true")
    ask.add_argument(
        "--statistic",
        choices=STATISTICS,
        default=None,
        help="cohort statistic to rank by (default: chosen from the query's words)",
    )
    _common(ask)
    _llm_flags(ask)
    audit_cli.add_user_flag(ask)  # audit trail: the user recorded
    audit_cli.add_audit_db_flag(ask)

    rep = sub.add_parser("report", help="run a query and write its printable report")
    rep.add_argument("query", nargs="?", default="")
    _plan_flags(rep)
    rep.add_argument("--format", choices=["pdf", "html", "md"], default="pdf")
    rep.add_argument("--out", required=True, help="the file to write")
    rep.add_argument("--statistic", choices=STATISTICS, default=None, help="as ask")
    _common(rep)
    _llm_flags(rep)
    audit_cli.add_user_flag(rep)
    audit_cli.add_audit_db_flag(rep)


def _add_check_parser(sub: argparse._SubParsersAction) -> None:
    """`marag check "QUERY" --text FILE`."""
    chk = sub.add_parser("check", help="verify a text against the facts of a query's plan")
    chk.add_argument("query", nargs="?", default="")
    chk.add_argument("--text", required=True, help="the text to check (a file; - for stdin)")
    _plan_flags(chk)
    chk.add_argument(
        "--coverage-min",
        dest="coverage_min",
        type=float,
        default=None,
        help="share of the key facts the text must state (default MARAG_COVERAGE_MIN or 1.0)",
    )
    chk.add_argument(
        "--statistic",
        choices=STATISTICS,
        default=None,
        help="cohort statistic of the plan (as ask)",
    )
    chk.add_argument("--json", action="store_true")
    _common(chk)
    audit_cli.add_user_flag(chk)  # audit trail: a check is a release action
    audit_cli.add_audit_db_flag(chk)


def _add_eval_parser(sub: argparse._SubParsersAction) -> None:
    """`marag eval`: the evaluation harness."""
    ev = sub.add_parser("eval", help="run the evaluation harness (baselines vs product)")
    ev.add_argument("--out", default="eval-out")
    ev.add_argument("--queries", default=None, help="query set JSON (default: the shipped set)")
    ev.add_argument("--dataset", choices=["synthetic", "marag", "both"], default="both")
    ev.add_argument(
        "--marag-dir", dest="marag_dir", default=None, help="folder with the MA-RAG study CSVs"
    )
    ev.add_argument(
        "--limit", type=int, default=None, help="run only the first N queries per dataset"
    )
    ev.add_argument("--systems", default="single_pass,marag_unguarded,product")
    ev.add_argument(
        "--resume",
        action="store_true",
        help="keep the finished queries of an interrupted run in --out and run only the rest",
    )
    _llm_flags(ev)
    ev.add_argument("--embedding", choices=["minilm", "hashing"], default=None)


def build_parser() -> argparse.ArgumentParser:
    """The `marag` parser with every subcommand, in the order `marag --help` lists them."""
    ap = argparse.ArgumentParser(
        prog="marag", description="Grounded MA-RAG summaries of Parkinson's assessments"
    )
    ap.add_argument(
        "--log-level",
        dest="log_level",
        type=str.upper,
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        default=None,
        help="level of the marag loggers on stderr (MARAG_LOG_LEVEL, default WARNING)",
    )
    sub = ap.add_subparsers(dest="command", required=True)
    _add_kb_parsers(sub)
    _add_query_parsers(sub)
    audit_cli.add_parser(sub, _common)
    _add_check_parser(sub)
    _add_eval_parser(sub)
    from engine.search.search_cli import add_parsers as add_search_parsers

    add_search_parsers(sub, _common)
    _add_dashboard_parser(sub)
    return ap


CONFIG_KEYS = (
    "log_level",
    "kb_dir",
    "chroma_url",
    "embedding",
    "llm",
    "model",
    "openai_base_url",
    "openai_model",
    "planner",
    "visit_window_days",
    "audit_db",
)


def _add_dashboard_parser(sub: argparse._SubParsersAction) -> None:
    dash = sub.add_parser(
        "dashboard", help="start the dashboard (the packaged Streamlit app and configuration)"
    )
    dash.add_argument("--port", type=int, default=8501)
    dash.add_argument(
        "--address", default=None, help="default 127.0.0.1 (the packaged configuration)"
    )
    _common(dash)
    _llm_flags(dash)


def _dashboard(args: argparse.Namespace) -> int:
    """Replace this process by the dashboard's launcher (dashboard.launch, started as a module:
    the engine never imports the dashboard). Flags reach it as MARAG_* variables."""
    env = dict(os.environ)
    for key in CONFIG_KEYS:
        value = getattr(args, key, None)
        if value is not None:
            env[f"MARAG_{key.upper()}"] = str(value)
    argv = [sys.executable, "-m", "dashboard.launch", "--port", str(args.port)]
    if args.address:
        argv += ["--address", args.address]
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, argv, env)
    return 1  # pragma: no cover - execve does not return


def config_from_args(args: argparse.Namespace) -> Config:
    overrides = {k: getattr(args, k, None) for k in CONFIG_KEYS}
    ns = getattr(args, "number_safe", None)
    if ns is not None:
        overrides["number_safe"] = ns == "on"
    return Config.load(overrides)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        cfg = config_from_args(args)
        logs.configure(cfg.log_level)
        log.info("marag %s (llm=%s, kb=%s)", args.command, cfg.llm, cfg.chroma_url or cfg.kb_dir)
        if args.command == "dashboard":
            return _dashboard(args)
        if args.command == "kb":
            from kb_store import kb_cli

            before = audit_cli.kb_state(cfg) if args.kb_command == "build" else None
            rc = getattr(kb_cli, args.kb_command)(args, cfg.kb)
            if before is not None and rc == 0:  # audit trail: a KB build is recorded
                audit_cli.record_kb_build(args, cfg, before)
            return rc
        if args.command in ("plan", "ask", "report"):
            from engine import query_cli

            return getattr(query_cli, args.command)(args, cfg)
        if args.command == "audit":
            return audit_cli.run(args, cfg)
        if args.command in ("search", "similar"):
            from engine.search import search_cli

            return getattr(search_cli, args.command)(args, cfg)
        if args.command == "check":
            from engine import check_command

            return check_command.check(args, cfg)
        if args.command == "eval":
            from engine.eval import eval_cli

            return eval_cli.run(args, cfg)
    except (UsageError, ValueError, KeyError, FileNotFoundError, AuditError, BackendError) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
        print(f"marag: error: {msg}", file=sys.stderr)
        return 2
    return 1


if __name__ == "__main__":
    sys.exit(main())
