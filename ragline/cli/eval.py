"""`ragline eval ...`: retrieval, beir, answers and ab evaluations (the scoring lives in `evals/`).

This module is the composition root of an evaluation: it builds (or reuses) the index of a source
in a data dir of its own, through the same Dagster assets as `ragline index build`, opens it, and
hands the opened parts to `evals/`, which imports only `pipelines` and `query_graph`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipelines.access import EVERYTHING, Access
from pipelines.settings import Settings


def _key(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:12]


def eval_settings(
    base: Settings,
    source: str,
    include: Sequence[str] | None,
    exclude: Sequence[str] | None,
    strategy: str | None,
    embedding_model: str | None,
) -> Settings:
    """Settings of an evaluation index: its own data dir (and registry schema), so evaluating never
    touches the index a server is serving, and the same source and settings reuse the same index."""
    resolved = str(Path(source).expanduser().resolve())
    if not Path(resolved).is_dir():
        raise ValueError(f"--source {source!r} is not a directory")
    values: dict[str, Any] = {
        "source": resolved,
        "include": list(include or base.include),
        "exclude": list(exclude or base.exclude),
        "chunk_strategy": strategy or base.chunk_strategy,
        "embedding_model": embedding_model or base.embedding_model,
    }
    # Not the generation context: it changes no embedding, so the data dir and its embedding cache are
    # shared, and a context change rebuilds there from the cache.
    key = _key(values, base.chunk_target_tokens, base.chunk_max_tokens, base.chunk_overlap_tokens)
    return Settings(
        **values,
        profile=base.profile,
        home=base.data_dir / "evals" / "indexes" / key,
        postgres_dsn=base.postgres_dsn,
        redis_url=base.redis_url,
        qdrant_url=base.qdrant_url,
        postgres_schema=f"{base.postgres_schema}_eval_{key}",
        cache_prefix=f"eval-{key}",
        registry_poll_seconds=0.0,
    )


@dataclass
class OpenedIndex:
    settings: Settings
    stores: Any
    version: Any
    index: Any
    info: dict[str, Any]


@contextmanager
def opened_index(settings: Settings, open_vectors: bool = True) -> Iterator[OpenedIndex]:
    """Build the evaluation index when its content version is not the active one, then open it
    (`open_vectors=False`: leave opening to a QueryService, which holds its own handle)."""
    from assets.build import build_index
    from pipelines.ingestion.build import BuildRequest
    from pipelines.profiles import open_stores

    stores = open_stores(settings)
    index = None
    try:
        request = BuildRequest.from_settings(settings)
        print(f"ragline eval: indexing {request.source} into {settings.data_dir} ...", file=sys.stderr, flush=True)
        outcome = build_index(settings, stores, request)
        verb = "built" if outcome.built else "reused"
        print(f"ragline eval: {verb} {outcome.version} ({outcome.seconds:.1f} s)", file=sys.stderr, flush=True)
        version = stores.registry.active()
        assert version is not None and version.version == outcome.version
        index = stores.open_index(version.location) if open_vectors else None
        info = {
            "content_version": version.version,
            "fingerprint": version.fingerprint,
            "chunks": version.chunk_count,
            "strategy": settings.chunk_strategy,
        }
        yield OpenedIndex(settings, stores, version, index, info)
    finally:
        if index is not None:
            index.close()
        stores.close()


def rerank_scorer(settings: Settings) -> Any:
    """The query graph's cross-encoder (`pipelines.retrieval.rerank`) as a (question, chunks) -> scores function;
    it reads what the generator would see, as the query graph's rerank node does."""
    from pipelines.retrieval.rerank import CrossEncoderReranker

    reranker = CrossEncoderReranker(settings.reranker_model, settings.reranker_path, settings.rerank_max_tokens)

    def score(question: str, chunks: Sequence[Any]) -> list[float]:
        return list(reranker.scores(question, [c.generation_text for c in chunks]))

    return score


def passage_writer(settings: Settings) -> Any:
    """`query_expansion=passage`: the question -> written passage function the query graph's `expansion_passage`
    node calls (the generator's model, `RAGLINE_LLM_*`); None when off. In an evaluation a model that fails stops the
    run (a RuntimeError) rather than measuring searches that were not expanded."""
    if settings.query_expansion == "off":
        return None
    from pipelines.adapters.llm_harness import GenerationUnavailable, LLMHarness
    from pipelines.retrieval.expansion import model_passage

    harness = LLMHarness.from_settings(settings)

    def expand(question: str) -> str:
        try:
            return model_passage(question, harness)
        except GenerationUnavailable as exc:
            raise RuntimeError(f"query expansion: the language model is unavailable: {exc}") from exc

    return expand


