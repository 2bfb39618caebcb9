"""Off-topic questions without calibration: is the question nearer the documentation or general knowledge?

The topic gate (pipelines/guardrails/topic_gate.py) compares a question's similarity to the corpus centroid with a
floor that `ragline calibrate` fits on golden questions, so a new user's docs, which have none, get no gate, and a
question about sourdough or car oil is answered with the closest quotes. This study reads a rule that needs no
floor: the question is off-topic when its embedding is nearer the centroid of a fixed set of general-knowledge
passages (`pipelines/guardrails/data/general_reference.txt`, written without reading any golden set) than the
centroid of the documentation's chunks. Both centroids are of passage embeddings, so they are on one scale.

For each (source, golden set) pair it chunks the source as a build does (the default strategy), embeds an even
sample of at most `--sample` chunks for the corpus centroid, embeds each question, and counts by question type and
expected reply how many the rule would call off-topic, with the margin (corpus similarity less reference
similarity) of every question, so the answer questions nearest the line are visible.

    python -m evals.studies.topic_reference --set evals/corpora/alembic/docs evals/golden/alembic.jsonl \\
        --set ../shared/corpora/fastapi-docs:en/**/*.md ../shared/golden/fastapi_en.jsonl --out topic.json
    python -m evals.studies.topic_reference --corpora evals/corpora --goldens evals/golden --out topic.json

A source written `DIR:GLOB` is read with that include pattern (as `--include`), `DIR:GLOB,GLOB` with each.
`--short evals/data/short_questions*.jsonl` reads search-box queries, each set split by its `corpus` field and
paired with `evals/corpora/<corpus>/docs`.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from evals.golden import load_golden
from pipelines.adapters.embedders import load_embedder
from pipelines.answering.coverage import assess
from pipelines.guardrails.topic_gate import REFERENCE_FILE, centroid_of, reference_passages
from pipelines.ingestion.build import BuildRequest, chunk_documents, clean_documents, fetch_documents
from pipelines.ingestion.dense_units import embedding_text
from pipelines.ports import Embedder
from pipelines.settings import Settings
from pipelines.text.analysis import analyzer


def corpus_texts(source: str, include: Sequence[str], sample: int) -> tuple[list[str], int, set[str]]:
    """An even sample of the source's chunk texts (as embedded by a build), how many chunks there are, and every
    term the build's BM25 analyzer writes for them (what the coverage rule looks words up in)."""
    settings = Settings()
    overrides = {"source": source, "include": tuple(include) if include else None}
    request = BuildRequest.from_settings(settings, **overrides)
    documents = clean_documents(fetch_documents(request), root=Path(source))
    chunks = chunk_documents(documents, request, settings.chunk_strategy)
    analyze = analyzer(request.bm25_analyzer)
    vocabulary = {term for c in chunks for term in analyze(embedding_text(c), c.language)}
    step = max(1, math.ceil(len(chunks) / sample)) if sample > 0 else 1  # 0: every chunk, as the graph's centroid
    return [embedding_text(c) for c in chunks[::step]], len(chunks), vocabulary


