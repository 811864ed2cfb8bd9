"""Citation-safe decoding on a toy vocabulary: the marker grammar, the numbers of cited clauses,
the sentence end, the length limit, rows without `citable`, mixed batches, and the text helpers
(marker_spans, clauses) that read markers the same way. Fast (no model); the real-model test is
the last one (slow)."""

from __future__ import annotations

import os

import pytest
import torch

from engine.llm.base import CITE_MARKER, LLMRequest
from engine.llm.citation_safe import CitationSafeProcessor
from engine.llm.cite_automaton import START, CiteSets, advance_cite, cite_skeleton
from engine.llm.cite_markers import clauses, marker_spans
from engine.llm.number_safe import NumberSafeProcessor, extract_numbers, normalise_allowed

# Index 0 decodes to "" and stands for EOS / special tokens. Tokens mix marker pieces with text,
# digits and punctuation (" [S", "4]", "].", "12]", ",S", "] 20") as real BPE vocabularies do.
# fmt: off
VOCAB = [
    "", " ", "a", " motor", ",", ", ", ".", ". ", "\n", "!", "?", "-",
    "[", " [", "[S", " [S", "S", "]", "] ", "].", "4]", "12]", ",S", "] 20", "[S4]",
    "0", "1", "2", "3", "4", "5", "6", "7", "8", "9",
    "14", "20", " 20", " 7", "12", "2021", "-03", "2.5", " 9.", "4.",
]
# fmt: on
DIGITS = range(VOCAB.index("0"), VOCAB.index("9") + 1)
MARKER_TOKENS = [VOCAB.index(t) for t in ("[", " [", "[S", " [S", "S", "]", "4]", "12]", ",S")]

ALLOWED = frozenset({"14", "9", "2.5"})
CITABLE = (("S4", frozenset({"20", "2021-03-15"})), ("S12", frozenset({"7"})))
ID_NUMBERS = {sid: normalise_allowed(nums) for sid, nums in CITABLE}


def tok(text: str) -> int:
    return VOCAB.index(text)


def decode(ids: list[int]) -> str:
    """Decoded text up to the first end-of-sequence token (index 0)."""
    if 0 in ids:
        ids = ids[: ids.index(0)]
    return "".join(VOCAB[i] for i in ids)


def step_scores(proc, written: list[list[str]]) -> torch.Tensor:
    """The processor's scores (zeros in, -inf = masked) after each row wrote its tokens."""
    prompt = torch.full((len(written), 1), tok("a"), dtype=torch.long)
    proc(prompt, torch.zeros(len(written), len(VOCAB)))
    n = max(len(w) for w in written)
    ids = prompt
    for j in range(n):
        col = [[tok(w[j]) if j < len(w) else tok("a")] for w in written]
        ids = torch.cat([ids, torch.tensor(col)], dim=1)
        if j < n - 1:
            proc(ids, torch.zeros(len(written), len(VOCAB)))
    return proc(ids, torch.zeros(len(written), len(VOCAB)))


def allowed_after(written: list[str], **kw) -> set[str]:
    """The tokens a single citable row may write next (words before a marker allowed unless
    `lead`)."""
    opts = {"lead": False, **kw.get("p", {})}
    proc = CitationSafeProcessor(VOCAB, [kw.get("allowed", ALLOWED)], [CITABLE], **opts)
    scores = step_scores(proc, [written]) if written else _first(proc)
    return {VOCAB[i] for i in range(len(VOCAB)) if scores[0, i] != float("-inf")}


def _first(proc) -> torch.Tensor:
    return proc(torch.full((1, 1), tok("a")), torch.zeros(1, len(VOCAB)))


def test_uncited_number_uses_allowed_numbers() -> None:
    ok = allowed_after([" motor", " "])
    assert {"14", "1", "9", "2.5", " 9."} <= ok
    assert not {"20", " 20", "7", " 7", "3", "12"} & ok  # S4/S12 numbers need their marker


def test_lead_every_sentence_opens_with_a_marker() -> None:
    lead = {"p": {"lead": True}}
    first = allowed_after([], **lead)
    assert {"[S", "[", " ", "\n"} & first and not {" motor", "14", "20", "a"} & first
    ok = allowed_after(["[S", "4]", " motor", " ", "20"], **lead)
    assert "a" in ok or " motor" in ok  # inside a cited sentence: words as usual
    ok = allowed_after(["[S", "4]", " motor", " ", "20", ". "], **lead)
    assert not {" motor", "14", "a"} & ok and ({"[S", "["} & ok)  # the next sentence: a marker
    assert "" in ok  # the text may end between sentences


