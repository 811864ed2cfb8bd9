"""Hybrid search over the MA-RAG KB (real Chroma, hashing vectors): concepts beat keyword noise,
filters are exact, reasons are given, the CLI keeps its contract."""

from __future__ import annotations

import json

import pytest

from engine.cli import main
from engine.clinical.concepts import match_concepts, severity_anchor
from engine.clinical.text import stem, tokens
from engine.search import SearchFilters
from engine.search.evaluation import QUERY_FILE, generate, marag_docs, ndcg_at, precision_at
from engine.search.fusion import rrf
from kb_store.profiles import load_profile


def _item(index, hit, code):
    u = index.unit(hit.doc_id)
    return u.items.get(code)


def test_concepts_map_clinical_words_to_items():
    codes = {(m.profile, m.code) for m in match_concepts("falls and freezing")}
    assert ("marag-updrs44", "FALL_PROB") in codes
    assert ("marag-updrs44", "FREEZE_GAIT_PROB") in codes
    assert ("mds-updrs", "NP2FREZ") in codes
    orth = {(m.profile, m.code) for m in match_concepts("orthostatic")}
    assert orth == {("marag-updrs44", "LIGHT_HEADED"), ("mds-updrs", "NP1LTHD")}
    assert match_concepts("the invoice is due") == []
    assert severity_anchor("moderate tremor") == 3 and severity_anchor("tremor") is None
    assert "terms_source" in load_profile("marag-updrs44").extra
    assert tokens("Falls") == tokens("fall") and tokens("hallucinations") == tokens("hallucination")


def test_falls_ranks_sessions_that_score_falling_first_worst_first(index):
    hits = index.search("falls", k=10)
    vals = [_item(index, h, "FALL_PROB") for h in hits]
    assert all(v is not None and v > 0 for v in vals), vals
    assert vals == sorted(vals, reverse=True)
    assert "Falling (FALL_PROB)" in hits[0].why
    # the worst session of the whole KB comes first
    best = max(u.items.get("FALL_PROB") or 0 for u in index.units)
    assert vals[0] == best


def test_negated_keyword_in_notes_does_not_outrank_the_item(index):
    """Most notes say 'without hallucinations'; BM25 alone ranks those, hybrid ranks the
    sessions that score Hallucinations."""
    noisy = index.search("hallucinations", k=10, system="bm25")
    assert any((_item(index, h, "HALLUCINATION") or 0) == 0 for h in noisy)
    hits = index.search("hallucinations", k=3)
    assert all((_item(index, h, "HALLUCINATION") or 0) > 0 for h in hits)


def test_negated_mentions_are_never_shown_as_the_finding(index):
    """A note that says "without hallucinations" is marked negated in the reason and the hit,
    and its snippet is either another text (the scored item) or labelled a negated mention."""
    hits = index.search("hallucinations", k=60, system="bm25")
    negated = [h for h in hits if h.negated]
    assert negated, "the study notes say 'without hallucinations'"
    for h in hits:
        note = index.unit(h.doc_id).note
        plain = note is not None and "hallucination" in negated_stems_free(note.text)
        if h.negated:
            assert "negated in the clinician note (not a finding): hallucinations" in h.why
            assert "words in the clinician note: hallucinations" not in h.why
            assert "without hallucination" not in h.snippet.lower() or h.snippet.startswith(
                "Negated mention (hallucinations):"
            )
            assert h.to_json()["negated"] == ["hallucinations"]
        elif plain:
            assert "words in the clinician note: hallucinations" in h.why


def negated_stems_free(text: str) -> set[str]:
    """Stems a note mentions at least once outside a negation (an independent reading: a word
    counts as plain unless one of the four words before it in its clause is a cue)."""
    import re

    out = set()
    for clause in re.split(r"[.;:!?]|\bbut\b", text.lower()):
        ws = re.findall(r"[a-z]+", clause)
        for i, w in enumerate(ws):
            if not {"no", "not", "without", "denies", "never", "none", "nor"} & set(
                ws[max(0, i - 5) : i]
            ):
                out.add(stem(w))
    return out


