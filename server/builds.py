"""Index builds launched over the admin API, tracked by id and state.

Two launchers: through the Dagster webserver's GraphQL API when `RAGLINE_DAGSTER_URL` is set, or
in-process. server/ may not import assets/, so the in-process launcher is handed in by the
composition root (`ragline serve`); an app built without one can only use the webserver.
"""

from __future__ import annotations

import datetime as dt
import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

import structlog

from pipelines.adapters.build_log import BuildLog
from pipelines.ports import BuildCancelled
from pipelines.settings import Settings

log = structlog.get_logger(__name__)

# Runs one build to completion and returns what it produced ({"version": ..., "run_id": ..., ...}). Its second
# argument says whether a cancel was asked for: the launcher stops at its next check and raises BuildCancelled.
CancelCheck = Callable[[], bool]
BuildLauncher = Callable[["BuildRequestBody", CancelCheck], dict[str, Any]]
TERMINAL = ("succeeded", "failed", "cancelled")


@dataclass(frozen=True)
class BuildRequestBody:
    source: str | None = None
    strategy: str | None = None
    force: bool = False


@dataclass
class Build:
    id: str
    via: str
    request: BuildRequestBody
    state: str = "queued"
    created_at: str = field(default_factory=lambda: dt.datetime.now(dt.UTC).isoformat())
    finished_at: str | None = None
    result: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    cancel_requested: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "via": self.via,
            "state": self.state,
            "cancel_requested": self.cancel_requested,
            "request": {"source": self.request.source, "strategy": self.request.strategy, "force": self.request.force},
            "created_at": self.created_at,
            "finished_at": self.finished_at,
            "result": self.result,
            "error": self.error,
        }


class NoLauncher(RuntimeError):
    """Neither a Dagster webserver is configured nor an in-process launcher was supplied."""


class BuildTracker:
    """Starts builds in background threads, one at a time, and remembers their state: in PostgreSQL once the
    app attaches its `BuildLog` (every server process sees every build, and one runs at a time across them),
    in this process's memory before."""

    HEARTBEAT_SECONDS = 10.0

    def __init__(self, launcher: BuildLauncher | None, via: str) -> None:
        self.launcher, self.via = launcher, via
        self._builds: dict[str, Build] = {}
        self._lock = threading.Lock()
        self.log: BuildLog | None = None

    def attach(self, log: BuildLog) -> None:
        self.log = log

    def start(self, request: BuildRequestBody) -> tuple[Build, bool]:
        """(build, started): a build already running is returned instead of starting a second one."""
        if self.launcher is None:
            raise NoLauncher("index builds need RAGLINE_DAGSTER_URL or a server started by `ragline serve`")
        if self.log is not None:
            row, started = self.log.claim(uuid.uuid4().hex[:16], self.via, _request_dict(request))
            build = _build_of(row)
            if started:
                threading.Thread(target=self._run, args=(build,), name=f"index-build-{build.id}", daemon=True).start()
            return build, started
        with self._lock:
            running = [b for b in self._builds.values() if b.state not in TERMINAL]
            if running:
                return running[0], False
            build = Build(uuid.uuid4().hex[:16], self.via, request)
            self._builds[build.id] = build
        threading.Thread(target=self._run, args=(build,), name=f"index-build-{build.id}", daemon=True).start()
        return build, True

    def get(self, build_id: str) -> Build | None:
        if self.log is not None:
            row = self.log.get(build_id)
            return None if row is None else _build_of(row)
        return self._builds.get(build_id)

    def cancel(self, build_id: str) -> Build | None:
        """Ask for the build to stop, in whichever process runs it (None: no such build). It ends `cancelled` at
        the launcher's next check; a finished build stays as it ended."""
        if self.log is not None:
            row = self.log.request_cancel(build_id)
            return None if row is None else _build_of(row)
        build = self._builds.get(build_id)
        if build is not None and build.state not in TERMINAL:
            build.cancel_requested = True
        return build

    def _cancel_check(self, build: Build, every_seconds: float = 0.5) -> CancelCheck:
        """Whether a cancel was asked for, read from PostgreSQL at most every `every_seconds`."""
        if self.log is None:
            return lambda: build.cancel_requested
        store, asked_at, asked = self.log, 0.0, False

        def cancelled() -> bool:
            nonlocal asked_at, asked
            if not asked and time.monotonic() - asked_at >= every_seconds:
                try:
                    asked = store.cancel_requested(build.id)
                except Exception as exc:  # the registry is down: the build goes on
                    log.warning("build_cancel_unread", build=build.id, error=str(exc))
                asked_at = time.monotonic()
            return asked

        return cancelled

    def _run(self, build: Build) -> None:
        assert self.launcher is not None
        build.state = "running"
        beating = threading.Event()
        if self.log is not None:
            self.log.update(build.id, "running")
            threading.Thread(target=self._beat, args=(build.id, beating), daemon=True).start()
        try:
            build.result = self.launcher(build.request, self._cancel_check(build))
            build.state = "succeeded"
        except BuildCancelled as exc:
            build.state, build.error = "cancelled", str(exc)
            log.info("index_build_cancelled", build=build.id)
        except Exception as exc:  # any failure is the build's state, reported over the API
            build.state, build.error = "failed", f"{type(exc).__name__}: {exc}"
            log.warning("index_build_failed", build=build.id, error=build.error)
        finally:
            build.finished_at = dt.datetime.now(dt.UTC).isoformat()
            beating.set()
            if self.log is not None:
                try:
                    self.log.update(build.id, build.state, build.result, build.error)
                except Exception as exc:  # the registry is down: the heartbeat stops, the build reads abandoned
                    log.warning("build_state_unrecorded", build=build.id, error=str(exc))

    def _beat(self, build_id: str, stop: threading.Event) -> None:
        """Renew the running build's heartbeat, so other processes know it is alive."""
        assert self.log is not None
        while not stop.wait(self.HEARTBEAT_SECONDS):
            try:
                self.log.heartbeat(build_id)
            except Exception as exc:
                log.warning("build_heartbeat_failed", build=build_id, error=str(exc))


