"""The calibration file: thresholds fitted by `ragline calibrate`, with the data and date they came from.

Similarities are a property of the embedding model, so a calibration applies only to indexes built
with the fingerprint it was fitted on; for any other the topic gate and the semantic cache stay off
(and say so in the logs) until `ragline calibrate` runs again. Explicit settings
(`RAGLINE_TOPIC_FLOOR`, `RAGLINE_SEMANTIC_CACHE_THRESHOLD`) override the file.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from pipelines.ingestion import dense_units
from pipelines.settings import Settings

log = structlog.get_logger(__name__)

FILE_NAME = "calibration.json"


# Settings a calibration file may fill in, and where each value sits in the file.
CALIBRATED_FIELDS: dict[str, tuple[str, str]] = {
    "topic_floor": ("topic_gate", "floor"),
    "semantic_cache_threshold": ("semantic_cache", "threshold"),
    "crag_lower": ("crag", "lower"),
    "crag_upper": ("crag", "upper"),
    "crag_rerank_lower": ("crag", "rerank_lower"),
    "crag_rerank_upper": ("crag", "rerank_upper"),
}


@dataclass(frozen=True)
class Applied:
    settings: Settings
    values: dict[str, float]  # the fields the file filled in
    version: str  # digest of the thresholds in force; part of the answer-cache namespace
    dense_units: str | None = None  # the units setting of the index it was fitted on, when applied


def calibration_path(settings: Settings) -> Path:
    return settings.calibration_file or settings.data_dir / FILE_NAME


def read_calibration(path: Path) -> dict[str, Any] | None:
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        log.warning("calibration_unreadable", path=str(path), error=str(exc))
        return None
    return data if isinstance(data, dict) else None


def write_calibration(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(path)


def apply_calibration(settings: Settings, fingerprint: str) -> Applied:
    """Settings with the calibrated values filled in, for fields the environment did not set."""
    path = calibration_path(settings)
    calibration = read_calibration(path)
    values: dict[str, float] = {}
    if calibration is not None and calibration.get("embedding_fingerprint") != fingerprint:
        log.warning(
            "calibration_for_another_model",
            path=str(path),
            calibrated=calibration.get("embedding_fingerprint"),
            configured=fingerprint,
            hint="run `ragline calibrate` for this model; topic gate and semantic cache stay off until then",
        )
    elif calibration is not None:
        for field, (section, key) in CALIBRATED_FIELDS.items():
            value = (calibration.get(section) or {}).get(key)
            if value is not None and field not in settings.model_fields_set:
                values[field] = float(value)
    applied = settings.model_copy(update=values) if values else settings
    in_force = {f: getattr(applied, f) for f in CALIBRATED_FIELDS}
    blob = json.dumps([in_force, (calibration or {}).get("created_at")], sort_keys=True, default=str)
    units = None
    if calibration is not None and values:  # files from before the scope record only the token count
        units = calibration.get("dense_units") or dense_units.describe(int(calibration.get("dense_unit_tokens", 0)))
    return Applied(applied, values, hashlib.sha256(blob.encode()).hexdigest()[:12], units)


def warn_if_units_differ(applied: Applied, version: str, built_units: str) -> bool:
    """Warn when the calibration in force was fitted on an index whose dense search had another units
    setting (pipelines/ingestion/dense_units.py) than the index now served: a chunk's MaxSim over its unit vectors
    is at least its own cosine, so the CRAG dense bands sit on another scale there. The file still
    applies (same model: the topic gate and the semantic cache compare questions, not chunks); the
    operator is told to run `ragline calibrate` again. Returns whether it warned."""
    if applied.dense_units is None or applied.dense_units == built_units:
        return False
    log.warning(
        "calibration_for_other_dense_units",
        version=version,
        calibrated_dense_units=applied.dense_units,
        index_dense_units=built_units,
        hint="CRAG dense bands were fitted on another scale; run `ragline calibrate` for this index",
    )
    return True
