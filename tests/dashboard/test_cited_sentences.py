"""The summary's sentences with the statements they cite (dashboard.cited_sentences): pieces that
cover the text exactly, one hover line per cited statement built from its fields, escaped HTML,
plain text where nothing is cited, and the Provenance link of a sentence."""

from __future__ import annotations

import html
import re

from dashboard import cited_sentences as cs
from dashboard import provenance_link
from dashboard.number_links import NumberLink
from engine.clinical.statements import Statement
from engine.types import FactValue

TEXT = "Motor 20 to 26, worsened. ADL 8 at visit 1. No tremor was reported. PDQ-8 5."
SENTENCES = [
    {"span": [0, 25], "text": TEXT[0:25]},
    {"span": [26, 43], "text": TEXT[26:43]},
    {"span": [44, 67], "text": TEXT[44:67]},
    {"span": [68, 76], "text": TEXT[68:76]},
]


def _st(sid, kind, subject, visits, label, *values, key=False):
    return Statement(
        sid,
        kind,
        patient=3,
        subject=subject,
        visits=visits,
        label=label,
        values=tuple(values),
        key=key,
    )


CHANGE = _st(
    "S1",
    "change",
    "motor",
    (1, 2),
    "worsened",
    FactValue("score", 20.0, 3, 1, "motor", source="s-3-v1-updrs"),
    FactValue("score", 26.0, 3, 2, "motor", source="s-3-v2-updrs"),
    FactValue("delta", 6.0, 3, 2, "motor"),
    key=True,
)
ADL = _st("S2", "score", "adl", (1,), "", FactValue("score", 8.0, 3, 1, "adl"))
SESSION = _st("S3", "session", None, (1,), "", FactValue("visit", 1.0, 3, 1))
PDQ = _st("S4", "score", "qol", (1,), "", FactValue("score", 5.0, 3, 1, "qol"))
STATEMENTS = [CHANGE, ADL, SESSION, PDQ]
CITATIONS = [
    {"span": [0, 24], "statements": ["S1"]},
    {"span": [26, 32], "statements": ["S2"]},  # "ADL 8 "
    {"span": [32, 42], "statements": ["S3"]},  # "at visit 1"
    {"span": [68, 75], "statements": ["S4"]},
]


def _pieces(**kw):
    return cs.sentence_pieces(TEXT, CITATIONS, STATEMENTS, sentences=SENTENCES, **kw)


def test_pieces_cover_the_text_exactly_in_order():
    pieces = _pieces()
    assert "".join(p.text for p in pieces) == TEXT
    assert [(p.start, p.end) for p in pieces] == [
        (0, 25),
        (25, 26),
        (26, 43),
        (43, 44),
        (44, 67),
        (67, 68),
        (68, 76),
    ]
    for a, b in zip(pieces, pieces[1:], strict=False):
        assert a.end == b.start
    assert all(TEXT[p.start : p.end] == p.text for p in pieces)


def test_a_window_is_covered_exactly_and_sentences_are_clipped_to_it():
    pieces = _pieces(window=(30, 60))
    assert "".join(p.text for p in pieces) == TEXT[30:60]
    assert pieces[0].start == 30 and pieces[-1].end == 60
    assert pieces[0].cited  # the clipped ADL sentence keeps its statements


def test_each_cited_sentence_lists_its_statements_from_their_fields():
    pieces = {p.start: p for p in _pieces()}
    (line,) = pieces[0].lines
    assert line == (
        "change \u00b7 patient 3 \u00b7 Motor \u00b7 visits 1, 2 \u00b7 worsened: "
        "score 20 (visit 1), score 26 (visit 2), delta 6 (visit 2)"
    )
    assert pieces[68].lines == (
        "score \u00b7 patient 3 \u00b7 QoL (PDQ-8) \u00b7 visit 1: score 5",
    )


def test_a_sentence_with_two_citations_lists_both_statements():
    adl = next(p for p in _pieces() if p.start == 26)
    assert len(adl.lines) == 2
    assert adl.lines[0].startswith("score \u00b7 patient 3 \u00b7 ADL")
    assert adl.lines[1].startswith("session \u00b7 patient 3 \u00b7 visit 1")


def test_a_sentence_without_citations_is_plain():
    plain = next(p for p in _pieces() if p.start == 44)
    assert not plain.cited and plain.lines == () and plain.more == 0
    out = cs.pieces_html([plain], lambda p: "provenance?sentence=44")
    assert out == "<p>No tremor was reported.</p>"


def test_the_innermost_citations_are_listed_and_the_rest_counted():
    outer = [{"span": [0, len(TEXT)], "statements": [s.id for s in STATEMENTS]}, *CITATIONS]
    pieces = cs.sentence_pieces(TEXT, outer, STATEMENTS, sentences=SENTENCES)
    adl = next(p for p in pieces if p.start == 26)
    assert len(adl.lines) == 2  # the two inner citations, not the text-wide one
    plain = next(p for p in pieces if p.start == 44)  # only the text-wide citation holds it
    assert len(plain.lines) == 4 and plain.lines[0].startswith("change")  # the key fact first


