"""Exact cache, semantic cache, topic gate and calibration on a real index, Redis and Qdrant Edge.

Each early exit skips the nodes behind it: shown by the per-node timings of the reply."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import redis
from structlog.testing import capture_logs

from pipelines.adapters.redis_cache import RedisCache
from pipelines.guardrails.calibration import calibration_path
from pipelines.guardrails.topic_gate import centroid_path, similarity
from pipelines.ingestion import dense_units
from pipelines.settings import Settings
from query_graph.back_half import ANSWER_CODE, BackHalf, code_digest
from query_graph.nodes.cache import cache_namespace, exact_cache_key
from tests.query_graph.front_fixtures import (  # noqa: F401 (fixtures)
    RETRIEVAL_AND_GENERATION,
    FrontEnv,
    ServiceFactory,
    front_env,
    make_service,
)

ANSWER_NODES = RETRIEVAL_AND_GENERATION - {"query_embedding"}


def test_namespace_changes_with_every_part_that_changes_an_answer() -> None:
    base = {
        "index_version": "v1",
        "index_fingerprint": "fp",
        "strategy": "heading",
        "retrieval_profile": "hybrid",
        "prompt_version": "p1",
        "generator_model": "extractive",
        "answer_max_tokens": 512,
        "calibration_version": "c1",
    }
    keys = {exact_cache_key("q", cache_namespace(**base), "pre")}
    for part, other in [
        ("index_version", "v2"),
        ("index_fingerprint", "fp2"),
        ("strategy", "fixed"),
        ("retrieval_profile", "dense"),
        ("prompt_version", "p2"),
        ("generator_model", "openai/local"),
        ("answer_max_tokens", 256),
        ("calibration_version", "c2"),
    ]:
        keys.add(exact_cache_key("q", cache_namespace(**{**base, part: other}), "pre"))
    assert len(keys) == 9


def test_an_upgrade_of_the_answer_code_misses_the_old_answers(tmp_path: Path) -> None:
    """The namespace holds a digest of the query code: after an edit of any of its files (an upgrade), no
    answer the old code made is served; the same code gives the same digest, so servers share entries."""
    digest = code_digest.__wrapped__  # uncached: the files change between calls
    for package in ANSWER_CODE:
        (tmp_path / package).mkdir()
        (tmp_path / package / "rules.py").write_text("MIN_SUPPORT = 0.6\n")
    before = digest(tmp_path)
    (tmp_path / "query_graph" / "rules.py").write_text("MIN_SUPPORT = 0.5\n")
    assert digest(tmp_path) != before
    (tmp_path / "query_graph" / "rules.py").write_text("MIN_SUPPORT = 0.6\n")
    assert digest(tmp_path) == before
    # A comment, a docstring or a reformatting changes no answer: the digest stays.
    (tmp_path / "query_graph" / "rules.py").write_text('"""Rules."""\n\n# the least support\nMIN_SUPPORT  =  0.6\n')
    assert digest(tmp_path) == before
    (tmp_path / "query_graph" / "rules.py").write_text('"""Rules."""\nMIN_SUPPORT = 0.6\nMAX = 2\n')
    assert digest(tmp_path) != before
    back = BackHalf(Settings())
    assert json.loads(back.inputs(back.defaults, 8)["retrieval_profile"])["code"] == code_digest()


def test_exact_hit_skips_embedding_retrieval_and_generation(
    front_env: FrontEnv,  # noqa: F811
    make_service: ServiceFactory,  # noqa: F811
) -> None:
    service = make_service(cache_ttl_seconds=120)
    first = service.answer("How long does harbor keep build logs?")
    second = service.answer("how long does   HARBOR keep build logs?")
    assert first["status"] == "answered" and first["cache"] == "miss"
    assert second["cache"] == "hit" and second["answer"] == first["answer"]
    assert second["guardrail"]["decision"] == "allowed"
    assert not RETRIEVAL_AND_GENERATION & set(second["timings_ms"]), second["timings_ms"]
    keys = front_env.redis_keys(service.settings.cache_prefix)
    assert len(keys) == 1
    ttl = redis.Redis.from_url(front_env.redis_url).ttl(keys[0])
    assert 0 < ttl <= 120  # the TTL setting reaches Redis


def test_numeric_retrieval_settings_are_part_of_the_cache_namespace(
    front_env: FrontEnv,  # noqa: F811
    make_service: ServiceFactory,  # noqa: F811
) -> None:
    # Same prefix, same question: only rrf_k differs, so a cached answer must not be served.
    prefix = f"{front_env.settings.cache_prefix}-shared"
    question = "How long does harbor keep build logs?"
    assert make_service(cache_prefix=prefix).answer(question)["cache"] == "miss"
    assert make_service(cache_prefix=prefix).answer(question)["cache"] == "hit"
    assert make_service(cache_prefix=prefix, rrf_k=10).answer(question)["cache"] == "miss"
    assert make_service(cache_prefix=prefix, min_answer_score=0.3).answer(question)["cache"] == "miss"


def test_redis_down_is_a_bypass_not_an_error(
    front_env: FrontEnv,  # noqa: F811
    make_service: ServiceFactory,  # noqa: F811
) -> None:
    front_env.stores.cache = RedisCache("redis://127.0.0.1:1/0")  # a closed port: Redis is down
    try:
        reply = make_service(semantic_cache_threshold=0.9).answer("Which port does the harbor dashboard listen on?")
    finally:
        front_env.stores.cache = RedisCache(front_env.redis_url)
    assert reply["status"] == "answered" and reply["cache"] == "bypass"
    assert reply["cache_detail"]["exact"] == "bypass" and reply["cache_detail"]["semantic"] == "bypass"


def test_semantic_hit_reuses_a_paraphrase_answer_and_skips_retrieval(
    make_service: ServiceFactory,  # noqa: F811
) -> None:
    service = make_service(semantic_cache_threshold=0.85)
    first = service.answer("How long does harbor keep build logs?")
    assert first["status"] == "answered" and first["cache_detail"]["semantic"] == "miss"
    para = service.answer("Harbor: how long does it keep the build logs?")
    assert para["cache"] == "semantic_hit", para["cache_detail"]
    assert para["answer"] == first["answer"] and para["cache_detail"]["similarity"] >= 0.85
    assert "query_embedding" in para["timings_ms"] and not ANSWER_NODES & set(para["timings_ms"])
    again = service.answer("Harbor: how long does it keep the build logs?")
    assert again["cache"] == "hit"  # the semantic hit was stored under the new question's exact key


def test_semantic_cache_never_mixes_different_identifiers_or_words(make_service: ServiceFactory) -> None:  # noqa: F811
    service = make_service(semantic_cache_threshold=0.5)  # a threshold any two of these questions pass
    assert service.answer("What does retention_days do?")["status"] == "answered"
    for other in ("What does max_workers do?", "What doesn't retention_days do?", "What does retention_days undo?"):
        reply = service.answer(other)
        assert reply["cache"] == "miss" and reply["cache_detail"]["semantic"] == "miss", other
        assert "dense_hits" in reply["timings_ms"]


def test_semantic_shard_held_by_another_process_is_a_bypass(
    front_env: FrontEnv,  # noqa: F811
    make_service: ServiceFactory,  # noqa: F811
) -> None:
    from pipelines.caching.semantic import close_semantic_caches

    close_semantic_caches()  # this process lets go of the shard; another one takes it
    shard = front_env.settings.data_dir / "semantic_cache" / front_env.version
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; from pipelines.caching.semantic import SemanticCache;"
            f"c = SemanticCache(Path({str(shard)!r}), 384); print('held', flush=True); sys.stdin.readline()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        reply = make_service(semantic_cache_threshold=0.9).answer("Which port does the harbor dashboard listen on?")
    finally:
        holder.communicate("\n", timeout=30)
    assert reply["status"] == "answered" and reply["cache"] == "miss"
    assert reply["cache_detail"] == {"exact": "miss", "semantic": "bypass", "similarity": None}


def test_topic_gate_abstains_on_off_topic_for_one_dot_product(
    front_env: FrontEnv,  # noqa: F811
    make_service: ServiceFactory,  # noqa: F811
) -> None:
    probe = make_service()
    version, index = probe.active()
    strategy = front_env.settings.chunk_strategy
    centroid = probe.front.centroids.get(version.version, strategy, index, probe.embedder)
    assert centroid is not None and centroid_path(front_env.settings.data_dir, version.version, strategy).exists()
    on = similarity(probe.embedder.embed_query("How long does harbor keep build logs?"), centroid)
    off = similarity(probe.embedder.embed_query("What is the boiling point of mercury in kelvin?"), centroid)
    assert on > off
    service = make_service(topic_floor=round((on + off) / 2, 4))
    gated = service.answer("What is the boiling point of mercury in kelvin?")
    assert gated["status"] == "no_answer" and gated["generator"] == "topic_gate"
    assert gated["topic_gate"]["passed"] is False and gated["topic_gate"]["similarity"] < gated["topic_gate"]["floor"]
    assert "query_embedding" in gated["timings_ms"] and "topic_gate" in gated["timings_ms"]
    assert not ANSWER_NODES & set(gated["timings_ms"])
    assert front_env.redis_keys(service.settings.cache_prefix) == []  # an abstention is not cached
    passed = service.answer("How long does harbor keep build logs?")
    assert passed["status"] == "answered" and passed["topic_gate"]["passed"] is True


def test_without_a_floor_a_question_nearer_general_knowledge_than_the_docs_is_declined(
    front_env: FrontEnv,  # noqa: F811
    make_service: ServiceFactory,  # noqa: F811
) -> None:
    open_gate = make_service().answer("What is the best way to keep basil alive on a windowsill?")
    assert open_gate["generator"] != "topic_gate"  # the rule is off by default: the question reaches retrieval
    assert "reference_similarity" not in open_gate.get("topic_gate", {})
    service = make_service(topic_reference=True)
    assert service.settings.topic_floor is None
    gated = service.answer("What is the best way to keep basil alive on a windowsill?")
    assert gated["status"] == "no_answer" and gated["generator"] == "topic_gate"
    gate = gated["topic_gate"]
    assert gate["passed"] is False and gate["floor"] is None and gate["reference_similarity"] > gate["similarity"]
    assert not ANSWER_NODES & set(gated["timings_ms"])
    passed = service.answer("How long does harbor keep build logs?")
    assert passed["status"] == "answered" and passed["topic_gate"]["passed"] is True
    assert passed["topic_gate"]["similarity"] > passed["topic_gate"]["reference_similarity"]
    # The passages are English: a question in another language is not compared with them.
    spanish = service.answer("¿Cuál es la mejor manera de mantener viva la albahaca en el alféizar de la ventana?")
    assert "reference_similarity" not in spanish.get("topic_gate", {})


def test_calibration_file_is_read_at_start_for_its_own_model_only(
    front_env: FrontEnv,  # noqa: F811
    make_service: ServiceFactory,  # noqa: F811
) -> None:
    path = front_env.settings.data_dir / "calibration-test.json"
    first = make_service()
    fingerprint, served = first.embedder.fingerprint.digest, dense_units.described(first.active()[0].chunk_settings)
    record = {
        "created_at": "2026-11-30T00:00:00+00:00",
        "embedding_fingerprint": fingerprint,
        "dense_units": served,
        "topic_gate": {"floor": 0.123},
        "semantic_cache": {"threshold": 0.97},
        "crag": {"lower": 0.5, "upper": 0.6},
    }
    path.write_text(json.dumps(record))
    calibrated = make_service(calibration_file=path)
    assert calibration_path(calibrated.settings) == path
    assert (calibrated.settings.topic_floor, calibrated.settings.semantic_cache_threshold) == (0.123, 0.97)
    assert (calibrated.settings.crag_lower, calibrated.settings.crag_upper) == (0.5, 0.6)
    explicit = make_service(calibration_file=path, topic_floor=0.2)  # a setting beats the file
    assert explicit.settings.topic_floor == 0.2 and explicit.settings.semantic_cache_threshold == 0.97
    with capture_logs() as logs:  # making a service closes the previous one's shard: a new one answers
        make_service(calibration_file=path).answer("How long does harbor keep build logs?")
    assert not [e for e in logs if e["event"] == "calibration_for_other_dense_units"]  # fitted on the same units
    path.write_text(json.dumps({**record, "dense_units": "128"}))  # fitted on units of all text
    with capture_logs() as logs:
        on_units = make_service(calibration_file=path)
        on_units.answer("How long does harbor keep build logs?")
        on_units.answer("Which port does the harbor dashboard listen on?")
    warned = [e for e in logs if e["event"] == "calibration_for_other_dense_units"]
    assert len(warned) == 1 and warned[0]["calibrated_dense_units"] == "128"  # once per index version
    assert warned[0]["index_dense_units"] == served != "128" and "ragline calibrate" in warned[0]["hint"]
    assert on_units.settings.crag_lower == 0.5  # still applied: same model; the operator is told to refit
    path.write_text(json.dumps({**record, "embedding_fingerprint": "another-model"}))
    other = make_service(calibration_file=path)
    assert other.settings.topic_floor is None and other.settings.semantic_cache_threshold is None


def test_exact_hit_latency_in_process(make_service: ServiceFactory) -> None:  # noqa: F811
    service = make_service(registry_poll_seconds=60.0)  # as served: the registry is not re-read per request
    service.answer("Which port does the harbor dashboard listen on?")
    started = time.perf_counter()
    for _ in range(20):
        assert service.answer("Which port does the harbor dashboard listen on?")["cache"] == "hit"
    per_hit_ms = (time.perf_counter() - started) * 1000 / 20
    assert per_hit_ms < 50, per_hit_ms  # generous for a loaded CI box; evals/bench/cache.py measures it


HARBOR_GOLDEN = [
    {"id": "h-1", "question": "Which port does the harbor dashboard listen on?", "expected": "answer"},
    {"id": "h-2", "question": "How long does harbor keep build logs?", "expected": "answer"},
    {"id": "h-3", "question": "What does the harbor sync command upload?", "expected": "answer"},
    {"id": "h-4", "question": "What Python version does harbor need?", "expected": "answer"},
    {"id": "h-5", "question": "Who painted the Sistine Chapel ceiling?", "expected": "abstain", "type": "off-topic"},
    {"id": "h-6", "question": "It doesn't work, what's wrong?", "expected": "clarify", "type": "vague"},
]


def test_calibrate_fits_and_writes_what_the_service_reads(
    front_env: FrontEnv,  # noqa: F811
    make_service: ServiceFactory,  # noqa: F811
    tmp_path: Path,
) -> None:
    from evals.calibration import calibrate, format_tradeoff, service_grader

    golden = tmp_path / "harbor.jsonl"
    golden.write_text(
        "\n".join(json.dumps({"lang": "en", "type": "single-fact", **q}) for q in HARBOR_GOLDEN), encoding="utf-8"
    )
    output = tmp_path / "calibration.json"
    measuring = make_service(topic_floor=None, semantic_cache=False)
    record = calibrate(measuring, measuring.settings, [golden], grade=service_grader(measuring), output=output)
    written = json.loads(output.read_text())
    assert written["embedding_fingerprint"] == measuring.embedder.fingerprint.digest
    assert written["index_version"] == front_env.version and written["created_at"]
    assert written["dense_units"] == dense_units.described(measuring.active()[0].chunk_settings)
    assert written["data"]["golden"][0]["sha256"] and written["data"]["off_topic"]["questions"] == 60
    topic = written["topic_gate"]
    assert topic["answered_share"] == 1.0 and 0.0 < topic["floor"] < 1.0
    assert topic["off_topic_abstained_share"] >= 0.9  # harbor is far from general knowledge
    assert 0.85 <= written["semantic_cache"]["threshold"] <= 0.99
    assert written["semantic_cache"]["distinct_false_hit_share"] == 0.0
    assert written["crag"]["fitted"] and written["crag"]["lower"] <= written["crag"]["upper"]
    text = format_tradeoff(record)
    assert "topic gate floor" in text and "semantic cache threshold" in text and "CRAG dense bands" in text
    served = make_service(calibration_file=output)
    assert served.settings.topic_floor == topic["floor"]
    gated = served.answer("Who painted the Sistine Chapel ceiling?")
    assert gated["status"] == "no_answer" and gated["generator"] == "topic_gate"
    assert served.answer("Which port does the harbor dashboard listen on?")["status"] == "answered"


def test_calibrate_command_is_registered() -> None:
    from ragline.cli import parser

    args = parser().parse_args(["calibrate", "--source", "docs", "--golden", "a.jsonl", "--golden", "b.jsonl"])
    assert args.command == "calibrate" and args.golden == ["a.jsonl", "b.jsonl"] and callable(args.func)