def query_writer(settings: Settings) -> Any:
    """`sub_queries=model`: the question -> sub-queries function the query graph's `asked_candidates` node calls
    (the generator's model, `RAGLINE_LLM_*`), each question's queries written once for every mode searched; None
    otherwise. In an evaluation a model that fails stops the run (a RuntimeError), as `passage_writer`."""
    if settings.sub_queries != "model":
        return None
    from pipelines.adapters.llm_harness import GenerationUnavailable, LLMHarness
    from pipelines.retrieval.decomposition import model_queries

    harness = LLMHarness.from_settings(settings)
    written: dict[str, list[str]] = {}

    def decompose(question: str) -> list[str]:
        if question not in written:
            try:
                written[question] = model_queries(question, harness, settings.llm_structured_output)
            except GenerationUnavailable as exc:
                raise RuntimeError(f"sub-queries: the language model is unavailable: {exc}") from exc
        return written[question]

    return decompose


def _write(out: str, report: dict[str, Any]) -> Path:
    """Write a report with the time it was written, which orders results on /console (`written_at`)."""
    report.setdefault("written_at", now_iso())
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"ragline eval: wrote {path}", file=sys.stderr)
    return path


def _modes(text: str) -> list[str]:
    return [m.strip() for m in text.split(",") if m.strip()]


def _golden(paths: Sequence[str], half: str = "all") -> list[Any]:
    """The golden files' questions, restricted to one half of the held-out protocol's split (`--half`)."""
    from evals.golden import load_golden, restrict_to_half

    questions = []
    for p in paths:
        questions.extend(load_golden(Path(p)))
    chosen = restrict_to_half(questions, half)
    if not chosen:
        raise ValueError(f"no golden question is in the {half} half")
    return chosen


def _halves(half: str) -> tuple[str, ...]:
    from evals.golden import halves_run

    return halves_run(half)


def cmd_eval_retrieval(args: argparse.Namespace) -> int:
    from evals.retrieval import evaluate_retrieval
    from evals.studies.search_modes import SearchSetup
    from pipelines.adapters.embedders import load_embedder
    from query_graph.service import visible_index

    base = Settings()
    try:
        settings = eval_settings(base, args.source, args.include, args.exclude, args.strategy, args.embedding_model)
        questions = _golden(args.golden, args.half)
        modes = _modes(args.modes)
        scorer = rerank_scorer(base) if "hybrid+rerank" in modes else None
        with opened_index(settings) as opened:
            embedder = load_embedder(settings.embedding_model)
            setup = SearchSetup.from_settings(
                base,
                visible_index(opened.version, opened.index, _access(args)),
                settings.chunk_strategy,
                settings.data_dir,
                fusion=args.fusion or base.fusion,
                rerank=scorer,
                # The version's own analyzer and languages: an index reused from an earlier build keeps them.
                bm25_analyzer=opened.version.chunk_settings.get("bm25_analyzer", "plain"),
                index_languages=tuple(opened.version.languages),
                language_route=args.language_route or base.language_route,
                embedder=embedder,
                expand=passage_writer(base),
                decompose=query_writer(base),
            )
            run = evaluate_retrieval(questions, modes, embedder, setup, opened.info, args.half, _halves(args.half))
    except (ValueError, OSError, RuntimeError) as exc:  # RuntimeError: a failed build, reranker or judge
        print(f"ragline eval: {exc}", file=sys.stderr)
        return 1
    report = run.report()
    report["index"]["embedding_model"] = settings.embedding_model
    report["index"]["fusion"] = args.fusion or base.fusion
    report["index"]["bm25_analyzer"] = setup.bm25_analyzer
    report["index"]["language_route"] = setup.language_route
    report["index"]["dense_unit_tokens"] = opened.version.chunk_settings.get("dense_unit_tokens", 0)
    report["index"]["dense_unit_scope"] = opened.version.chunk_settings.get("dense_unit_scope", "all")
    report["index"]["bm25_feedback"] = setup.feedback.label()
    report["index"]["bridge_hop"] = f"top {setup.bridge_depth}" if setup.bridge_depth else "off"
    report["index"]["distinct_passages"] = "on" if setup.distinct else "off"
    report["index"]["sub_queries"] = "model" if setup.decompose else "asks" if setup.sub_queries else "off"
    report["index"]["query_expansion"] = base.query_expansion if setup.expand else "off"
    _write(args.out, report)
    return 0


