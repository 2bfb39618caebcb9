"""docs/ is ragline's default corpus: every setting is documented, and real questions get cited answers."""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator

import psycopg
import pytest

from pipelines.adapters.embedded_services import EmbeddedServices
from pipelines.golden_sets import load_golden, normalise
from pipelines.ingestion.build import BuildRequest
from pipelines.ingestion.chunkers import slugify
from pipelines.profiles import open_stores
from pipelines.settings import PROJECT_ROOT, Settings
from query_graph.service import QueryService

DOCS = PROJECT_ROOT / "docs"


def table_variables(text: str) -> set[str]:
    """The first cell of every table row that names a variable: `| RAGLINE_X | default | meaning |`."""
    return set(re.findall(r"^\|\s*`?(RAGLINE_[A-Z0-9_]+)`?\s*\|", text, re.M))


def test_every_setting_has_a_row_in_configuration_md() -> None:
    documented = table_variables((DOCS / "configuration.md").read_text(encoding="utf-8"))
    expected = {f"RAGLINE_{name.upper()}" for name in Settings.model_fields}
    missing = sorted(expected - documented)
    assert not missing, f"add a row `| VAR | default | meaning |` to docs/configuration.md for: {missing}"
    unknown = sorted(documented - expected)
    assert not unknown, f"docs/configuration.md documents settings that do not exist: {unknown}"


