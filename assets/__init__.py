"""The Dagster code location: ingestion assets, their checks, resources and `Definitions`."""
