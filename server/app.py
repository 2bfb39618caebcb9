"""The app factory. Stores and the query service are created once, in the lifespan."""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from pipelines.adapters.build_log import BuildLog
from pipelines.adapters.conversations import ConversationStore
from pipelines.adapters.redis_rate_limit import RedisTokenBuckets
from pipelines.adapters.reply_log import ReplyLog
from pipelines.adapters.speech import Transcriber
from pipelines.adapters.token_table import TokenTable
from pipelines.adapters.tracing import RequestTracer
from pipelines.profiles import Stores, open_stores
from pipelines.settings import Settings
from query_graph.service import QueryFailed, QueryService
from server import mcp_server, openai_compat
from server.builds import BuildLauncher, BuildTracker, dagster_graphql_launcher
from server.errors import install_error_handlers
from server.limits import MULTIPART_SLACK, BodyLimitMiddleware
from server.metrics import Metrics, MetricsMiddleware
from server.routes import admin, feedback, health, pages, passages, query, search, stream, tokens, voice
from server.tokens import RateLimiter, StreamSlots, TokenStore


def create_app(
    settings: Settings | None = None, stores: Stores | None = None, build_launcher: BuildLauncher | None = None
) -> FastAPI:
    """`build_launcher` runs an index build in-process; the composition root supplies it (server/ may
    not import assets/). With `RAGLINE_DAGSTER_URL` set, builds go to the Dagster webserver instead."""
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        own = stores is None
        app.state.stores = stores or open_stores(settings)
        registry = app.state.stores.registry
        app.state.reply_log = ReplyLog(registry.dsn, registry.schema, settings.reply_retention_days)
        app.state.conversations = ConversationStore(registry.dsn, registry.schema, settings.reply_retention_days)
        app.state.token_table = TokenTable(registry.dsn, registry.schema)
        app.state.tokens.attach(app.state.token_table)
        app.state.build_log = BuildLog(registry.dsn, registry.schema)
        app.state.builds.attach(app.state.build_log)
        if settings.rate_limit_store == "redis":
            url, prefix = app.state.stores.cache.url, f"{settings.cache_prefix}:rate"
            app.state.rate_limiter.share(RedisTokenBuckets(url, f"{prefix}:token"))
            app.state.address_limiter.share(RedisTokenBuckets(url, f"{prefix}:address"))
        app.state.service = QueryService(settings, app.state.stores)
        app.state.query_threads = query.query_threads()  # threads start on first use
        _refuse_mismatched_index(app.state.service)
        app.state.service.warm()
        # The models, graph and libraries loaded at start-up are ~200k objects that live as long as the
        # process; a full collection scanning them stalls every request for ~100 ms. Frozen, they are
        # left out of collections (freed by reference counting as usual), so a collection stays short.
        gc.collect()
        gc.freeze()
        try:
            async with serve_mcp():  # the MCP endpoint's session manager
                yield
        finally:
            gc.unfreeze()  # another app may start in this process (tests): its garbage is collectable
            app.state.query_threads.shutdown(wait=False)
            app.state.reply_log.close()  # writes what is queued
            app.state.conversations.close()
            app.state.token_table.close()
            app.state.build_log.close()
            _close_active_index(app.state.service)
            if app.state.tracer is not None:
                app.state.tracer.shutdown()
            if own:
                app.state.stores.close()

    app = FastAPI(
        title="ragline",
        version="0.1.0",
        description="Answers questions about a body of documentation with cited, validated sentences.",
        lifespan=lifespan,
        # Requests are traced by pipelines/adapters/tracing.py on a provider of its own; FastAPI's native telemetry
        # only reads the process-global OpenTelemetry providers, which ragline never sets, yet asks them
        # on every request whether it should run (~2% of an exact-cache hit).
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    app.state.settings = settings
    app.state.tokens = TokenStore.for_settings(settings)
    app.state.rate_limiter = RateLimiter(settings.rate_limit_per_second, settings.rate_limit_burst)
    app.state.address_limiter = RateLimiter(
        settings.rate_limit_per_address_per_second, settings.rate_limit_address_burst
    )
    app.state.stream_slots = StreamSlots(settings.max_streams, settings.max_streams_per_token)
    app.state.metrics = Metrics()
    app.state.transcriber = Transcriber(settings.whisper_model, settings.data_dir)
    app.state.tracer = RequestTracer.from_settings(settings)
    if settings.dagster_url:
        app.state.builds = BuildTracker(dagster_graphql_launcher(settings), "dagster-webserver")
    else:
        app.state.builds = BuildTracker(build_launcher, "in-process")
    voice_limit, body_limit = settings.max_audio_bytes, settings.max_body_bytes
    app.add_middleware(
        BodyLimitMiddleware,
        limit_for=lambda path: (
            (voice_limit, MULTIPART_SLACK, "audio_too_large")
            if path.startswith("/v1/voice/")
            else (body_limit, 0, "body_too_large")
        ),
    )
    app.add_middleware(MetricsMiddleware, metrics=app.state.metrics)
    install_error_handlers(app)
    app.include_router(health.router)
    app.include_router(query.router)
    app.include_router(stream.router)
    app.include_router(voice.router)
    app.include_router(passages.router)
    app.include_router(search.router)
    app.include_router(feedback.router)
    openai_compat.install(app)
    serve_mcp = mcp_server.install(app)
    app.include_router(pages.router)
    app.mount("/static", pages.static_files(), name="static")
    app.include_router(admin.router)
    app.include_router(tokens.router)
    return app


def _refuse_mismatched_index(service: QueryService) -> None:
    """Refuse to start on an index embedded with another model: every answer from it would be wrong.
    No active index, or an unreachable store, still starts (readiness reports it)."""
    try:
        service.check_ready()
    except QueryFailed as exc:
        if exc.code == "index_fingerprint_mismatch":
            raise RuntimeError(f"refusing to start: {exc.message}") from exc


def _close_active_index(service: QueryService) -> None:
    """Release the open shard: an embedded (Qdrant Edge) shard admits one open handle per process, so a
    second app in the same process (tests, a restart in place) could not open it otherwise."""
    try:
        _, index = service.indexes.current()
    except Exception:  # nothing open (no index active, registry gone): nothing to release
        return
    index.close()
