"""How much of `facts present` any answer quoted from the documents could reach: the ceiling of a metric.

`facts present` (`ragline eval answers`) is the share of a question's golden facts found, normalised, inside the
answer. Golden facts are often written in the set author's words ("declare X before Y") rather than the page's,
so an answer made only of sentences copied from the question's own pages can state such a fact and still not
contain it. This study reads each `answer` question's pages from the corpus and counts the facts that occur
there as written: the most an extractive answer can score, whatever it selects. A generator that writes its own
sentences is not bound by it; the judge's `facts_correct` (evals/judge.py) is the measure that is not.

    python -m evals.studies.fact_ceiling --source ../shared/corpora/fastapi-docs \\
        --golden ../shared/golden/fastapi_en.jsonl
    python -m evals.studies.fact_ceiling --source evals/corpora/alembic/docs --golden evals/golden/alembic.jsonl

Reports the ceiling over all `answer` questions and per half of the held-out split (`half_of`).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from evals.golden import HALVES, GoldenQuestion, half_of, load_golden, normalise
from evals.stats import mean
from pipelines.ingestion.cleaners import clean_document
from pipelines.ingestion.loaders import text_document


def page_text(source: Path, page: str) -> str:
    """A page's text as the facts are matched against it, normalised: as written and as ragline reads it
    (cleaned: HTML and reStructuredText markup out, pipelines/ingestion/cleaners.py), "" when it is not in the
    source."""
    path = (source / page).resolve()
    if not path.is_relative_to(source.resolve()) or not path.is_file():
        return ""
    document = text_document(page, path.as_uri(), path.read_bytes(), "")
    return normalise(document.text) + "\n" + normalise(clean_document(document, source).text)


def facts_on_pages(question: GoldenQuestion, source: Path) -> float | None:
    """The share of the question's facts written, normalised, on one of its pages; None without facts."""
    if question.expected != "answer" or not question.facts:
        return None
    texts = [page_text(source, page) for page in question.pages]
    return mean([float(any(normalise(fact) in text for text in texts)) for fact in question.facts])


def ceiling(questions: Sequence[GoldenQuestion], source: Path) -> dict[str, object]:
    shares = {q.id: facts_on_pages(q, source) for q in questions}
    scored = {qid: s for qid, s in shares.items() if s is not None}

    def summary(ids: Sequence[str]) -> dict[str, object]:
        values = [scored[i] for i in ids]
        return {"n": len(values), "ceiling": round(mean(values), 4) if values else None}

    return {
        "all": summary(list(scored)),
        **{half: summary([i for i in scored if half_of(i) == half]) for half in HALVES},
        "below_one": sorted(i for i, s in scored.items() if s < 1.0),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, required=True, help="the corpus root the golden pages are under")
    parser.add_argument("--golden", type=Path, required=True)
    args = parser.parse_args(argv)
    print(json.dumps(ceiling(load_golden(args.golden), args.source), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
