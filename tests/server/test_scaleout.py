"""Four server processes (`ragline serve --workers 4`) on shared stores, under load and faults, with real
processes: the embedded PostgreSQL holds the index (pgvector), the semantic cache and the registry; a Redis of
the test's own holds the caches and rate limits. While eight clients ask without pause, one server process is
killed, Redis stops and starts again, a new version is built and activated through the admin API, and a build
fails its checks in another process (evals/bench/scaleout.py does the same on docs/ and measures)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from assets.build import build_index
from evals.bench.scaleout import Outcome, Questions, deployment, faults, load, summary
from pipelines.adapters.embedded_services import EmbeddedServices
from pipelines.ingestion.build import BuildRequest
from pipelines.profiles import open_stores
from pipelines.settings import Settings
from ragline.cli.serve import WorkersRefused, shared_settings
from tests.corpus import write_corpus
from tests.server.conftest import services_settings
from tests.server.test_builds_dagster_webserver import ragline_environment

HARBOR = Questions(
    repeated=["Which port does the harbor dashboard listen on?", "How long does harbor keep build logs?"],
    answerable=["Which Python version does harbor need?", "How do I install harbor offline?"],
    off_topic=["What is the boiling point of mercury in kelvin?"],
)


def test_only_the_killed_process_requests_fail_while_redis_restarts_an_index_swaps_and_a_build_fails(
    tmp_path: Path,
) -> None:
    source = write_corpus(tmp_path / "corpus")
    with deployment(source, 4, {"RAGLINE_EXCLUDE": '["notes/**"]'}) as dep:
        assert len(dep.worker_pids()) == 4
        stop = asyncio.Event()

        async def warm() -> list[Outcome]:
            task = asyncio.create_task(load(dep.url, dep.token, HARBOR, 8, stop))
            await asyncio.sleep(4)
            stop.set()
            return await task

        steady = asyncio.run(warm())
        kinds = summary(steady, 4)["by_outcome"]
        assert summary(steady, 4)["errors"] == 0 and {"hit", "answered", "no_answer"} <= set(kinds), kinds
        assert len({o.version for o in steady}) == 1  # every process serves the same version

        report = asyncio.run(
            faults(
                dep,
                HARBOR,
                8,
                ("guide/webhooks.md", "# Webhooks\n\nHarbor calls a webhook after every sync.\n"),
                (
                    "guide/extra.md",
                    "# Weitere Hinweise\n\nHarbor speichert Protokolle vierzehn Tage lang.\n",
                    {"RAGLINE_LANGUAGES": '["de"]'},
                ),
            )
        )
        assert report["held"], json.dumps(report, indent=1)
        assert report["requests_while_redis_down"] > 0 and report["summary"]["requests"] > 100


def test_several_processes_get_shared_stores_or_a_clear_refusal() -> None:
    settings, switched = shared_settings(Settings(workers=4))
    assert switched == {"vector_store": "postgres", "semantic_cache_store": "postgres", "rate_limit_store": "redis"}
    assert (settings.vector_store, settings.semantic_cache_store, settings.rate_limit_store) == (
        "postgres",
        "postgres",
        "redis",
    )
    # A Qdrant server is shared already; a store chosen per process on purpose is refused, naming it.
    served, switched = shared_settings(Settings(workers=2, qdrant_url="http://qdrant:6333", rate_limit_per_second=0))
    assert switched == {"semantic_cache_store": "postgres"} and served.vector_store == "qdrant"
    with pytest.raises(WorkersRefused, match="RAGLINE_SEMANTIC_CACHE_STORE=edge"):
        shared_settings(Settings(workers=2, semantic_cache_store="edge"))
    with pytest.raises(WorkersRefused, match="RAGLINE_VECTOR_STORE=qdrant without RAGLINE_QDRANT_URL"):
        shared_settings(Settings(workers=2, vector_store="qdrant"))


def test_several_processes_refuse_an_active_shard_they_cannot_all_open(
    tmp_path: Path, embedded: EmbeddedServices
) -> None:
    """`--no-build` over an index built as a Qdrant Edge shard: one process could open it, four cannot; the
    server says so and exits instead of answering 503 from three of them."""
    settings = services_settings(tmp_path, embedded)
    stores = open_stores(settings)
    try:
        built = build_index(settings, stores, BuildRequest.from_settings(settings))
        assert not built.summary["location"].startswith("pg:")
    finally:
        stores.close()
    env = {**os.environ, **ragline_environment(settings), "RAGLINE_PORT": "0"}
    done = subprocess.run(
        [sys.executable, "-m", "ragline", "serve", "--workers", "2", "--no-build"],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 1 and "is a Qdrant Edge shard, which one process opens" in done.stderr, done.stderr[
        -2000:
    ]
