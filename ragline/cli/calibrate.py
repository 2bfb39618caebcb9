"""`ragline calibrate --source DIR --golden FILE...`: fit the topic-gate floor, the semantic-cache
threshold and the CRAG bands on golden questions, write them to the calibration file, print the
trade-off (answered vs abstained) at the chosen points."""

from __future__ import annotations

import argparse
import sys
import uuid
from pathlib import Path
from typing import Any

from ragline.cli.common import print_json, settings_from, source_options


def cmd_calibrate(args: argparse.Namespace) -> int:
    from assets.build import BuildFailed
    from evals.calibration import (
        OFF_TOPIC_FILE,
        calibrate,
        calibration_questions,
        format_tradeoff,
        outcomes,
        service_grader,
    )
    from pipelines.ingestion.loaders import SourceError
    from pipelines.profiles import open_stores
    from query_graph.service import QueryFailed, QueryService
    from ragline.cli.serve import ensure_index

    golden = [Path(p) for p in args.golden]
    missing = [str(p) for p in golden if not p.is_file()]
    if missing:
        print(f"ragline: golden file not found: {', '.join(missing)}", file=sys.stderr)
        return 2
    settings = settings_from(args)
    # Measure without the thresholds being fitted: no gate, no semantic cache, answers cached briefly
    # under a prefix of their own (they never mix with served answers).
    measuring = settings.model_copy(
        update={
            "topic_floor": None,
            "semantic_cache": False,
            "cache_prefix": f"{settings.cache_prefix}:calibrate:{uuid.uuid4().hex[:8]}",
            "cache_ttl_seconds": 300,
        }
    )
    stores = open_stores(settings)
    try:
        ensure_index(settings, stores)
        service = QueryService(measuring, stores)
        grader = None if args.skip_crag else service_grader(service)
        record = calibrate(
            service,
            settings,
            golden,
            off_topic=Path(args.off_topic) if args.off_topic else OFF_TOPIC_FILE,
            grade=grader,
            output=Path(args.output) if args.output else None,
        )
        if args.check:
            service.active()[1].close()  # one open handle per shard: the checking service opens its own
            checking = QueryService(
                settings.model_copy(update={"cache_prefix": measuring.cache_prefix + ":check"}), stores
            )
            record["check"] = outcomes(checking, calibration_questions(golden, checking.active()[0].languages))
    except (BuildFailed, SourceError, QueryFailed, ValueError) as exc:
        print(f"ragline: calibration failed: {exc}", file=sys.stderr)
        return 1
    finally:
        stores.close()
    if args.json:
        print_json(record)
    else:
        print(format_tradeoff(record))
        for kind, row in record.get("check", {}).items():
            print(f"check, {kind} questions: {row}")
        print(f"written to {args.output or settings.calibration_file or settings.data_dir / 'calibration.json'}")
    return 0


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "calibrate", help="fit the topic-gate floor, semantic-cache threshold and CRAG bands on golden questions"
    )
    source_options(parser)
    parser.add_argument("--golden", action="append", required=True, help="golden JSONL file (repeatable)")
    parser.add_argument("--off-topic", help="reference off-topic questions, one a line (default: evals/data)")
    parser.add_argument(
        "--output", help="calibration file to write (default: RAGLINE_CALIBRATION_FILE or the data dir)"
    )
    parser.add_argument("--skip-crag", action="store_true", help="do not run the graph to fit the CRAG bands")
    parser.add_argument(
        "--check", action="store_true", help="then answer the golden questions with the new calibration, by kind"
    )
    parser.add_argument("--json", action="store_true", help="print the whole calibration record as JSON")
    parser.set_defaults(func=cmd_calibrate)
