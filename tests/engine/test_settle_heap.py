"""engine_factory.settle_heap: the long-lived process's startup objects leave the collector's
generations (full collections would walk them on every pass)."""

from __future__ import annotations

import gc

from engine import engine_factory


def test_settle_heap_freezes_the_objects_built_so_far():
    gc.unfreeze()
    try:
        before = gc.get_freeze_count()
        keep = [object() for _ in range(10)]
        engine_factory.settle_heap()
        assert gc.get_freeze_count() > before
        assert gc.get_freeze_count() >= len(keep)
        young = [[] for _ in range(100)]  # objects created later are tracked as usual
        assert all(gc.is_tracked(x) for x in young)
    finally:
        gc.unfreeze()


def test_the_dashboard_settles_the_heap_once_its_engine_is_open(monkeypatch):
    from types import SimpleNamespace

    from dashboard import services
    from engine.config import Config

    calls: list[str] = []
    fake = SimpleNamespace(kb="kb")
    monkeypatch.setattr(
        services.engine_factory, "open_engine", lambda cfg: calls.append("open") or fake
    )
    monkeypatch.setattr(services.engine_factory, "settle_heap", lambda: calls.append("settle"))
    handle = services._cached_engine.__wrapped__("k", Config.load({"llm": "facts"}, env={}))
    assert calls == ["open", "settle"]
    assert handle.engine is fake
