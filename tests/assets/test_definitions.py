"""The code location loads; the schedule is off by default; the sensor notices a changed local source."""

from __future__ import annotations

import os
from pathlib import Path

from dagster import DefaultScheduleStatus, DefaultSensorStatus, RunRequest, SkipReason, build_sensor_context

from assets.definitions import defs, index_build_schedule, source_change_request, source_changed_sensor
from pipelines.settings import Settings
from tests.corpus import write_corpus


def test_definitions_hold_the_graph_the_schedule_and_the_sensor() -> None:
    repository = defs.get_repository_def()
    assert {"index_build", "chunks_by_strategy"} <= {j.name for j in repository.get_all_jobs()}
    assert index_build_schedule.default_status == DefaultScheduleStatus.STOPPED  # off unless enabled
    assert source_changed_sensor.default_status == DefaultSensorStatus.STOPPED
    assert index_build_schedule.cron_schedule == Settings().build_schedule_cron


def test_sensor_requests_a_build_only_when_the_source_changes(tmp_path: Path) -> None:
    source = write_corpus(tmp_path / "docs")
    settings = Settings(source=source, home=tmp_path / "home")
    context = build_sensor_context(cursor=None)
    first = source_change_request(settings, context)
    assert isinstance(first, RunRequest) and context.cursor == first.run_key
    assert isinstance(source_change_request(settings, context), SkipReason)
    page = source / "guide" / "install.md"
    page.write_text(page.read_text() + "\nA new sentence.\n")
    os.utime(page, ns=(page.stat().st_atime_ns, page.stat().st_mtime_ns + 10**9))
    second = source_change_request(settings, context)
    assert isinstance(second, RunRequest) and second.run_key != first.run_key
    remote = Settings(source="sitemap+http://127.0.0.1:9/sitemap.xml", home=tmp_path / "home")
    assert "not a local directory" in str(source_change_request(remote, build_sensor_context()).skip_message)