def test_ordered_lead_one_sentence_per_listed_statement_in_order() -> None:
    """With `ordered` (the local backend's rows), the n-th sentence opens by citing the n-th
    listed statement (others may follow in its marker), and after the last the text ends: a
    small model cannot copy the line nearest the end of its prompt again and again."""
    ordered = {"p": {"lead": True, "ordered": True}}
    assert allowed_after(["[S"], **ordered) == {"4", "4]"}  # S4 is listed first: not S12
    assert "12]" in allowed_after(["[S"], p={"lead": True, "ordered": False})
    assert {"12]", ",S"} & allowed_after(["[S", "4"], **ordered)  # more ids may follow
    second = ["[S", "4]", " motor", " ", "20", ". ", "[S"]
    assert allowed_after(second, **ordered) == {"1", "12", "12]"}  # then S12
    done = ["[S", "4]", " motor", " ", "20", ". ", "[S", "12]", " ", "7", ". "]
    assert allowed_after(done, **ordered) == {""}  # every listed statement has its sentence
    state = START
    sets = CiteSets.of(None, CITABLE, lead=True, ordered=True)
    for piece in done:
        state = advance_cite(state, cite_skeleton(piece), sets)
    assert state is not None and state.led == 2 and sets.opening(state) == ""


def test_after_marker_number_must_be_among_the_cited_numbers() -> None:
    ok = allowed_after([" motor", " [S", "4]", " "])
    assert {"20", "2021", "2", "3"} <= ok  # S4's 20, 2021, 03, 3 (03 normalised), 15
    assert not {"14", "9", "7", "12", "4", "2.5"} & ok  # allowed_numbers and S12's 7 are not
    ok = allowed_after([" motor", " [S", "4]", " ", "2021", "-03", "-"])  # a date of S4
    assert "1" in ok and "9" not in ok  # 15 continues, 19 does not
    ok = allowed_after(["[S", "12]", " "])
    assert {"7", " 7"} <= ok and not {"20", "14", "9"} & ok


def test_marker_cites_the_union_of_its_ids() -> None:
    ok = allowed_after(["[S", "4", ",S", "12]", " "])
    assert {"20", "7", " 7"} <= ok and "14" not in ok
    ok = allowed_after(["[S", "12", ", ", "S", "4", "]", " "])
    assert {"20", "7"} <= ok and "9" not in ok


def test_marker_digits_are_free_and_are_not_numbers() -> None:
    # no set holds 4 or 12, yet the ids are written, and no number is open after them
    ok = allowed_after(["[S"], allowed=frozenset({"9"}))
    assert {"4", "4]", "1", "12]"} <= ok
    state = START
    sets = CiteSets.of(frozenset({"9"}), CITABLE)
    for piece in ("[S", "12]"):
        state = advance_cite(state, cite_skeleton(piece), sets)
    assert state is not None and state.num == "" and state.scope == frozenset({"S12"})
    assert "4" not in allowed_after(["[S", "4]", " "])  # after the marker 4 is a number again


def test_bracket_is_followed_only_by_a_citable_id() -> None:
    assert allowed_after(["["]) == {"S"}  # not "a", " ", a digit, "]" or "["
    ok = allowed_after(["[S"])
    assert ok == {"1", "4", "4]", "12", "12]"}  # ids S4, S12: prefixes only
    assert allowed_after(["[S", "1"]) == {"2"}  # "[S1]" is not citable: no "]" yet
    ok = allowed_after(["[S", "12"])
    assert ok == {"]", "] ", "].", ",", ", ", ",S"}  # "] 20": 20 is not a number of S12
    ok = allowed_after(["[S", "4", ","])
    assert ok == {"S", " "}  # one optional space, then an id
    assert allowed_after(["[S", "4", ", "]) == {"S"}


def test_a_row_with_nothing_to_cite_cannot_open_a_marker() -> None:
    proc = CitationSafeProcessor(VOCAB, [ALLOWED], [()])
    scores = _first(proc)
    masked = {VOCAB[i] for i in range(len(VOCAB)) if scores[0, i] == float("-inf")}
    assert {"[", " [", "[S", " [S", "[S4]"} <= masked and "a" not in masked


