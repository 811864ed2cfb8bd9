"""The columnar session table: written in the same generation as the Chroma collection,
stamped on both sides, checked on open (a mismatch is an error naming the files, never wrong facts),
rebuilt incrementally, and the same in server mode against a real `chroma run` on 127.0.0.1."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from engine.config import Config
from engine.pipeline import Engine
from engine.types import Plan
from kb_store import fact_table, generations, synth
from kb_store.chroma_kb import build_kb
from kb_store.chroma_reader import open_kb
from kb_store.documents import build_documents
from kb_store.embeddings import HashingEmbeddingFunction
from kb_store.fact_table import FactTableError, FactTableMismatchError
from kb_store.ingest import load_sources
from kb_store.model import Session


@pytest.fixture(scope="module")
def sessions(tmp_path_factory) -> list[Session]:
    csv = tmp_path_factory.mktemp("src") / "synth.csv"
    synth.generate(patients=12, seed=3).to_csv(csv, index=False)
    res = load_sources([csv])
    assert res.sessions
    return res.sessions


def _copy(sessions: list[Session]) -> list[Session]:
    import copy

    return copy.deepcopy(sessions)


CountingEF = HashingEmbeddingFunction  # counts the texts it embeds (`embedded`)


def _gen(kb_dir: Path) -> Path:
    return kb_dir / (kb_dir / "CURRENT").read_text().strip()


def test_table_is_written_in_the_generation_and_matches_the_documents(tmp_path, sessions):
    st = build_kb(_copy(sessions), tmp_path, embedding="hashing")
    gen = _gen(tmp_path)
    assert gen.name == st.generation and (gen / "sessions.parquet").is_file()
    manifest = json.loads((gen / "manifest.json").read_text())
    entry = manifest["fact_table"]
    docs = build_documents(_copy(sessions))
    sess = [d for d in docs if d.metadata["granularity"] == "session"]
    assert entry["generation"] == gen.name and entry["rows"] == len(sess)
    assert entry["digest"] == fact_table.docs_digest(docs)
    hashes = json.loads((gen / "hashes.json").read_text())
    assert fact_table.hashes_digest(hashes) == entry["digest"]
    kb = open_kb(tmp_path, embedding="hashing")
    assert kb._collection().metadata == {
        "marag_generation": gen.name,
        "marag_facts_digest": entry["digest"],
    }
    t = kb.fact_table()
    assert t is not None and t.generation == gen.name
    df = t.frame().set_index("doc_id")
    assert sorted(df.index) == sorted(d.id for d in sess)
    for d in sess:  # every value the engine reads equals the document metadata Chroma holds
        row, m = df.loc[d.id], d.metadata
        assert row["content_hash"] == m["content_hash"] and row["items_json"] == m["items_json"]
        assert (row["proj_id"], row["visit"], row["date"], row["instrument"]) == (
            m["proj_id"],
            m["visit"],
            m["date"],
            m["instrument"],
        )
        for dom in ("motor", "adl", "nonmotor", "qol"):
            if f"missing_{dom}" in m:
                assert row[f"missing_{dom}"] == m[f"missing_{dom}"]
                assert row[f"score_{dom}"] == m.get(f"score_{dom}") or (
                    m.get(f"score_{dom}") is None and row[f"score_{dom}"] != row[f"score_{dom}"]
                )


def test_mismatches_are_errors_naming_the_files(tmp_path, sessions):
    build_kb(_copy(sessions), tmp_path / "a", embedding="hashing")
    fewer = [s for s in _copy(sessions) if s.proj_id != 12]
    build_kb(fewer, tmp_path / "b", embedding="hashing")
    ga, gb = _gen(tmp_path / "a"), _gen(tmp_path / "b")
    # 1. the table of another KB copied over this one's
    shutil.copy(gb / "sessions.parquet", ga / "sessions.parquet")
    with pytest.raises(FactTableMismatchError) as e:
        open_kb(tmp_path / "a", embedding="hashing").fact_table()
    assert str(ga / "sessions.parquet") in str(e.value) and "manifest.json" in str(e.value)

    # 2. rows replaced while the file's stamps were kept
    build_kb(_copy(sessions), tmp_path / "c", embedding="hashing")
    gc = _gen(tmp_path / "c")
    good = pq.read_table(gc / "sessions.parquet")
    other = pq.read_table(gb / "sessions.parquet").replace_schema_metadata(good.schema.metadata)
    pq.write_table(other, gc / "sessions.parquet")
    t = open_kb(tmp_path / "c", embedding="hashing").fact_table()
    with pytest.raises(FactTableMismatchError, match="do not match the generation"):
        t.frame()

    # 3. the collection stamped for another table
    build_kb(_copy(sessions), tmp_path / "d", embedding="hashing")
    kb = open_kb(tmp_path / "d", embedding="hashing")
    kb._collection().modify(metadata={"marag_generation": "gen-000099", "marag_facts_digest": "x"})
    with pytest.raises(FactTableMismatchError, match="collection metadata"):
        open_kb(tmp_path / "d", embedding="hashing").fact_table()

    # 4. the table file missing where the manifest names it
    build_kb(_copy(sessions), tmp_path / "e", embedding="hashing")
    (_gen(tmp_path / "e") / "sessions.parquet").unlink()
    with pytest.raises(FactTableError, match="sessions.parquet is missing"):
        open_kb(tmp_path / "e", embedding="hashing").fact_table()

    # and the engine refuses to answer from a mismatched KB instead of giving other facts
    eng = Engine(Config.load(env={}), open_kb(tmp_path / "a", embedding="hashing"), None)
    with pytest.raises(FactTableMismatchError):
        eng.run(Plan((), "cohort", query="Which patient has the highest total UPDRS burden?"))


def test_rebuild_after_one_change_is_incremental_and_the_table_follows(tmp_path, sessions):
    first = build_kb(_copy(sessions), tmp_path, embedding="hashing")
    kb = open_kb(tmp_path, embedding="hashing")
    before = kb.fact_table().frame().set_index("doc_id")
    ef = CountingEF()
    same = build_kb(_copy(sessions), tmp_path, embedding_function=ef)
    assert ef.embedded == 0 and same.generation == first.generation
    changed = _copy(sessions)
    s = next(x for x in changed if x.proj_id == 4 and x.visit == 2 and x.instrument == "updrs")
    code = next(c for c, v in s.items.items() if v is not None and v < 4)
    s.items[code] = s.items[code] + 1  # one item: the session and the longitudinal document
    ef = CountingEF()
    st = build_kb(changed, tmp_path, embedding_function=ef)
    assert (st.updated, st.added, st.deleted, ef.embedded) == (2, 0, 0, 2)
    assert st.generation != first.generation
    after = kb.fact_table()  # the reader follows CURRENT to the new generation and its table
    assert after.generation == st.generation
    df = after.frame().set_index("doc_id")
    doc = "s-4-v2-updrs"
    assert json.loads(df.loc[doc, "items_json"])[code] == s.items[code]
    assert df.loc[doc, "content_hash"] != before.loc[doc, "content_hash"]
    unchanged = [i for i in df.index if i != doc]
    assert (df.loc[unchanged, "content_hash"] == before.loc[unchanged, "content_hash"]).all()


def test_a_kb_built_before_the_table_gets_one_without_embedding(tmp_path, sessions):
    build_kb(_copy(sessions), tmp_path, embedding="hashing")
    gen = _gen(tmp_path)
    manifest = json.loads((gen / "manifest.json").read_text())
    del manifest["fact_table"]
    (gen / "manifest.json").write_text(json.dumps(manifest))
    (gen / "sessions.parquet").unlink()
    kb = open_kb(tmp_path, embedding="hashing")
    assert kb.fact_table() is None  # old KB: the engine reads the documents
    eng = Engine(Config.load(env={}), kb, None)
    old = eng.run(Plan((3,), "trajectory"))
    ef = CountingEF()
    st = build_kb(_copy(sessions), tmp_path, embedding_function=ef)
    assert ef.embedded == 0 and st.generation != gen.name
    kb2 = open_kb(tmp_path, embedding="hashing")
    assert kb2.fact_table() is not None
    new = Engine(Config.load(env={}), kb2, None).run(Plan((3,), "trajectory"))
    assert new.summary == old.summary and new.facts == old.facts


# ---------------------------------------------------------------- server mode (real chroma run)


def test_server_mode_table_on_shared_storage(chroma_server, tmp_path, sessions):
    url, shared = chroma_server, tmp_path / "shared"
    kw = {"collection": "facts_srv", "chroma_url": url}
    st = build_kb(_copy(sessions), shared, embedding="hashing", **kw)
    gen = fact_table.current_facts_generation(shared)
    assert gen is not None and (gen / "sessions.parquet").is_file()
    kb = open_kb(shared, embedding="hashing", **kw)
    t = kb.fact_table()
    assert t is not None and t.generation == gen.name
    assert kb._collection().metadata["marag_facts_digest"] == t.digest
    # the same answer as an embedded KB of the same sources
    build_kb(_copy(sessions), tmp_path / "emb", embedding="hashing")
    plan = Plan((), "cohort", query="Which patient's motor score is worsening fastest?")
    cfg = Config.load(env={})
    srv = Engine(cfg, kb, None).run(plan)
    emb = Engine(cfg, open_kb(tmp_path / "emb", embedding="hashing"), None).run(plan)
    assert srv.summary == emb.summary and srv.cohort == emb.cohort
    traj = Engine(cfg, kb, None).run(Plan((5,), "trajectory"))
    assert (
        traj.facts
        == Engine(cfg, open_kb(tmp_path / "emb", embedding="hashing"), None)
        .run(Plan((5,), "trajectory"))
        .facts
    )

    # unchanged: nothing embedded, same facts generation
    ef = CountingEF()
    again = build_kb(_copy(sessions), shared, embedding_function=ef, **kw)
    assert ef.embedded == 0 and again.unchanged == st.total
    assert fact_table.current_facts_generation(shared) == gen
    # one change: 2 documents embedded, a new facts generation, the old one removed
    changed = _copy(sessions)
    s = next(x for x in changed if x.proj_id == 2 and x.visit == 1 and x.instrument == "pdq8")
    code = next(c for c, v in s.items.items() if v is not None and v < 4)
    s.items[code] += 1
    ef = CountingEF()
    build_kb(changed, shared, embedding_function=ef, **kw)
    new_gen = fact_table.current_facts_generation(shared)
    assert ef.embedded == 2 and new_gen != gen and not gen.exists()
    t2 = open_kb(shared, embedding="hashing", **kw).fact_table()
    assert t2.generation == new_gen.name
    df = t2.frame().set_index("doc_id")
    assert json.loads(df.loc["s-2-v1-pdq8", "items_json"])[code] == s.items[code]

    # a table that does not belong to the collection (e.g. a stale copy) is refused
    stale, _ = fact_table.stage_facts_generation(shared, build_documents(_copy(sessions)))
    generations.switch_pointer(fact_table.facts_root(shared), stale.name)
    with pytest.raises(FactTableMismatchError, match="collection metadata"):
        open_kb(shared, embedding="hashing", **kw).fact_table()
    # the next build repairs it without embedding
    ef = CountingEF()
    build_kb(changed, shared, embedding_function=ef, **kw)
    assert ef.embedded == 0
    assert open_kb(shared, embedding="hashing", **kw).fact_table().frame() is not None
