"""Clinician notes reach the KB as documents; the pipeline still reads only session documents;
unchanged rebuilds embed nothing."""

from __future__ import annotations

from kb_store.chroma_kb import build_kb
from kb_store.documents import build_documents
from kb_store.embeddings import HashingEmbeddingFunction


def test_every_session_with_a_note_has_a_note_document(marag_sessions, marag_kb):
    with_note = [s for s in marag_sessions if str(s.extra.get("clinician_summary", "")).strip()]
    assert len(with_note) > 300
    notes = [d for d, _ in marag_kb.all_docs(("note",))]
    assert len(notes) == len(with_note)
    n = next(d for d in notes if d.id == "n-20-v2-updrs")
    assert n.metadata["session_doc"] == "s-20-v2-updrs"
    s = next(x for x in with_note if (x.proj_id, x.visit, x.instrument) == (20, 2, "updrs"))
    assert " ".join(s.extra["clinician_summary"].split()) in n.text
    assert n.metadata["source"] == f"{s.source.file}:{s.source.row}"


def test_pipeline_retrieval_never_sees_notes(marag_kb):
    docs = marag_kb.session_docs(20)
    assert docs and all(d.metadata["granularity"] == "session" for d in docs)
    assert all(not d.id.startswith("n-") for d in docs)


def test_unchanged_rebuild_embeds_nothing_notes_included(tmp_path, marag_sessions):
    ef = HashingEmbeddingFunction()
    first = build_kb(marag_sessions, tmp_path, embedding_function=ef)
    n_docs = len(build_documents(marag_sessions))
    assert first.embedded == first.total == n_docs
    ef2 = HashingEmbeddingFunction()
    again = build_kb(marag_sessions, tmp_path, embedding_function=ef2)
    assert (again.added, again.updated, again.deleted, again.embedded) == (0, 0, 0, 0)
    assert ef2.embedded == 0
    # a changed note re-embeds exactly that note
    s = next(x for x in marag_sessions if x.extra.get("clinician_summary"))
    old = s.extra["clinician_summary"]
    s.extra["clinician_summary"] = old + " Edited."
    try:
        ef3 = HashingEmbeddingFunction()
        changed = build_kb(marag_sessions, tmp_path, embedding_function=ef3)
        assert (changed.updated, changed.embedded, ef3.embedded) == (1, 1, 1)
    finally:
        s.extra["clinician_summary"] = old