def cmd_eval_beir(args: argparse.Namespace) -> int:
    from evals.beir import build_or_reuse, evaluate_beir, load_beir
    from evals.studies.search_modes import SearchSetup
    from pipelines.adapters.embedders import load_embedder
    from pipelines.adapters.qdrant_edge import EdgeShardIndex, EdgeShardWriter

    base = Settings()
    model = args.embedding_model or base.embedding_model
    modes = _modes(args.modes)
    try:
        data = load_beir(Path(args.data), Path(args.qrels) if args.qrels else None)
        folder = base.data_dir / "evals" / "beir" / _key(str(Path(args.data).resolve()))
        print(f"ragline eval: BEIR index of {len(data.corpus)} documents in {folder} ...", file=sys.stderr, flush=True)
        info = build_or_reuse(
            data,
            folder,
            model,
            base.chunk_target_tokens,
            base.chunk_max_tokens,
            lambda p, d, u: EdgeShardWriter(p, d, u),
            base.bm25_analyzer,
            base.dense_unit_tokens,
            base.dense_unit_scope,
        )
        scorer = rerank_scorer(base) if "hybrid+rerank" in modes else None
        index = EdgeShardIndex(folder / info["key"] / "shard")
        try:
            if base.dense_sentences != "off":  # the vectors a ragline build's `sentence_vectors` asset embeds
                from evals.beir import embed_sentences
                from pipelines.answering.sentence_vectors import own_shown_texts

                info["sentence_vectors"] = embed_sentences(index, folder, model, own_shown_texts)
            setup = SearchSetup.from_settings(
                base,
                index,
                None,
                folder,
                candidates=100,
                fusion=args.fusion or base.fusion,
                rerank=scorer,
                bm25_analyzer=base.bm25_analyzer,
                index_languages=("en",),  # evals/beir.py indexes every abstract as English
                embedder=load_embedder(model) if base.sub_queries != "off" else None,
                expand=passage_writer(base),
                decompose=query_writer(base),
            )
            info = {
                **info,
                "qrels": str(args.qrels or Path(args.data) / "qrels" / "test.tsv"),
                "fusion": setup.fusion,
                "bm25_feedback": setup.feedback.label(),
                "query_expansion": base.query_expansion,
            }
            run = evaluate_beir(data, modes, model, index, setup, info)
        finally:
            index.close()
    except (ValueError, OSError, RuntimeError) as exc:  # RuntimeError: a failed build, reranker or judge
        print(f"ragline eval: {exc}", file=sys.stderr)
        return 1
    _write(args.out, run.report())
    return 0


def _judge(args: argparse.Namespace) -> Any:
    if not args.judge:
        return None
    from evals.judge import Judge

    return Judge(args.judge, api_base=args.judge_api_base, api_key=args.judge_api_key)


def _with(settings: Settings, **overrides: Any) -> Settings:
    """The same settings with some fields changed (validated by the settings class itself)."""
    unknown = [k for k in overrides if k not in Settings.model_fields]
    if unknown:
        raise ValueError(f"unknown node/setting {unknown[0]!r}; nodes are settings such as rerank, fusion, crag")
    return Settings(**{**settings.model_dump(), **overrides})


def _fresh_service(settings: Settings, opened: OpenedIndex, tag: str, **overrides: Any) -> Any:
    """A query service over the opened index with a cache namespace of its own: an evaluation measures the
    pipeline, never an earlier run's cached replies."""
    import uuid

    from query_graph.service import QueryService

    return QueryService(_with(settings, cache_prefix=f"{tag}-{uuid.uuid4().hex[:12]}", **overrides), opened.stores)