@pytest.fixture(scope="module")
def docs_service(tmp_path_factory: pytest.TempPathFactory, embedded: EmbeddedServices) -> Iterator[QueryService]:
    """One index of the real docs/ per test session, built through the Dagster assets like `make run` does."""
    from assets.build import build_index

    postgres = os.environ.get("RAGLINE_TEST_POSTGRES_DSN") or embedded.postgres_dsn()
    schema = f"t_docs_{uuid.uuid4().hex[:12]}"
    settings = Settings(
        profile="services",
        home=tmp_path_factory.mktemp("docs-home"),
        source=DOCS,
        postgres_dsn=postgres,
        redis_url=os.environ.get("RAGLINE_TEST_REDIS_URL") or embedded.redis_url(),
        postgres_schema=schema,
        cache_prefix=f"test-docs-{uuid.uuid4().hex[:8]}",
        token="test-token",
    )
    stores = open_stores(settings)
    service = None
    try:
        build_index(settings, stores, BuildRequest.from_settings(settings))
        service = QueryService(settings, stores)
        yield service
    finally:
        if service is not None:
            service.active()[1].close()  # release the shard: Qdrant Edge allows one open handle per process
        stores.cache.flush_prefix(settings.cache_prefix)
        stores.close()
        with psycopg.connect(postgres, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


# Questions a user or an operator asks, and the page(s) of which at least one must be cited.
QUESTIONS = [
    ("How do I roll back to the previous index version?", "operations.md cli.md"),
    ("Which port does the server listen on?", "quickstart.md cli.md configuration.md"),
    ("Where is the access token kept?", "quickstart.md api.md configuration.md"),
    ("What does a 503 retrieval_unavailable error mean?", "operations.md"),
    ("How is the default embedding model verified?", "architecture.md"),
    ("How does the cache namespace work?", "architecture.md"),
    ("How do I open the Dagster UI?", "operations.md"),
    ("How do I use the services profile with real PostgreSQL and Redis?", "operations.md"),
    ("How do I stream the answer?", "api.md"),
    ("How do I issue an access token for a CI job?", "operations.md api.md cli.md"),
    ("What does the status refused mean?", "operations.md api.md architecture.md"),
    ("How do I index documentation that has translations?", "operations.md architecture.md configuration.md"),
    ("Why does a chunk get several dense vectors?", "architecture.md configuration.md"),
    pytest.param(
        "How are the dense and BM25 results combined?",
        "architecture.md configuration.md",
        # A known miss of the default sentence ranker since 2026-12-06 (decisions/sentence-selection.md): the passage
        # retrieval puts first is the BM25 feedback decision, and its score now outweighs the fusion sentence's.
        marks=pytest.mark.xfail(strict=True, reason="cross_encoder_vectors_rank quotes the BM25 feedback decision"),
    ),
    ("What does BM25 feedback add to the query?", "architecture.md configuration.md"),
    (
        "How does ragline retrieve a second page for a question that asks two things?",
        "architecture.md configuration.md decisions/bridge-hop.md",
    ),
    ("How does the extractive answer treat a question that asks two things?", "architecture.md"),
    (
        "How can the extractive answer pick the sentence that answers rather than one repeating my words?",
        "architecture.md configuration.md decisions/sentence-selection.md",
    ),
    (
        "Does the extractive answer match Chinese questions and stemmed words?",
        "architecture.md configuration.md roadmap.md",
    ),
    ("How do I start the server?", "quickstart.md"),
    ("Does the extractive answer quote table rows and code examples?", "architecture.md roadmap.md"),
    pytest.param(
        "Does the extractive answer bring the list that a sentence announces?",
        "architecture.md roadmap.md",
        # A known miss of the default sentence ranker since 2026-12-05 (decisions/sentence-selection.md): it quotes
        # that decision page's paragraph about antecedents, not architecture.md's sentence about colons.
        marks=pytest.mark.xfail(strict=True, reason="cross_encoder_vectors quotes the antecedent paragraph"),
    ),
    ("How do I revoke an access token?", "operations.md api.md cli.md"),
    ("How do I serve the packaged local language model?", "operations.md configuration.md language-models.md"),
    ("What happens to a sentence that cites the wrong passage?", "architecture.md api.md configuration.md"),
    ("How do I use a hosted model like OpenAI instead of the extractive generator?", "language-models.md"),
    ("Which languages does ragline answer in?", "index.md operations.md"),
    ("What happens when a language model writes no citation markers?", "language-models.md architecture.md"),
    ("What happens to queries while a new index is being built?", "operations.md"),
    ("How do I turn on the cross-encoder reranker?", "configuration.md"),
    ("How do I clear the answer cache?", "operations.md api.md"),
    ("How often is the index rebuilt automatically?", "operations.md"),
    ("How do I leave some files out of the index?", "configuration.md operations.md cli.md"),
    ("How much memory does ragline need?", "operations.md"),
    ("Does ragline work without internet access?", "quickstart.md"),
    ("Can ragline index PDF files?", "configuration.md quickstart.md"),
    ("How do I run ragline in Docker?", "operations.md"),
    ("How do I rotate the root access token?", "operations.md quickstart.md"),
    ("How do I upgrade ragline?", "operations.md"),
    ("How do I call the API from Python?", "api.md"),
    ("What happens when the language model is down?", "language-models.md operations.md"),
    ("Which models are packaged with ragline?", "architecture.md"),
    ("What is evidence@5?", "operations.md benchmarks.md"),
    ("How long does an evaluation take?", "operations.md"),
    ("Can ragline index a website?", "configuration.md"),
    ("Why did ragline say it doesn't know?", "operations.md"),
    ("How do I use a different embedding model?", "configuration.md"),
    ("How do I change the chunk size?", "configuration.md"),
]


@pytest.mark.parametrize(("question", "pages"), QUESTIONS)
def test_docs_answer_real_questions(docs_service: QueryService, question: str, pages: str) -> None:
    reply = docs_service.answer(question)
    cited = [c["document_id"] for c in reply["citations"]]
    assert reply["status"] == "answered", reply["answer"]
    assert set(pages.split()) & set(cited), f"{question!r} cited {cited}: {reply['answer']}"


def test_links_between_pages_point_at_existing_headings() -> None:
    """`[text](page.md#anchor)` must name a page in docs/ (or docs/decisions/, `../page.md` from there) and a heading
    of it (anchors as the chunker makes them)."""
    pages = [*DOCS.glob("*.md"), *DOCS.glob("decisions/*.md")]
    anchors = {
        page.relative_to(DOCS).as_posix(): {
            slugify(h) for h in re.findall(r"^#{1,6}\s+(.*?)\s*$", page.read_text(encoding="utf-8"), re.M)
        }
        for page in pages
    }
    broken = []
    for page in pages:
        here = page.relative_to(DOCS).as_posix()
        text = page.read_text(encoding="utf-8")
        for target, anchor in re.findall(r"\]\(((?:\.\./|decisions/)?[\w\-]+\.md)?(?:#([\w\-]+))?\)", text):
            name = (page.parent / target).resolve().relative_to(DOCS.resolve()).as_posix() if target else here
            if name not in anchors or (anchor and anchor not in anchors[name]):
                broken.append(f"{here} -> {name}#{anchor}")
    assert not broken, f"links to missing pages or headings: {broken}"


def test_the_docs_golden_set_quotes_the_pages_it_names() -> None:
    """evals/golden/ragline_docs.jsonl measures the docs; an edit that drops an evidence phrase must update it."""
    questions = load_golden(PROJECT_ROOT / "evals" / "golden" / "ragline_docs.jsonl")
    assert len({q.id for q in questions}) == len(questions) > 0
    stale = []
    for q in questions:
        assert q.expected in {"answer", "abstain", "clarify"}, q.id
        assert bool(q.evidence) == (q.expected == "answer") and len(q.evidence) == len(q.pages), q.id
        for page, evidence in zip(q.pages, q.evidence, strict=True):
            if normalise(evidence) not in normalise((DOCS / page).read_text(encoding="utf-8")):
                stale.append(f"{q.id}: {evidence!r} not on {page}")
    assert not stale, stale