def study_set(
    source_arg: str, golden: Path, embedder: Embedder, reference: np.ndarray, sample: int
) -> dict[str, object]:
    source, _, include = source_arg.partition(":")
    texts, total, vocabulary = corpus_texts(source, include.split(",") if include else [], sample)
    analyze = analyzer(Settings().bm25_analyzer)

    def contains(term: str) -> bool:
        forms = analyze(term, "en")
        return (forms[0] if forms else term) in vocabulary

    corpus = centroid_of(np.asarray(embedder.embed_passages(texts)))
    questions = [q for q in load_golden(golden) if q.lang == "en"]
    rows = []
    for q in questions:
        vector = np.asarray(embedder.embed_query(q.question), dtype=np.float32)
        vector = vector / (float(np.linalg.norm(vector)) or 1.0)
        to_docs, to_reference = float(vector @ corpus), float(vector @ reference)
        rows.append(
            {
                "id": q.id,
                "type": q.type,
                "expected": q.expected,
                "to_docs": round(to_docs, 4),
                "to_reference": round(to_reference, 4),
                "margin": round(to_docs - to_reference, 4),
                "off_topic": to_reference > to_docs,
                # The default coverage rule (vocabulary on, names off) on the same question: declined already.
                "coverage_declines": not assess(q.question, "en", contains, names=False).covered,
            }
        )
    flagged = Counter((r["type"], r["expected"]) for r in rows if r["off_topic"])
    covered = Counter((r["type"], r["expected"]) for r in rows if r["coverage_declines"])
    either = Counter((r["type"], r["expected"]) for r in rows if r["coverage_declines"] or r["off_topic"])
    totals = Counter((r["type"], r["expected"]) for r in rows)
    return {
        "source": source_arg,
        "golden": str(golden),
        "chunks": total,
        "sampled": len(texts),
        "by_kind": {
            f"{t}/{e}": {"flagged": flagged[(t, e)], "coverage": covered[(t, e)], "either": either[(t, e)], "of": n}
            for (t, e), n in sorted(totals.items())
        },
        "questions": rows,
    }


def pairs_from_folders(corpora: Path, goldens: Path) -> list[tuple[str, Path]]:
    return [
        (str(corpora / golden.stem / "docs"), golden)
        for golden in sorted(goldens.glob("*.jsonl"))
        if (corpora / golden.stem / "docs").is_dir()
    ]


def pairs_from_short(paths: Sequence[Path], corpora: Path, folder: Path) -> list[tuple[str, Path]]:
    """Short-query files hold several corpora's queries (their `corpus` field): one golden file per corpus."""
    lines: dict[str, list[str]] = {}
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                lines.setdefault(json.loads(line)["corpus"], []).append(line)
    folder.mkdir(parents=True, exist_ok=True)
    pairs = []
    for corpus, own in sorted(lines.items()):
        golden = folder / f"{corpus}.jsonl"
        golden.write_text("\n".join(own) + "\n", encoding="utf-8")
        pairs.append((str(corpora / corpus / "docs"), golden))
    return pairs


def summary(sets: Sequence[dict[str, object]]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for record in sets:
        for kind, counts in record["by_kind"].items():  # type: ignore[attr-defined]
            entry = out.setdefault(kind, dict.fromkeys(counts, 0))
            for key, value in counts.items():
                entry[key] += value
    return dict(sorted(out.items()))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", nargs=2, action="append", default=[], metavar=("SOURCE", "GOLDEN"))
    parser.add_argument("--corpora", type=Path, help="a folder of corpora, each <name>/docs, paired with --goldens")
    parser.add_argument("--goldens", type=Path, help="a folder of <name>.jsonl golden sets")
    parser.add_argument("--short", type=Path, nargs="+", default=[], help="short-query files, split by their corpus")
    parser.add_argument("--reference", type=Path, default=REFERENCE_FILE)
    parser.add_argument("--sample", type=int, default=300, help="chunks embedded for a corpus centroid (0: all)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    pairs = [(s, Path(g)) for s, g in args.set]
    if args.corpora and args.goldens:
        pairs += pairs_from_folders(args.corpora, args.goldens)
    if args.short:
        corpora = args.corpora or Path(__file__).resolve().parents[1] / "corpora"
        pairs += pairs_from_short(args.short, corpora, args.out.with_suffix(".short_sets"))
    if not pairs:
        parser.error("give --set SOURCE GOLDEN or --corpora and --goldens")
    embedder = load_embedder(Settings().embedding_model)
    reference = centroid_of(np.asarray(embedder.embed_passages(reference_passages(args.reference))))
    sets = []
    for number, (source, golden) in enumerate(pairs, start=1):
        record = study_set(source, golden, embedder, reference, args.sample)
        sets.append(record)
        print(f"[{number}/{len(pairs)}] {golden.stem}: {json.dumps(record['by_kind'])}", file=sys.stderr, flush=True)
        args.out.write_text(json.dumps({"sets": sets, "summary": summary(sets)}, indent=1), encoding="utf-8")
    print(json.dumps(summary(sets), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
