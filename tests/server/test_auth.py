"""Scopes, 401 vs 403, the per-token rate limit, and the one error shape for bad input."""

from __future__ import annotations

import json

from fastapi.testclient import TestClient

from server.tokens import TokensFileError, TokenStore, issue_token, read_tokens_file, revoke_token, token_digest
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


def test_tokens_file_holds_digests_only(server_env: ServerEnv) -> None:
    text = (server_env.settings.data_dir / "tokens.json").read_text()
    assert server_env.query_token not in text and token_digest(server_env.query_token) in text
    entries = {e["name"]: e["scopes"] for e in json.loads(text)["tokens"]}
    assert entries == {"reader": ["query"], "operator": ["admin"]}
    store = TokenStore(read_tokens_file(server_env.settings.data_dir / "tokens.json"))
    principal = store.identify(server_env.admin_token)
    assert principal is not None and principal.scopes == {"admin"}


def test_a_broken_tokens_file_is_a_clear_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "tokens.json"
    path.write_text(json.dumps({"tokens": [{"name": "x", "sha256": "abc", "scopes": ["query"]}]}))
    try:
        read_tokens_file(path)
    except TokensFileError as exc:
        assert "sha256 hex digest" in str(exc)
    else:
        raise AssertionError("a short digest must be refused")


def test_a_token_added_or_revoked_takes_effect_without_a_restart(client: TestClient, server_env: ServerEnv) -> None:
    token = issue_token(server_env.settings, "rotating", ["admin"])
    assert client.get("/v1/index/versions", headers=server_env.headers(token)).status_code == 200
    assert revoke_token(server_env.settings, "rotating") == 1
    assert client.get("/v1/index/versions", headers=server_env.headers(token)).status_code == 401
    # The other tokens of the file still work.
    assert client.get("/v1/index/versions", headers=server_env.headers(server_env.admin_token)).status_code == 200


def test_a_tokens_file_broken_while_serving_fails_closed(client: TestClient, server_env: ServerEnv) -> None:
    path = server_env.settings.data_dir / "tokens.json"
    good = path.read_text()
    operator, root = server_env.headers(server_env.admin_token), ROOT
    try:
        path.write_text('{"tokens": [')  # an editor's half-saved file
        assert client.get("/v1/index/versions", headers=operator).status_code == 401
        assert client.get("/v1/index/versions", headers=root).status_code == 200  # the root token still works
    finally:
        path.write_text(good)
    assert client.get("/v1/index/versions", headers=operator).status_code == 200


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


def test_token_add_command_prints_once_and_stores_the_digest(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import os
    import subprocess
    import sys

    env = {**os.environ, "RAGLINE_HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "ragline", "token", "add", "ops", "--scope", "admin"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    token = done.stdout.strip().splitlines()[-1]
    principal = TokenStore(read_tokens_file(tmp_path / "tokens.json")).identify(token)
    assert principal is not None and principal.name == "ops" and principal.scopes == {"admin"}
    assert token not in (tmp_path / "tokens.json").read_text()

    def ragline(*words: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "ragline", *words], env=env, capture_output=True, text=True)

    again = ragline("token", "add", "ops")
    assert again.returncode == 1 and "a token named 'ops' exists" in again.stderr
    listed = json.loads(ragline("token", "list", "--json").stdout)
    assert listed == {"tokens": [{"name": "ops", "scopes": ["admin"], "sha256_prefix": token_digest(token)[:12]}]}
    assert ragline("token", "revoke", "ops").returncode == 0
    assert read_tokens_file(tmp_path / "tokens.json") == []
    missing = ragline("token", "revoke", "ops")
    assert missing.returncode == 1 and "no token named 'ops'" in missing.stderr
