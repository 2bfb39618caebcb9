"""Retrieval lanes on XQuAD: a held-out check of the `language_route` variants (not used to design them).

XQuAD holds the same 240 paragraphs (48 Wikipedia articles) and their questions in several languages.
This writes them as a translated documentation site in the data dir (`evals/xquad-site/`): one page per article and
language, `<lang>/<article>.md`, one section per paragraph with the same anchor in every language
(`{ #p-<n> }`), the layout pipelines/retrieval/translations.py links by. The project keeps none of the text.

For every question in a non-source language (the first question of each paragraph), with hybrid
retrieval under each route, it reports:
- `own@5`: a top-5 chunk in the question's language holds the answer (the usual evidence@5);
- `original@5`: a top-5 chunk in the source language holds that paragraph (its anchor) and the answer
  in the source language, i.e. the original a translated answer came from.

    RAGLINE_HOME=/work/evalhome3 ragline eval lanes --xquad ../shared/corpora/xquad \\
        --languages es,de,zh --out xquad_lanes.json
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import structlog

from evals.golden import normalise
from evals.stats import mean
from evals.studies.search_modes import SearchSetup, run_mode
from pipelines.adapters.registry import IndexVersion
from pipelines.ports import Embedder, VectorIndex
from pipelines.retrieval.translations import anchors
from pipelines.settings import Settings

log = structlog.get_logger(__name__)


def _slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def write_site(xquad: Path, languages: list[str], root: Path) -> dict[str, list[dict[str, Any]]]:
    """The site's pages under `root`; returns each language's questions with their paragraph's place."""
    questions: dict[str, list[dict[str, Any]]] = {}
    for language in languages:
        data = json.loads((xquad / f"xquad.{language}.json").read_text(encoding="utf-8"))["data"]
        english = json.loads((xquad / "xquad.en.json").read_text(encoding="utf-8"))["data"]
        rows = []
        for article, source_article in zip(data, english, strict=True):
            slug = _slug(source_article["title"])  # the source's title names the page in every language
            lines = [f"# {article['title']} {{ #{slug} }}", ""]
            for n, (paragraph, source) in enumerate(
                zip(article["paragraphs"], source_article["paragraphs"], strict=True)
            ):
                lines += [f"## {n + 1} {{ #p-{n + 1} }}", "", paragraph["context"], ""]
                qa, source_qa = paragraph["qas"][0], source["qas"][0]
                rows.append(
                    {
                        "question": qa["question"],
                        "answer": qa["answers"][0]["text"],
                        "source_answer": source_qa["answers"][0]["text"],
                        "page": f"{slug}.md",
                        "anchor": f"p-{n + 1}",
                        "id": qa["id"],  # the same in every language: runs pair question by question
                    }
                )
            page = root / language / f"{slug}.md"
            page.parent.mkdir(parents=True, exist_ok=True)
            page.write_text("\n".join(lines), encoding="utf-8")
        questions[language] = rows
    return questions


def evaluate_lanes(
    questions: dict[str, list[dict[str, Any]]],
    languages: Sequence[str],
    routes: Sequence[str],
    embedder: Embedder,
    index: VectorIndex,
    version: IndexVersion,
    strategy: str,
    settings: Settings,
    data_dir: Path | None = None,
) -> dict[str, Any]:
    """own@5 and original@5 per route and question language, with hybrid retrieval (module docstring). `data_dir`:
    the index's own (its embedding cache holds the sentences dense search reads); default the settings'."""
    report: dict[str, Any] = {
        "languages": list(languages),
        "fusion": settings.fusion,
        "bm25_feedback": settings.bm25_feedback,
        "routes": {},
    }
    vectors = {lang: [embedder.embed_query(q["question"]) for q in questions[lang]] for lang in languages}
    for route in routes:
        setup = SearchSetup.from_settings(  # as a server would search, so a default's change is measured
            settings,
            index,
            strategy,
            data_dir,
            bm25_analyzer=version.chunk_settings.get("bm25_analyzer", "plain"),
            index_languages=tuple(version.languages),
            language_route=route,
        )
        by_language = {}
        for lang in languages:
            own, original = [], []
            for q, vector in zip(questions[lang], vectors[lang], strict=True):
                chunks = run_mode("hybrid", q["question"], vector, setup, 5).chunks
                own.append(any(c.language == lang and _holds(c.generation_text, q["answer"]) for c in chunks))
                original.append(
                    any(
                        c.language == settings.source_language
                        and c.document_id == f"{settings.source_language}/{q['page']}"
                        and q["anchor"] in anchors(c)
                        and _holds(c.text, q["source_answer"])
                        for c in chunks
                    )
                )
            by_language[lang] = {
                "n": len(own),
                "own@5": round(mean([float(x) for x in own]), 4),
                "original@5": round(mean([float(x) for x in original]), 4),
                # Per question (XQuAD ids), so two runs compare with `python -m evals.tables paired-lanes`.
                "per_question": {
                    q["id"]: {"own@5": int(o), "original@5": int(g)}
                    for q, o, g in zip(questions[lang], own, original, strict=True)
                },
            }
        report["routes"][route] = by_language
        log.info("xquad_lanes_route", route=route, **{lang: by_language[lang] for lang in languages})
    return report


def _holds(text: str, answer: str) -> bool:
    return normalise(answer) in normalise(text)