def _request_dict(request: BuildRequestBody) -> dict[str, Any]:
    return {"source": request.source, "strategy": request.strategy, "force": request.force}


def _build_of(row: dict[str, Any]) -> Build:
    """A build as the API shows it, from its `BuildLog` row."""
    finished = row.get("finished_at")
    return Build(
        id=row["id"],
        via=row["via"],
        request=BuildRequestBody(**row["request"]),
        state=row["state"],
        created_at=row["created_at"].isoformat(),
        finished_at=None if finished is None else finished.isoformat(),
        result=dict(row.get("result") or {}),
        error=row.get("error"),
        cancel_requested=bool(row.get("cancel_requested")),
    )


# Run statuses of a run no run worker has picked up yet.
NOT_LAUNCHED = ("QUEUED", "NOT_STARTED")


class RunNotLaunched(RuntimeError):
    """The webserver accepted the run but nothing launched it (a queued run with no dagster-daemon)."""


# The metadata of the `index_build` job's one output (assets/definitions.py): the build's outcome.
RUN_OUTPUT_QUERY = """
query RunOutput($runId: ID!) {
  logsForRun(runId: $runId) {
    __typename
    ... on EventConnection {
      events {
        __typename
        ... on ExecutionStepOutputEvent {
          stepKey
          metadataEntries {
            label
            ... on TextMetadataEntry { text }
            ... on BoolMetadataEntry { boolValue }
            ... on FloatMetadataEntry { floatValue }
            ... on IntMetadataEntry { intValue }
            ... on JsonMetadataEntry { jsonString }
          }
        }
        ... on ExecutionStepFailureEvent {
          stepKey
          error { message cause { message } }
        }
      }
    }
    ... on PythonError { message }
    ... on RunNotFoundError { message }
  }
}
"""
OUTCOME_STEP = "build_configured_index"


def run_outcome(events: list[dict[str, Any]]) -> dict[str, Any]:
    """{"version", "built", "build_run_id", "seconds", "summary"} from the build op's output metadata
    (empty when the run has none, e.g. a code location older than this server)."""
    outcome: dict[str, Any] = {}
    for event in events:
        if event.get("__typename") != "ExecutionStepOutputEvent" or event.get("stepKey") != OUTCOME_STEP:
            continue
        for entry in event.get("metadataEntries") or []:
            if "jsonString" in entry:
                value: Any = json.loads(entry["jsonString"])
            else:
                keys = ("text", "boolValue", "floatValue", "intValue")
                value = next((entry[k] for k in keys if k in entry), None)
            outcome[entry["label"]] = value
    return outcome


def run_failures(events: list[dict[str, Any]]) -> list[str]:
    """Each failed step's error (its cause when Dagster wrapped it): why the build failed, without opening
    Dagster."""
    reasons = []
    for event in events:
        if event.get("__typename") != "ExecutionStepFailureEvent":
            continue
        error = event.get("error") or {}
        message = ((error.get("cause") or error).get("message") or "").strip()
        reasons.append(f"{event.get('stepKey')}: {message[:500]}")
    return reasons