def _answer_run(
    settings: Settings,
    opened: OpenedIndex,
    questions: list[Any],
    judge: Any,
    variants: dict[str, str] | None = None,
    access: Access = EVERYTHING,
) -> Any:
    from evals.answers import run_answers
    from query_graph.service import QueryFailed

    service = _fresh_service(settings, opened, "eval")
    if variants:
        options = service.variant_options()
        for node, variant in variants.items():
            if variant not in options.get(node, []):
                raise ValueError(f"--node {node}={variant}: known nodes and variants are {options}")

    def on_error(exc: Exception) -> str:
        if isinstance(exc, QueryFailed):
            return exc.code
        raise exc

    # The service's own handle on the index (an Edge shard is opened by one handle at a time).
    index = service.active(access)[1]
    try:
        answer = lambda q: service.answer(q, variants=variants, access=access)  # noqa: E731
        return run_answers(questions, answer, index, judge, on_error)
    finally:
        index.close()


def cmd_eval_answers(args: argparse.Namespace) -> int:
    base = Settings()
    try:
        settings = eval_settings(base, args.source, args.include, args.exclude, args.strategy, args.embedding_model)
        questions = _golden(args.golden, args.half)
        with opened_index(settings, open_vectors=False) as opened:
            run = _answer_run(settings, opened, questions, _judge(args), access=_access(args))
    except (ValueError, OSError, RuntimeError) as exc:  # RuntimeError: a failed build, reranker or judge
        print(f"ragline eval: {exc}", file=sys.stderr)
        return 1
    report = run.report(args.half, _halves(args.half))
    report["index"] = opened.info
    _write(args.out, report)
    return 0


def _ab_arm(settings: Settings, node: str, variant: str) -> tuple[Settings, dict[str, str] | None]:
    """One arm of an A/B: a query-graph node's variant is chosen per request; any other setting the query side
    reads (`clarify_vague=false,true`) changes the service's settings. A setting the index is built with
    (`dense_unit_tokens`, the chunking) needs one index per value: refused here."""
    from pipelines.ingestion.build import BuildRequest
    from query_graph.variants import VARIANTS

    if node in VARIANTS:
        return settings, {node: variant}
    changed = _with(settings, **{node: variant})
    if BuildRequest.from_settings(changed) != BuildRequest.from_settings(settings):
        raise ValueError(f"--node {node}: the index is built with it; run one evaluation per value instead")
    return changed, None


def cmd_eval_ab(args: argparse.Namespace) -> int:
    from evals.ab import NodeVariants, ab_report, markdown

    base = Settings()
    try:
        nodes = [NodeVariants.parse(n) for n in args.node]
        settings = eval_settings(base, args.source, args.include, args.exclude, args.strategy, args.embedding_model)
        questions = _golden(args.golden, args.half)
        runs = {}
        with opened_index(settings, open_vectors=False) as opened:
            for node in nodes:
                for variant, label in zip(node.variants, node.labels(), strict=True):
                    print(f"ragline eval: variant {label} ...", file=sys.stderr, flush=True)
                    arm_settings, variants = _ab_arm(settings, node.node, variant)
                    runs[label] = _answer_run(arm_settings, opened, questions, None, variants, _access(args))
    except (ValueError, OSError, RuntimeError) as exc:  # RuntimeError: a failed build, reranker or judge
        print(f"ragline eval: {exc}", file=sys.stderr)
        return 1
    report = {"index": opened.info, **ab_report(runs, nodes, args.half, _halves(args.half))}
    path = _write(args.out, report)
    command = "ragline eval ab " + " ".join(sys.argv[3:] if sys.argv[1:3] == ["eval", "ab"] else [])
    md = path.with_suffix(".md")
    md.write_text(markdown(report, f"A/B: {', '.join(n.node for n in nodes)}", command.strip()), encoding="utf-8")
    # The server's /console reads this pointer to show the latest A/B report.
    pointer = base.ab_pointer_file
    pointer.parent.mkdir(parents=True, exist_ok=True)
    pointer.write_text(
        json.dumps({"kind": "ab", "json": str(path.resolve()), "markdown": str(md.resolve()), "written_at": now_iso()})
    )
    return 0


def _access(args: argparse.Namespace) -> Access:
    """The caller an evaluation runs as: `--as-groups staff,eng` (and `public`), or every group when unset."""
    groups = getattr(args, "as_groups", None)
    if groups is None:
        return EVERYTHING
    return Access.of([g for g in groups.split(",") if g.strip()])


def _as_groups(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--as-groups",
        metavar="GROUPS",
        help="run as a caller of these access groups (comma-separated; `public` always included, `''` for public "
        "pages only); default: every group",
    )


