"""Blocking data checks of an index build. Each check returns a plain dict `{"passed": bool, ...}` with
what it found; the Dagster asset checks are thin shells around these, and the registry keeps the
results in its `checks` column.

Row-wise checks on chunks (ids unique, token limit, not empty, languages) run as a Great Expectations
suite over a pandas DataFrame, in an ephemeral context (nothing written to disk).
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pipelines.documents import Chunk, Document
from pipelines.golden_sets import GoldenQuestion, load_golden, normalise

CheckResult = dict[str, Any]

_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+")
_HEADING_LINE = re.compile(r"^#{1,6}\s+(.*?)\s*$")
_ANCHOR = re.compile(r"\s*\{\s*#[\w\-]+\s*\}\s*$")


def _norm(text: str) -> str:
    return " ".join(text.split())


def document_units(text: str) -> Iterable[tuple[str, bool]]:
    """(unit, is_heading) for every sentence of every line of a document, fences left out.

    Lines first (code and table rows stay whole in every strategy), then sentences within a line.
    """
    in_fence = False
    for line in text.splitlines():
        if line.strip().startswith(("```", "~~~")):  # as the chunkers see fences
            in_fence = not in_fence
            continue
        if not line.strip():
            continue
        # Inside a fence, `# limits:` is a shell or YAML comment, not a heading.
        heading = None if in_fence else _HEADING_LINE.match(line.strip())
        if heading:
            yield _norm(_ANCHOR.sub("", heading.group(1))), True
            continue
        for sentence in _SENTENCE_END.split(line):
            if sentence.strip():
                yield _norm(sentence), False


# Fence lines, the heading line each heading chunk repeats, and white space: what lies between the
# pieces of a line cut across chunks.
_FLAT = re.compile(r"(```|~~~)[^\n]*|^#{1,6} [^\n]*$|\s+", re.M)


def lost_text(documents: Sequence[Document], chunks: Sequence[Chunk]) -> CheckResult:
    """Every sentence of every clean document is in some chunk of each strategy (the indexed text).

    A heading counts as kept when it is in some chunk's heading path (every strategy carries it);
    a sentence too long for any one chunk counts as kept when each of its words is indexed, and a
    line cut across chunks (a base64 blob in a code block) when its characters run on, in order,
    through the document's chunks with fences and white space left out.
    """
    by_key: dict[tuple[str, str], list[Chunk]] = defaultdict(list)
    strategies = sorted({c.strategy for c in chunks})
    for chunk in chunks:
        by_key[(chunk.strategy, chunk.document_id)].append(chunk)
    lost: list[dict[str, str]] = []
    checked = 0
    for strategy in strategies:
        for document in documents:
            mine = by_key.get((strategy, document.document_id), [])
            haystack = "\x00".join(_norm(c.text) for c in mine)
            headings = {h for c in mine for h in c.heading_path} | {_norm(c.text) for c in mine}
            words: set[str] | None = None
            flat: str | None = None
            for unit, is_heading in document_units(document.text):
                checked += 1
                if is_heading:
                    if unit in headings or unit in haystack:
                        continue
                elif unit in haystack:
                    continue
                else:
                    words = words if words is not None else set(haystack.replace("\x00", " ").split())
                    if all(w in words for w in unit.split()):
                        continue
                    flat = flat if flat is not None else "".join(_FLAT.sub("", c.text) for c in mine)
                    unit_flat = _FLAT.sub("", unit)
                    if unit_flat and unit_flat in flat:
                        continue
                lost.append({"strategy": strategy, "document_id": document.document_id, "text": unit[:200]})
    return {"passed": not lost and bool(chunks), "units_checked": checked, "lost": len(lost), "examples": lost[:10]}


def chunk_frame(chunks: Sequence[Chunk]) -> Any:
    import pandas as pd

    return pd.DataFrame(
        {
            "chunk_id": [c.chunk_id for c in chunks],
            "strategy": [c.strategy for c in chunks],
            "language": [c.language for c in chunks],
            "token_count": [c.token_count for c in chunks],
            "text_chars": [len(c.text.strip()) for c in chunks],
        }
    )


def _expectation_results(result: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in result.results:
        config = item.expectation_config
        name = f"{config.type}:{config.kwargs.get('column', '')}"
        partial = item.result.get("partial_unexpected_list") or []
        out[name] = {
            "passed": bool(item.success),
            "unexpected": int(item.result.get("unexpected_count") or 0),
            "examples": [str(v) for v in partial[:10]],
        }
    return out


def chunk_suite_checks(chunks: Sequence[Chunk], max_tokens: int, languages: Sequence[str]) -> dict[str, CheckResult]:
    """ids unique, no chunk over the limit, none empty, languages in the configured set: one GX suite run."""
    import great_expectations as gx
    import great_expectations.expectations as gxe
    from great_expectations.data_context.types.base import ProgressBarsConfig

    if not chunks:
        return {"chunks_present": {"passed": False, "chunks": 0}}
    frame = chunk_frame(chunks)
    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)  # build logs, not a terminal
    batch = (
        context.data_sources.add_pandas("ragline")
        .add_dataframe_asset("chunks")
        .add_batch_definition_whole_dataframe("all")
        .get_batch(batch_parameters={"dataframe": frame})
    )
    suite = gx.ExpectationSuite(name="ragline_chunks")
    suite.add_expectation(gxe.ExpectColumnValuesToBeUnique(column="chunk_id"))
    suite.add_expectation(gxe.ExpectColumnValuesToBeBetween(column="token_count", min_value=1, max_value=max_tokens))
    suite.add_expectation(gxe.ExpectColumnValuesToBeBetween(column="text_chars", min_value=1))
    if languages:
        suite.add_expectation(gxe.ExpectColumnValuesToBeInSet(column="language", value_set=list(languages)))
    suite = context.suites.add(suite)
    found = _expectation_results(batch.validate(suite))
    named = {
        "chunk_ids_unique": found["expect_column_values_to_be_unique:chunk_id"],
        "chunks_within_token_limit": {
            **found["expect_column_values_to_be_between:token_count"],
            "max_tokens": max_tokens,
        },
        "chunks_not_empty": found["expect_column_values_to_be_between:text_chars"],
    }
    if languages:
        named["chunk_languages_allowed"] = {
            **found["expect_column_values_to_be_in_set:language"],
            "allowed": list(languages),
        }
    else:
        named["chunk_languages_allowed"] = {"passed": True, "allowed": "any (RAGLINE_LANGUAGES is empty)"}
    named["chunks_present"] = {"passed": True, "chunks": len(chunks)}
    return named


def document_languages(documents: Sequence[Document], languages: Sequence[str]) -> CheckResult:
    """Every clean document's language is one of the configured set (empty set: any language)."""
    outside = [f"{d.document_id}: {d.language}" for d in documents if languages and d.language not in languages]
    counts: dict[str, int] = defaultdict(int)
    for d in documents:
        counts[d.language] += 1
    return {"passed": not outside, "languages": dict(counts), "outside": outside[:20], "allowed": list(languages)}


