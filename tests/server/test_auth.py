"""Scopes, 401 vs 403, the per-token rate limit, and the one error shape for bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from fastapi.testclient import TestClient

from pipelines.access import PUBLIC_ONLY
from pipelines.adapters.token_table import TokenTable
from pipelines.ports import StoreUnavailable
from server.tokens import Principal, TokenStore, token_digest
from tests.server.conftest import ROOT, AppFactory, ServerEnv

QUESTION = {"question": "Which port does the harbor dashboard listen on?"}


def test_query_scope_answers_but_cannot_administer(client: TestClient, server_env: ServerEnv) -> None:
    reader = server_env.headers(server_env.query_token)
    assert client.post("/v1/query", json=QUESTION, headers=reader).status_code == 200
    denied = client.get("/v1/index/versions", headers=reader)
    assert denied.status_code == 403
    assert denied.json()["error"] == {
        "code": "forbidden",
        "message": "this token (name 'reader') lacks the 'admin' scope; it has ['query']",
    }


def test_admin_scope_administers_but_cannot_query(client: TestClient, server_env: ServerEnv) -> None:
    operator = server_env.headers(server_env.admin_token)
    assert client.get("/v1/index/versions", headers=operator).status_code == 200
    denied = client.post("/v1/query", json=QUESTION, headers=operator)
    assert denied.status_code == 403 and "'query' scope" in denied.json()["error"]["message"]


def test_unknown_token_is_401_not_403(client: TestClient) -> None:
    response = client.get("/v1/index/versions", headers={"Authorization": "Bearer not-a-token"})
    assert response.status_code == 401 and response.headers["www-authenticate"] == "Bearer"


def test_tokens_are_kept_as_digests_only(server_env: ServerEnv) -> None:
    dsn, schema = server_env.settings.postgres_dsn, server_env.settings.postgres_schema
    assert dsn is not None
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(f"SELECT * FROM {schema}.access_tokens").fetchall()
    text = repr(rows)
    assert server_env.query_token not in text and token_digest(server_env.query_token) in text
    store = TokenStore([])
    store.attach(TokenTable(dsn, schema))
    principal = store.identify(server_env.admin_token)
    assert principal is not None and principal.scopes == {"admin"} and principal.access == PUBLIC_ONLY
    assert store.identify("not-a-token") is None


def test_a_token_created_or_revoked_elsewhere_takes_effect_within_the_cache_time(
    make_client: AppFactory, server_env: ServerEnv
) -> None:
    """A token created over the admin API works at once; revoked by another process (`ragline tokens revoke`),
    it stops working within `token_cache_seconds`."""
    with make_client(token_cache_seconds=0.5) as client:
        created = client.post("/v1/admin/tokens", json={"name": "rotating", "scopes": ["admin"]}, headers=ROOT)
        assert created.status_code == 201, created.text
        token = created.json()["token"]
        assert created.json()["scopes"] == ["admin"] and token_digest(token)[:12] == created.json()["sha256_prefix"]
        assert client.get("/v1/index/versions", headers=server_env.headers(token)).status_code == 200
        listed = client.get("/v1/admin/tokens", headers=ROOT).json()["tokens"]
        assert "rotating" in {t["name"] for t in listed} and all("token" not in t for t in listed)
        assert _ragline(server_env, "tokens", "revoke", "rotating").returncode == 0
        deadline = time.monotonic() + 5
        while client.get("/v1/index/versions", headers=server_env.headers(token)).status_code == 200:
            assert time.monotonic() < deadline, "a revoked token still works after 5 s"
            time.sleep(0.1)
        assert client.get("/v1/index/versions", headers=server_env.headers(token)).status_code == 401
        assert client.get("/v1/index/versions", headers=server_env.headers(server_env.admin_token)).status_code == 200
        again = client.delete("/v1/admin/tokens/rotating", headers=ROOT)
        assert again.status_code == 404 and again.json()["error"]["code"] == "not_found"


def test_an_expired_token_is_refused(make_client: AppFactory, server_env: ServerEnv) -> None:
    with make_client(token_cache_seconds=0.0) as client:
        soon = (datetime.now(UTC) + timedelta(seconds=1.5)).isoformat()
        body = {"name": "short-lived", "scopes": ["query"], "expires_at": soon}
        token = client.post("/v1/admin/tokens", json=body, headers=ROOT).json()["token"]
        assert client.post("/v1/query", json=QUESTION, headers=server_env.headers(token)).status_code == 200
        time.sleep(1.6)
        refused = client.post("/v1/query", json=QUESTION, headers=server_env.headers(token))
        assert refused.status_code == 401 and "expired" in refused.json()["error"]["message"]


def test_a_token_with_its_own_rate_limit(make_client: AppFactory, server_env: ServerEnv) -> None:
    with make_client(rate_limit_per_second=100.0, rate_limit_burst=100) as client:
        body = {"name": "slow", "scopes": ["query"], "rate_per_second": 0.2, "burst": 1}
        token = client.post("/v1/admin/tokens", json=body, headers=ROOT).json()["token"]
        codes = [client.post("/v1/query", json=QUESTION, headers=server_env.headers(token)).status_code for _ in "ab"]
        assert codes == [200, 429]
        assert (
            client.post("/v1/query", json=QUESTION, headers=server_env.headers(server_env.query_token)).status_code
            == 200
        )


def test_bad_token_fields_are_422(client: TestClient) -> None:
    for body in (
        {"name": "x y"},
        {"name": "ok", "scopes": ["root"]},
        {"name": "ok", "groups": ["Not A Group!"]},
        {"name": "ok", "groups": ["*", "staff"]},
        {"name": "ok", "rate_per_second": 0},
    ):
        response = client.post("/v1/admin/tokens", json=body, headers=ROOT)
        assert response.status_code == 422, (body, response.text)


def test_an_unreachable_token_store_is_503_and_the_bootstrap_token_still_works(server_env: ServerEnv) -> None:
    root = Principal("root", token_digest("boot"), frozenset({"query"}))
    store = TokenStore([root], ttl=0.0, retry_seconds=1.0)
    store.attach(TokenTable("postgresql://postgres@127.0.0.1:1/none", "ragline"))
    assert store.identify("boot") == root
    try:
        store.identify(server_env.query_token)
    except StoreUnavailable:
        pass
    else:
        raise AssertionError("an unreachable token table must not read as 'no such token' nor let the token in")
    # While it stays unreachable the table is not asked again for `retry_seconds`: refused at once, not after
    # another wait for the pool; then asked again.
    asked = store.table.pool.stats().get("requests_num", 0)  # type: ignore[union-attr]
    with pytest.raises(StoreUnavailable, match="retrying shortly"):
        store.identify(server_env.query_token)
    assert store.table.pool.stats().get("requests_num", 0) == asked  # type: ignore[union-attr]
    time.sleep(1.1)  # the retry time passes
    with pytest.raises(StoreUnavailable, match="unreachable"):
        store.identify(server_env.query_token)
    assert store.table.pool.stats().get("requests_num", 0) > asked  # type: ignore[union-attr]


def test_feedback_needs_the_feedback_scope(client: TestClient, server_env: ServerEnv) -> None:
    reader = server_env.headers(server_env.query_token)  # query only
    denied = client.post("/v1/feedback", json={"reply_id": "x" * 32, "rating": "up"}, headers=reader)
    assert denied.status_code == 403 and "'feedback' scope" in denied.json()["error"]["message"]


def test_rate_limit_answers_429_with_retry_after(make_client: AppFactory, server_env: ServerEnv) -> None:
    with make_client(rate_limit_per_second=0.5, rate_limit_burst=2) as limited:
        reader = server_env.headers(server_env.query_token)
        first = limited.post("/v1/query", json=QUESTION, headers=reader)
        assert first.status_code == 200, first.text
        codes = [200] + [limited.post("/v1/query", json=QUESTION, headers=reader).status_code for _ in range(2)]
        assert codes == [200, 200, 429]
        last = limited.post("/v1/query", json=QUESTION, headers=reader)
        assert last.status_code == 429 and last.json()["error"]["code"] == "rate_limited"
        assert 1 <= int(last.headers["retry-after"]) <= 2
        # Buckets are per token: the root token still has its burst.
        assert limited.post("/v1/query", json=QUESTION, headers=ROOT).status_code == 200


def test_bad_input_errors_share_one_shape(client: TestClient, server_env: ServerEnv) -> None:
    limit = server_env.settings.max_question_chars
    too_long = client.post("/v1/query", json={"question": "x" * (limit + 1)}, headers=ROOT)
    assert too_long.status_code == 413
    assert too_long.json()["error"] == {
        "code": "question_too_long",
        "message": f"question exceeds the limit of {limit} characters",
    }
    malformed = client.post("/v1/query", content=b'{"question": ', headers={**ROOT, "Content-Type": "application/json"})
    assert malformed.status_code == 422 and set(malformed.json()) == {"error"}
    wrong_type = client.post("/v1/query", json={"question": "x", "top_k": "many"}, headers=ROOT)
    assert wrong_type.status_code == 422 and "top_k" in wrong_type.json()["error"]["message"]


def test_unknown_variant_is_400_listing_the_valid_ones(client: TestClient) -> None:
    response = client.post("/v1/query", json={**QUESTION, "variants": {"rerank": "no-such-variant"}}, headers=ROOT)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "unknown_variant"
    options = client.app.state.service.variant_options() if hasattr(client.app.state.service, "variant_options") else {}
    if options:  # the graph offers variants: the message names the bad one and lists the valid ones
        assert "no-such-variant" in error["message"] and all(name in error["message"] for name in options["rerank"])
    else:
        assert "takes no per-request variant overrides" in error["message"]


def _ragline(server_env: ServerEnv, *words: str) -> subprocess.CompletedProcess[str]:
    settings = server_env.settings
    env = {
        **os.environ,
        "RAGLINE_HOME": str(settings.home),
        "RAGLINE_PROFILE": "services",
        "RAGLINE_POSTGRES_DSN": str(settings.postgres_dsn),
        "RAGLINE_REDIS_URL": str(settings.redis_url),
        "RAGLINE_POSTGRES_SCHEMA": settings.postgres_schema,
    }
    return subprocess.run([sys.executable, "-m", "ragline", *words], env=env, capture_output=True, text=True)


def test_tokens_command_creates_lists_and_revokes(server_env: ServerEnv) -> None:
    made = _ragline(server_env, "tokens", "create", "ops", "--scope", "query", "--groups", "staff,eng", "--rate", "3")
    assert made.returncode == 0, made.stderr
    token = made.stdout.strip().splitlines()[-1]
    store = TokenStore([])
    assert server_env.settings.postgres_dsn is not None
    store.attach(TokenTable(server_env.settings.postgres_dsn, server_env.settings.postgres_schema))
    principal = store.identify(token)
    assert principal is not None and principal.name == "ops" and principal.scopes == {"query"}
    assert principal.access.groups == {"public", "staff", "eng"} and principal.rate_per_second == 3.0
    again = _ragline(server_env, "tokens", "create", "ops")
    assert again.returncode == 1 and "a token named 'ops' exists" in again.stderr
    listed = {t["name"]: t for t in json.loads(_ragline(server_env, "tokens", "list", "--json").stdout)["tokens"]}
    assert listed["ops"]["groups"] == ["eng", "staff"] and listed["ops"]["sha256_prefix"] == token_digest(token)[:12]
    assert _ragline(server_env, "tokens", "revoke", "ops").returncode == 0
    assert "ops" not in {
        t["name"] for t in json.loads(_ragline(server_env, "tokens", "list", "--json").stdout)["tokens"]
    }
    missing = _ragline(server_env, "tokens", "revoke", "ops")
    assert missing.returncode == 1 and "no live token named 'ops'" in missing.stderr
