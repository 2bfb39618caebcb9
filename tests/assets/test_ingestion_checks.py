"""Strategy partitions, blocking checks, registry check results, retention: the Dagster build end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assets.build import BuildFailed, build_index, dagster_instance
from pipelines.ingestion.build import BuildRequest
from pipelines.ingestion.chunkers import STRATEGIES
from pipelines.profiles import Stores
from pipelines.settings import Settings

GOLDEN = [
    {"id": "h-1", "question": "Which port does the dashboard listen on?", "expected": "answer",
     "pages": ["guide/config.md"], "evidence": ["listens on port 7420 by default"]},
    {"id": "h-2", "question": "How long are build logs kept?", "expected": "answer",
     "pages": ["guide/config.md"], "evidence": ["keeps build logs for 14 days"]},
    {"id": "h-3", "question": "What does harbor sync do?", "expected": "answer",
     "pages": ["reference/cli.md"], "evidence": ["uploads local artefacts to the registry"]},
    {"id": "h-4", "question": "What is the weather?", "expected": "abstain", "pages": [], "evidence": []},
]  # fmt: skip


def golden_file(tmp_path: Path) -> Path:
    path = tmp_path / "golden.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in GOLDEN))
    return path


def test_every_strategy_is_a_partition_checked_and_recorded(
    settings: Settings, stores: Stores, tmp_path: Path, corpus: Path
) -> None:
    settings = settings.model_copy(update={"golden_file": golden_file(tmp_path), "index_retention": 1})
    request = BuildRequest.from_settings(settings, strategies=list(STRATEGIES))
    first = build_index(settings, stores, request)
    row = stores.registry.get(first.version)
    assert row is not None and row.state == "active" and row.strategies == list(STRATEGIES)
    for strategy in STRATEGIES:
        for check in ("no_text_lost", "chunk_ids_unique", "chunks_within_token_limit", "chunks_not_empty"):
            assert row.checks[f"{check}[{strategy}]"]["passed"], (check, strategy)
        assert row.timings[f"chunk_{strategy}_seconds"] >= 0
    assert row.checks["document_languages_allowed"]["languages"] == {"en": 3}
    smoke = row.checks["retrieval_smoke"]
    assert smoke["passed"] and smoke["questions"] == 3 and smoke["evidence@5"] == 1.0
    assert smoke["active_evidence@5"] is None  # nothing was active to compare with
    assert {"build_seconds", "embed_seconds", "write_seconds", "clean_seconds"} <= set(row.timings)
    index = stores.open_index(row.location)
    try:
        per_strategy = {s: len(index.scroll_chunks(strategy=s)) for s in STRATEGIES}
        assert all(per_strategy.values()) and sum(per_strategy.values()) == row.chunk_count == index.count()
    finally:
        index.close()
    with dagster_instance(settings) as instance:
        from dagster import AssetKey

        keys = instance.get_materialized_partitions(AssetKey("chunks"))
        assert keys == set(STRATEGIES)

    # A second version is compared with the active one; retention 1 drops the first one's shard.
    # A server holding the active shard open locks it: the check uses the score the active version recorded.
    (corpus / "guide" / "extra.md").write_text("# Webhooks\n\nHarbor calls a webhook after every sync.\n")
    held = stores.open_index(row.location)
    try:
        second = build_index(settings, stores, request)
    finally:
        held.close()
    row = stores.registry.get(second.version)
    assert row is not None and row.checks["retrieval_smoke"]["active_evidence@5"] == 1.0
    assert "recorded score" in row.checks["retrieval_smoke"]["compared_with"]
    old = stores.registry.get(first.version)
    assert old is not None and old.state == "deleted" and not Path(old.location).exists()
    with pytest.raises(ValueError, match="dropped by retention"):
        stores.registry.activate(first.version)


def test_blocking_checks_refuse_activation(
    settings: Settings, stores: Stores, built, tmp_path: Path, corpus: Path
) -> None:  # type: ignore[no-untyped-def]
    (corpus / "guide" / "extra.md").write_text("# Webhooks\n\nHarbor calls a webhook after every sync.\n")
    # Languages outside the configured set.
    german_only = settings.model_copy(update={"languages": ["de"]})
    with pytest.raises(BuildFailed, match="languages_allowed"):
        build_index(german_only, stores, BuildRequest.from_settings(german_only))
    # A smoke check that cannot pass: the new version would have to beat the active one by 50 points.
    strict = settings.model_copy(update={"golden_file": golden_file(tmp_path), "smoke_margin": -0.5})
    with pytest.raises(BuildFailed, match="retrieval_smoke"):
        build_index(strict, stores, BuildRequest.from_settings(strict))
    assert stores.registry.active().version == built.version  # type: ignore[union-attr]
    states = sorted(v.state for v in stores.registry.versions())
    assert states == ["active", "failed"]  # the same content version failed twice, one row


def test_a_failed_forced_rebuild_leaves_the_serving_row_alone(
    settings: Settings, stores: Stores, built, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """A forced rebuild of the active version writes a fresh shard; until activation switches to it, its
    checks and timings are kept under the row's `rebuild` key. One that passes goes live with its own
    results; one that fails a check leaves the row describing the serving index as it was."""
    first = stores.registry.active()
    assert first is not None and first.version == built.version
    lenient = settings.model_copy(update={"golden_file": golden_file(tmp_path)})
    forced = build_index(lenient, stores, BuildRequest.from_settings(lenient), force=True)
    live = stores.registry.active()
    assert live is not None and live.version == first.version and live.location == forced.summary["location"]
    assert live.location != first.location and "rebuild" not in live.checks and "rebuild" not in live.timings
    assert live.checks["retrieval_smoke"]["passed"] is True and live.checks["retrieval_smoke"]["evidence@5"] > 0
    # A rebuild must not score below what the live version recorded: here it would have to beat it by 50 points.
    strict = settings.model_copy(update={"golden_file": golden_file(tmp_path), "smoke_margin": -0.5})
    with pytest.raises(BuildFailed, match="retrieval_smoke"):
        build_index(strict, stores, BuildRequest.from_settings(strict), force=True)
    after = stores.registry.active()
    assert after is not None and after.version == live.version and after.location == live.location
    assert {k: v for k, v in after.checks.items() if k != "rebuild"} == live.checks
    assert {k: v for k, v in after.timings.items() if k != "rebuild"} == live.timings
    failed = after.checks["rebuild"]["retrieval_smoke"]
    assert failed["passed"] is False and failed["active_evidence@5"] == live.checks["retrieval_smoke"]["evidence@5"]
    assert after.checks["rebuild"]["point_count_equals_chunks"]["passed"] is True
    assert "write_seconds" in after.timings["rebuild"]