def embedding_checks(dense: np.ndarray, chunk_count: int, dimension: int) -> dict[str, CheckResult]:
    finite = bool(np.isfinite(dense).all())
    norms = np.linalg.norm(dense, axis=1) if len(dense) else np.ones(0)
    off = int(np.sum(np.abs(norms - 1.0) >= 1e-3)) if finite else len(norms)
    width = int(dense.shape[1]) if dense.ndim == 2 else 0
    return {
        "embeddings_finite": {"passed": finite, "non_finite": int((~np.isfinite(dense)).sum())},
        "embeddings_dimension": {"passed": width == dimension, "dimension": width, "expected": dimension},
        "embeddings_normalised": {
            "passed": off == 0,
            "not_unit_length": off,
            "min_norm": float(norms.min()) if len(norms) and finite else math.nan,
        },
        "embeddings_one_per_chunk": {"passed": len(dense) == chunk_count, "vectors": len(dense), "chunks": chunk_count},
    }


def point_count(points: int, chunk_count: int) -> CheckResult:
    return {"passed": points == chunk_count, "points": points, "chunks": chunk_count}


# --- retrieval smoke check ---------------------------------------------------------------------------


def load_smoke_questions(path: Path, documents: Iterable[str]) -> list[GoldenQuestion]:
    """Answerable golden questions whose pages are all in this build (a partial source is still judged fairly)."""
    present = set(documents)
    return [q for q in load_golden(path) if q.expected == "answer" and q.evidence and set(q.pages) <= present]


def evidence_at_k(questions: Sequence[GoldenQuestion], search: Callable[[str], list[Chunk]], k: int) -> float:
    """Share of questions whose every evidence string is in the top k chunks (their generation text)."""
    if not questions:
        return math.nan
    hits = 0
    for question in questions:
        texts = [normalise(c.generation_text) for c in search(question.question)[:k]]
        if all(any(normalise(e) in t for t in texts) for e in question.evidence):
            hits += 1
    return hits / len(questions)


def retrieval_smoke(
    golden: Path | None,
    questions: Sequence[GoldenQuestion],
    shadow_search: Callable[[str], list[Chunk]],
    active_search: Callable[[str], list[Chunk]] | None,
    margin: float,
    k: int = 5,
) -> CheckResult:
    """evidence@k of the new version may not fall below the active version's by more than `margin`."""
    if golden is None:
        return {"passed": True, "skipped": "no golden file"}
    if not questions:
        return {"passed": True, "skipped": f"no answerable question of {golden} is about this source"}
    shadow = evidence_at_k(questions, shadow_search, k)
    active = evidence_at_k(questions, active_search, k) if active_search is not None else None
    passed = active is None or shadow >= active - margin
    return {
        "passed": passed,
        "golden": str(golden),
        "questions": len(questions),
        f"evidence@{k}": round(shadow, 4),
        f"active_evidence@{k}": None if active is None else round(active, 4),
        "margin": margin,
    }
