"""What an audit entry says about a run, and the one call other code makes to write it:
`record(cfg, action, ...)`. It names the user (flag, MARAG_USER through Config, else the OS login),
the KB generation and its content hash, which KB that is (`detail.kb`, kb_source: its directory or
its Chroma server and collection; two KBs may both be at `gen-000001`), the backend and model, the
result JSON as released with its hash, and a summary of the verification record.

    from engine.audit import record
    record(cfg, "check", user=args.user, result=check_json, plan=plan)   # `marag check`
"""

from __future__ import annotations

import functools
import getpass
from pathlib import Path
from typing import Any

from engine.audit.anchor import default_head_path
from engine.audit.chain import canonical, sha256
from engine.audit.store import AuditStore, Entry, database_url, sa_url, sqlite_file
from engine.config import Config

AUDIT_FILE = "audit.sqlite3"


def audit_url(cfg: Config) -> str:
    """MARAG_AUDIT_DB (a path or a SQLAlchemy URL), else audit.sqlite3 beside the KB directory."""
    return database_url(cfg.audit_db or Path(cfg.kb_dir).parent / AUDIT_FILE)


def head_path(cfg: Config) -> Path | None:
    """Where the head record of this configuration's store lives (engine.audit.anchor): beside a
    SQLite file (`<file>.head.json`), else beside the KB directory, named after the store URL
    (`audit-head-<12 hex>.json`: two servers' trails never share one)."""
    url = audit_url(cfg)
    store = sqlite_file(url)
    if store is not None:
        return default_head_path(store)
    if url.startswith("sqlite"):
        return None  # in memory
    safe = sa_url(url)
    return Path(cfg.kb_dir).expanduser().resolve().parent / f"audit-head-{sha256(safe)[:12]}.json"


@functools.lru_cache(maxsize=8)
def _store(url: str, head: str) -> AuditStore:
    return AuditStore(url, head=Path(head) if head else None)


def open_store(cfg: Config) -> AuditStore:
    """The audit store of this configuration (one per URL and process), opened for writing: the
    tables are created on a first use only (neither store nor head record); a store the head
    names but that is missing raises AuditError. A SQLite file deleted or replaced since it was
    opened is opened again (a restored backup is used; a deleted one is refused)."""
    anchor = head_path(cfg)
    key = (audit_url(cfg), str(anchor) if anchor else "")
    store = _store(*key)
    if store.stale():
        store.close()
        _store.cache_clear()
        store = _store(*key)
    return store


def forget_stores() -> None:
    """Forget the stores this process opened (after `marag audit init`; tests)."""
    _store.cache_clear()


def read_store(cfg: Config) -> AuditStore:
    """The store opened read-only (verify, backup): nothing is created; AuditError when there is
    no SQLite file."""
    return AuditStore(audit_url(cfg), head=head_path(cfg), mode="read")


def resolve_user(cfg: Config, flag: str | None = None) -> str:
    """The user a CLI entry names: --user, then MARAG_USER, then the OS login."""
    if flag and flag.strip():
        return flag.strip()
    if cfg.user and cfg.user.strip():
        return cfg.user.strip()
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no login name for this uid (some containers)
        return "unknown"


def kb_identity(cfg: Config) -> tuple[str | None, str | None]:
    """(generation id, content hash) of the live KB: the embedded store's generation directory and
    the SHA-256 of its {document id: content hash} map; a Chroma server names its collection."""
    if cfg.chroma_url:
        return f"{cfg.chroma_url}#{cfg.collection}", None
    from kb_store.chroma_layout import HASHES
    from kb_store.kb_location import current_generation

    gen = current_generation(cfg.kb_dir)
    if gen is None:
        return None, None
    try:
        import json

        hashes = json.loads((gen / HASHES).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return gen.name, None
    return gen.name, sha256(canonical(hashes))


def kb_source(cfg: Config) -> str:
    """Which KB this configuration serves, whatever its generation: the resolved KB directory of
    the embedded store, or a Chroma server's URL and collection (`URL#collection`). The review
    queue is per KB source."""
    if cfg.chroma_url:
        return f"{cfg.chroma_url}#{cfg.collection}"
    return str(Path(cfg.kb_dir).expanduser().resolve())


def model_label(cfg: Config, backend: str | None = None) -> str | None:
    backend = backend or cfg.llm
    if backend == "local":
        return str(cfg.model) if cfg.model else "bundled SmolLM2-135M-Instruct GGUF"
    if backend == "openai":
        return f"{cfg.openai_model} @ {cfg.openai_base_url}"
    return None


def verification_summary(payload: dict[str, Any]) -> dict[str, Any]:
    """The verification facts an auditor scans first (the full record stays in the result)."""
    if "passed" in payload and "sentences" in payload:  # a `marag check` result
        return {"passed": payload.get("passed"), "coverage": payload.get("coverage")}
    v = payload.get("verification") or {}
    final = (v.get("per_agent") or {}).get("final") or {}
    unsupported = v.get("unsupported") or []
    return {
        "passed": final.get("passed", not unsupported) if final or v else None,
        "numbers": v.get("numbers"),
        "unsupported": len(unsupported),
        "fact_precision": v.get("fact_precision"),
        "hallucination_rate": v.get("hallucination_rate"),
        "temporal_fidelity": v.get("temporal_fidelity"),
        "fallback_used": v.get("fallback_used"),
    }


def _patients(payload: dict[str, Any] | None, plan: dict[str, Any] | None) -> set[int]:
    out = {int(p) for p in (plan or {}).get("patients") or []}
    for f in (payload or {}).get("facts") or []:
        if isinstance(f, dict) and f.get("patient") is not None:
            out.add(int(f["patient"]))
    return out


def record(
    cfg: Config,
    action: str,
    *,
    user: str | None = None,
    role: str = "cli",
    result: Any = None,
    plan: Any = None,
    backend: str | None = None,
    subject: int | None = None,
    comment: str | None = None,
    detail: dict[str, Any] | None = None,
    patients: Any = None,
    with_kb: bool | None = None,
    store: AuditStore | None = None,
) -> Entry:
    """Append one audit entry for `action` and return it.

    `result` is an engine Result (anything with to_json()) or a JSON dict (a `marag check`
    result); `plan` an engine Plan or its dict (taken from the result when omitted). `user` is
    resolved with resolve_user (pass --user through)."""
    payload = result.to_json() if hasattr(result, "to_json") else result
    plan_d = plan.to_dict() if hasattr(plan, "to_dict") else plan
    if plan_d is None and isinstance(payload, dict):
        plan_d = payload.get("plan")
    if payload is not None and plan_d is not None and getattr(plan, "query", None):
        plan_d = {**plan_d, "query": plan.query}
    backend = backend or (payload or {}).get("backend") or None
    if with_kb is None:
        with_kb = payload is not None
    generation, kb_hash = kb_identity(cfg) if with_kb else (None, None)
    if with_kb:
        detail = {"kb": kb_source(cfg), **(detail or {})}
    return (store or open_store(cfg)).append(
        user=resolve_user(cfg, user),
        role=role,
        action=action,
        patients=_patients(payload, plan_d) | {int(p) for p in patients or ()},
        plan=plan_d,
        kb_generation=generation,
        kb_hash=kb_hash,
        backend=backend,
        model=model_label(cfg, backend) if backend else None,
        result=payload,
        verification=verification_summary(payload) if payload is not None else None,
        subject=subject,
        comment=comment,
        detail=detail,
    )