def _source_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--source", required=True, help="directory of documents to index and evaluate")
    parser.add_argument("--include", action="append", help="glob of documents to index (repeatable)")
    parser.add_argument("--exclude", action="append", help="glob of documents to skip (repeatable)")
    parser.add_argument("--strategy", help="chunk strategy (default: RAGLINE_CHUNK_STRATEGY)")
    parser.add_argument("--embedding-model", help="embedder (default: RAGLINE_EMBEDDING_MODEL)")
    parser.add_argument("--golden", action="append", required=True, help="golden JSONL file (repeatable)")
    parser.add_argument(
        "--half",
        choices=["tuning", "held_out", "all"],
        default="all",
        help="questions of one half of the held-out protocol's fixed split (pipelines.golden_sets.half_of), or "
        "all of them (default: all, reported per half beside the figures over all)",
    )


def cmd_eval_lanes(args: argparse.Namespace) -> int:
    from evals.studies.xquad_lanes import evaluate_lanes, write_site
    from pipelines.adapters.embedders import load_embedder

    base = Settings()
    languages, routes = _modes(args.languages), _modes(args.routes)
    try:
        # The site goes to a fixed folder of the data dir, so its index and embedding cache are reused.
        site = base.data_dir / "evals" / "xquad-site"
        questions = write_site(Path(args.xquad), [base.source_language or "en", *languages], site)
        settings = eval_settings(base, str(site), None, None, None, args.embedding_model)
        with opened_index(settings) as opened:
            report = evaluate_lanes(
                questions,
                languages,
                routes,
                load_embedder(settings.embedding_model),
                opened.index,
                opened.version,
                settings.chunk_strategy,
                base,
                settings.data_dir,
            )
            report["index"] = {**opened.info, "embedding_model": settings.embedding_model}
    except (ValueError, OSError, KeyError) as exc:
        print(f"ragline eval: {exc}", file=sys.stderr)
        return 1
    _write(args.out, report)
    return 0


def cmd_eval_sentence_rows(args: argparse.Namespace) -> int:
    """The candidate sentences of a golden set's tuning questions, as the `asked` selection reads them, for
    `python -m evals.studies.answer_sentences fit --golden FILE` (evals/studies/answer_sentences.py)."""
    from evals.golden import restrict_to_half
    from evals.studies.answer_sentences import golden_rows

    base = Settings()
    try:
        settings = eval_settings(base, args.source, args.include, args.exclude, args.strategy, args.embedding_model)
        questions = restrict_to_half(_golden(args.golden), "tuning")
        with opened_index(settings, open_vectors=False) as opened:
            service = _fresh_service(settings, opened, "rows")
            ranker = service.back.reranker().scores if args.ranker else None
            rows = golden_rows(service, questions, ranker)
    except (ValueError, OSError, RuntimeError) as exc:
        print(f"ragline eval: {exc}", file=sys.stderr)
        return 1
    _write(args.out, rows)
    print(f"{rows['questions']} questions, {len(rows['y'])} sentences, {int(sum(rows['y']))} positive")
    return 0


def cmd_eval_sentence_pools(args: argparse.Namespace) -> int:
    """Every answer question's candidate sentences as the default pipeline reads them, labelled by the golden
    evidence, for `python -m evals.studies.sentence_pool compare` (evals/studies/sentence_pool.py)."""
    from evals.studies.sentence_pool import record

    try:
        settings = eval_settings(
            Settings(), args.source, args.include, args.exclude, args.strategy, args.embedding_model
        )
        with opened_index(settings, open_vectors=False) as opened:
            # No semantic cache either: every question runs the answer step.
            rows = record(_fresh_service(settings, opened, "pools", semantic_cache=False), _golden(args.golden))
    except (ValueError, OSError, RuntimeError) as exc:
        print(f"ragline eval: {exc}", file=sys.stderr)
        return 1
    Path(args.out).write_text("".join(json.dumps(r) + "\n" for r in rows))
    held = sum(any(c["evidence"] for c in r["pool"]) for r in rows)
    print(f"{len(rows)} questions, {held} with the evidence in a sentence of their passages")
    return 0


