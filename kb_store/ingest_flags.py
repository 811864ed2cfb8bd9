"""The ingest flags of `marag kb build` and `kb report`, apart from kb_store.kb_cli so that the
CLI's parser (built for every command) does not import the ingest code and pandas."""

from __future__ import annotations

import argparse


def add_ingest_arguments(parser: argparse.ArgumentParser) -> None:
    """The ingest flags of `kb build` and `kb report` that kb_store.kb_cli.load reads (the parser that
    owns the subcommands calls it): the day/month order of undecidable date columns and whether
    a build may go on past a skipped file."""
    parser.add_argument(
        "--date-order",
        dest="date_order",
        choices=["dmy", "mdy"],
        default=None,
        help="day/month order of numeric dates in a column whose own values do not decide it "
        "(without it such a column refuses a build)",
    )
    parser.add_argument(
        "--allow-skipped-files",
        dest="allow_skipped_files",
        action="store_true",
        help="build even when a folder file matches no format (its rows stay rejected)",
    )
