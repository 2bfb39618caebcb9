"""docs/ is ragline's default corpus: every setting is documented, and real questions get cited answers."""

from __future__ import annotations

import re

from pipelines.settings import PROJECT_ROOT, Settings

DOCS = PROJECT_ROOT / "docs"


def table_variables(text: str) -> set[str]:
    """The first cell of every table row that names a variable: `| RAGLINE_X | default | meaning |`."""
    return set(re.findall(r"^\|\s*`?(RAGLINE_[A-Z0-9_]+)`?\s*\|", text, re.M))


def test_every_setting_has_a_row_in_configuration_md() -> None:
    documented = table_variables((DOCS / "configuration.md").read_text(encoding="utf-8"))
    expected = {f"RAGLINE_{name.upper()}" for name in Settings.model_fields}
    missing = sorted(expected - documented)
    assert not missing, f"add a row `| VAR | default | meaning |` to docs/configuration.md for: {missing}"
    unknown = sorted(documented - expected)
    assert not unknown, f"docs/configuration.md documents settings that do not exist: {unknown}"
