"""Chunk counts, tokens and chunking CPU time of every strategy on one source, and the no-text-lost check.

Usage: .venv/bin/python scripts/chunk_figures.py SOURCE [INCLUDE ...]
e.g.   .venv/bin/python scripts/chunk_figures.py ../shared/corpora/fastapi-docs 'en/**'
No embedding: this measures the chunkers alone (see docs/operations.md, "Index build figures").
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from pipelines.ingestion import build, index_checks
from pipelines.ingestion.build import BuildRequest
from pipelines.ingestion.chunkers import STRATEGIES
from pipelines.settings import Settings


def main(source: str, include: list[str]) -> dict[str, object]:
    request = BuildRequest.from_settings(
        Settings(), source=source, include=include or None, strategies=list(STRATEGIES)
    )
    started = time.process_time()
    clean = build.clean_documents(build.fetch_documents(request), root=Path(request.source))
    out: dict[str, object] = {"documents": len(clean), "clean_cpu_s": round(time.process_time() - started, 2)}
    for strategy in STRATEGIES:
        started = time.process_time()
        chunks = build.chunk_documents(clean, request, strategy)
        cpu = time.process_time() - started
        started = time.process_time()
        lost = index_checks.lost_text(clean, chunks)
        tokens = sum(c.token_count for c in chunks)
        out[strategy] = {
            "chunks": len(chunks),
            "tokens": tokens,
            "mean_tokens": round(tokens / max(1, len(chunks)), 1),
            "max_tokens": max((c.token_count for c in chunks), default=0),
            "chunk_cpu_s": round(cpu, 2),
            "lost_text_check_cpu_s": round(time.process_time() - started, 2),
            "lost": lost["lost"],
        }
    return out


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    print(json.dumps(main(sys.argv[1], sys.argv[2:]), indent=1))
