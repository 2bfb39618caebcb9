from __future__ import annotations

import time

import psycopg
import pytest

from pipelines.adapters.registry import IndexVersion, Registry
from pipelines.ports import StoreUnavailable


def version(name: str, state: str = "checked") -> IndexVersion:
    return IndexVersion(
        version=name,
        source="/src",
        fingerprint="fp",
        embedding={"name": "m"},
        chunk_settings={"max_tokens": 500},
        strategies=["heading"],
        languages=["en"],
        location=f"/shards/{name}",
        state=state,
        chunk_count=3,
    )


def test_activation_retires_the_previous_version_and_rollback_works(backend: dict[str, str], schema: str) -> None:
    registry = Registry(backend["postgres"], schema)
    assert registry.active() is None
    registry.record(version("v-1"))
    registry.record(version("v-2"))
    registry.activate("v-1")
    registry.activate("v-2")
    states = {v.version: v.state for v in registry.versions()}
    assert states == {"v-1": "retired", "v-2": "active"}
    registry.activate("v-1")  # rollback
    assert registry.active().version == "v-1"  # type: ignore[union-attr]
    with psycopg.connect(backend["postgres"]) as conn:
        (count,) = conn.execute(f"SELECT count(*) FROM {schema}.index_versions WHERE state = 'active'").fetchone()  # type: ignore[misc]
    assert count == 1


def test_a_building_or_failed_version_cannot_be_activated(backend: dict[str, str], schema: str) -> None:
    registry = Registry(backend["postgres"], schema)
    registry.record(version("v-b", state="building"))
    with pytest.raises(ValueError, match="building"):
        registry.activate("v-b")
    with pytest.raises(KeyError):
        registry.activate("v-missing")


def test_unreachable_registry_is_an_error_not_an_empty_answer() -> None:
    registry = Registry("postgresql://postgres@127.0.0.1:1/none?connect_timeout=1")
    with pytest.raises(StoreUnavailable):
        registry.active()


def test_merge_keeps_earlier_results_and_retention_spares_the_active(backend: dict[str, str], schema: str) -> None:
    registry = Registry(backend["postgres"], schema)
    for name in ("v-1", "v-2", "v-3", "v-4"):
        registry.record(version(name))
    registry.record(version("v-5", state="building"))  # maybe still being written elsewhere: never dropped
    registry.merge("v-1", checks={"a": {"passed": True}}, timings={"clean_seconds": 1.5})
    registry.merge("v-1", checks={"b": {"passed": False}})
    row = registry.get("v-1")
    assert row is not None and set(row.checks) == {"a", "b"} and row.timings == {"clean_seconds": 1.5}
    registry.activate("v-1")  # the oldest is active
    beyond = [v.version for v in registry.beyond_retention(2)]
    assert beyond == ["v-3", "v-2"]  # keep the active one and the newest other one (v-4)
    registry.update("v-2", state="deleted")
    with pytest.raises(ValueError, match="dropped by retention"):
        registry.activate("v-2")
    with pytest.raises(ValueError, match="at least 1"):
        registry.beyond_retention(0)


def test_activation_switches_a_versions_location_and_supersedes_the_old_one(
    backend: dict[str, str], schema: str
) -> None:
    """A forced rebuild's activation: the row moves to the fresh location in the same transaction, and the
    old location is kept as superseded until it is dropped; re-recording a version supersedes likewise."""
    registry = Registry(backend["postgres"], schema)
    registry.record(version("v-1"))
    registry.activate("v-1")
    assert registry.superseded() == []
    switched = registry.activate("v-1", location="/shards/v-1_b1", chunk_count=4)
    assert switched.state == "active" and switched.location == "/shards/v-1_b1" and switched.chunk_count == 4
    assert registry.superseded() == ["/shards/v-1"]
    registry.forget_superseded("/shards/v-1")
    registry.record(version("v-2"))
    registry.activate("v-2")
    registry.record(version("v-1"))  # a later plain rebuild of the retired v-1 goes back to /shards/v-1
    assert registry.get("v-1").location == "/shards/v-1"  # type: ignore[union-attr]
    assert registry.superseded() == ["/shards/v-1_b1"]
    with pytest.raises(ValueError, match="state"):
        registry.activate("v-2", state="retired")


def _backends(dsn: str, application_name: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (application_name,)
        ).fetchone()
    assert row is not None
    return int(row[0])


def test_calls_share_a_bounded_pool_of_connections(backend: dict[str, str], schema: str) -> None:
    """Two hundred calls from eight threads open at most `pool_max` connections (one per call before the
    pool: PostgreSQL would see two hundred backends come and go), and close() gives them all back."""
    import concurrent.futures

    name = f"ragline-pool-{schema}"
    dsn = f"{backend['postgres']}{'&' if '?' in backend['postgres'] else '?'}application_name={name}"
    registry = Registry(dsn, schema, pool_min=1, pool_max=3, pool_timeout=10.0)
    registry.record(version("v-p"))
    peak = 0
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        calls = [pool.submit(registry.get, "v-p") for _ in range(200)]
        for call in calls:
            assert call.result() is not None
            peak = max(peak, _backends(backend["postgres"], name))
    stats = registry.pool_stats()
    assert 1 <= peak <= 3 and stats["pool_max"] == 3 and stats["requests_num"] >= 200
    assert stats.get("connections_num", 0) <= 3, stats
    registry.close()
    # A closed connection's backend leaves pg_stat_activity a moment later (slower on a loaded machine): poll.
    deadline = time.monotonic() + 10.0
    while _backends(backend["postgres"], name) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _backends(backend["postgres"], name) == 0
    assert registry.get("v-p") is not None  # a closed registry opens a new pool on its next call
    registry.close()


def test_a_pool_that_cannot_lend_in_time_is_store_unavailable(backend: dict[str, str], schema: str) -> None:
    registry = Registry(backend["postgres"], schema, pool_min=0, pool_max=1, pool_timeout=0.5)
    registry.record(version("v-q"))
    with registry._connect(), pytest.raises(StoreUnavailable, match="unreachable"):  # its one connection is lent
        registry.get("v-q")
    registry.close()