def test_scope_ends_at_the_sentence_end() -> None:
    for end in ([". "], ["!", " "], ["?", " "], ["\n"], [".", "\n"], ["20", ". "]):
        ok = allowed_after(["[S", "4]", " ", "20", *end])
        assert {"14", "9"} <= ok and not {"20", "7"} & ok, end
    # a decimal point or a '.' without whitespace after it does not end the scope
    ok = allowed_after(["[S", "4]", " ", "20", "."])
    assert not {"14", "9", "1"} & ok  # "20.1" would be a decimal: not a number of S4
    assert " 9." in ok  # ". " ends the sentence: 9 is an allowed number again
    ok = allowed_after(["[S", "4]", " motor", ".", "a", " "])  # "motor.a ": no sentence end
    assert "20" in ok and "14" not in ok


def test_next_marker_replaces_the_scope() -> None:
    ok = allowed_after(["[S", "4]", " 20", " [S", "12]", " "])
    assert " 7" in ok and "20" not in ok


def test_end_of_sequence_only_when_closed() -> None:
    assert "" not in allowed_after(["[S", "4"])  # inside a marker
    assert "" not in allowed_after(["[S", "4]", " ", "2"])  # "2" of 20 is open
    assert "" in allowed_after(["[S", "4]", " 20"])


def test_no_half_marker_at_the_length_limit() -> None:
    # two steps left: "[S" would need "4]" (two characters) after it, "[S4]" fits
    ok = allowed_after(["a"], p={"max_new_tokens": [3]})
    assert not {"[", " [", "[S", " [S"} & ok and "[S4]" in ok
    ok = allowed_after(["a", "a"], p={"max_new_tokens": [4]})  # two left
    assert "[S" not in ok and "[" not in ok
    ok = allowed_after(["a"], p={"max_new_tokens": [5]})  # four left: '[' then 'S', '4', ']'
    assert "[" in ok
    ok = allowed_after(["[S"], p={"max_new_tokens": [2]})  # one left: the id must close
    assert ok == {"4]", "12]"}


def _run(proc, rows: int, steps: int, seed: int) -> list[list[int]]:
    """Greedy decoding against random logits through the processor; digits and marker pieces are
    made attractive so that markers and numbers are attempted often."""
    gen = torch.Generator().manual_seed(seed)
    ids = torch.full((rows, 2), tok("a"), dtype=torch.long)
    for _ in range(steps):
        scores = torch.randn(rows, len(VOCAB), generator=gen)
        scores[:, list(DIGITS)] += 1.2
        scores[:, MARKER_TOKENS] += 1.2
        scores = proc(ids, scores) if proc is not None else scores
        ids = torch.cat([ids, torch.argmax(scores, dim=-1, keepdim=True)], dim=1)
    return [row[2:] for row in ids.tolist()]


def violations(text: str, allowed: frozenset[str] | None = ALLOWED) -> list[str]:
    """What a citable row's text breaks: a '[' that starts no complete marker of citable ids,
    a number of a cited clause outside its ids' numbers, an uncited number outside `allowed`."""
    bad = []
    starts = {s for s, _e, _ids in marker_spans(text)}
    bad += [f"bracket at {i}" for i, ch in enumerate(text) if ch == "[" and i not in starts]
    for _s, _e, ids in marker_spans(text):
        bad += [f"id {i}" for i in ids if i not in ID_NUMBERS]
    ok_uncited = None if allowed is None else normalise_allowed(allowed)
    for start, end, ids in clauses(text):
        if ids is None:
            ok = ok_uncited
        else:
            ok = frozenset().union(*(ID_NUMBERS.get(i, frozenset()) for i in ids))
        if ok is not None:
            bad += [n for n in extract_numbers(text[start:end]) if n not in ok]
    return bad


@pytest.mark.parametrize("seed", range(30))
def test_random_decoding_keeps_markers_and_cited_numbers(seed: int) -> None:
    steps = 40
    proc = CitationSafeProcessor(
        VOCAB, [ALLOWED, None], [CITABLE, CITABLE], max_new_tokens=[steps] * 2
    )
    for ids, allowed in zip(_run(proc, 2, steps, seed), [ALLOWED, None], strict=True):
        text = decode(ids)
        assert violations(text, allowed) == [], text


