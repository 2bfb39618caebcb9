"""`ragline eval` end to end on the fixture corpus and a small golden set, run as a user runs it."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from pipelines.golden_sets import half_of
from tests.corpus import write_corpus

RAGLINE = str(Path(sys.executable).parent / "ragline")
GOLDEN = Path(__file__).parent / "fixtures" / "harbor.jsonl"
MODE_KEYS = {"n", "evidence@1", "evidence@5", "evidence@10", "page@5", "mrr@10", "latency_ms", "by_type", "misses"}
MODE_KEYS |= {"evidence_ranks", "near_cutoff"}  # beyond the contract: where each question's evidence was
# The fixture's questions by half of the held-out protocol's split (a hash of the id, fixed for good).
HALVES = {"tuning": ["h-001", "h-002", "h-005"], "held_out": ["h-003", "h-004"]}


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The configured PostgreSQL and Redis (CI's), or the embedded profile where none is configured."""
    schema = f"t_{uuid.uuid4().hex[:10]}"
    home = tmp_path_factory.mktemp("evalhome")
    values = {**os.environ, "RAGLINE_HOME": str(home), "RAGLINE_POSTGRES_SCHEMA": schema}
    dsn, redis = os.environ.get("RAGLINE_TEST_POSTGRES_DSN"), os.environ.get("RAGLINE_TEST_REDIS_URL")
    if dsn and redis:
        values.update({"RAGLINE_PROFILE": "services", "RAGLINE_POSTGRES_DSN": dsn, "RAGLINE_REDIS_URL": redis})
    yield values
    if dsn:
        with psycopg.connect(dsn, autocommit=True) as conn:
            names = conn.execute(
                "SELECT schema_name FROM information_schema.schemata WHERE schema_name LIKE %s", (schema + "%",)
            ).fetchall()
            for (name,) in names:
                conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("docs"))