def dagster_graphql_launcher(
    settings: Settings,
    poll_seconds: float = 1.0,
    timeout_seconds: float = 3600,
    start_timeout_seconds: float | None = None,
) -> BuildLauncher:
    """Submit the `index_build` job to the Dagster webserver and wait for its run to finish.

    The request (source, strategy, force) is the run's `ragline` resource config; the result is the
    build's outcome as the run's build op reports it in its output metadata (version, built, seconds,
    summary, and `build_run_id`, the run that activated the version) with the webserver's `run_id`.

    A run still QUEUED or NOT_STARTED after `start_timeout_seconds` (default
    `RAGLINE_DAGSTER_START_TIMEOUT_SECONDS`) fails the build at once instead of waiting out
    `timeout_seconds`: on an instance with the QueuedRunCoordinator only a dagster-daemon launches runs.
    """
    from dagster_graphql import DagsterGraphQLClient, DagsterGraphQLClientError

    assert settings.dagster_url
    url = urlparse(settings.dagster_url)
    client = DagsterGraphQLClient(
        url.hostname or "127.0.0.1",
        port_number=url.port or (443 if url.scheme == "https" else 80),
        use_https=url.scheme == "https",
    )
    start_limit = settings.dagster_start_timeout_seconds if start_timeout_seconds is None else start_timeout_seconds

    def give_up(run_id: str, status: str) -> RunNotLaunched:
        try:  # cancel it, so a daemon started later does not run a build nobody tracks any more
            client.terminate_run(run_id)
        except DagsterGraphQLClientError as exc:
            log.warning("dagster_run_cancel_failed", run_id=run_id, error=str(exc))
        return RunNotLaunched(
            f"Dagster run {run_id} was still {status} after {start_limit:.0f} s: nothing launched it. "
            "Run a dagster-daemon next to the webserver, or give its instance (dagster.yaml) the "
            "DefaultRunCoordinator as ragline's instance files do"
        )

    def events_of(run_id: str) -> list[dict[str, Any]]:
        try:
            data = client._execute(RUN_OUTPUT_QUERY, {"runId": run_id})  # no public call reads a run's events
        except DagsterGraphQLClientError as exc:
            log.warning("dagster_run_events_unread", run_id=run_id, error=str(exc))
            return []
        logs = data["logsForRun"]
        if logs["__typename"] != "EventConnection":
            log.warning("dagster_run_events_unread", run_id=run_id, error=logs.get("message"))
            return []
        return list(logs["events"])

    def launch(request: BuildRequestBody, cancelled: CancelCheck) -> dict[str, Any]:
        fields = {"source": request.source, "strategy": request.strategy, "force": request.force}
        config = {k: v for k, v in fields.items() if v}
        run_id = client.submit_job_execution(
            "index_build",
            repository_location_name=settings.dagster_location,
            run_config={"resources": {"ragline": {"config": config}}} if config else {},
            tags={"ragline/trigger": "admin-api"},
        )
        submitted = time.monotonic()
        deadline, misses, terminating = submitted + timeout_seconds, 0, False
        while time.monotonic() < deadline:
            if not terminating and cancelled():
                try:
                    client.terminate_run(run_id)  # what the UI's Terminate does: the run worker stops the run
                    terminating = True
                except DagsterGraphQLClientError as exc:  # a STARTING run cannot be terminated yet: next poll
                    log.info("dagster_run_not_yet_terminable", run_id=run_id, error=str(exc))
            try:
                status = client.get_run_status(run_id).value
            except DagsterGraphQLClientError:
                misses += 1  # a busy webserver may fail one poll; five in a row end the wait
                if misses >= 5:
                    raise
                time.sleep(poll_seconds)
                continue
            misses = 0
            if status == "SUCCESS":
                return {**run_outcome(events_of(run_id)), "run_id": run_id, "dagster_status": status}
            if status == "CANCELED" and terminating:
                raise BuildCancelled(f"index build cancelled: Dagster run {run_id} terminated")
            if status in ("FAILURE", "CANCELED"):
                why = "; ".join(run_failures(events_of(run_id)))
                raise RuntimeError(f"Dagster run {run_id} ended {status}" + (f": {why}" if why else ""))
            if status in NOT_LAUNCHED and time.monotonic() - submitted > start_limit:
                raise give_up(run_id, status)
            time.sleep(poll_seconds)
        raise TimeoutError(f"Dagster run {run_id} still running after {timeout_seconds:.0f} s")

    return launch
