"""The searchable sessions, their filters and the hybrid ranking with a reason per hit.

A unit is one session document (patient, visit, date, instrument, item scores from metadata) with
its clinician note when the KB has one (granularity "note", same patient/visit/instrument). Three
rankings of the sessions that pass the filters:

- BM25 over the session document text plus the note (engine.search.bm25),
- dense: the larger cosine of the query's vector with the session document's and the note's
  stored vectors (engine.search.dense),
- concept: sessions whose items named by the query (engine.clinical.concepts) score above 0, by
  the sum of those items' values, each divided by the item's maximum (Falling 3 of 4 -> 0.75).
  When the query names an MDS-UPDRS severity anchor ("slight" 1, "mild" 2, "moderate" 3,
  "severe" 4), only UPDRS items at exactly that value count ("moderate sleep disturbance").
- phrase: sessions whose clinician note contains the query's content words (two or more) as one
  contiguous phrase, e.g. "mild difficulty with fall" copied from a note. Session documents do
  not count: every one of them lists every item label.

They are fused by reciprocal rank fusion (k = 60) into the `hybrid` score, to which the concept
sum and the phrase boost (1) are added: an RRF score is at most 3/61 (about 0.05) and a concept step is at least 1/4, so the
sessions that hold the phrase or score a named item come first, worse first, and RRF orders
sessions with equal boosts and all the rest. Keyword matches on an item scored 0 (e.g. "without hallucinations" in a
note) cannot outrank them. `bm25+dense` is the plain RRF of the two without concepts (reported in
the evaluation). Ties break by patient, date, document id (deterministic).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engine.clinical.concepts import (
    ANCHOR_PROFILES,
    ConceptMatch,
    match_concepts,
    resolve_item,
    severity_anchor,
)
from engine.clinical.text import STOPWORDS, negated_stems, stem, tokens, words
from engine.search.bm25 import BM25Index
from engine.search.dense import cosine, unit_rows
from engine.search.fusion import rrf
from kb_store.documents import KBDoc, fmt_num

SYSTEMS = ("bm25", "dense", "hybrid", "bm25+dense")
FUSION_DEPTH = 100  # each ranking contributes its top 100 sessions to the fusion
SNIPPET_CHARS = 220
PHRASE_BOOST = 1.0  # a session whose note holds the query's words as one phrase


@dataclass(frozen=True)
class SearchFilters:
    patients: tuple[int, ...] = ()
    instrument: str | None = None
    date_from: str | None = None  # ISO date, inclusive
    date_to: str | None = None  # ISO date, inclusive
    item_min: tuple[tuple[str, float], ...] = ()  # (item code or label, minimum value)


@dataclass
class Unit:
    doc: KBDoc
    note: KBDoc | None
    items: dict[str, float | None]
    doc_vec: Any = None
    note_vec: Any = None

    @property
    def meta(self) -> dict:
        return self.doc.metadata


@dataclass(frozen=True)
class Hit:
    patient: int
    visit: int
    date: str
    instrument: str
    doc_id: str
    score: float
    why: str
    snippet: str
    note_id: str | None = None
    source: str = ""
    ranks: dict = field(default_factory=dict)  # system -> rank (1-based) or None
    negated: tuple[str, ...] = ()  # query words the clinician note mentions only negated

    def to_json(self) -> dict:
        return {
            "patient": self.patient,
            "date": self.date,
            "instrument": self.instrument,
            "doc_id": self.doc_id,
            "score": round(self.score, 6),
            "why": self.why,
            "snippet": self.snippet,
            "visit": self.visit,
            "note_id": self.note_id,
            "source": self.source,
            "negated": list(self.negated),
        }


class SearchIndex:
    """Built once per KB generation (the dashboard caches it); `search` is pure over it."""

    def __init__(self, pairs: Sequence[tuple[KBDoc, Any]], embed: Callable[[list[str]], list]):
        self.embed = embed
        self._qcache: dict[str, np.ndarray] = {}
        sessions: dict[str, Unit] = {}
        notes: dict[str, tuple[KBDoc, Any]] = {}
        for doc, vec in pairs:
            g = doc.metadata.get("granularity")
            if g == "session":
                items = json.loads(doc.metadata.get("items_json") or "{}")
                sessions[doc.id] = Unit(doc, None, items, vec)
            elif g == "note":
                notes[str(doc.metadata.get("session_doc", ""))] = (doc, vec)
        for sid, (ndoc, nvec) in notes.items():
            if sid in sessions:
                sessions[sid].note, sessions[sid].note_vec = ndoc, nvec
        self.units = sorted(
            sessions.values(),
            key=lambda u: (int(u.meta["proj_id"]), str(u.meta["date"]), u.doc.id),
        )
        self._pos = {u.doc.id: i for i, u in enumerate(self.units)}
        self._note_toks = [tokens(u.note.text) if u.note is not None else [] for u in self.units]
        self._doc_toks = [tokens(u.doc.text) for u in self.units]
        self._bm25 = BM25Index(
            [d + n for d, n in zip(self._doc_toks, self._note_toks, strict=True)]
        )
        self._doc_m = self._matrix(
            [u.doc_vec for u in self.units], [u.doc.text for u in self.units]
        )
        with_note = [u for u in self.units if u.note is not None]
        self._has_note = np.array([u.note is not None for u in self.units], dtype=bool)
        self._note_m = None
        if with_note:
            nm = self._matrix([u.note_vec for u in with_note], [u.note.text for u in with_note])  # type: ignore[union-attr]
            full = np.zeros((len(self.units), nm.shape[1]), dtype=np.float32)
            full[self._has_note] = nm
            self._note_m = full

    @classmethod
    def from_kb(cls, kb: Any) -> SearchIndex:
        """Sessions and notes of a KB with their stored vectors; the query is embedded with the
        function the KB was built with. A KB without stored vectors (the in-memory KB of tests
        and the fake engine) gets hashing vectors."""
        pairs = kb.all_docs(("session", "note"), embeddings=True)
        embed_query = getattr(kb, "embed_query", None)
        if embed_query is not None:
            return cls(pairs, lambda texts: [embed_query(t) for t in texts])
        from kb_store.embeddings import make_embedding_function

        return cls(pairs, make_embedding_function("hashing"))

    # -- construction helpers -----------------------------------------------------------------
    def _matrix(self, vecs: list, texts: list[str]) -> np.ndarray:
        missing = [i for i, v in enumerate(vecs) if v is None]
        if missing:
            made = self.embed([texts[i] for i in missing])
            vecs = list(vecs)
            for i, v in zip(missing, made, strict=True):
                vecs[i] = v
        if not vecs:
            return np.zeros((0, 1), dtype=np.float32)
        return unit_rows(vecs)

    def unit(self, doc_id: str) -> Unit:
        """The session (document and note) behind a hit; KeyError for an unknown id."""
        return self.units[self._pos[doc_id]]

    def _query_vector(self, query: str) -> np.ndarray:
        if query not in self._qcache:
            if len(self._qcache) > 256:
                self._qcache.clear()
            self._qcache[query] = np.asarray(self.embed([query])[0], dtype=np.float32)
        return self._qcache[query]

    # -- filters ------------------------------------------------------------------------------
    def candidates(self, f: SearchFilters) -> list[int]:
        wanted_items = [(resolve_item(name), float(v)) for name, v in f.item_min]
        pats = set(int(p) for p in f.patients)
        known = {int(u.meta["proj_id"]) for u in self.units}
        unknown = sorted(pats - known)
        if unknown:
            raise ValueError(
                f"unknown patient id(s) {', '.join(map(str, unknown))}; the KB has "
                f"{len(known)} patients ({', '.join(map(str, sorted(known)[:20]))}"
                f"{', ...' if len(known) > 20 else ''})"
            )
        out = []
        for i, u in enumerate(self.units):
            m = u.meta
            if pats and int(m["proj_id"]) not in pats:
                continue
            if f.instrument and m["instrument"] != f.instrument:
                continue
            if f.date_from and str(m["date"]) < f.date_from:
                continue
            if f.date_to and str(m["date"]) > f.date_to:
                continue
            ok = True
            for pairs, v in wanted_items:
                vals = [u.items.get(code) for prof, code in pairs if prof == m.get("profile")]
                if not any(x is not None and x >= v for x in vals):
                    ok = False
                    break
            if ok:
                out.append(i)
        return out

    # -- rankings -----------------------------------------------------------------------------
    def rankings(
        self, query: str, cand: list[int]
    ) -> tuple[dict[str, list[int]], dict[str, np.ndarray], list[ConceptMatch]]:
        """Per system, the candidate positions in rank order, and the raw scores."""
        qt = tokens(query)
        bm = self._bm25.scores(qt)
        qv = self._query_vector(query)
        dense_doc = cosine(self._doc_m, qv)
        dense_note = np.full(len(self.units), -1.0, dtype=np.float32)
        if self._note_m is not None:
            dense_note = np.where(self._has_note, cosine(self._note_m, qv), -1.0)
        dense = np.maximum(dense_doc, dense_note)
        concepts = match_concepts(query)
        anchor = severity_anchor(query)
        conc = np.zeros(len(self.units), dtype=np.float32)
        for i in cand:
            u = self.units[i]
            for c in concepts:
                if c.profile == u.meta.get("profile"):
                    v = u.items.get(c.code)
                    if v is None or v <= 0:
                        continue
                    if anchor is not None and c.profile in ANCHOR_PROFILES:
                        if v == anchor:
                            conc[i] += float(v) / (c.max or 1.0)
                    else:
                        conc[i] += float(v) / (c.max or 1.0)

        def order(scores: np.ndarray, positive: bool) -> list[int]:
            keep = [i for i in cand if (scores[i] > 0 or not positive)]
            return sorted(keep, key=lambda i: (-float(scores[i]), i))

        ranks = {
            "bm25": order(bm, True),
            "dense": order(dense, False),
            "concept": order(conc, True),
        }
        phrase = np.zeros(len(self.units), dtype=np.float32)
        if len(qt) >= 2:
            need = set(qt)
            for i in cand:
                toks = self._note_toks[i]
                if toks and need <= set(toks) and _has_run(toks, qt):
                    phrase[i] = PHRASE_BOOST
        raw = {
            "bm25": bm,
            "dense": dense,
            "concept": conc,
            "dense_note": dense_note,
            "phrase": phrase,
        }
        return ranks, raw, concepts

    def search(
        self, query: str, filters: SearchFilters | None = None, k: int = 10, system: str = "hybrid"
    ) -> list[Hit]:
        if not query.strip():
            raise ValueError('search needs some text, e.g. marag search "falls and freezing"')
        if k < 1:
            raise ValueError(f"--k must be at least 1, got {k}")
        if system not in SYSTEMS:
            raise ValueError(f"unknown system {system!r}; valid: {', '.join(SYSTEMS)}")
        f = filters or SearchFilters()
        cand = self.candidates(f)
        if not cand:
            return []
        ranks, raw, concepts = self.rankings(query, cand)
        if system in ("bm25", "dense"):
            ordered = ranks[system]
            scores = {i: float(raw[system][i]) for i in ordered}
        else:
            lists = [ranks["bm25"][:FUSION_DEPTH], ranks["dense"][:FUSION_DEPTH]]
            if system == "hybrid":
                lists.append(ranks["concept"][:FUSION_DEPTH])
            fused = rrf(lists)
            scores = {
                i: s + (float(raw["concept"][i] + raw["phrase"][i]) if system == "hybrid" else 0.0)
                for i, s in fused.items()
            }
            ordered = sorted(scores, key=lambda i: (-scores[i], i))
        pos = {s: {i: r for r, i in enumerate(ranks[s], start=1)} for s in ranks}
        qwords = [w for w in words(query) if w not in STOPWORDS]
        return [
            self._hit(i, scores[i], {s: pos[s].get(i) for s in ranks}, raw, concepts, qwords)
            for i in ordered[:k]
        ]

    # -- reasons ------------------------------------------------------------------------------
    def _hit(
        self,
        i: int,
        score: float,
        ranks: dict[str, int | None],
        raw: dict[str, np.ndarray],
        concepts: list[ConceptMatch],
        qwords: list[str],
    ) -> Hit:
        u = self.units[i]
        m = u.meta
        why: list[str] = []
        concept_bits = []
        for c in concepts:
            if c.profile == m.get("profile") and c.code in u.items:
                v = u.items.get(c.code)
                concept_bits.append(
                    f"{c.label} ({c.code}) = {fmt_num(v)} of {fmt_num(c.max)} ['{c.phrase}']"
                )
        if concept_bits:
            why.append("concept: " + "; ".join(concept_bits))
        if raw["phrase"][i] > 0:
            why.append(
                "the whole phrase occurs in the "
                + (
                    "clinician note"
                    if _has_run(self._note_toks[i], tokens(" ".join(qwords)))
                    else "session document"
                )
            )
        stems = {stem(w): w for w in qwords}
        in_note = _matched(u.note.text, stems) if u.note is not None else []
        neg = negated_stems(_note_body(u)) if in_note else frozenset()
        negated = [w for w in in_note if stem(w) in neg]
        in_note = [w for w in in_note if stem(w) not in neg]
        in_doc = _matched(u.doc.text, stems)
        if in_note:
            why.append("words in the clinician note: " + ", ".join(in_note))
        if negated:
            why.append("negated in the clinician note (not a finding): " + ", ".join(negated))
        if in_doc:
            why.append("words in the session document: " + ", ".join(in_doc))
        if ranks.get("bm25"):
            why.append(f"BM25 #{ranks['bm25']} ({float(raw['bm25'][i]):.2f})")
        d = float(raw["dense"][i])
        part = "clinician note" if float(raw["dense_note"][i]) >= d else "session document"
        why.append(f"dense #{ranks.get('dense')} (cosine {d:.2f}, {part})")
        snippet = self._snippet(u, in_note, concepts, negated)
        return Hit(
            patient=int(m["proj_id"]),
            visit=int(m["visit"]),
            date=str(m["date"]),
            instrument=str(m["instrument"]),
            doc_id=u.doc.id,
            score=float(score),
            why="; ".join(why),
            snippet=snippet,
            note_id=u.note.id if u.note is not None else None,
            source=str(m.get("source", "")),
            ranks=dict(ranks),
            negated=tuple(negated),
        )

    @staticmethod
    def _snippet(
        u: Unit, in_note: list[str], concepts: list[ConceptMatch], negated: list[str]
    ) -> str:
        """The note sentence that mentions a query word plainly; else the scored item of a
        named concept in the session document; a sentence that mentions the words only
        negated is shown marked as such, never as the finding."""
        body = _note_body(u)
        if in_note:
            for sent in re.split(r"(?<=[.;])\s+", body):
                plain = [w for w in in_note if stem(w) not in negated_stems(sent)]
                if _matched(sent, {stem(w): w for w in plain}):
                    return _clip(sent)
        for c in concepts:
            if c.profile == u.meta.get("profile"):
                at = u.doc.text.find(f"{c.label}=")
                if at >= 0:
                    start = max(0, u.doc.text.rfind("(", 0, at) + 1)
                    return _clip(u.doc.text[start:])
        if negated:
            for sent in re.split(r"(?<=[.;])\s+", body):
                if _matched(sent, {stem(w): w for w in negated}):
                    return _clip(f"Negated mention ({', '.join(negated)}): {sent}")
        if u.note is not None:
            return _clip(body)
        return _clip(u.doc.text)


def _note_body(u: Unit) -> str:
    return u.note.text.split("clinician note:", 1)[-1].strip() if u.note is not None else ""


def _has_run(seq: list[str], sub: list[str]) -> bool:
    n = len(sub)
    return any(seq[j : j + n] == sub for j in range(len(seq) - n + 1))


def _matched(text: str, stems: dict[str, str]) -> list[str]:
    """The query words (as typed) whose stems occur among the text's words."""
    present = {stem(w) for w in words(text)}
    return [w for s, w in stems.items() if s in present]


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= SNIPPET_CHARS else text[: SNIPPET_CHARS - 3].rstrip() + "..."
