"""Prompt templates as data (one JSON file per agent, each with a `source` note).

`load_prompt(name)` returns the parsed JSON; templates use str.format fields documented in each file.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

PROMPT_DIR = Path(__file__).parent


@cache
def load_prompt(name: str) -> dict:
    path = PROMPT_DIR / f"{name}.json"
    if not path.exists():
        raise FileNotFoundError(f"prompt template {path} does not exist")
    data = json.loads(path.read_text(encoding="utf-8"))
    for key in ("source", "system", "user"):
        if key not in data:
            raise ValueError(f"{path}: missing field {key!r}")
    return data
