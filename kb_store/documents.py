"""Per-visit documents D(p, v, instrument) and per-patient longitudinal documents.

Per-session clinician notes (the MA-RAG files' `clinician_summary`, kept by ingest in
`Session.extra`) become their own documents (granularity `note`, id `n-...`), so free-text search
(engine.search) can find them with BM25 and the embeddings. They never carry numbers the engine
uses: the pipeline reads only `granularity == "session"` documents.

The text follows the paper ("Patient 12, Visit 2, 2021-03-15, Motor=14 (Tremor=2, ...)"); the
metadata carries what the engine retrieves by exact match (proj_id, visit, instrument, granularity)
and the numbers it builds the fact table from (domain scores, items as JSON), so the engine never
parses prose. Ids are deterministic and a content hash lets a rebuild skip unchanged documents.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from kb_store.model import Session
from kb_store.profiles import DOMAIN_LABELS, load_profile


@dataclass(frozen=True)
class KBDoc:
    id: str
    text: str
    metadata: dict  # scalar values only (Chroma's rule)


def fmt_num(x: float | None) -> str:
    """Render a score as people write it: 14 not 14.0; missing as 'missing'."""
    if x is None:
        return "missing"
    return str(int(x)) if float(x).is_integer() else f"{x:.2f}".rstrip("0").rstrip(".")


def session_doc_id(s: Session) -> str:
    cond = f"-{s.condition.lower()}" if s.condition else ""
    return f"s-{s.proj_id}-v{s.visit}-{s.instrument}{cond}"


def longitudinal_doc_id(proj_id: int, instrument: str) -> str:
    return f"l-{proj_id}-{instrument}"


def session_document(s: Session) -> KBDoc:
    if s.visit is None:
        raise ValueError(f"session of patient {s.proj_id} on {s.date} has no visit index")
    prof = load_profile(s.profile)
    scores = s.domain_scores()
    parts = []
    for dom, ds in scores.items():
        label = DOMAIN_LABELS.get(dom, prof.domains[dom].label)
        items = ", ".join(
            f"{prof.item(c).label}={fmt_num(s.items.get(c))}"
            for c in (i.code for i in prof.items_of(dom))
        )
        partial = (
            f" [partial: {len(ds.missing)} of {ds.n_items} items missing]" if ds.partial else ""
        )
        parts.append(f"{label}={fmt_num(ds.score)}{partial} ({items})")
    cond = f", Part III exam {s.condition}" if s.condition else ""
    text = (
        f"Patient {s.proj_id}, Visit {s.visit}, {s.date.isoformat()}, "
        f"{prof.title}{cond}. " + "; ".join(parts) + "."
    )
    meta: dict = {
        "proj_id": int(s.proj_id),
        "visit": int(s.visit),
        "date": s.date.isoformat(),
        "instrument": s.instrument,
        "granularity": "session",
        "profile": s.profile,
        "condition": s.condition,
        "source": f"{s.source.file}:{s.source.row}",
        "items_json": json.dumps(s.items, sort_keys=True),
    }
    for dom, ds in scores.items():
        if ds.score is not None:
            meta[f"score_{dom}"] = float(ds.score)
        meta[f"missing_{dom}"] = len(ds.missing)
    if s.instrument == "pdq8" and "qol" in scores and scores["qol"].score is not None:
        meta["pdq8_si"] = round(scores["qol"].score / 32 * 100, 2)
    meta["content_hash"] = _hash(text, meta)
    return KBDoc(session_doc_id(s), text, meta)


def longitudinal_documents(sessions: Iterable[Session]) -> list[KBDoc]:
    groups: dict[tuple[int, str], list[Session]] = defaultdict(list)
    for s in sessions:
        if not s.condition or s.condition == "OFF":
            groups[(s.proj_id, s.instrument)].append(s)
    docs = []
    for (pid, inst), ss in sorted(groups.items()):
        ss = sorted(ss, key=lambda s: s.visit or 0)
        lines = []
        for s in ss:
            sc = s.domain_scores()
            body = ", ".join(f"{DOMAIN_LABELS.get(d, d)}={fmt_num(v.score)}" for d, v in sc.items())
            lines.append(f"Visit {s.visit} ({s.date.isoformat()}): {body}")
        text = f"Patient {pid}, {inst.upper()} over {len(ss)} visits. " + "; ".join(lines) + "."
        meta = {
            "proj_id": int(pid),
            "instrument": inst,
            "granularity": "longitudinal",
            "n_visits": len(ss),
            "first_date": ss[0].date.isoformat(),
            "last_date": ss[-1].date.isoformat(),
            "profile": ss[0].profile,
        }
        meta["content_hash"] = _hash(text, meta)
        docs.append(KBDoc(longitudinal_doc_id(pid, inst), text, meta))
    return docs


#: Session.extra keys that hold a clinician's free-text note for the session (MA-RAG files).
NOTE_FIELDS: tuple[str, ...] = ("clinician_summary",)


def note_doc_id(s: Session) -> str:
    return "n" + session_doc_id(s)[1:]


def note_document(s: Session) -> KBDoc | None:
    """The session's clinician note as a document, or None when the session has no note."""
    field = next((f for f in NOTE_FIELDS if str(s.extra.get(f, "")).strip()), None)
    if field is None or s.visit is None:
        return None
    note = " ".join(str(s.extra[field]).split())
    prof = load_profile(s.profile)
    text = (
        f"Patient {s.proj_id}, Visit {s.visit}, {s.date.isoformat()}, {prof.title}, "
        f"clinician note: {note}"
    )
    meta: dict = {
        "proj_id": int(s.proj_id),
        "visit": int(s.visit),
        "date": s.date.isoformat(),
        "instrument": s.instrument,
        "granularity": "note",
        "profile": s.profile,
        "condition": s.condition,
        "source": f"{s.source.file}:{s.source.row}",
        "session_doc": session_doc_id(s),
        "note_field": field,
    }
    meta["content_hash"] = _hash(text, meta)
    return KBDoc(note_doc_id(s), text, meta)


def build_documents(sessions: Iterable[Session]) -> list[KBDoc]:
    """Session documents, then the longitudinal ones, then the clinician notes; ids are unique."""
    sessions = list(sessions)
    notes = [n for n in (note_document(s) for s in sessions) if n is not None]
    docs = [session_document(s) for s in sessions] + longitudinal_documents(sessions) + notes
    seen: set[str] = set()
    for d in docs:
        if d.id in seen:
            raise ValueError(
                f"duplicate document id {d.id}: two sessions share patient, visit and instrument"
            )
        seen.add(d.id)
    return docs


def _hash(text: str, meta: dict) -> str:
    body = json.dumps(
        {"t": text, "m": {k: v for k, v in meta.items() if k != "content_hash"}}, sort_keys=True
    )
    return hashlib.sha256(body.encode()).hexdigest()[:16]
