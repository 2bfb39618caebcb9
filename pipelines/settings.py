"""Every setting ragline reads, in one pydantic-settings class.

Each field is read from the environment variable `RAGLINE_<FIELD>` (upper case). `profile` picks a
whole wiring at once (see `docs/configuration.md`); single settings still override it.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from pathlib import Path
from typing import Any, Literal, Self

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

PROJECT_ROOT = Path(__file__).resolve().parent.parent
LOCAL_MODEL_ALIAS = "qwen2.5-coder-1.5b"  # scripts/local-llm-serve.sh serves the packaged model by this name
# What `generator=local` sets unless given: the model's name, the schema form its server reads, a deadline for 2
# cores (the default 30 s is for hosted models; a cold first question reads its prompt slowly), and what the packaged
# model does: it picks the extractive answer's first sentence (`choose`, docs/decisions/llm-answer.md), since the
# sentences it writes itself mostly fail the citation check.
LOCAL_LLM_DEFAULTS: dict[str, object] = {
    "llm_model": f"openai/{LOCAL_MODEL_ALIAS}",
    "llm_structured_output": "json_object",
    "llm_deadline_seconds": 120.0,
    "llm_answer": "choose",
}


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="RAGLINE_", extra="ignore")

    profile: Literal["embedded", "services"] = Field(
        "embedded", description="embedded: everything in-process in the data dir; services: real servers."
    )
    home: Path = Field(Path(".ragline"), description="Data dir: shards, embedded servers, token, Dagster storage.")
    source: str | Path = Field(
        str(PROJECT_ROOT / "docs"),
        description="Default source: a directory, git+<repo>#<ref>, urls+<file of URLs> or sitemap+<url>.",
    )
    build_sources: list[str] = Field(
        default_factory=list,
        description=(
            "Sources an admin build over the API may name besides `source`: directories (any folder under one), "
            "git+<repository> (any ref of it), urls+<file> and sitemap+<url> (any sitemap on that URL's host). "
            "Any other source is refused with 403 `source_not_allowed`."
        ),
    )
    include: list[str] = Field(
        default_factory=lambda: list(DEFAULT_INCLUDE),
        description="Glob patterns of documents to index (default: every format ragline reads, READ_FORMATS).",
    )
    exclude: list[str] = Field(default_factory=list, description="Glob patterns of documents to skip.")
    access_default: list[str] = Field(
        default_factory=lambda: ["public"],
        description=(
            "Access groups of a page no rule and no front matter places: `public` (every caller) unless set, "
            'e.g. `["staff"]` for a source that is internal by default (docs/permissions.md).'
        ),
    )
    access_rules: dict[str, list[str]] = Field(
        default_factory=dict,
        description=(
            "Access groups per folder or glob of the source, first match wins, e.g. "
            '`{"internal/**": ["staff"]}`; a page\'s own declaration (front matter, HTML meta, rST field) wins.'
        ),
    )

    host: str = Field("127.0.0.1", description="Address the server binds to.")
    port: int = Field(8000, description="Port the server binds to.")
    token: str | None = Field(
        None,
        description="Bootstrap admin token (every scope, every access group); generated into the data dir when unset.",
    )
    token_cache_seconds: float = Field(
        2.0,
        ge=0,
        description="How long a server process trusts what it read of a token from PostgreSQL: a token created, "
        "revoked or changed takes effect in every process within this time.",
    )

    postgres_dsn: str | None = Field(None, description="PostgreSQL DSN (services profile; embedded starts its own).")
    postgres_schema: str = Field("ragline", description="Schema that holds the index registry tables.")
    postgres_pool_min: int = Field(1, ge=0, description="Registry connections the pool keeps open (psycopg_pool).")
    postgres_pool_max: int = Field(8, ge=1, description="Most registry connections the pool opens at once.")
    postgres_pool_timeout_seconds: float = Field(
        5.0, gt=0, description="Longest a request waits for a registry connection before a 503 (store unavailable)."
    )
    redis_url: str | None = Field(None, description="Redis URL (services profile; embedded starts its own).")
    qdrant_url: str | None = Field(None, description="Qdrant server URL (services profile).")
    vector_store: Literal["qdrant", "postgres"] = Field(
        "qdrant",
        description="Where a build writes the index: `qdrant`, a Qdrant Edge shard in the data dir (one process "
        "reads it) or, with `RAGLINE_QDRANT_URL`, a collection of that server; `postgres`, tables in the registry's "
        "PostgreSQL with pgvector that every server process reads (`ragline serve --workers N`; needs the `vector` "
        "extension; no `dense_unit_tokens`).",
    )
    qdrant_replication_factor: int | None = Field(
        None, ge=1, description="Copies of each shard of a new collection on a Qdrant cluster (unset: its default)."
    )

    embedding_model: str = Field(
        "bge-small-en-v1.5-int8",
        description="Catalogue name, sentence-transformers model id, or local path of the dense embedder.",
    )
    chunk_strategy: str = Field("heading_packed", description="Chunking strategy the index is built and queried with.")
    chunk_max_tokens: int = Field(500, description="Hard limit of a chunk, in embedding-model tokens.")
    chunk_target_tokens: int = Field(450, description="Target size of a chunk, in embedding-model tokens.")
    chunk_overlap_tokens: int = Field(50, description="Tokens repeated between consecutive windows of a long section.")
    bm25_analyzer: Literal["plain", "english_stem", "snowball"] = Field(
        "snowball",
        description=(
            "BM25 analyzer of new builds: plain terms; Snowball English stems of words; or `snowball`, each "
            "chunk stemmed in its own language and CJK text as character bigrams (English text: as english_stem)."
        ),
    )
    dense_hubness: Literal["off", "csls"] = Field(
        "off",
        description="Whether dense hits are discounted by their chunk's hubness: `csls`, each score less half the "
        "chunk's mean cosine to its 10 nearest chunks (a changelog or an API index near every question ranks "
        "lower; computed once per index version from the embedding cache), `off` not. "
        "docs/decisions/hubness.md.",
    )
    dense_sentences: Literal["off", "max", "mean"] = Field(
        "mean",
        description="Whether dense search also reads each chunk's own sentences, as the build embedded them for the "
        'answer\'s ranker ("heading: sentence", the `sentence_vectors` asset): a chunk scores the mean (`mean`, the '
        "default since 2026-12-07) or the better (`max`) of its cosine and its best sentence's, over every chunk of "
        "the index held in memory; `off` the store's dense search alone. Needs the build's embedding cache "
        "(`RAGLINE_BUILD_SENTENCE_VECTORS`); without it, the store's list. docs/decisions/dense-units.md.",
    )
    dense_feedback: Literal["off", "rocchio"] = Field(
        "off",
        description="Whether dense search runs a second time with the question's vector moved toward the vectors of "
        "the first 3 fused hits (`rocchio`: the question's unit vector plus 0.5 times their mean), fused again with "
        "the same BM25 list; the candidates keep the question's own cosines. Needs the sentence table of "
        "`RAGLINE_DENSE_SENTENCES`; without it, the first list. `off`: one dense search (the default: `rocchio` failed "
        "its rule on fourteen fresh corpora). docs/decisions/dense-feedback.md.",
    )
    release_notes: Literal["keep", "defer", "defer_but_first"] = Field(
        "defer",
        description="Whether changelog pages (by file name or title) wait for questions about releases: `defer` (the "
        "default since 2026-12-06), a question naming no version and no word such as release, changed or deprecated "
        "reads their hits only when too few hits of other pages were found; `defer_but_first`, the same except that "
        "the fused list's first hit never waits; `keep`, the fused order as it is. "
        "docs/decisions/release-notes.md.",
    )
    dense_unit_tokens: int = Field(
        0,
        ge=0,
        description=(
            "Multi-vector dense search: besides its own vector, a chunk gets one vector per unit of up to this "
            "many tokens of its text, and is scored by the best of them (MaxSim); 0: one vector per chunk (the "
            "default: table units, 128, gained nothing on held-out data, docs/decisions/dense-units.md)."
        ),
    )
    dense_unit_scope: Literal["all", "tables"] = Field(
        "tables",
        description=(
            "Which text gets unit vectors when dense_unit_tokens > 0: `all` of a chunk's text, or only its "
            "`tables` (cut by rows under their header; a chunk without a table keeps its one vector)."
        ),
    )
    chunk_context_tokens: int = Field(
        700,
        ge=0,
        description=(
            "Tokens of a chunk plus its neighbours that the generator reads (0: the chunk alone); the extractive "
            "generator answers from the chunk's own sentences first and from the neighbours only when none qualifies."
        ),
    )

    # Ingestion graph (issue 3): strategies built, checks, retention, schedule.
    build_strategies: list[str] = Field(
        default_factory=list,
        description="Chunk strategies every build indexes besides chunk_strategy (heading, heading_packed, fixed, sentence_window).",
    )
    embedding_fanout: int = Field(
        1,
        ge=1,
        le=64,
        description="Steps a build splits the embedding of its new chunks into: on the Celery executor "
        "(`ragline index build --executor celery`) each runs on whichever worker is free, in parallel; in-process "
        "they run one after the other. 1: one step.",
    )
    chunk_window_sentences: int = Field(3, description="Sentences in one indexed unit of the sentence_window strategy.")
    languages: list[str] = Field(
        default_factory=lambda: ["en", "es", "pt", "de", "fr", "it", "ja", "zh", "ko", "ru"],
        description="Languages an index may contain (ISO codes); a document outside the set fails the build. [] = any.",
    )
    language_from_folder: bool = Field(
        True, description="Take a document's language from a translation folder in its path (en/, es/...) when present."
    )
    golden_file: Path | None = Field(
        None, description="Golden JSONL for the retrieval smoke check before activation; unset skips the check."
    )
    smoke_margin: float = Field(
        0.05, description="Most the new version's evidence@5 may fall below the active version's before it is refused."
    )
    index_retention: int = Field(
        3, description="Index versions kept (active included); older ones lose their shard/collection, row kept."
    )
    build_schedule_cron: str = Field("0 3 * * *", description="Cron of the scheduled index build (Dagster schedule).")
    build_schedule_enabled: bool = Field(False, description="Start the scheduled index build running (off by default).")
    source_sensor_enabled: bool = Field(
        False, description="Start the sensor that rebuilds when the local source directory changes (off by default)."
    )
    fetch_delay_seconds: float = Field(1.0, description="Pause between two requests to one host (URL/sitemap sources).")
    fetch_retries: int = Field(3, description="Retries of a failed fetch, with exponential backoff.")
    fetch_max_bytes: int = Field(5_000_000, description="Largest page a URL source downloads; bigger pages fail.")

    top_k: int = Field(8, description="Candidates kept after fusion.")
    candidates: int = Field(100, description="Candidates fetched from each retriever before fusion.")
    rrf_k: int = Field(60, description="k of reciprocal rank fusion.")
    answer_sentences: int = Field(3, description="Most sentences an extractive answer takes.")
    answer_scope: Literal["passages", "page"] = Field(
        "passages",
        description=(
            "Where an extractive answer's sentences come from: any of the passages it reads (`passages`), or only "
            "the page of its best sentence (`page`; each ask of a two-ask question keeps its own best sentence)."
        ),
    )
    answer_span: Literal["sentence", "paragraph", "continued", "extended"] = Field(
        "extended",
        description=(
            "What an extractive answer quotes of its best sentence: the sentence (`sentence`), or the sentence and "
            "those after it in its paragraph or list item, within `answer_sentences` (`paragraph`) or at most two "
            "added to the chosen sentences (`continued`), or added only while the sentence ranker scores the longer span "
            "higher (`extended`; as `sentence` without a ranker)."
        ),
    )
    answer_pool: Literal["narrow", "wide", "nearest", "blended"] = Field(
        "narrow",
        description=(
            "Which sentences the sentence ranker orders: the best 12 by coverage among those covering at least "
            "`min_answer_score` of the question (`narrow`), or, once one does, the best 20 among those covering at "
            "least 0.05 (`wide`), or the best 12 and the 4 other sentences of the passages the embedding model puts "
            "nearest the question, whatever their coverage (`nearest`; English questions, with a vector ranker), or the "
            "best 12 of all the passages' sentences by their coverage and that nearness together (`blended`; the same "
            "conditions)."
        ),
    )
    answer_antecedent: Literal["on", "off"] = Field(
        "off",
        description=(
            'Whether a quoted sentence that opens by pointing back ("If this limit is exceeded ...", "In that case '
            '...") brings the sentence before it in its paragraph or list item, so it is read with what it refers to.'
        ),
    )
    answer_asks: Literal["whole", "each"] = Field(
        "each",
        description=(
            'How the sentence ranker reads a question of two asks or more ("Which X ..., and how do I Y?"): '
            "first each ask's own best sentence, ranked against that ask, then the whole question's best (`each`, "
            "the default since 2026-12-07), or every sentence against the whole question (`whole`)."
        ),
    )
    answer_subject: Literal["off", "term"] = Field(
        "off",
        description=(
            "Whether a quoted sentence of a definition's description (a setting, a function, an option in an API "
            "or settings reference) that does not name what it describes is written after the defined term, "
            '"`term` - sentence", as its first sentence is (`term`), or quoted alone (`off`).'
        ),
    )
    answer_blocks: Literal["alone", "read"] = Field(
        "read",
        description=(
            "How a sentence that ends with a colon and introduces a code block or a list is read when an extractive "
            "answer chooses its sentences: by itself (`alone`), or with the block's first 400 characters, for its "
            "coverage of the question and by the sentence ranker (`read`, the default: "
            "docs/decisions/sentence-selection.md). Either way it is quoted with its block."
        ),
    )
    min_answer_score: float = Field(
        0.15, description="Least share of the question's content words a cited sentence must cover to be used."
    )
    max_question_chars: int = Field(2000, description="Longest question accepted, in characters.")
    request_variant_nodes: list[str] | None = Field(
        None,
        description="Nodes whose variant a request may choose (`variants`); unset: every node. Others are a 400.",
    )
    variant_drivers_kept: int = Field(
        16, ge=1, description="Query-graph drivers (one per variant combination requests chose) kept, least recent out."
    )
    cache_prefix: str = Field(
        "ragline", description="Prefix of every cache key (several deployments can share a Redis)."
    )
    cache_ttl_seconds: int = Field(86400, description="Lifetime of an exact-cache entry.")
    # Raised when the extractive answer's rules change (v2: table rows and code examples; v3: lists,
    # abbreviations), so that a cached answer made by the old rules is not served after an upgrade.
    prompt_version: str = Field(
        "extractive-v3", description="Version of the answer prompt or extractive rules, part of cache keys."
    )
    generator_model: str = Field("extractive", description="Generator in use, part of cache keys.")
    answer_max_tokens: int = Field(512, description="Answer token limit, part of cache keys.")
    registry_poll_seconds: float = Field(
        2.0, description="How often a server re-reads the registry to pick up a newly activated index."
    )
    log_level: str = Field("INFO", description="Log level of the structured logs.")

    # Query graph, back half (issue 4): variants of each node; a request may override any of them.
    follow_up_rewrite: Literal["none", "rules", "llm"] = Field(
        "rules",
        description="How a follow-up in a conversation becomes a standalone question: `none` (as asked), `rules` "
        "(a follow-up is searched with the previous turn's standalone question), `llm` (the generator's model "
        "rewrites it; the rules when it fails).",
    )
    retrieval: Literal["hybrid", "dense", "bm25"] = Field("hybrid", description="Retrieval variant.")
    bm25_engine: Literal["qdrant", "memory"] = Field(
        "qdrant", description="BM25 engine: Qdrant sparse vectors with IDF, or rank-bm25 in memory."
    )
    fusion: Literal["rrf", "weighted_rrf", "dbsf", "convex", "convex_heads", "convex_kept_heads"] = Field(
        "convex_heads",
        description=(
            "How hybrid retrieval fuses its lists; convex_heads (the default): convex, with each list's first two "
            "hits first; convex_kept_heads: with each list's first two hits that retrieval keeps first (a copy of a "
            "better passage, or a changelog hit while release notes wait, not counted) "
            "(pipelines/retrieval/fusion.py; docs/decisions/fusion.md)."
        ),
    )
    fusion_weights: list[float] = Field(
        default_factory=lambda: [1.0, 1.0],
        description="Weights of the dense and BM25 lists in weighted RRF and convex fusion.",
    )
    bm25_feedback: Literal["on", "off"] = Field(
        "off",
        description=(
            "Hybrid retrieval's BM25 search uses the question expanded by the top dense chunks' heaviest terms "
            "(pseudo-relevance feedback, pipelines/retrieval/feedback.py); off: the question's own terms only."
        ),
    )
    bm25_feedback_docs: int = Field(3, ge=1, description="Top dense chunks whose terms expand the BM25 query.")
    bm25_feedback_terms: int = Field(20, ge=0, description="Terms the feedback adds to the BM25 query.")
    bm25_feedback_weight: float = Field(
        0.2, ge=0.0, le=1.0, description="Weight of the best added term (the question's own terms weigh 1)."
    )
    bridge_hop: Literal["on", "off"] = Field(
        "off",
        description=(
            "A hybrid retrieval for a question that asks two things searches once more with the identifiers its "
            "top hits' sections name, and puts the best chunk of another page that names one right after the hit "
            "that named it (pipelines/retrieval/bridge_hop.py); off: one hop."
        ),
    )
    bridge_hop_sources: int = Field(3, ge=1, description="Top hits whose section headings may name a bridge.")
    sub_queries: Literal["off", "asks", "model"] = Field(
        "off",
        description=(
            "asks: a question that asks two things or more (pipelines/text/asks.py) is also searched ask by ask, "
            "and the whole question's list and each ask's take turns in the candidates "
            "(pipelines/retrieval/retriever.py `asked`); model: the asks are one to three self-contained queries "
            "the generator's language model writes (pipelines/retrieval/decomposition.py; a model that fails "
            "leaves the whole question's search); off: one search for the whole question."
        ),
    )
    query_expansion: Literal["off", "passage"] = Field(
        "off",
        description=(
            "passage: the generator's language model writes the passage the documentation might hold in answer, "
            "and both retrievers search with it beside the question (pipelines/retrieval/expansion.py; a model that "
            "fails leaves the question's own search); off: the question alone. The model is the generator's (`RAGLINE_LLM_*`, "
            "or the packaged one with `generator=local`), whatever the generator."
        ),
    )
    passages_per_page: int = Field(
        0,
        ge=0,
        description=(
            "At most this many of the hits kept after fusion come from one page while hits of other pages wait; "
            "the waiting hits fill the places left (pipelines/retrieval/retriever.py `kept_hits`). 0: no limit."
        ),
    )
    distinct_passages: Literal["on", "off"] = Field(
        "on",
        description=(
            "A hit whose passage (the text the generator reads: the chunk with its neighbours) lies inside the "
            "passage of a better hit of the same page gives its place to the next hit; off: keep both."
        ),
    )
    language_filter: str | None = Field(
        None, description="Only retrieve chunks of this language (ISO code); overrides language_route."
    )
    language_route: Literal["question_and_source", "question", "all"] = Field(
        "question_and_source",
        description=(
            "Languages a question is searched in when the index holds several: its own plus the source "
            "language (dense only), its own only, or all as one pool (pipelines/retrieval/language_lanes.py)."
        ),
    )
    source_language: str | None = Field(
        "en", description="Language the documents are written in and translated from (ISO code); None: no source lane."
    )
    rerank: Literal["none", "cross_encoder", "cross_encoder_mean_rank"] = Field(
        "none",
        description="Rerank variant: the cross-encoder's order, or the mean of its rank and the fused rank.",
    )
    reranker_model: str = Field("ms-marco-MiniLM-L-12-v2-int8", description="Catalogue name of the cross-encoder.")
    reranker_path: Path | None = Field(
        None, description="Folder holding the cross-encoder's files instead of its package (still sha256-checked)."
    )
    rerank_depth: int = Field(30, description="Fused candidates the cross-encoder scores.")
    rerank_max_tokens: int = Field(
        128,
        description="Longest (question, passage) pair the cross-encoder reads; longer passages send their best window.",
    )
    neighbours: bool = Field(False, description="Add each hit's adjacent chunks (same document, position ±1).")
    coverage: Literal["vocabulary", "off"] = Field(
        "vocabulary",
        description="Coverage check: no answer when the corpus never mentions a name or most words of the question.",
    )
    coverage_names: Literal["on", "off", "asked"] = Field(
        "asked",
        description="The coverage check's names rule: `asked` (the default since 2026-12-07), no answer when a "
        "sentence of the question that asks (not one telling the asker's situation) writes as a name (gRPC, ODM, "
        "max_workers) a term no chunk holds, a lowercase hyphenated word never a name; `on`, the same for every "
        "sentence; `off`, only the vocabulary rule. docs/decisions/coverage.md.",
    )
    breadth: Literal["common_word", "bare_topic", "bare_common_topic", "off"] = Field(
        "bare_common_topic",
        description="Breadth check: `common_word` asks back (`clarify`) when the question's one content word, not "
        "a name, is on at least 0.31 of the index's pages; `bare_topic` when the question is nothing but a topic of "
        "one or two words (no question word, identifier or number), offering sections of the retrieved passages; "
        "`bare_common_topic` (the default since 2026-12-06) as `bare_topic` when each of its content words is on at "
        "least 0.31 of the pages; `off` asks nothing back after retrieval (docs/decisions/vagueness.md).",
    )
    crag: Literal["graded", "off"] = Field("graded", description="CRAG variant: grade retrieval and act, or not.")
    crag_lower: float = Field(0.55, description="CRAG: top dense cosine below this rewrites the query.")
    crag_upper: float = Field(0.70, description="CRAG: top dense cosine at or above this generates directly.")
    crag_rerank_lower: float = Field(
        0.0,
        description="CRAG: top reranker probability below this rewrites (0: never, until `ragline calibrate` fits it).",
    )
    crag_rerank_upper: float = Field(0.50, description="CRAG: top reranker probability at or above this generates.")
    generator: Literal["extractive", "litellm", "local"] = Field(
        "extractive",
        description="Generator variant. `local`: `litellm` with the packaged local model, whose server "
        "`ragline serve` starts and stops (`local_llm`).",
    )
    local_llm: bool = Field(
        False,
        description="`ragline serve` starts the packaged model's server (.venv-llm, `make llm`) and points the "
        "litellm generator at it; set by `generator=local`.",
    )
    local_llm_venv: Path = Field(
        PROJECT_ROOT / ".venv-llm", description="Virtualenv of the packaged model and its server (`make llm`)."
    )
    local_llm_port: int = Field(0, description="Loopback port of the local model's server; 0: a free one.")
    local_llm_start_seconds: float = Field(180.0, description="Longest wait for the local model's server to answer.")
    sentence_ranker: Literal[
        "asked", "lexical", "cross_encoder", "cross_encoder_vectors", "cross_encoder_vectors_rank", "vectors_rank"
    ] = Field(
        "cross_encoder_vectors_rank",
        description="How an extractive answer chooses its sentences among the best-covering ones: by the packaged "
        "cross-encoder's score, the embedding model's cosine of question and \"heading: sentence\" and the retrieval "
        "score of the sentence's passage, added as z-scores (`cross_encoder_vectors_rank`, the default since "
        "2026-12-06; English questions, others keep the lexical order), by the first two alone "
        "(`cross_encoder_vectors`), by the last two alone (`vectors_rank`, no cross-encoder), by the cross-encoder's "
        "score alone (`cross_encoder`), by their coverage of the question's words (`lexical`), or by "
        "what the question asks (`asked`: a logistic model over the sentence's coverage, the kind of value it holds "
        "and the cross-encoder's score). docs/decisions/sentence-selection.md.",
    )
    build_sentence_vectors: bool = Field(
        True,
        description='Whether a build embeds every sentence a vector sentence ranker may read ("heading: sentence", '
        "and a sentence with the block it introduces) into the embedding cache before the version goes live "
        "(the `sentence_vectors` asset), so a question's ranker reads them back instead of embedding them while the "
        "asker waits: the first sentence 0.54-0.69 times as late at p50 and 0.36-0.63 at p95, a build 1.4-1.75 "
        "times as long (8-13 sentence texts a chunk; docs/benchmarks.md). Off: they are embedded at query time. Only with a "
        "`RAGLINE_SENTENCE_RANKER` that reads vectors, and only where the query server reads the build's data dir.",
    )
    answer_value: Literal["off", "asked"] = Field(
        "off",
        description=(
            "When a question asks only for a value (a default, a port, a number, a version, a status code) and no "
            "sentence of the extractive answer holds one the question does not name, the reply is `no_answer` "
            "(`asked`): the passages name what was asked about without giving its value."
        ),
    )
    answer_gate: Literal["off", "cross_encoder"] = Field(
        "off",
        description="Whether an extractive answer is checked for answering the question before it is said: "
        "`cross_encoder` replies `no_answer` when the packaged cross-encoder scores every sentence the answer would "
        "quote below -4 (its sentences only share the question's words; English questions), `off` does not check.",
    )
    answer_analyzer: Literal["plain", "snowball"] = Field(
        "snowball",
        description="How the extractive answer matches the question's words in sentences: as written (`plain`), "
        "or stemmed in each text's language with CJK text as character bigrams (`snowball`).",
    )
    llm_model: str = Field("openai/local", description="litellm model id of the generator (provider/model).")
    llm_api_base: str | None = Field(None, description="Base URL of the generator's API (e.g. a loopback server).")
    llm_api_key: str | None = Field(None, description="API key of the generator's provider.")
    llm_structured_output: Literal["json_schema", "json_object"] = Field(
        "json_schema",
        description="How the reply's JSON schema is sent: OpenAI's `json_schema` response format, or "
        "`json_object` with a `schema` (llama-cpp-python's server, which refuses `json_schema`).",
    )
    llm_answer: Literal["write", "quote", "choose", "choose_or_decline"] = Field(
        "write",
        description="What the litellm generator's model does: writes each sentence with the passages it cites "
        "(`write`), chooses which of the passages' numbered sentences to quote as written (`quote`), or picks the "
        "first sentence of the extractive answer among the sentence ranker's best six (`choose`, what "
        "`generator=local` sets unless given), or does that with the choice of saying none answers, which makes "
        "the reply `no_answer` (`choose_or_decline`).",
    )
    llm_context_chars: int = Field(
        1600,
        ge=200,
        description="Characters of passage text (the knowledge strips) the litellm generator sends the model.",
    )
    llm_fallback_model: str | None = Field(None, description="litellm model id used when the generator fails.")
    llm_fallback_api_base: str | None = Field(None, description="Base URL of the fallback provider.")
    llm_fallback_api_key: str | None = Field(None, description="API key of the fallback provider.")
    llm_retries: int = Field(2, description="Retries of a failed generator call, with jittered backoff.")
    llm_backoff_seconds: float = Field(0.25, description="First retry delay; doubles on each retry, with jitter.")
    llm_deadline_seconds: float = Field(30.0, description="One deadline shared by all attempts and providers.")
    llm_breaker_failures: int = Field(3, description="Consecutive failures that open a provider's circuit.")
    llm_breaker_reset_seconds: float = Field(30.0, description="How long an open circuit skips its provider.")
    verify: Literal["off", "lexical", "strict", "llm", "llm_score"] = Field(
        "strict",
        description=(
            "Citation verification variant: `strict` (every word, number, identifier and code span of the claim in "
            "the cited passage, no negation reversed) unless set; `llm_score` adds the model's calibrated P(yes) "
            "for claims that reword the passage (docs/benchmarks.md, Citation verifier)."
        ),
    )
    verify_min_support: float = Field(
        0.6, description="Lexical verification: least support score for a citation to count as supported."
    )
    verify_action: Literal["remove", "flag"] = Field(
        "remove", description="What happens to an unsupported citation: removed (with its sentence) or flagged."
    )

    # Query graph, front (issue 4): guardrails, clarify, caches, topic gate, calibration.
    language_gate: Literal["refuse", "route", "off"] = Field(
        "refuse",
        description="A question in a language the index lacks: refused, routed on (cross-lingual retrieval), or not checked.",
    )
    language_min_confidence: float = Field(
        0.5, description="Least language-id confidence for the language gate to act on a question."
    )
    language_index_words: float = Field(
        0.75,
        ge=0.0,
        le=1.0,
        description="A typed question the language detector places outside the index's languages is read in the "
        "index's language when at least this share of its words are in the index (0: never).",
    )
    clarify_vague: bool = Field(
        True, description="Answer a vague question (no subject named) with `clarify` and a question."
    )
    clarify_complaints: bool = Field(
        True,
        description="With `clarify_vague`, also ask back a complaint that names one thing and no detail "
        '("prompt not working").',
    )
    clarify_complaint_words: int = Field(
        2,
        ge=1,
        le=2,
        description="With `clarify_complaints`, how many things a complaint may name and still be asked back: 1 "
        '("prompt not working"), or 2 in at most six words ("tab completion broken"; the default since 2026-12-06).',
    )
    clarify_unnamed: bool = Field(
        True,
        description="With `clarify_vague`, also ask back a question that names only a kind of thing "
        '("which version?") or acts on an unnamed "it" ("how do I turn it off?"); the default since 2026-12-07.',
    )
    semantic_cache: bool = Field(True, description="Use the semantic cache (needs a threshold, calibrated or set).")
    semantic_cache_store: Literal["edge", "postgres"] = Field(
        "edge",
        description="Where the semantic cache keeps question vectors: `edge`, a Qdrant Edge shard in the data dir "
        "(one process owns it); `postgres`, a pgvector table in the registry's PostgreSQL that every server "
        "process shares (needs the `vector` extension).",
    )
    semantic_cache_threshold: float | None = Field(
        None, description="Least cosine similarity for a semantic-cache hit; unset: the calibrated value, else off."
    )
    topic_floor: float | None = Field(
        None, description="Topic gate: least cosine similarity to the corpus centroid; unset: calibrated, else off."
    )
    topic_reference: bool = Field(
        False,
        description="Topic gate without calibration: an English question nearer the centroid of general-knowledge "
        "passages (cooking, cars, health, ...) than the corpus centroid is off-topic (`no_answer`). Off by default: "
        "it also declined 6 of 110 answerable search-box queries (docs/decisions/topic-reference.md).",
    )
    calibration_file: Path | None = Field(
        None, description="Calibration JSON written by `ragline calibrate` (default: calibration.json in the data dir)."
    )

    # HTTP service (issue 5): auth, limits, admin, voice, tracing.
    workers: int = Field(
        1,
        ge=1,
        description="Server processes of `ragline serve` (uvicorn workers, restarted when one dies); more than one "
        "keep the index, semantic cache and rate limits where all of them read (PostgreSQL, Redis).",
    )
    rate_limit_per_second: float = Field(
        20.0, description="Sustained requests per second allowed per access token (0 disables the limit)."
    )
    rate_limit_burst: int = Field(40, description="Requests a token may make at once before the rate limit applies.")
    rate_limit_store: Literal["memory", "redis"] = Field(
        "memory",
        description="Where the rate limits' buckets live: `memory`, each server process its own; `redis`, one "
        "bucket per token and per address for every process (the cache's Redis; in-process while it is down).",
    )
    dagster_url: str | None = Field(
        None,
        description="Dagster webserver URL; index builds go through its GraphQL API when set, in-process otherwise.",
    )
    dagster_location: str = Field(
        "assets.definitions", description="Code location name of the ingestion job in the Dagster webserver."
    )
    dagster_start_timeout_seconds: float = Field(
        120.0,
        description="Longest a build's Dagster run may stay QUEUED or NOT_STARTED before the build fails.",
    )
    conversation_turns: int = Field(
        3, ge=1, le=20, description="Earlier turns of a conversation a follow-up is read with."
    )
    reply_retention_days: float = Field(
        90.0, gt=0, description="Days each reply (question, answer, citations) and its feedback are kept in PostgreSQL."
    )
    gaps_similarity: float = Field(
        0.80, gt=0, le=1, description="Content gaps: least cosine similarity for a question to join a group."
    )
    gaps_max_questions: int = Field(2000, ge=1, description="Content gaps: most recent questions grouped per report.")
    request_timeout_seconds: float = Field(
        150.0,
        ge=0,
        description="Longest a question's work may run (0: no limit); past it the graph runs no further node, the "
        "model call stops and the reply is a 504 `request_timeout`. Keep it above llm_deadline_seconds.",
    )
    max_streams: int = Field(
        32, ge=1, description="Streams (/v1/query/stream, streamed chat completions) open at once, in all."
    )
    max_streams_per_token: int = Field(
        4, ge=1, description="Streams one access token may hold open at once (429 beyond)."
    )
    rate_limit_per_address_per_second: float = Field(
        50.0,
        description="Sustained requests per second allowed per client address, counted before the token is checked "
        "(0 disables). Behind a proxy, run uvicorn with --proxy-headers so the address is the client's.",
    )
    rate_limit_address_burst: int = Field(100, description="Requests one client address may make at once.")
    max_audio_bytes: int = Field(10_000_000, description="Largest audio upload accepted by the voice routes, in bytes.")
    max_body_bytes: int = Field(
        1_000_000, ge=1024, description="Largest request body of every route but the voice ones, in bytes (413)."
    )
    max_audio_seconds: float = Field(60.0, description="Longest audio accepted by the voice routes, in seconds.")
    whisper_model: str = Field(
        "whisper-base",
        description="Speech model: `whisper-base`, `whisper-tiny.en` (packaged) or a local CTranslate2 path.",
    )
    langfuse_host: str | None = Field(None, description="Langfuse base URL; tracing is off when unset.")
    langfuse_public_key: str | None = Field(None, description="Langfuse public key.")
    langfuse_secret_key: str | None = Field(None, description="Langfuse secret key.")
    trace_raw_content: bool = Field(
        False, description="Send raw questions, answers and passages to Langfuse (otherwise only hashes and ids)."
    )
    trace_timeout_seconds: float = Field(2.0, description="Export timeout of the tracer; tracing fails open.")
    evals_results: Path | None = Field(
        None, description="Evaluation results file the console shows (default: the last `ragline eval ab` report)."
    )

    @model_validator(mode="after")
    def _local_generator(self) -> Settings:
        """`generator=local` is the litellm generator with the packaged model: the settings a user would
        otherwise give by hand, each one still overridden by its own variable."""
        if self.generator == "local":
            self.generator, self.local_llm = "litellm", True
        if self.local_llm:
            given = self.model_fields_set
            for name, value in LOCAL_LLM_DEFAULTS.items():
                if name not in given:
                    setattr(self, name, value)
        return self

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy with `update` applied; `data_dir` is derived again (a copy would keep the original's)."""
        copied = super().model_copy(update=update, deep=deep)
        copied.__dict__.pop("data_dir", None)
        return copied

    @cached_property
    def data_dir(self) -> Path:
        path = self.home.expanduser().resolve()
        path.mkdir(parents=True, exist_ok=True)
        return path

    @property
    def shards_dir(self) -> Path:
        return self.data_dir / "shards"

    @property
    def dagster_dir(self) -> Path:
        return self.data_dir / "dagster"

    @property
    def ab_pointer_file(self) -> Path:
        """Where `ragline eval ab` records its last report and the operator console looks for it."""
        return self.data_dir / "evals" / "latest.json"


# The document formats ragline reads, by the ending of a file's name: pipelines.ingestion.cleaners turns each
# kind into Markdown (a PDF's text is read by pipelines.ingestion.pdf_text). The default include is all of
# them, so a new user's documents are indexed whatever their format; a page fetched from a site without
# an ending is read by its content.
READ_FORMATS: dict[str, str] = {
    ".md": "Markdown",
    ".markdown": "Markdown",
    ".rst": "reStructuredText",
    ".rest": "reStructuredText",
    ".html": "HTML",
    ".htm": "HTML",
    ".txt": "plain text",
    ".pdf": "PDF",
}
DEFAULT_INCLUDE: tuple[str, ...] = tuple(f"**/*{suffix}" for suffix in READ_FORMATS)
