"""Validation of configuration values (MARAG_* variables, flags, dashboard choices).

Owns the type and the rule of every `engine.config.Config` field and the one-line error that names
the variable: `MARAG_NUMBER_SAFE='maybe': not a boolean (true/false, 1/0, yes/no, on/off)`.
Values are parsed with pydantic's `TypeAdapter` (strict about booleans, numbers and ranges; no
silent False for 'ture'), then checked against the field's rule (choices, URL shape, Chroma's
collection-name rule, existing folders for MARAG_DATA_ROOTS). `engine.config` calls `coerce` for
each value it reads; nothing here reads the environment.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlparse

from pydantic import Field, TypeAdapter, ValidationError

LLM_CHOICES = ("facts", "local", "openai")
EMBEDDING_CHOICES = ("minilm", "hashing")
PLANNER_CHOICES = ("rules", "llm")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
DEVICE_RE = re.compile(r"auto|cpu|mps|cuda(?::[0-9]{1,2})?")
#: Chroma: 3-512 characters of [a-zA-Z0-9._-], starting and ending with a letter or digit
COLLECTION_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{1,510})[A-Za-z0-9]")

_BOOL = TypeAdapter(bool)
_TYPES: dict[str, TypeAdapter] = {
    "max_new_tokens": TypeAdapter(Annotated[int, Field(ge=1, le=100_000)]),
    "torch_threads": TypeAdapter(Annotated[int, Field(ge=0, le=1024)]),
    "grounding_rounds": TypeAdapter(Annotated[int, Field(ge=0, le=20)]),
    "visit_window_days": TypeAdapter(Annotated[int, Field(ge=0, le=3650)]),
    "max_query_chars": TypeAdapter(Annotated[int, Field(ge=1, le=1_000_000)]),
    "max_concurrent_runs": TypeAdapter(Annotated[int, Field(ge=1, le=256)]),
    "repetition_penalty": TypeAdapter(Annotated[float, Field(gt=0, le=10, allow_inf_nan=False)]),
}
BOOL_FIELDS = {"number_safe", "load_in_4bit", "batch_domain_agents"}


class ConfigValueError(ValueError):
    """An invalid configuration value; the message names the variable (or the key)."""


def _choice(choices: tuple[str, ...]) -> Callable[[str], str | None]:
    def check(v: str) -> str | None:
        return None if v in choices else f"not one of {', '.join(choices)}"

    return check


def _url(schemes: tuple[str, ...]) -> Callable[[str], str | None]:
    def check(v: str) -> str | None:
        u = urlparse(v)
        if u.scheme not in schemes or not u.hostname:
            return f"not a URL like {schemes[0]}://HOST:PORT"
        try:
            u.port  # noqa: B018 - raises ValueError for a bad port
        except ValueError:
            return "the port is not a number in 0-65535"
        return None

    return check


_RULES: dict[str, Callable[[Any], str | None]] = {
    "llm": _choice(LLM_CHOICES),
    "embedding": _choice(EMBEDDING_CHOICES),
    "planner": _choice(PLANNER_CHOICES),
    "device": lambda v: None if DEVICE_RE.fullmatch(v) else "not auto, cpu, mps, cuda or cuda:N",
    "chroma_url": _url(("http", "https")),
    "openai_base_url": _url(("http", "https")),
    "collection": lambda v: (
        None
        if COLLECTION_RE.fullmatch(v)
        else "not a Chroma collection name (3-512 of A-Z a-z 0-9 . _ -, alphanumeric at both ends)"
    ),
    "openai_model": lambda v: None if v.strip() else "blank",
    "log_level": lambda v: (
        None if v.upper() in LOG_LEVELS else f"not one of {', '.join(LOG_LEVELS)}"
    ),
}


def where(name: str, from_env: bool) -> str:
    return f"MARAG_{name.upper()}" if from_env else name


def coerce(name: str, default: Any, value: Any, *, from_env: bool) -> Any:
    """The typed, checked value of field `name` (its default tells the type); raises
    ConfigValueError naming the variable (`MARAG_NAME`) or the key."""
    label = where(name, from_env)
    shown = repr(value) if len(repr(value)) <= 80 else repr(value)[:80] + "..."
    try:
        out = _typed(name, default, value)
    except ValidationError as exc:
        msg = exc.errors()[0]["msg"]
        if name in BOOL_FIELDS or isinstance(default, bool):
            msg = "not a boolean (true/false, 1/0, yes/no, on/off)"
        raise ConfigValueError(f"{label}={shown}: {msg}") from None
    except ValueError as exc:
        raise ConfigValueError(f"{label}={shown}: {exc}") from None
    rule = _RULES.get(name)
    problem = rule(out) if rule is not None and isinstance(out, str) else None
    if problem:
        raise ConfigValueError(f"{label}={shown}: {problem}")
    return out


def _typed(name: str, default: Any, value: Any) -> Any:
    if name == "data_roots":
        return data_roots(value)
    if name in BOOL_FIELDS or isinstance(default, bool):
        if isinstance(value, str):
            value = value.strip()
        return _BOOL.validate_python(value)
    if name in _TYPES:
        out = _TYPES[name].validate_python(value.strip() if isinstance(value, str) else value)
        if isinstance(out, float) and not math.isfinite(out):
            raise ValueError("not a finite number")
        return out
    if isinstance(default, Path) or name.endswith("_dir"):
        text = str(value)
        if not text.strip() or "\x00" in text:
            raise ValueError("not a path")
        return Path(text).expanduser()
    if isinstance(default, int):
        return TypeAdapter(int).validate_python(value.strip() if isinstance(value, str) else value)
    if isinstance(default, float):
        return TypeAdapter(float).validate_python(value)
    if isinstance(value, str):
        if any(ord(c) < 32 for c in value):
            raise ValueError("holds control characters")
        return value.strip()
    return value


def data_roots(value: Any) -> tuple[Path, ...]:
    """MARAG_DATA_ROOTS: folders separated by os.pathsep (':'); each must exist. Returned
    resolved (symlinks followed), so that containment checks compare real paths."""
    parts = (
        [str(p) for p in value]
        if isinstance(value, list | tuple)
        else [p for p in str(value).split(os.pathsep) if p.strip()]
    )
    out = []
    for raw in parts:
        p = Path(raw.strip()).expanduser()
        if not p.is_absolute():
            raise ValueError(f"{raw!r} is not an absolute path")
        if not p.is_dir():
            raise ValueError(f"{raw!r} is not an existing folder")
        out.append(p.resolve())
    return tuple(out)
