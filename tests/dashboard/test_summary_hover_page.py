"""The summary view's hover wiring (AppTest, real engine, facts backend): the Patient page draws
each cited sentence with its statement lines and a Provenance link naming the release; the link,
opened in a fresh session, reopens that release from the audit trail and lists the sentence's
statements, tracing its first number; the details paragraphs carry the hover too."""

from __future__ import annotations

import html
import re
from pathlib import Path

from streamlit.testing.v1 import AppTest

from dashboard.number_links import summary_record

APP = Path(__file__).resolve().parents[2] / "dashboard" / "app.py"
HREF = re.compile(r'href="provenance\?release=(\d+)&amp;sentence=(\d+)"')


def _bodies(at) -> list[str]:
    return [h.proto.body for h in at.get("html")]


def _run_patient(app):
    at = app.run()
    at.selectbox(key="patient").set_value(3).run()
    at.button(key="run_patient").click().run()
    assert not at.exception, at.exception
    return at


def test_patient_summary_sentences_show_their_statements_and_link_to_provenance(app, handle):
    at = _run_patient(app)
    bodies = [b for b in _bodies(at) if 'class="cite"' in b]
    assert bodies, "no summary sentence carries a hover"
    first = bodies[0]
    assert "@media print" in first  # screen only
    # the statement lines come from the Statement fields (kind, patient, part, visits, label)
    assert "change \u00b7 patient 3 \u00b7 Motor \u00b7 visits 1, 4" in html.unescape(
        "".join(bodies)
    )
    links = HREF.findall("".join(bodies))
    assert links and len({r for r, _ in links}) == 1  # one release: the shown result's
    # the released text itself, without its popups, is the summary as released, with no ids
    visible = re.sub(r'<style>.*?</style>|<span class="cite-pop".*?</a></span>', "", first)
    text = html.unescape(re.sub(r"<[^>]+>", "", visible))
    assert text.startswith("Patient 3:") and not re.search(r"\bS\d+\b", text)
    assert len(bodies) > 1  # the details paragraphs (in their expanders) carry the hover too


def test_the_provenance_link_reopens_the_release_and_lists_the_sentence(app, handle):
    at = _run_patient(app)
    release, sentence = HREF.findall("".join(_bodies(at)))[1]  # the second cited sentence
    fresh = AppTest.from_file(str(APP), default_timeout=20)  # a new browser session
    fresh.query_params["release"] = release
    fresh.query_params["sentence"] = sentence
    fresh.run()
    fresh.switch_page("views/provenance.py").run()
    assert not fresh.exception, fresh.exception
    subheads = [s.value for s in fresh.get("subheader")]
    assert "The linked sentence" in subheads
    quote = next(m.value for m in fresh.markdown if m.value.startswith("> "))
    assert "UPDRS total 34 to 32" in quote
    table = next(d.value for d in fresh.dataframe if "statement" in d.value.columns)
    assert {"change", "score"} & set(table.kind)
    assert table.statement.str.contains("patient 3").all()
    # the trace below starts at the sentence's first number
    trace = fresh.selectbox(key="trace_number")
    start = int(re.search(r"at (\d+)-", trace.format_func(trace.value)).group(1))
    assert int(sentence) <= start < int(sentence) + 300
    assert not [w.value for w in fresh.warning if "linked release" in w.value]


def test_an_unknown_release_is_named_and_nothing_else_breaks(app, handle):
    app.query_params["release"] = "9999"
    app.query_params["sentence"] = "0"
    at = app.run()
    at.switch_page("views/provenance.py").run()
    assert not at.exception, at.exception
    text = "\n".join(w.value for w in at.warning) + "\n".join(i.value for i in at.info)
    assert "The linked release is not shown" in text and "No result yet" in text


def test_a_summary_without_citations_renders_as_before(app, handle, monkeypatch):
    """A result whose final record carries no citations: the markdown summary, no hover."""
    real = handle.engine.run

    def no_citations(plan, **kw):
        r = real(plan, **kw)
        rec = summary_record(r.verification)
        rec.pop("citations", None)
        return r

    monkeypatch.setattr(handle.engine, "run", no_citations)
    at = _run_patient(app)
    assert not [b for b in _bodies(at) if 'class="cite"' in b]
    assert any(m.value.startswith("Patient 3:") for m in at.markdown)
