"""The persistent Chroma KB with hashing embeddings: deterministic ids, incremental upsert, atomic
builds, exact-metadata reads, and server mode against a real `chroma run` on localhost."""

from __future__ import annotations

import copy
import datetime as dt
import fcntl

import pandas as pd
import pytest

from kb_store import chroma_kb, chroma_reader, kb_lock, synth
from kb_store.chroma_kb import BuildStats, build_kb
from kb_store.chroma_reader import open_kb
from kb_store.documents import build_documents
from kb_store.embeddings import HashingEmbeddingFunction
from kb_store.kb_location import KBMissingError, kb_exists
from kb_store.kb_lock import KBBusyError
from kb_store.model import Session, SourceRef

UPDRS = synth.item_codes("nonmotor") + synth.item_codes("adl") + synth.item_codes("motor")
PDQ = synth.item_codes("qol")


def sessions_from_frame(df: pd.DataFrame) -> list[Session]:
    """Sessions straight from a generated frame (ISO-dated patients only), visits in date order."""
    out: list[Session] = []
    for pid, g in df.groupby("proj_id"):
        for v, (idx, row) in enumerate(g.iterrows(), start=1):
            d = dt.date.fromisoformat(str(row["date"])[:10])
            for inst, prof, codes in (("updrs", "mds-updrs", UPDRS), ("pdq8", "pdq8", PDQ)):
                items = {c: (None if pd.isna(row[c]) else float(row[c])) for c in codes}
                if any(x is not None for x in items.values()):
                    out.append(
                        Session(
                            int(pid),
                            d,
                            inst,
                            prof,
                            items,
                            SourceRef("synth.csv", int(idx) + 2),
                            visit=v,
                        )
                    )
    return out


@pytest.fixture(scope="module")
def base_sessions() -> list[Session]:
    return sessions_from_frame(synth.generate(patients=12, seed=3))


def fresh(sessions: list[Session]) -> list[Session]:
    return copy.deepcopy(sessions)


class CountingEF(HashingEmbeddingFunction):
    """Hashing embeddings that can fail after `fail_after` texts (a crash in the middle of a build)."""

    def __init__(self, fail_after: int | None = None):
        super().__init__()
        self.fail_after = fail_after

    def __call__(self, input):  # noqa: A002 - Chroma's parameter name
        if self.fail_after is not None and self.embedded + len(input) > self.fail_after:
            raise RuntimeError("injected embedding failure")
        return super().__call__(input)


def test_build_and_read_by_exact_metadata(tmp_path, base_sessions):
    stats = build_kb(base_sessions, tmp_path, embedding="hashing")
    docs = build_documents(base_sessions)
    assert isinstance(stats, BuildStats)
    assert (stats.added, stats.updated, stats.unchanged, stats.deleted, stats.total) == (
        len(docs),
        0,
        0,
        0,
        len(docs),
    )
    kb = open_kb(tmp_path, embedding="hashing")
    assert kb.patient_ids() == list(range(1, 13))
    assert kb.count() == len(docs)
    s3 = kb.session_docs(3)
    assert [(d.metadata["visit"], d.metadata["instrument"]) for d in s3] == [
        (v, i) for v in (1, 2, 3, 4) for i in ("pdq8", "updrs")
    ]
    assert all(d.metadata["proj_id"] == 3 and d.metadata["granularity"] == "session" for d in s3)
    expected = {d.id: d for d in docs}
    for d in s3:
        assert d.text == expected[d.id].text and d.metadata == expected[d.id].metadata
    assert [d.id for d in kb.session_docs(3, ["updrs"])] == [
        f"s-3-v{v}-updrs" for v in (1, 2, 3, 4)
    ]
    assert len(kb.session_docs(3, ["updrs", "pdq8"])) == 8 and len(kb.session_docs(3, [])) == 8
    assert kb.session_docs(99) == []
    assert [d.id for d in kb.longitudinal_docs(3)] == ["l-3-pdq8", "l-3-updrs"]
    assert [d.id for d in kb.get_docs(["s-2-v1-updrs", "missing", "l-1-updrs"])] == [
        "s-2-v1-updrs",
        "l-1-updrs",
    ]
    hits = kb.query("Patient 3, Visit 2", n_results=3, where={"proj_id": 3})
    assert len(hits) == 3 and all(d.metadata["proj_id"] == 3 for d, _ in hits)
    # layout: pointer + one generation with its manifest
    gens = sorted(p.name for p in tmp_path.glob("gen-*"))
    assert gens == [stats.generation] and (tmp_path / "CURRENT").read_text().strip() == gens[0]


def test_ids_deterministic(tmp_path, base_sessions):
    build_kb(fresh(base_sessions), tmp_path / "a", embedding="hashing")
    build_kb(fresh(base_sessions), tmp_path / "b", embedding="hashing")
    ids = [
        sorted(chroma_reader.ChromaKB(tmp_path / k, embedding="hashing")._collection().get()["ids"])
        for k in "ab"
    ]
    assert ids[0] == ids[1] == sorted(d.id for d in build_documents(base_sessions))