def test_statements_a_number_matched_come_first_and_the_rest_are_counted(monkeypatch):
    monkeypatch.setattr(cs, "MAX_LINES", 1)
    wide = [{"span": [0, len(TEXT)], "statements": ["S2", "S3", "S4"]}]
    claims = [{"span": [74, 75], "matched": [vars(PDQ.values[0])]}]  # the "5" of PDQ-8 5
    pieces = cs.sentence_pieces(TEXT, wide, STATEMENTS, sentences=SENTENCES, claims=claims)
    last = pieces[-1]
    assert last.lines == (cs.statement_line(PDQ),) and last.more == 2


def test_html_escapes_the_text_and_every_statement_field():
    text = "Motor <b>20</b> & *rising* [x](javascript:alert(1))."
    evil = _st(
        "S9",
        "change",
        "<img src=x onerror=alert(1)>",
        (1,),
        '"><script>alert(1)</script> **bold** $x$',
        FactValue("score", 20.0, 3, 1, "motor"),
    )
    pieces = cs.sentence_pieces(
        text, [{"span": [0, len(text)], "statements": ["S9"]}], [evil], sentences=None
    )
    out = cs.pieces_html(pieces, lambda p: 'provenance?sentence=0&x="><b>')
    assert "<script>" not in out and "<img" not in out and "<b>" not in out
    assert html.escape(text) in out
    assert "&lt;img src=x onerror=alert(1)&gt;" in out
    assert "&lt;script&gt;" in out and "**bold** $x$" in out  # written as is, never as Markdown
    assert 'href="provenance?sentence=0&amp;x=&quot;&gt;&lt;b&gt;"' in out
    # only the tags this module writes
    assert set(re.findall(r"<(\w+)", out)) == {"p", "span", "a"}


def test_html_hover_lists_the_lines_links_to_provenance_and_shows_no_ids():
    out = cs.pieces_html(_pieces(), lambda p: provenance_link.href(7, p.start))
    assert out.count('class="cite"') == 3  # three cited sentences
    assert 'href="provenance?release=7&amp;sentence=26"' in out
    assert "S1" not in out and "S2" not in out  # no statement id anywhere
    visible = re.sub(r'<span class="cite-pop".*?</a></span>', "", out)
    assert re.sub(r"<[^>]+>", "", visible) == TEXT  # the text itself is unchanged


def test_unsupported_numbers_stay_marked_inside_a_cited_sentence():
    bad = NumberLink(6, 8, "20", 20.0, supported=False, reason="no fact has this value")
    out = cs.pieces_html(_pieces(), lambda p: "x", [bad])
    assert '<mark class="unsupported" title="no fact has this value">20</mark>' in out


def test_the_hover_is_hidden_in_print():
    assert "@media print{.cite .cite-pop{display:none!important}" in cs.HOVER_CSS


def test_a_record_of_another_text_gives_no_hover():
    rec = {"citations": CITATIONS, "statements": {"sentences": SENTENCES}}
    assert cs.summary_citations(TEXT, rec)[0] == CITATIONS
    assert cs.summary_citations(TEXT.replace("Motor", "MOTOR"), rec) == ([], None)
    assert cs.summary_citations(TEXT[:50], {"citations": CITATIONS}) == ([], None)
    assert cs.summary_citations(TEXT, {}) == ([], None)
    assert cs.summary_citations(TEXT, None) == ([], None)


def test_cited_statements_of_a_linked_sentence_and_its_rows():
    piece, sts = cs.cited_statements(26, TEXT, CITATIONS, STATEMENTS, SENTENCES)
    assert piece is not None and piece.text == TEXT[26:43] and sts == [ADL, SESSION]
    rows = cs.statement_rows(sts)
    assert [(r["kind"], r["value"]) for r in rows] == [("score", 8.0), ("visit", 1.0)]
    assert cs.cited_statements(44, TEXT, CITATIONS, STATEMENTS, SENTENCES) == (None, [])


def test_provenance_link_round_trip():
    assert provenance_link.href(None, 12) == "provenance?sentence=12"
    assert provenance_link.requested({"release": "4", "sentence": "12"}) == (4, 12)
    assert provenance_link.requested({"release": "x", "sentence": "-1"}) == (None, None)
    assert provenance_link.requested({}) == (None, None)


def test_only_the_person_released_to_or_a_reviewer_may_reopen_a_release():
    class Entry:
        action, user, result = "ask", "ana", {"plan": {}}

    assert provenance_link.may_open(Entry, "ana", frozenset({"clinician"}))
    assert not provenance_link.may_open(Entry, "bob", frozenset({"clinician"}))
    assert provenance_link.may_open(Entry, "bob", frozenset({"reviewer"}))
    Entry.action = "export"
    assert not provenance_link.may_open(Entry, "ana", frozenset({"reviewer"}))
    assert not provenance_link.may_open(None, "ana", frozenset({"reviewer"}))
