"""Completing a cited text with the facts sentences of its missing key statements
(engine.agents.cited_repair.add_missing): each added once, without restating what the text
already states."""

from __future__ import annotations

from engine.agents.cited_repair import add_missing
from engine.clinical.statements import Statement
from engine.writing.citing import Citation, Rendered, cite, clauses, finish
from engine.writing.words import cap


def _fallback(text: str, clauses: dict[str, str]) -> Rendered:
    """`text` with one citation per clause (clause text -> statement id) and one for the whole,
    its "; "-joined clauses marked as its writer marks them (engine.writing.citing.clauses)."""
    cits = [Citation(0, len(text), ("S0",), 0)]
    cits += [Citation(text.index(c), text.index(c) + len(c), (i,), 1) for c, i in clauses.items()]
    spans, pos = [], 0
    for sentence in text.split(". "):
        for part in sentence.split("; "):
            spans.append((pos, pos + len(part)))
            pos += len(part) + 2
    return Rendered(text, tuple(cits), tuple(spans))


MODEL = Rendered("Motor rose from 5 to 9, worsened.", (Citation(0, 33, ("S1",), 0),))


def test_added_sentence_leaves_out_the_clause_the_text_already_states():
    fb = _fallback(
        "Patient 1: total 10 to 20; motor 5 to 9, worsened; ADL 2 to 4, stable.",
        {"total 10 to 20": "S3", "motor 5 to 9, worsened": "S1", "ADL 2 to 4, stable": "S2"},
    )
    out, added = add_missing(MODEL, ["S2"], fb)
    assert out.text == (
        "Motor rose from 5 to 9, worsened. Patient 1: total 10 to 20; ADL 2 to 4, stable."
    )
    assert added == [{"text": "Patient 1: total 10 to 20; ADL 2 to 4, stable.", "states": ["S2"]}]
    adl = next(c for c in out.citations if c.ids == ("S2",))
    assert out.text[adl.start : adl.end] == "ADL 2 to 4, stable"  # citations follow the cut


def test_a_left_out_last_clause_keeps_the_full_stop_and_the_first_clause_stays():
    fb = _fallback(
        "motor 5 to 9, worsened; ADL 2 to 4, stable; motor 5 to 9, worsened again.",
        {"motor 5 to 9, worsened again": "S1", "ADL 2 to 4, stable": "S2"},
    )
    out, _added = add_missing(MODEL, ["S2"], fb)
    # the first clause names the subject and is kept; the last states only S1: left out
    assert out.text.endswith(" motor 5 to 9, worsened; ADL 2 to 4, stable.")


def test_sentence_with_nothing_already_stated_is_added_whole():
    text = "Patient 1: total 10 to 20; ADL 2 to 4, stable."
    fb = _fallback(text, {"total 10 to 20": "S3", "ADL 2 to 4, stable": "S2"})
    out, _added = add_missing(MODEL, ["S2"], fb)
    assert out.text == MODEL.text + " " + text


def test_added_sentences_keep_the_fallback_order_around_the_text():
    """The digest's "who and how much data" sentence comes before the model's motor sentence
    in the facts digest, so it goes before it when it is added; a later one goes after."""
    text = "Patient 1: 4 assessments, Jan 2021 to Jul 2021. Motor 5 to 9, worsened. ADL 2 to 4."
    fb = _fallback(
        text,
        {"4 assessments": "S9", "Motor 5 to 9, worsened": "S1", "ADL 2 to 4": "S2"},
    )
    out, added = add_missing(MODEL, ["S9", "S2"], fb)
    assert out.text == (
        "Patient 1: 4 assessments, Jan 2021 to Jul 2021. Motor rose from 5 to 9, worsened. "
        "ADL 2 to 4."
    )
    assert [a["states"] for a in added] == [["S9"], ["S2"]]
    model = next(c for c in out.citations if c.ids == ("S1",))
    assert out.text[model.start : model.end] == MODEL.text  # the model's citation moved with it


def test_clauses_are_the_writers_not_every_semicolon():
    """A "; " inside a clause (a label in brackets) does not split it: the clause the text
    already states is left out whole."""
    motor = cite("motor 5 to 9 (worsened; at or above MCID 4.63)", [_st("S1")])
    adl = cite("ADL 2 to 4, stable", [_st("S2")])
    fb = finish(cite("Patient 1: " + clauses(["total 10 to 20", motor, adl]) + ".", [_st("S0")]))
    out, added = add_missing(MODEL, ["S2"], fb)
    assert added[0]["text"] == "Patient 1: total 10 to 20; ADL 2 to 4, stable."
    assert out.text == MODEL.text + " Patient 1: total 10 to 20; ADL 2 to 4, stable."


def _st(sid: str) -> Statement:
    return Statement.make(sid, "change", 1, "motor", (), "", ())


def test_finish_returns_the_clauses_and_cap_reads_past_the_marks():
    marked = cite(clauses(["motor 5 to 9", "ADL 2 to 4"]), [_st("S1")]) + "."
    r = finish(cap(marked))
    assert r.text == "Motor 5 to 9; ADL 2 to 4."
    assert [r.text[a:b] for a, b in r.clauses] == ["Motor 5 to 9", "ADL 2 to 4"]
    assert [(c.start, c.end, c.ids) for c in r.citations] == [(0, 24, ("S1",))]
