"""`marag dashboard` (and `python -m dashboard.launch`): start the packaged app with the
packaged configuration, from an installed wheel as from the source tree.

Streamlit reads .streamlit/config.toml from the working directory, which an installed package
does not have; the launcher passes every option of the packaged dashboard/streamlit_config.toml
(loopback address, XSRF protection, no error details, no usage statistics, the theme) as
command-line options instead, so the settings hold wherever the command runs. The repo's
.streamlit/config.toml is a link to the same file (`make run`, the tests).
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CONFIG = HERE / "streamlit_config.toml"
APP = HERE / "app.py"


def config_flags(config: Path = CONFIG, **override: Any) -> list[str]:
    """`--section.option value` for every option of the packaged configuration; `override`
    replaces options by their dotted name with dots as '__' (server__port=8502)."""
    options = {
        f"{section}.{key}": value
        for section, table in tomllib.loads(config.read_text(encoding="utf-8")).items()
        for key, value in table.items()
    }
    options.update({k.replace("__", "."): v for k, v in override.items() if v is not None})
    out: list[str] = []
    for name, value in options.items():
        text = str(value).lower() if isinstance(value, bool) else str(value)
        out += [f"--{name}", text]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="marag dashboard")
    ap.add_argument("--port", type=int, default=8501)
    ap.add_argument("--address", default=None)
    args = ap.parse_args(argv)
    flags = config_flags(server__port=args.port, server__address=args.address)
    print(f"marag dashboard: {APP} with {CONFIG.name}", file=sys.stderr)
    from streamlit.web import cli as stcli

    sys.argv = ["streamlit", "run", str(APP), *flags]
    return stcli.main()


if __name__ == "__main__":
    sys.exit(main())