def test_rebuild_unchanged_embeds_nothing_and_changes_are_minimal(tmp_path, base_sessions):
    ef = CountingEF()
    first = build_kb(fresh(base_sessions), tmp_path, embedding_function=ef)
    assert ef.embedded == first.total == first.embedded
    ef2 = CountingEF()
    again = build_kb(fresh(base_sessions), tmp_path, embedding_function=ef2)
    assert (again.added, again.updated, again.deleted, again.embedded, ef2.embedded) == (
        0,
        0,
        0,
        0,
        0,
    )
    assert again.unchanged == first.total and again.generation == first.generation

    # one row changed without changing any domain score: only its session document changes
    changed = fresh(base_sessions)
    s = next(x for x in changed if x.proj_id == 4 and x.visit == 2 and x.instrument == "updrs")
    up, down = next(
        (c, d)
        for c in UPDRS
        for d in UPDRS
        if c != d and c[:3] == d[:3] and (s.items[c] or 0) < 4 and (s.items[d] or 0) > 0
    )
    s.items[up] = (s.items[up] or 0) + 1
    s.items[down] = (s.items[down] or 0) - 1
    ef3 = CountingEF()
    st = build_kb(changed, tmp_path, embedding_function=ef3)
    assert (st.added, st.updated, st.deleted, st.embedded, ef3.embedded) == (0, 1, 0, 1, 1)
    kb = open_kb(tmp_path, embedding="hashing")
    assert (
        kb.get_docs(["s-4-v2-updrs"])[0].metadata["items_json"]
        == build_documents([s])[0].metadata["items_json"]
    )
    assert [p.name for p in tmp_path.glob("gen-*")] == [st.generation]  # old generation removed

    # a score change also changes the patient's longitudinal document; a removed patient is deleted
    s.items[up] = s.items[up] + (1 if s.items[up] < 4 else -1)
    fewer = [x for x in changed if x.proj_id != 12]
    st = build_kb(fewer, tmp_path, embedding_function=CountingEF())
    n12 = len([d for d in build_documents(base_sessions) if d.metadata["proj_id"] == 12])
    assert (st.added, st.updated, st.deleted) == (0, 2, n12)
    kb = open_kb(tmp_path, embedding="hashing")
    assert 12 not in kb.patient_ids() and kb.session_docs(12) == []


@pytest.mark.parametrize("where", ["embedding", "delete", "count"])
def test_failure_mid_build_leaves_previous_kb(tmp_path, base_sessions, monkeypatch, where):
    build_kb(fresh(base_sessions), tmp_path, embedding="hashing")
    before = open_kb(tmp_path, embedding="hashing")
    old = {d.id: d.text for d in before.session_docs(5)}
    gen_before = before.generation

    changed = [x for x in fresh(base_sessions) if x.proj_id != 11]  # deletions too
    for x in changed:
        if x.instrument == "updrs":
            x.items["NP3GAIT"] = (
                4.0 if x.items["NP3GAIT"] != 4.0 else 3.0
            )  # every updrs doc changes
    ef = CountingEF()
    if where == "embedding":
        monkeypatch.setattr(chroma_kb, "EMBED_BATCH", 10)
        ef = CountingEF(fail_after=25)  # two batches written into the new generation, then a crash
    elif where == "delete":
        monkeypatch.setattr(
            chroma_kb, "_delete", lambda *a, **k: (_ for _ in ()).throw(OSError("disk full"))
        )
    else:  # deletions silently skipped: the count check must catch it before the switch
        monkeypatch.setattr(chroma_kb, "_delete", lambda *a, **k: None)
    with pytest.raises((RuntimeError, OSError, ValueError)):  # ValueError: KBWriteError
        build_kb(changed, tmp_path, embedding_function=ef)

    after = open_kb(tmp_path, embedding="hashing")
    assert after.generation == gen_before
    assert {d.id: d.text for d in after.session_docs(5)} == old
    assert 11 in after.patient_ids()
    assert (
        before.session_docs(5)[0].text == old[before.session_docs(5)[0].id]
    )  # open reader still fine
    assert sorted(p.name for p in tmp_path.glob("gen-*")) == [
        gen_before
    ]  # partial generation removed
    monkeypatch.undo()
    st = build_kb(changed, tmp_path, embedding="hashing")  # the next build succeeds
    assert st.updated > 0 and st.deleted > 0
    assert {d.id: d.text for d in open_kb(tmp_path, embedding="hashing").session_docs(5)} != old


