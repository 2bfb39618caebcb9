"""The app factory. Stores and the query service are created once, in the lifespan."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from pipelines.profiles import Stores, open_stores
from pipelines.settings import Settings
from query_graph.service import QueryService
from server.errors import install_error_handlers
from server.routes import health, query
from server.tokens import TokenStore, load_or_create_token


def create_app(settings: Settings | None = None, stores: Stores | None = None) -> FastAPI:
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        own = stores is None
        app.state.stores = stores or open_stores(settings)
        app.state.service = QueryService(settings, app.state.stores)
        try:
            yield
        finally:
            if own:
                app.state.stores.close()

    app = FastAPI(
        title="ragline",
        version="0.1.0",
        description="Answers questions about a body of documentation with cited, validated sentences.",
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.tokens = TokenStore([load_or_create_token(settings)])
    install_error_handlers(app)
    app.include_router(health.router)
    app.include_router(query.router)
    return app
