"""Admin routes: versions, in-process builds tracked by id, rollback, cache flush."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from pipelines.ports import BuildCancelled
from pipelines.settings import Settings
from server.builds import BuildRequestBody, CancelCheck
from server.routes.admin import latest_ab_pointer, latest_result
from tests.server.conftest import ROOT, AppFactory, ServerEnv, fresh_question


def wait_for_build(client: TestClient, build_id: str, headers: dict[str, str]) -> dict[str, Any]:
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        build = client.get(f"/v1/admin/index/builds/{build_id}", headers=headers).json()
        if build["state"] in ("succeeded", "failed", "cancelled"):
            return build  # type: ignore[no-any-return]
        time.sleep(0.2)
    raise AssertionError(f"build {build_id} did not finish")


def test_build_then_roll_back(make_client: AppFactory, server_env: ServerEnv, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A build of a changed source activates a new version; activate rolls back to the old one."""
    from ragline.cli.serve import in_process_launcher

    changed = tmp_path / "changed"
    changed.mkdir()
    (changed / "ops.md").write_text("# Operations\n\nThe harbor janitor runs every 6 hours and prunes old caches.\n")
    operator = server_env.headers(server_env.admin_token)
    launcher = in_process_launcher(server_env.settings, server_env.stores)
    with make_client(build_launcher=launcher, rate_limit_per_second=0.0, build_sources=[str(tmp_path)]) as client:
        started = client.post("/v1/admin/index/builds", json={"source": str(changed)}, headers=operator)
        assert started.status_code == 202 and started.json()["via"] == "in-process"
        build = wait_for_build(client, started.json()["id"], operator)
        assert build["state"] == "succeeded", build["error"]
        new_version = build["result"]["version"]
        assert client.get("/v1/index", headers=operator).json()["content_version"] == new_version

        versions = client.get("/v1/index/versions", headers=operator).json()["versions"]
        states = {v["content_version"]: v["state"] for v in versions}
        assert states[new_version] == "active" and states[server_env.version] == "retired"

        rolled = client.post(f"/v1/admin/index/{server_env.version}/activate", headers=operator)
        assert rolled.status_code == 200 and rolled.json()["state"] == "active"
        assert client.get("/v1/index", headers=operator).json()["content_version"] == server_env.version
        reply = client.post(
            "/v1/query", json={"question": fresh_question("Which port does the dashboard use?")}, headers=ROOT
        )
        assert reply.json()["index"]["content_version"] == server_env.version


def test_build_errors_and_unknown_ids(make_client: AppFactory, server_env: ServerEnv, tmp_path: Path) -> None:
    operator = server_env.headers(server_env.admin_token)

    def failing(body: BuildRequestBody, cancelled: CancelCheck) -> dict[str, Any]:
        raise FileNotFoundError(f"no such source {body.source}")

    allowed = tmp_path / "allowed"
    with make_client(build_launcher=failing, build_sources=[str(allowed)]) as client:
        started = client.post("/v1/admin/index/builds", json={"source": str(allowed / "gone")}, headers=operator).json()
        build = wait_for_build(client, started["id"], operator)
        assert build["state"] == "failed" and "no such source" in build["error"]
        # Anything the allow-list does not name is refused before a build starts: a folder outside it, a path
        # escaping it with "..", a repository or a host nobody listed.
        for source in (
            "/etc",
            str(allowed / ".." / "other"),
            "git+https://example.org/x.git",
            "sitemap+http://127.0.0.1/s.xml",
        ):
            refused = client.post("/v1/admin/index/builds", json={"source": source}, headers=operator)
            assert refused.status_code == 403 and refused.json()["error"]["code"] == "source_not_allowed", source
        missing = client.get("/v1/admin/index/builds/nope", headers=operator)
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
        unknown = client.post("/v1/admin/index/no-such-version/activate", headers=operator)
        assert unknown.status_code == 404
    with make_client() as client:  # no launcher and no Dagster webserver: a clear 503
        refused = client.post("/v1/admin/index/builds", json={}, headers=operator)
        assert refused.status_code == 503 and "RAGLINE_DAGSTER_URL" in refused.json()["error"]["message"]


