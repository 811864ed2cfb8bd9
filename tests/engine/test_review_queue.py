"""The review queue over a real audit trail (SQLite in tmp) and real KBs built in tmp: a Run
(`marag ask`) is recorded in the trail but is no queue item; a release enters the queue only when
submitted (`submit`, `marag audit submit`), once per plan, KB, KB generation and result content;
the queue is per KB, so two KBs that both stand at `gen-000001` keep their items apart; a KB
rebuild starts new items; the trail still verifies and lists every Run."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from engine.audit.review import content_hash, queue, queued, review_key, sign, submit
from engine.audit.store import AuditStore
from engine.cli import main

QUERY = "trajectory of patient 3"


def _build(kb_dir: Path, patients: tuple[int, ...]) -> None:
    from kb_store.chroma_kb import build_kb
    from kb_store.ingest import load_sources
    from kb_store.synth import default_sample_path

    sessions = load_sources([default_sample_path()]).sessions
    build_kb([s for s in sessions if s.proj_id in patients], kb_dir, embedding="hashing")


@pytest.fixture
def kbs(tmp_path, monkeypatch) -> dict[str, Path]:
    """Two KBs with the same content and the same generation label, and one trail."""
    out = {name: tmp_path / name / "kb" for name in ("a", "b")}
    for kb_dir in out.values():
        _build(kb_dir, (3, 8))
    monkeypatch.setenv("MARAG_EMBEDDING", "hashing")
    monkeypatch.setenv("MARAG_LLM", "facts")
    monkeypatch.setenv("MARAG_AUDIT_DB", str(tmp_path / "audit.sqlite3"))
    monkeypatch.delenv("MARAG_USER", raising=False)
    return out


def _store(tmp_path: Path) -> AuditStore:
    return AuditStore(f"sqlite:///{tmp_path / 'audit.sqlite3'}")


def _run(capsys, kb_dir: Path, user: str = "dr.alice") -> None:
    """One Run: `marag ask` against `kb_dir` (recorded as an `ask` entry)."""
    capsys.readouterr()
    assert main(["ask", QUERY, "--json", "--kb-dir", str(kb_dir), "--user", user]) == 0


def _cli(capsys, argv: list[str]) -> str:
    capsys.readouterr()
    assert main(argv) == 0
    return capsys.readouterr().out


def test_runs_are_recorded_but_only_a_submission_is_queued_once(kbs, tmp_path, capsys):
    _run(capsys, kbs["a"])
    _run(capsys, kbs["a"])
    store = _store(tmp_path)
    first, second = store.entries(actions=("ask",))
    a = str(kbs["a"].resolve())
    assert first.detail == {"kb": a} and first.kb_generation == "gen-000001"
    assert queue(store, status="all") == []  # Run twice: nothing awaits review
    assert queued(store, first) is None

    done = submit(store, first, "dr.alice", role="clinician")
    assert done.created and done.message == f"Submitted for review as #{first.id}"
    sub = done.item.submission
    assert (sub.action, sub.subject, sub.user, sub.patients) == (
        "submit_review",
        first.id,
        "dr.alice",
        [3],
    )
    assert sub.detail["kb"] == a and sub.detail["kb_generation"] == "gen-000001"
    assert sub.detail["result_hash"] == first.result_hash
    assert sub.detail["content_hash"] == content_hash(first.result)
    assert [i.number for i in queue(store, kb=a)] == [first.id]

    again = submit(store, first.id, "dr.alice")  # the same release again
    assert not again.created and again.item.submission == sub
    assert again.message == f"Already in the review queue as #{first.id} (awaiting review)"
    # the second Run says the same (only its timing trace differs): the same queue item
    assert review_key(second) == review_key(first)
    other = submit(store, second, "dr.alice")
    assert not other.created and other.item.number == first.id
    assert [i.number for i in queue(store, kb=a)] == [first.id]
    assert queued(store, second).number == first.id
    assert [e.action for e in store.entries()] == ["ask", "ask", "submit_review"]
    assert store.verify().ok


def test_the_queue_is_per_kb_and_per_generation(kbs, tmp_path, capsys):
    _run(capsys, kbs["a"])
    _run(capsys, kbs["b"])  # another KB, same content, same label gen-000001
    store = _store(tmp_path)
    in_a, in_b = store.entries(actions=("ask",))
    assert in_a.kb_generation == in_b.kb_generation == "gen-000001"
    assert in_a.kb_hash == in_b.kb_hash  # same content: only the KB itself tells them apart
    a, b = str(kbs["a"].resolve()), str(kbs["b"].resolve())
    assert submit(store, in_a, "dr.alice").created
    assert submit(store, in_b, "dr.alice").created
    assert [i.number for i in queue(store, kb=a)] == [in_a.id]
    assert [i.number for i in queue(store, kb=b)] == [in_b.id]
    assert [(i.number, i.kb) for i in queue(store)] == [(in_b.id, b), (in_a.id, a)]

    _build(kbs["a"], (3,))  # KB a rebuilt: gen-000002
    _run(capsys, kbs["a"])
    rebuilt = store.entries(actions=("ask",))[-1]
    assert rebuilt.kb_generation == "gen-000002"
    assert submit(store, rebuilt, "dr.alice").created  # a new generation: a new item
    assert [i.number for i in queue(store, kb=a)] == [rebuilt.id, in_a.id]
    assert [i.number for i in queue(store, kb=a, kb_generation="gen-000002")] == [rebuilt.id]
    assert [i.number for i in queue(store, kb=a, kb_generation="gen-000001")] == [in_a.id]
    assert [i.number for i in queue(store, kb=b, kb_generation="gen-000002")] == []

    # a review moves an item out of pending; four eyes stays in sign()
    sign(store, in_a.id, "sign_off", user="dr.bob", role="reviewer")
    assert [i.number for i in queue(store, kb=a)] == [rebuilt.id]
    assert [(i.number, i.status) for i in queue(store, kb=a, status="reviewed")] == [
        (in_a.id, "signed off")
    ]
    again = submit(store, in_a, "dr.alice")
    assert not again.created and again.message.endswith("(signed off)")
    assert store.verify().ok


def test_submitting_at_once_queues_one_item(kbs, tmp_path, capsys):
    """Several writers submitting the same release at the same time: one item (the check and the
    append share the trail's write lock)."""
    _run(capsys, kbs["a"])
    url = f"sqlite:///{tmp_path / 'audit.sqlite3'}"
    release = AuditStore(url).entries(actions=("ask",))[0]
    created: list[bool] = []

    def worker() -> None:
        store = AuditStore(url)
        created.append(submit(store, release.id, "dr.alice").created)
        store.close()

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(created) == [False] * 5 + [True]
    store = AuditStore(url)
    assert len(store.entries(actions=("submit_review",))) == 1
    assert store.verify().ok


def test_marag_audit_submit_and_queue(kbs, tmp_path, capsys):
    _run(capsys, kbs["a"])
    _run(capsys, kbs["b"])
    a_dir = ["--kb-dir", str(kbs["a"])]
    listed = json.loads(_cli(capsys, ["audit", "queue", "--json", *a_dir]))
    assert listed == {"kb": str(kbs["a"].resolve()), "items": []}

    out = _cli(capsys, ["audit", "submit", "1", "--user", "dr.alice", *a_dir])
    assert out.strip() == "Submitted for review as #1"
    out = _cli(capsys, ["audit", "submit", "1", *a_dir])
    assert out.strip() == "Already in the review queue as #1 (awaiting review)"
    _cli(capsys, ["audit", "submit", "2", "--user", "dr.alice", "--kb-dir", str(kbs["b"])])

    items = json.loads(_cli(capsys, ["audit", "queue", "--json", *a_dir]))["items"]
    assert [(i["number"], i["status"], i["submitted_by"]) for i in items] == [
        (1, "awaiting review", "dr.alice")
    ]
    assert items[0]["kb_generation"] == "gen-000001" and items[0]["release"]["action"] == "ask"
    every = json.loads(_cli(capsys, ["audit", "queue", "--all-kbs", "--json", *a_dir]))
    assert [i["number"] for i in every["items"]] == [2, 1] and every["kb"] is None
    text = _cli(capsys, ["audit", "queue", *a_dir])
    assert "#1 " in text and "awaiting review (submitted by dr.alice)" in text
    assert "#2 " not in text
    assert "submit_review on #1" in _cli(capsys, ["audit", "list", *a_dir])
    assert _cli(capsys, ["audit", "verify", *a_dir]).startswith("audit chain holds: 4 entries")

    capsys.readouterr()
    assert main(["audit", "submit", "3", *a_dir]) == 2  # a submission is not a release
    assert "is not a released result" in capsys.readouterr().err
