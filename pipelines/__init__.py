"""The framework-free core of ragline: settings, ports, adapters, models and stage logic.

Nothing in here imports Dagster, Hamilton or FastAPI; both graphs are thin shells over it.
"""
