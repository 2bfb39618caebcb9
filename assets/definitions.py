"""The code location `dagster dev` loads (see `workspace.yaml`)."""

from __future__ import annotations

from dagster import Definitions, define_asset_job

from assets.ingestion import INGESTION_ASSETS, INGESTION_CHECKS
from assets.resources import IngestionResource

index_build_job = define_asset_job("index_build", selection="*active_index")

defs = Definitions(
    assets=INGESTION_ASSETS,
    asset_checks=INGESTION_CHECKS,
    jobs=[index_build_job],
    resources={"ragline": IngestionResource()},
)
