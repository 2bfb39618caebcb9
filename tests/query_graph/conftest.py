"""The harbor fixture corpus, indexed once per test module (a module may still define its own)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.query_graph.harbor import Harbor, harbor_index


@pytest.fixture(scope="module")
def harbor(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[Harbor]:
    with harbor_index(tmp_path_factory.mktemp("harbor"), request) as index:
        yield index