@pytest.mark.parametrize(
    ("text", "negated", "plain"),
    [
        ("The patient reports no significant non-motor difficulties.", {"difficult"}, {"report"}),
        ("Without hallucinations or delusions.", {"hallucin", "delusion"}, set()),
        ("Hallucinations at night, no falls.", {"fall"}, {"hallucin", "night"}),
        ("Denies falls; reports tremor.", {"fall"}, {"tremor"}),
        ("No tremor but marked rigidity.", {"tremor"}, {"rigidit"}),
        ("Hallucinations present; no hallucinations last week.", set(), {"hallucin"}),
    ],
)
def test_negated_stems(text, negated, plain):
    from engine.clinical.text import negated_stems

    got = negated_stems(text)
    assert negated <= got and not (plain & got), got


def test_phrase_from_a_note_finds_the_notes_that_hold_it(index):
    hits = index.search("moderate sleep disturbance", k=5)
    assert all(h.note_id for h in hits)
    for h in hits:
        u = index.unit(h.doc_id)
        assert "moderate sleep disturbance" in u.note.text.lower()
        assert "phrase" in h.why or "Sleep problems" in h.why


def test_filters_are_exact(index):
    f = SearchFilters(
        patients=(20, 23),
        instrument="updrs",
        date_from="2020-01-01",
        date_to="2020-12-31",
        item_min=(("FALL_PROB", 1),),
    )
    hits = index.search("walking", f, k=50)
    assert hits
    for h in hits:
        assert h.patient in (20, 23) and h.instrument == "updrs"
        assert "2020-01-01" <= h.date <= "2020-12-31"
        assert _item(index, h, "FALL_PROB") >= 1
    by_label = index.search("walking", SearchFilters(item_min=(("Falling", 3),)), k=50)
    assert by_label and all(_item(index, h, "FALL_PROB") >= 3 for h in by_label)
    assert index.search("walking", SearchFilters(patients=(20,), date_from="2030-01-01")) == []
    with pytest.raises(ValueError, match="unknown patient"):
        index.search("walking", SearchFilters(patients=(999,)))
    with pytest.raises(ValueError, match="unknown item"):
        index.search("walking", SearchFilters(item_min=(("NOPE", 1),)))


def test_search_is_deterministic_and_reasons_name_every_channel(index):
    a = index.search("rigidity and stiffness", k=10)
    b = index.search("rigidity and stiffness", k=10)
    assert [h.to_json() for h in a] == [h.to_json() for h in b]
    assert "dense #" in a[0].why and "concept:" in a[0].why
    assert a[0].snippet


def test_rrf_and_metrics_by_hand():
    assert rrf([["a", "b"], ["b", "c"]], k=60) == pytest.approx(
        {"a": 1 / 61, "b": 1 / 62 + 1 / 61, "c": 1 / 62}
    )
    rel = {"a": 2, "b": 1}
    assert precision_at(["a", "x", "b"], rel, k=10) == pytest.approx(0.2)
    assert ndcg_at(["a", "b"], rel) == pytest.approx(1.0)
    assert ndcg_at(["b", "a"], rel) < 1.0
    assert ndcg_at(["x"], rel) == 0.0


def test_committed_query_set_is_what_the_generator_writes(marag_sessions):
    from kb_store.documents import build_documents

    committed = json.loads(QUERY_FILE.read_text(encoding="utf-8"))
    assert generate(build_documents(marag_sessions)) == committed
    assert len(committed["queries"]) >= 30
    assert {q["kind"] for q in committed["queries"]} == {"concept", "note"}
    assert all(q["relevant"] for q in committed["queries"])
    assert marag_docs  # the module's own loader is what `generate` uses on the command line


def test_cli_search_json_contract_and_errors(marag_kb_dir, capsys):
    rc = main(["search", "falls", "--k", "3", "--json", "--kb-dir", str(marag_kb_dir)])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["hits"]) == 3
    for h in out["hits"]:
        assert {"patient", "date", "instrument", "doc_id", "score", "why", "snippet"} <= set(h)
    rc = main(
        [
            "search",
            "falls",
            "--patients",
            "20",
            "--instrument",
            "pdq8",
            "--kb-dir",
            str(marag_kb_dir),
        ]
    )
    assert rc == 0
    for argv, msg in (
        (["search", "falls", "--patients", "x1"], "--patients"),
        (["search", "falls", "--item", "FALL_PROB=2"], "--item"),
        (["search", "falls", "--from", "2020-02-30"], "--from"),
        (["search", "falls", "--k", "0"], "--k"),
        (["search", "falls", "--patients", "999"], "unknown patient"),
    ):
        capsys.readouterr()
        assert main([*argv, "--kb-dir", str(marag_kb_dir), "--embedding", "hashing"]) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and msg in err, err