def test_open_reader_follows_rebuild(tmp_path, base_sessions):
    build_kb(fresh(base_sessions), tmp_path, embedding="hashing")
    kb = open_kb(tmp_path, embedding="hashing")
    assert 12 in kb.patient_ids()
    build_kb([x for x in fresh(base_sessions) if x.proj_id != 12], tmp_path, embedding="hashing")
    assert 12 not in kb.patient_ids() and kb.session_docs(12) == []


def test_missing_kb_and_exists(tmp_path):
    assert not kb_exists(tmp_path / "nope")
    assert not chroma_reader.ChromaKB.exists(tmp_path / "nope")
    with pytest.raises(KBMissingError, match="marag kb build"):
        open_kb(tmp_path / "nope", embedding="hashing")
    assert issubclass(KBMissingError, FileNotFoundError)


def test_second_writer_is_refused(tmp_path, base_sessions):
    tmp_path.mkdir(exist_ok=True)
    with open(tmp_path / kb_lock.LOCK, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        with pytest.raises(KBBusyError, match="one writer"):
            build_kb(fresh(base_sessions), tmp_path, embedding="hashing")


def test_embedding_change_reembeds_everything(tmp_path, base_sessions):
    build_kb(fresh(base_sessions), tmp_path, embedding="hashing")

    class OtherEF(HashingEmbeddingFunction):
        @staticmethod
        def name() -> str:
            return "marag-hashing-other"

    st = build_kb(fresh(base_sessions), tmp_path, embedding_function=OtherEF())
    assert st.added == st.total == st.embedded and st.unchanged == 0


# ---------------------------------------------------------------- server mode (real chroma run)


def test_server_mode_staging_swap(chroma_server, tmp_path, base_sessions):
    url = chroma_server
    assert not kb_exists(tmp_path, collection="srv_test", chroma_url=url)
    st = build_kb(
        fresh(base_sessions), tmp_path, embedding="hashing", collection="srv_test", chroma_url=url
    )
    assert st.added == st.total
    assert kb_exists(tmp_path, collection="srv_test", chroma_url=url)
    # in server mode the KB directory (shared storage) holds only the session table
    assert [p.name for p in tmp_path.iterdir()] == ["facts"]
    kb = open_kb(tmp_path, embedding="hashing", collection="srv_test", chroma_url=url)
    assert kb.patient_ids() == list(range(1, 13))
    assert [d.id for d in kb.session_docs(3, ["updrs"])] == [
        f"s-3-v{v}-updrs" for v in (1, 2, 3, 4)
    ]
    ef = CountingEF()
    again = build_kb(
        fresh(base_sessions), tmp_path, embedding_function=ef, collection="srv_test", chroma_url=url
    )
    assert (again.added, again.updated, ef.embedded) == (0, 0, 0)
    fewer = [x for x in fresh(base_sessions) if x.proj_id != 12]
    ef = CountingEF()
    st = build_kb(fewer, tmp_path, embedding_function=ef, collection="srv_test", chroma_url=url)
    assert st.deleted > 0 and ef.embedded == 0  # unchanged docs copied with their stored vectors
    kb = open_kb(tmp_path, embedding="hashing", collection="srv_test", chroma_url=url)
    assert 12 not in kb.patient_ids() and len(kb.session_docs(3)) == 8
    # a failing build leaves the live collection as it was
    with pytest.raises(RuntimeError):
        build_kb(
            fresh(base_sessions),
            tmp_path,
            embedding_function=CountingEF(fail_after=0),
            collection="srv_test",
            chroma_url=url,
        )
    kb = open_kb(tmp_path, embedding="hashing", collection="srv_test", chroma_url=url)
    assert 12 not in kb.patient_ids()


def test_diff_falls_back_to_collection_scan_without_hash_index(tmp_path, base_sessions):
    first = build_kb(fresh(base_sessions), tmp_path, embedding="hashing")
    (tmp_path / first.generation / chroma_kb.HASHES).unlink()
    ef = CountingEF()
    again = build_kb(fresh(base_sessions), tmp_path, embedding_function=ef)
    assert (again.added, again.updated, again.unchanged, ef.embedded) == (0, 0, first.total, 0)


def test_unreachable_server_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="cannot reach the Chroma server at http://127.0.0.1:9"):
        kb_exists(tmp_path, chroma_url="http://127.0.0.1:9")


def test_leftover_of_a_killed_build_is_removed_by_the_next_build(tmp_path, base_sessions):
    first = build_kb(fresh(base_sessions), tmp_path, embedding="hashing")
    (tmp_path / "gen-000099").mkdir()  # a build killed before its switch
    (tmp_path / "gen-000099" / "chroma.sqlite3").write_bytes(b"partial")
    assert open_kb(tmp_path, embedding="hashing").generation == first.generation
    st = build_kb(
        [x for x in fresh(base_sessions) if x.proj_id != 1], tmp_path, embedding="hashing"
    )
    assert sorted(p.name for p in tmp_path.glob("gen-*")) == [st.generation]
    assert st.generation != "gen-000099"