def ragline(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([RAGLINE, "eval", *args], capture_output=True, text=True, env=env, timeout=600)


def test_eval_retrieval_writes_the_contract_and_reuses_its_index(
    env: dict[str, str], source: Path, tmp_path: Path
) -> None:
    out = tmp_path / "retrieval.json"
    args = ["retrieval", "--source", str(source), "--exclude", "notes/**", "--golden", str(GOLDEN)]
    first = ragline(env, *args, "--modes", "dense,bm25,hybrid", "--out", str(out))
    assert first.returncode == 0, first.stderr
    report = json.loads(out.read_text())
    assert set(report) == {"index", "query_embedding_ms", "modes", "half", "halves", "written_at"}
    # When it was written orders results on /console; a fresh clone's file times cannot.
    assert abs(dt.datetime.fromisoformat(report["written_at"]) - dt.datetime.now(dt.UTC)) < dt.timedelta(minutes=10)
    assert {"content_version", "fingerprint", "chunks", "strategy"} <= set(report["index"])
    assert report["index"]["strategy"] == "heading_packed" and report["index"]["chunks"] >= 3
    assert set(report["query_embedding_ms"]) == {"p50", "p95"}
    assert set(report["modes"]) == {"dense", "bm25", "hybrid"}
    for mode, scores in report["modes"].items():
        assert set(scores) == MODE_KEYS, mode
        assert scores["n"] == 4  # the abstain question does not count
        assert 0.0 <= scores["evidence@1"] <= scores["evidence@5"] <= scores["evidence@10"] <= 1.0
        assert set(scores["latency_ms"]) == {"p50", "p95"}
        assert sum(t["n"] for t in scores["by_type"].values()) == 4
        ranks = scores["evidence_ranks"]
        assert len(ranks) == 4 and scores["misses"] == [q for q, r in ranks.items() if r is None or r > 5]
        assert scores["evidence@5"] == sum(r is not None and r <= 5 for r in ranks.values()) / 4
        assert scores["near_cutoff"] == [q for q, r in ranks.items() if r in (5, 6)]
    # Four plain questions on a three-page corpus: hybrid finds every one in its top 5.
    assert report["modes"]["hybrid"]["evidence@5"] == 1.0 and report["modes"]["hybrid"]["misses"] == []
    assert report["modes"]["hybrid"]["page@5"] == 1.0 and report["modes"]["hybrid"]["mrr@10"] > 0.5

    # Every figure per half of the held-out protocol too: the halves partition the questions run.
    assert report["half"] == "all" and set(report["halves"]) == {"tuning", "held_out"}
    for mode, scores in report["modes"].items():
        tuning, held_out = (report["halves"][h]["modes"][mode] for h in ("tuning", "held_out"))
        assert set(tuning) == set(held_out) == MODE_KEYS, mode
        assert list(tuning["evidence_ranks"]) == ["h-001", "h-002"] and tuning["n"] == 2
        assert list(held_out["evidence_ranks"]) == ["h-003", "h-004"] and held_out["n"] == 2
        assert {**tuning["evidence_ranks"], **held_out["evidence_ranks"]} == scores["evidence_ranks"]
        assert all(half_of(q) == h for h in HALVES for q in report["halves"][h]["modes"][mode]["evidence_ranks"])
        for metric in ("evidence@1", "evidence@5", "evidence@10", "page@5", "mrr@10"):
            assert abs((tuning[metric] + held_out[metric]) / 2 - scores[metric]) < 1e-3, (mode, metric)
        assert sorted(tuning["misses"] + held_out["misses"]) == sorted(scores["misses"])
    # The Markdown table shows both halves beside all, a row each per mode.
    table = subprocess.run(
        [sys.executable, "-m", "evals.tables", "retrieval", str(out)], capture_output=True, text=True, check=True
    )
    rows = [r.split(" | ") for r in table.stdout.splitlines()[2:]]
    assert [(r[4], r[5], r[6]) for r in rows] == [
        (m, h, n) for m in ("dense", "bm25", "hybrid") for h, n in (("all", "4"), ("tuning", "2"), ("held_out", "2"))
    ]

    # `--half held_out`: only that half's questions run, on the same index.
    held = tmp_path / "held_out.json"
    again = ragline(env, *args, "--modes", "bm25", "--half", "held_out", "--out", str(held))
    assert again.returncode == 0, again.stderr
    assert "reused" in again.stderr
    restricted = json.loads(held.read_text())
    assert restricted["index"] == report["index"]
    assert restricted["half"] == "held_out" and set(restricted["halves"]) == {"held_out"}
    assert restricted["modes"]["bm25"] == restricted["halves"]["held_out"]["modes"]["bm25"]
    assert (
        restricted["modes"]["bm25"]["evidence_ranks"] == report["halves"]["held_out"]["modes"]["bm25"]["evidence_ranks"]
    )
    table = subprocess.run(
        [sys.executable, "-m", "evals.tables", "retrieval", str(held)], capture_output=True, text=True, check=True
    )
    assert [r.split(" | ")[5] for r in table.stdout.splitlines()[2:]] == ["held_out"]


def test_eval_as_groups_runs_as_a_caller_of_those_groups(env: dict[str, str], source: Path, tmp_path: Path) -> None:
    """With the CLI reference for `eng` only, a public caller misses the question it answers; an `eng` caller and
    the operator (no `--as-groups`) find it."""
    grouped = {**env, "RAGLINE_ACCESS_RULES": json.dumps({"reference/**": ["eng"]})}
    args = ["retrieval", "--source", str(source), "--exclude", "notes/**", "--golden", str(GOLDEN), "--modes", "hybrid"]
    ranks = {}
    for name, extra in (("operator", []), ("public", ["--as-groups", ""]), ("eng", ["--as-groups", "eng"])):
        out = tmp_path / f"{name}.json"
        done = ragline(grouped, *args, *extra, "--out", str(out))
        assert done.returncode == 0, done.stderr
        ranks[name] = json.loads(out.read_text())["modes"]["hybrid"]["evidence_ranks"]
    assert ranks["public"]["h-003"] is None and ranks["eng"]["h-003"] is not None
    assert ranks["operator"] == ranks["eng"]
    assert all(ranks["public"][q] is not None for q in ("h-001", "h-002", "h-004"))


def test_eval_retrieval_rejects_bad_input(env: dict[str, str], source: Path, tmp_path: Path) -> None:
    bad = ragline(
        env, "retrieval", "--source", str(source), "--golden", str(GOLDEN), "--modes", "sparse", "--out", "x.json"
    )
    assert bad.returncode == 1 and "unknown mode" in bad.stderr
    missing = ragline(env, "retrieval", "--source", str(tmp_path / "nope"), "--golden", str(GOLDEN), "--out", "x.json")
    assert missing.returncode == 1 and "not a directory" in missing.stderr
    half = ragline(env, "retrieval", "--source", str(source), "--golden", str(GOLDEN), "--half", "dev", "--out", "x")
    assert half.returncode == 2 and "invalid choice: 'dev'" in half.stderr


def test_eval_answers_scores_reply_kinds_and_citations(env: dict[str, str], source: Path, tmp_path: Path) -> None:
    out = tmp_path / "answers.json"
    done = ragline(
        env, "answers", "--source", str(source), "--exclude", "notes/**", "--golden", str(GOLDEN), "--out", str(out)
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    overall = report["overall"]
    assert {"reply_kind", "citation_validity", "facts_present", "faithfulness", "citation_precision"} <= set(overall)
    assert "evidence_in_answer" in overall
    assert "citation_recall" in overall
    assert overall["reply_kind"]["answer"]["n"] == 4 and overall["reply_kind"]["abstain"]["n"] == 1
    assert overall["reply_kind"]["answer"]["correct"] >= 3
    assert overall["citation_validity"] == 1.0  # the pipeline never releases a marker it was not given
    assert overall["faithfulness"] is None  # no judge: only the deterministic scores
    assert [q["id"] for q in report["questions"]] == ["h-001", "h-002", "h-003", "h-004", "h-005"]
    assert {"id", "status", "answer", "citations", "verification"} <= set(report["questions"][0])
    first = report["questions"][0]
    assert first["status"] == "answered" and first["facts_present"] == 1.0  # "7420" is in the answer
    assert first["answer_gate"] is None  # the gate is off by default: it read nothing
    # Its evidence, "The dashboard listens on port 7420 by default", is quoted whole (markers aside).
    assert first["evidence_in_answer"] == 1.0
    assert first["evidence5"] == 1.0 and first["page5"] == 1.0  # the retrieval the answer read found it
    abstain = next(q for q in report["questions"] if q["expected"] == "abstain")
    assert abstain["evidence5"] is None
    assert abstain["evidence_in_answer"] is None and 0.0 <= overall["evidence_in_answer"] <= 1.0
    # Every figure per half too: each question names its half, and the halves' reply kinds add up to all.
    assert report["half"] == "all" and set(report["halves"]) == {"tuning", "held_out"}
    assert {h: [q["id"] for q in report["questions"] if q["half"] == h] for h in HALVES} == HALVES
    for kind in ("answer", "abstain", "clarify"):
        counts = [report["halves"][h]["overall"]["reply_kind"][kind] for h in HALVES]
        assert sum(c["n"] for c in counts) == overall["reply_kind"][kind]["n"], kind
        assert sum(c["correct"] for c in counts) == overall["reply_kind"][kind]["correct"], kind
    assert report["halves"]["held_out"]["overall"]["reply_kind"]["abstain"]["n"] == 0
    assert set(report["halves"]["tuning"]["overall"]) == set(overall)


def test_eval_ab_compares_variants_with_statistics(env: dict[str, str], source: Path, tmp_path: Path) -> None:
    out = tmp_path / "ab.json"
    done = ragline(
        env, "ab", "--source", str(source), "--exclude", "notes/**", "--golden", str(GOLDEN),
        "--node", "fusion=rrf,dbsf", "--out", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    assert set(report["variants"]) == {"fusion=rrf", "fusion=dbsf"}
    assert report["comparisons"], "no metric was compared"
    for row in report["comparisons"]:
        assert {"metric", "a", "b", "diff", "ci95", "p_value"} <= set(row)
        assert row["ci95"][0] <= row["diff"] <= row["ci95"][1] or row["ci95"][0] == row["ci95"][1]
        assert 0.0 <= row["p_value"] <= 1.0
    # Every variant and comparison per half too, on the questions of that half alone.
    assert report["half"] == "all" and set(report["halves"]) == {"tuning", "held_out"}
    for half, ids in HALVES.items():
        block = report["halves"][half]
        assert {v["n"] for v in block["variants"].values()} == {len(ids)}, half
        assert block["comparisons"] and {r["metric"] for r in block["comparisons"]} <= {
            r["metric"] for r in report["comparisons"]
        }
    n_evidence = {
        h: next(r["n"] for r in report["halves"][h]["comparisons"] if r["metric"] == "evidence@5") for h in HALVES
    }
    assert n_evidence == {"tuning": 2, "held_out": 2}  # the answer questions of each half
    md = out.with_suffix(".md").read_text()
    assert md.startswith("# A/B: fusion")
    assert "| fusion=rrf (all) | fusion=rrf (tuning) | fusion=rrf (held_out) |" in md
    assert "| n | 5 | 3 | 2 | 5 | 3 | 2 |" in md
    assert "| evidence@5 | held_out | fusion=rrf | fusion=dbsf | 2 |" in md
    pointer = json.loads((Path(env["RAGLINE_HOME"]) / "evals" / "latest.json").read_text())
    assert pointer["json"] == str(out.resolve())


def test_eval_beir_scores_a_tiny_beir_folder(env: dict[str, str], tmp_path: Path) -> None:
    data = tmp_path / "beir"
    (data / "qrels").mkdir(parents=True)
    corpus = [
        {"_id": "d1", "title": "Harbor ports", "text": "The harbor dashboard listens on port 7420 by default."},
        {"_id": "d2", "title": "Harbor logs", "text": "Harbor keeps build logs for fourteen days."},
        {"_id": "d3", "title": "Tea", "text": "Green tea is brewed at about eighty degrees."},
    ]
    queries = [
        {"_id": "q1", "text": "which port does the dashboard use"},
        {"_id": "q2", "text": "how long are logs kept"},
    ]
    (data / "corpus.jsonl").write_text("\n".join(json.dumps(c) for c in corpus))
    (data / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in queries))
    (data / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n")
    out = tmp_path / "beir.json"
    done = ragline(env, "beir", "--data", str(data), "--modes", "dense,bm25,hybrid", "--out", str(out))
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    assert set(report["modes"]) == {"dense", "bm25", "hybrid"}
    for scores in report["modes"].values():
        assert {"n", "ndcg@10", "recall@100"} <= set(scores) and scores["n"] == 2
        assert scores["recall@100"] == 1.0  # three documents: every relevant one is within 100
    assert report["modes"]["hybrid"]["ndcg@10"] == 1.0
    assert report["ndcg@10_per_query"]["hybrid"] == {"q1": 1.0, "q2": 1.0}

    # Two fusions on the same qrels, compared claim by claim (`evals.tables paired`).
    other = tmp_path / "beir.rrf.json"
    done = ragline(env, "beir", "--data", str(data), "--modes", "bm25,hybrid", "--fusion", "rrf", "--out", str(other))
    assert done.returncode == 0, done.stderr
    table = subprocess.run(
        [sys.executable, "-m", "evals.tables", "paired", str(other), str(out), "bm25"], capture_output=True, text=True
    )
    assert table.returncode == 0, table.stderr
    row = table.stdout.strip().splitlines()[-1]
    assert row.startswith("| beir.rrf | beir | bm25 | 2 |") and "+0.0000 | [+0.0000, +0.0000] | 1 |" in row
    missing = subprocess.run(
        [sys.executable, "-m", "evals.tables", "paired", str(other), str(out), "dense"], capture_output=True, text=True
    )
    assert missing.returncode != 0 and "per-claim nDCG@10 of mode 'dense'" in missing.stderr


def test_eval_ab_arm_takes_a_query_setting_and_refuses_an_index_setting(tmp_path: Path) -> None:
    from pipelines.settings import Settings
    from ragline.cli.eval import _ab_arm

    settings = Settings(source=str(tmp_path), home=tmp_path / "home")
    assert _ab_arm(settings, "fusion", "rrf") == (settings, {"fusion": "rrf"})
    changed, variants = _ab_arm(settings, "clarify_vague", "false")
    assert variants is None and changed.clarify_vague is False and settings.clarify_vague is True
    with pytest.raises(ValueError, match="index is built with it"):
        _ab_arm(settings, "dense_unit_tokens", "128")
    with pytest.raises(ValueError, match="unknown node/setting"):
        _ab_arm(settings, "no_such_node", "on")
