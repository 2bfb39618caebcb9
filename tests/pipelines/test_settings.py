"""The one settings class: values derived from a setting follow it into a copy."""

from __future__ import annotations

from pathlib import Path

from pipelines.settings import Settings


def test_a_copy_with_another_home_has_that_data_dir(tmp_path: Path) -> None:
    first = Settings(home=tmp_path / "first")
    assert first.data_dir == (tmp_path / "first").resolve()  # derived once, then kept
    moved = first.model_copy(update={"home": tmp_path / "second"})
    assert moved.data_dir == (tmp_path / "second").resolve() and moved.shards_dir.is_relative_to(moved.data_dir)
    assert first.data_dir == (tmp_path / "first").resolve()