def cmd_eval_sentences(args: argparse.Namespace) -> int:
    from evals.studies.sentence_ranking import answerers, evaluate_sentence_rankers, load_questions
    from pipelines.retrieval.rerank import CrossEncoderReranker
    from query_graph.variants import VARIANTS

    base = Settings()
    try:
        questions = load_questions(Path(args.xquad), args.language, args.limit, args.pairs)
        rankers: dict[str, Any] = {"lexical": None}
        if "cross_encoder" in args.rankers.split(","):
            reranker = CrossEncoderReranker(base.reranker_model, base.reranker_path, base.rerank_max_tokens)
            rankers["cross_encoder"] = reranker.scores
        analyzers = [a for a in args.analyzers.split(",") if a]
        known = VARIANTS["answer_analyzer"]
        unknown = sorted(set(analyzers) - set(known))
        if unknown:
            raise ValueError(f"unknown answer analyzer(s) {unknown}; known: {', '.join(known)}")
        runs = answerers(rankers, args.pairs, analyzers)
        report = evaluate_sentence_rankers(questions, runs)
    except (ValueError, OSError, KeyError, RuntimeError) as exc:  # RuntimeError: the reranker's file
        print(f"ragline eval: {exc}", file=sys.stderr)
        return 1
    report["data"] = {
        "xquad": args.xquad,
        "language": args.language,
        "pairs": args.pairs,
        "analyzers": args.analyzers,
        "reranker_model": base.reranker_model,
    }
    _write(args.out, report)
    return 0


def cmd_eval_followups(args: argparse.Namespace) -> int:
    from evals.followups import evaluate_followups, load_conversations, rewrites
    from evals.studies.search_modes import SearchSetup
    from pipelines.adapters.embedders import load_embedder
    from pipelines.adapters.llm_harness import LLMHarness

    base = Settings()
    try:
        settings = eval_settings(base, args.source, args.include, args.exclude, args.strategy, args.embedding_model)
        conversations = load_conversations(Path(args.set))
        with opened_index(settings) as opened:
            embedder = load_embedder(settings.embedding_model)
            setup = SearchSetup.from_settings(
                base,
                opened.index,
                settings.chunk_strategy,
                settings.data_dir,
                fusion=base.fusion,
                bm25_analyzer=opened.version.chunk_settings.get("bm25_analyzer", "plain"),
                index_languages=tuple(opened.version.languages),
                language_route=base.language_route,
                embedder=embedder,
            )
            harness = LLMHarness.from_settings(base) if args.llm else None
            report = evaluate_followups(conversations, embedder, setup, rewrites(harness))
    except (ValueError, OSError, RuntimeError) as exc:
        print(f"ragline eval: {exc}", file=sys.stderr)
        return 1
    report["index"] = opened.info
    _write(args.out, report)
    print(json.dumps(report["summary"], indent=1))
    return 0