def test_every_server_process_sees_every_build_and_one_runs_at_a_time(
    make_client: AppFactory, server_env: ServerEnv
) -> None:
    """Builds are kept in PostgreSQL: a build one app (one server process) started is the one another app
    reports and returns instead of starting a second; both see it finish."""
    operator = server_env.headers(server_env.admin_token)
    release = threading.Event()

    def slow(body: BuildRequestBody, cancelled: CancelCheck) -> dict[str, Any]:
        assert release.wait(60)
        return {"version": "v-test", "built": False}

    with make_client(build_launcher=slow) as first, make_client(build_launcher=slow) as second:
        started = first.post("/v1/admin/index/builds", json={}, headers=operator).json()
        assert started["started"] is True
        again = second.post("/v1/admin/index/builds", json={}, headers=operator).json()
        assert again["started"] is False and again["id"] == started["id"]
        seen = second.get(f"/v1/admin/index/builds/{started['id']}", headers=operator).json()
        assert seen["state"] in ("queued", "running") and seen["via"] == "in-process"
        release.set()
        done = wait_for_build(second, started["id"], operator)
        assert done["state"] == "succeeded" and done["result"] == {"version": "v-test", "built": False}
        assert wait_for_build(first, started["id"], operator) == done


def test_cache_flush_empties_the_answer_cache(client: TestClient, server_env: ServerEnv) -> None:
    question = {"question": fresh_question("How long does harbor keep build logs?")}
    client.post("/v1/query", json=question, headers=ROOT)
    assert client.post("/v1/query", json=question, headers=ROOT).json()["cache"] == "hit"
    flushed = client.post("/v1/admin/cache/flush", headers=server_env.headers(server_env.admin_token))
    assert flushed.status_code == 200 and flushed.json()["deleted"] >= 1
    assert client.post("/v1/query", json=question, headers=ROOT).json()["cache"] == "miss"


def test_the_console_shows_the_last_ab_run_of_its_data_dir(tmp_path: Path) -> None:
    """`ragline eval ab --out` may write anywhere: its pointer in the data dir leads the console there."""
    settings = Settings(home=tmp_path / "home")
    assert latest_ab_pointer(settings) is None
    report = tmp_path / "elsewhere" / "mine.ab.json"
    report.parent.mkdir()
    pointer = settings.ab_pointer_file
    pointer.parent.mkdir(parents=True)
    pointer.write_text(json.dumps({"kind": "ab", "json": str(report)}))
    assert latest_ab_pointer(settings) is None  # the report it names is gone
    report.write_text("{}")
    assert latest_ab_pointer(settings) == report
    pointer.write_text("{")
    assert latest_ab_pointer(settings) is None


def test_the_console_reads_only_what_ragline_eval_wrote_for_its_data_dir(tmp_path: Path) -> None:
    """A data dir no `ragline eval ab` ran for shows no results (the repository ships none); the pointer's
    report once one ran; RAGLINE_EVALS_RESULTS, when set, names the file instead."""
    settings = Settings(home=tmp_path / "home")
    assert latest_result(settings) == {"file": None, "results": None}
    report = tmp_path / "run.ab.json"
    report.write_text(json.dumps({"comparisons": [{"metric": "mrr"}]}))
    settings.ab_pointer_file.parent.mkdir(parents=True)
    settings.ab_pointer_file.write_text(json.dumps({"kind": "ab", "json": str(report)}))
    assert latest_result(settings) == {"file": str(report), "results": {"comparisons": [{"metric": "mrr"}]}}
    chosen = tmp_path / "chosen.json"
    chosen.write_text("{}")
    assert latest_result(settings.model_copy(update={"evals_results": chosen})) == {"file": str(chosen), "results": {}}


def test_a_build_is_cancelled_from_another_server_process(make_client: AppFactory, server_env: ServerEnv) -> None:
    """A cancel asked of one app (one server process) reaches the build another runs, through PostgreSQL: it ends
    `cancelled`; a finished build cannot be cancelled (409), an unknown one is 404."""
    operator = server_env.headers(server_env.admin_token)
    checks: list[bool] = []

    def until_cancelled(body: BuildRequestBody, cancelled: CancelCheck) -> dict[str, Any]:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            checks.append(cancelled())
            if checks[-1]:
                raise BuildCancelled("index build v-test cancelled")
            time.sleep(0.05)
        return {"version": "v-test", "built": True}

    with make_client(build_launcher=until_cancelled) as first, make_client(build_launcher=until_cancelled) as second:
        started = first.post("/v1/admin/index/builds", json={}, headers=operator).json()
        time.sleep(0.5)
        asked = second.post(f"/v1/admin/index/builds/{started['id']}/cancel", headers=operator)
        assert asked.status_code == 202 and asked.json()["cancel_requested"] is True
        done = wait_for_build(first, started["id"], operator)
        assert done["state"] == "cancelled" and "cancelled" in done["error"] and checks[0] is False
        again = second.post(f"/v1/admin/index/builds/{started['id']}/cancel", headers=operator)
        assert again.status_code == 409 and again.json()["error"]["code"] == "build_finished"
        missing = second.post("/v1/admin/index/builds/nope/cancel", headers=operator)
        assert missing.status_code == 404
