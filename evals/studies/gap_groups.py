"""How well `gaps_similarity` tells two wordings of one question from two different questions: the cosine of the
query embeddings of hand-written pairs (evals/data/gap_pairs.jsonl: 15 pairs asking the same thing in other
words, 15 pairs on the same subject asking different things), and at each threshold the share of same-question
pairs it would group (reach) and of different-question pairs it would keep apart.

    python -m evals.studies.gap_groups evals/data/gap_pairs.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from pipelines.adapters.embedders import load_embedder
from pipelines.settings import Settings

THRESHOLDS = (0.70, 0.75, 0.80, 0.85, 0.90)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("pairs", type=Path)
    args = parser.parse_args(argv)
    embedder = load_embedder(Settings().embedding_model)
    pairs = [json.loads(line) for line in args.pairs.read_text(encoding="utf-8").splitlines() if line.strip()]

    def unit(text: str) -> np.ndarray:
        vector = np.asarray(embedder.embed_query(text), dtype=np.float64)
        return vector / np.linalg.norm(vector)

    scored = [(float(unit(p["a"]) @ unit(p["b"])), bool(p["same"])) for p in pairs]
    same = [s for s, is_same in scored if is_same]
    different = [s for s, is_same in scored if not is_same]
    rows = [
        {
            "threshold": t,
            "same_grouped": f"{sum(s >= t for s in same)}/{len(same)}",
            "different_apart": f"{sum(s < t for s in different)}/{len(different)}",
        }
        for t in THRESHOLDS
    ]
    report = {
        "embedding_model": Settings().embedding_model,
        "same_cosine": sorted(round(s, 3) for s in same),
        "different_cosine": sorted(round(s, 3) for s in different),
        "thresholds": rows,
    }
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