def register(commands: Any) -> None:
    group = commands.add_parser("eval", help="evaluate retrieval, answers and node variants")
    actions = group.add_subparsers(dest="action", required=True)

    retrieval = actions.add_parser("retrieval", help="score retrieval modes on golden questions")
    _source_args(retrieval)
    _as_groups(retrieval)
    retrieval.add_argument("--modes", default="dense,bm25,hybrid,hybrid+rerank")
    retrieval.add_argument(
        "--fusion",
        help="fusion of the hybrid modes: rrf, weighted_rrf, dbsf, convex, convex_heads, convex_kept_heads (default: RAGLINE_FUSION)",
    )
    retrieval.add_argument(
        "--language-route",
        choices=["question_and_source", "question", "all"],
        help="languages each question is searched in, in an index of several (default: RAGLINE_LANGUAGE_ROUTE)",
    )
    retrieval.add_argument("--out", required=True)
    retrieval.set_defaults(func=cmd_eval_retrieval)

    followups = actions.add_parser(
        "followups", help="retrieval of follow-up questions made standalone, against hand-written standalone ones"
    )
    followups.add_argument("--source", required=True, help="directory of documents to index and evaluate")
    followups.add_argument("--include", action="append", help="glob of documents to index (repeatable)")
    followups.add_argument("--exclude", action="append", help="glob of documents to skip (repeatable)")
    followups.add_argument("--strategy", help="chunk strategy (default: RAGLINE_CHUNK_STRATEGY)")
    followups.add_argument("--embedding-model", help="embedder (default: RAGLINE_EMBEDDING_MODEL)")
    followups.add_argument("--set", required=True, help="follow-up set (JSONL, evals/golden/followups_*.jsonl)")
    followups.add_argument("--llm", action="store_true", help="also score the `llm` rewrite (model of RAGLINE_LLM_*)")
    followups.add_argument("--out", required=True)
    followups.set_defaults(func=cmd_eval_followups)

    lanes = actions.add_parser(
        "lanes", help="language routes on XQuAD written as a translated site (evals/studies/xquad_lanes.py)"
    )
    lanes.add_argument("--xquad", required=True, help="folder with xquad.<lang>.json")
    lanes.add_argument("--languages", default="es,de,zh", help="question languages besides the source language")
    lanes.add_argument("--routes", default="all,question,question_and_source")
    lanes.add_argument("--embedding-model", default="multilingual-e5-small-q4")
    lanes.add_argument("--out", required=True)
    lanes.set_defaults(func=cmd_eval_lanes)

    rows = actions.add_parser(
        "sentence-rows",
        help="candidate sentences of a golden set's tuning questions (evals/studies/answer_sentences.py)",
    )
    _source_args(rows)
    rows.add_argument("--ranker", action="store_true", help="with the packaged cross-encoder's scores as features")
    rows.add_argument("--out", required=True)
    rows.set_defaults(func=cmd_eval_sentence_rows)
    pools = actions.add_parser(
        "sentence-pools",
        help="every answer question's candidate sentences with each ranker's reading (evals/studies/sentence_pool.py)",
    )
    _source_args(pools)
    pools.add_argument("--out", required=True)
    pools.set_defaults(func=cmd_eval_sentence_pools)
    sentences = actions.add_parser(
        "sentences", help="the extractive answer's sentence rankers on XQuAD (evals/studies/sentence_ranking.py)"
    )
    sentences.add_argument("--xquad", required=True, help="folder with xquad.<lang>.json")
    sentences.add_argument("--language", default="en", help="the questions' and paragraphs' language")
    sentences.add_argument("--limit", type=int, help="only the first N questions")
    sentences.add_argument(
        "--pairs", action="store_true", help="two questions of a paragraph as one question of two asks"
    )
    sentences.add_argument(
        "--rankers",
        default="lexical,cross_encoder",
        help="sentence rankers compared (lexical, the baseline, always runs; cross_encoder is English-only)",
    )
    sentences.add_argument(
        "--analyzers",
        default="snowball",
        help="answer analyzers compared with plain words, as lexical_<name> (comma-separated; '' for none)",
    )
    sentences.add_argument("--out", required=True)
    sentences.set_defaults(func=cmd_eval_sentences)

    beir = actions.add_parser("beir", help="nDCG@10 and recall@100 on a BEIR-format data set")
    beir.add_argument("--data", required=True, help="folder with corpus.jsonl, queries.jsonl, qrels/")
    beir.add_argument("--qrels", help="qrels TSV to score (default: DATA/qrels/test.tsv)")
    beir.add_argument("--modes", default="dense,bm25,hybrid,hybrid+rerank")
    beir.add_argument(
        "--fusion",
        help="fusion of the hybrid modes: rrf, weighted_rrf, dbsf, convex, convex_heads, convex_kept_heads (default: RAGLINE_FUSION)",
    )
    beir.add_argument("--embedding-model", help="embedder (default: RAGLINE_EMBEDDING_MODEL)")
    beir.add_argument("--out", required=True)
    beir.set_defaults(func=cmd_eval_beir)

    answers = actions.add_parser("answers", help="run the whole pipeline per golden question and score it")
    _source_args(answers)
    answers.add_argument("--judge", help="litellm model id of a judge (e.g. openai/gpt-4o-mini); unset: no judge")
    answers.add_argument("--judge-api-base", help="base URL of the judge's OpenAI-compatible API")
    answers.add_argument("--judge-api-key", help="API key of the judge's provider")
    _as_groups(answers)
    answers.add_argument("--out", required=True)
    answers.set_defaults(func=cmd_eval_answers)

    ab = actions.add_parser("ab", help="compare variants of query-graph nodes on the same questions")
    _source_args(ab)
    ab.add_argument(
        "--node",
        action="append",
        required=True,
        help="NAME=baseline,variant[,...]: a node, e.g. rerank=none,cross_encoder, or a query-time setting, e.g. "
        "clarify_vague=false,true",
    )
    _as_groups(ab)
    ab.add_argument("--out", required=True)
    ab.set_defaults(func=cmd_eval_ab)


def now_iso() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