def test_random_decoding_writes_markers_and_the_unconstrained_run_breaks_the_rules() -> None:
    """Shows the test above could fail: without the processor the same logits break the rules;
    with it, markers and cited numbers are written (not avoided altogether)."""
    free = [decode(ids) for seed in range(10) for ids in _run(None, 1, 40, seed)]
    assert sum(bool(violations(t)) for t in free) >= 5, free
    cited = with_marker = 0
    for seed in range(10):
        proc = CitationSafeProcessor(VOCAB, [ALLOWED], [CITABLE], max_new_tokens=[40])
        (ids,) = _run(proc, 1, 40, seed)
        text = decode(ids)
        cited += sum(len(extract_numbers(text[s:e])) for s, e, i in clauses(text) if i is not None)
        with_marker += bool(CITE_MARKER.search(text))
    assert with_marker >= 5 and cited > 0


def test_last_steps_never_leave_a_half_marker_or_number() -> None:
    for seed in range(40):
        limit = 3 + seed % 4
        proc = CitationSafeProcessor(VOCAB, [ALLOWED], [CITABLE], max_new_tokens=[limit])
        (ids,) = _run(proc, 1, limit, seed)
        text = decode(ids)
        assert violations(text) == [], text


def test_rows_without_citable_are_unchanged_in_a_mixed_batch() -> None:
    """A mixed batch: the plain rows decode token for token as under NumberSafeProcessor (same
    logits), the citable row follows the citation rules."""
    plain_allowed = [frozenset({"14", "7"}), None]
    for seed in range(15):
        ref = NumberSafeProcessor(VOCAB, plain_allowed, max_new_tokens=[30, 30])
        expected = _run(ref, 2, 30, seed)
        mixed = CitationSafeProcessor(
            VOCAB, [plain_allowed[0], ALLOWED, None], [None, CITABLE, None], max_new_tokens=[30] * 3
        )
        # rows are drawn independently per row of the batch: compare with the same row logits
        got = _run_rows(mixed, [0, None, 1], seed, 30)
        assert got[0] == expected[0] and got[2] == expected[1]
        assert violations(decode(got[1])) == [], decode(got[1])


def _run_rows(proc, layout: list[int | None], seed: int, steps: int) -> list[list[int]]:
    """Like _run, but row i gets the logits that row layout[i] gets in a _run of the plain rows
    (None: its own random logits), so a mixed batch can be compared with the plain one."""
    n_plain = sum(x is not None for x in layout)
    gen = torch.Generator().manual_seed(seed)
    other = torch.Generator().manual_seed(seed + 1000)
    rows = len(layout)
    ids = torch.full((rows, 2), tok("a"), dtype=torch.long)
    for _ in range(steps):
        plain = torch.randn(n_plain, len(VOCAB), generator=gen)
        plain[:, list(DIGITS)] += 1.2
        plain[:, MARKER_TOKENS] += 1.2
        own = torch.randn(rows, len(VOCAB), generator=other)
        own[:, MARKER_TOKENS] += 1.2
        scores = torch.stack([plain[x] if x is not None else own[i] for i, x in enumerate(layout)])
        scores = proc(ids, scores)
        ids = torch.cat([ids, torch.argmax(scores, dim=-1, keepdim=True)], dim=1)
    return [row[2:] for row in ids.tolist()]


def test_marker_spans_and_clauses() -> None:
    text = "Motor 14 [S4] rose to 20. ADL 9 [S12, S4] 7 and 20\nthen [S4]20.[S12]7? 9"
    spans = marker_spans(text)
    assert [ids for _s, _e, ids in spans] == [("S4",), ("S12", "S4"), ("S4",), ("S12",)]
    assert all(text[s:e].startswith("[S") and text[e - 1] == "]" for s, e, _ in spans)
    got = [(text[s:e], ids) for s, e, ids in clauses(text)]
    assert got == [
        ("Motor 14 ", None),
        (" rose to 20.", ("S4",)),
        (" ADL 9 ", None),
        (" 7 and 20", ("S12", "S4")),
        ("\nthen ", None),
        ("20.", ("S4",)),
        ("7?", ("S12",)),
        (" 9", None),
    ]
    assert clauses("no markers 1.5.") == [(0, 15, None)]


def test_cite_skeleton() -> None:
    assert cite_skeleton(" [S") == " [S"
    assert cite_skeleton("4].") == "4]."
    assert cite_skeleton("Scores?") == "Sx!"
    assert cite_skeleton("  \n\n hello") == "  n x"
    assert cite_skeleton("") == "e"  # the end of sequence


def first_masked(proc, ids: list[int], prompt: int = 0) -> int | None:
    """Teacher-force `ids` through `proc` (one row); the index of the first token it masks."""
    seq = torch.tensor([[prompt]])
    for j, t in enumerate(ids):
        scores = proc(seq, torch.zeros(1, proc.vocab.size))
        if scores[0, t] == float("-inf"):
            return j
        seq = torch.cat([seq, torch.tensor([[t]])], dim=1)
    return None


@pytest.mark.slow
@pytest.mark.xdist_group("local-llm")
def test_real_model_writes_only_citable_markers_and_their_numbers() -> None:
    """The bundled SmolLM2 through LocalLLM.generate: whatever it writes, every marker names a
    given id, every number of a cited clause is one of its ids' numbers, and (the local
    backend's `lead`) its text opens with a marker: SmolLM2-135M writes none of its own
    (measured). The same processor is also driven over texts in the real tokenizer's pieces
    (" [", "S", "1", "]", ",", " S"): a valid cited text passes token for token, a wrong cited
    number, an id that is not citable and a bracket without an id are masked where they start,
    with `lead` a sentence without a marker is masked at its first word, and with `order` a first
    sentence that does not cite the first listed statement at its id."""
    from engine.config import Config
    from engine.llm.citation_safe import CitationSafeProcessor
    from engine.llm.local import LocalLLM
    from engine.llm.number_safe import vocab_index

    env = {k: v for k, v in os.environ.items() if k == "MARAG_MODEL_CACHE_DIR"}
    llm = LocalLLM(Config.load({"llm": "local", "device": "cpu"}, env=env))
    citable = (
        ("S1", frozenset({"5", "14", "2021-03-15"})),
        ("S2", frozenset({"5", "9"})),
        ("S3", frozenset({"12", "3"})),
    )
    allowed = frozenset({"5", "14", "9", "12", "3", "2021-03-15"})
    system = (
        "You are a clinical assistant. Before each clause write the id of the statement it "
        "uses in square brackets, e.g. [S1] motor score 14."
    )
    user = (
        "Statements: S1: patient 5, motor score 14 on 2021-03-15. S2: patient 5, ADL score 9. "
        "S3: nonmotor score 12 at visit 3. Summarise the scores, citing [S1], [S2], [S3]."
    )
    req = LLMRequest(system, user, allowed_numbers=allowed, citable=citable, max_new_tokens=64)
    (text,) = llm.generate([req])
    assert llm.last_stats["number_safe"] and text
    assert CITE_MARKER.match(text.lstrip()), text  # the first sentence opens with a marker
    ids = {sid: normalise_allowed(nums) for sid, nums in citable}
    markers = marker_spans(text)
    assert all(i in ids for _s, _e, got in markers for i in got), text
    starts = {s for s, _e, _i in markers}
    assert all(text[i] != "[" or i in starts for i in range(len(text))), text
    for start, end, cited in clauses(text):
        ok = normalise_allowed(allowed)
        if cited is not None:
            ok = frozenset().union(*(ids[i] for i in cited))
        assert all(n in ok for n in extract_numbers(text[start:end])), (text, cited)
    print(repr(text), f"{len(markers)} markers")

    tokenizer = llm._loaded.tokenizer
    vocab = vocab_index(tokenizer, llm._loaded.model.config.vocab_size)

    def masked_at(piece: str, lead: bool = False, ordered: bool = True) -> str | None:
        proc = CitationSafeProcessor(vocab, [allowed], [citable], lead=lead, ordered=ordered)
        tids = tokenizer(piece, add_special_tokens=False)["input_ids"]
        j = first_masked(proc, tids)
        return None if j is None else tokenizer.decode(tids[j:])

    valid = "[S1] The motor score was 14 on 2021-03-15. [S2, S3] ADL 9 and nonmotor 12. Patient 5."
    assert masked_at(valid) is None
    assert masked_at("[S2] The motor score was 14.") == "14."  # 14 is not a number of S2
    assert masked_at("Then [S1,S7] rose") == "7] rose"  # S7 is not citable
    assert masked_at("see [ref 3]") == "ref 3]"  # '[' opens a marker
    assert masked_at("[S3] 12. ADL 9.") is None  # the sentence end closes S3's scope
    assert masked_at(valid.replace(" Patient 5.", ""), lead=True) is None
    unordered = masked_at("[S3] 12. ADL 9.", lead=True, ordered=False)
    assert (unordered or "").strip() == "ADL 9."  # at its word
    # ordered (the backend's rows): the first sentence cites S1, the first listed statement
    assert (masked_at("[S3] 12.", lead=True) or "").startswith("3")
