"""Cross-encoder rerank (the packaged ms-marco-MiniLM-L-12-v2 int8 ONNX model) and neighbour expansion."""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from pipelines.adapters.model_catalogue import CATALOGUE, resolve
from pipelines.retrieval.rerank import CrossEncoderReranker, RerankUnavailable, reranked_order
from query_graph.service import QueryFailed
from tests.query_graph.harbor import Harbor

RERANKER = "ms-marco-MiniLM-L-12-v2-int8"


def test_cross_encoder_puts_the_answering_passage_first() -> None:
    reranker = CrossEncoderReranker(RERANKER)
    passages = [
        "Harbor keeps build logs for 14 days.",
        "The harbor sync command uploads local artefacts to the registry.",
        "The dashboard listens on port 7420 by default.",
    ]
    scores = reranker.scores("Which port does the dashboard listen on?", passages)
    assert max(range(3), key=lambda i: scores[i]) == 2
    assert scores[2] > 0 > scores[1]


def test_a_long_passage_is_read_through_its_best_window() -> None:
    from pipelines.retrieval.rerank import best_window

    reranker = CrossEncoderReranker("ms-marco-MiniLM-L-12-v2-int8", max_tokens=64)
    filler = " ".join(f"Section {i} describes an unrelated topic about colours and shapes." for i in range(40))
    passage = filler + " The dashboard listens on port 7420 by default."
    question = "Which port does the dashboard listen on?"
    window = best_window(question, passage, 48, reranker.token_starts)
    assert "port 7420" in window and reranker.count_tokens(window) <= 48
    assert best_window(question, "Short text.", 48, reranker.token_starts) == "Short text."
    # Head truncation would have shown the model only filler; the window makes the evidence count.
    answer, distractor = reranker.scores(question, [passage, filler])
    assert answer > distractor + 3


def test_concurrent_requests_share_the_sessions_and_get_the_same_scores() -> None:
    # Two single-threaded sessions score batches side by side; requests arriving together queue for a
    # free session. Each request must get exactly the scores it gets alone, and none may hang.
    reranker = CrossEncoderReranker(RERANKER, threads=2)
    passages = [
        f"Harbor note {i}: the dashboard listens on port {7400 + i} when profile {i} is set." for i in range(10)
    ]
    questions = ["Which port does the dashboard listen on?", "How long are build logs kept?"]
    alone = {q: reranker.scores(q, passages) for q in questions}
    with ThreadPoolExecutor(max_workers=4) as pool:
        together = list(pool.map(lambda q: (q, reranker.scores(q, passages)), questions * 3))
    assert all(scores == alone[q] for q, scores in together)
    assert len(set(map(tuple, alone.values()))) == 2  # the two questions are scored differently


def test_rerank_variant_reorders_and_reports_scores(harbor: Harbor) -> None:
    reply = harbor.service().answer(
        "How many times does harbor retry a failed upload?", variants={"rerank": "cross_encoder"}
    )
    assert reply["status"] == "answered" and "three times" in reply["answer"]
    top = reply["retrieved"][0]
    assert top["document_id"] == "reference/cli.md" and "rerank_score" in top
    scores = [r["rerank_score"] for r in reply["retrieved"]]
    assert scores == sorted(scores, reverse=True)
    assert "reranked_candidates" in reply["timings_ms"]
    assert reply["crag"]["scale"] == "rerank"


def test_mean_rank_order_needs_both_the_fusion_and_the_cross_encoder() -> None:
    logits = [0.5, -2.0, 3.0, 1.0, -1.0]  # given in fused order: positions 0..4
    assert reranked_order(logits, "cross_encoder") == [2, 3, 0, 4, 1]
    # fused rank + cross-encoder rank: 0+2, 1+4, 2+0, 3+1, 4+3 -> ties (2, 2) keep the fused order
    assert reranked_order(logits, "cross_encoder_mean_rank") == [0, 2, 3, 1, 4]
    # a confident cross-encoder alone cannot lift the last fused candidate above the first
    assert reranked_order([0.0, 0.0, 9.0], "cross_encoder_mean_rank") == [0, 2, 1]
    assert reranked_order([], "cross_encoder_mean_rank") == []
    with pytest.raises(ValueError, match="known: cross_encoder, cross_encoder_mean_rank"):
        reranked_order([1.0], "borda")


def test_mean_rank_variant_keeps_what_both_rank_high(harbor: Harbor) -> None:
    question = "How many times does harbor retry a failed upload?"
    fused = harbor.service().answer(question, top_k=4)["retrieved"]
    crossed = harbor.service().answer(question, top_k=4, variants={"rerank": "cross_encoder"})["retrieved"]
    reply = harbor.service().answer(question, top_k=4, variants={"rerank": "cross_encoder_mean_rank"})
    assert reply["status"] == "answered" and "three times" in reply["answer"]
    merged = reply["retrieved"]
    assert all("rerank_score" in r for r in merged) and reply["crag"]["scale"] == "rerank"
    fused_rank = {r["chunk_id"]: i for i, r in enumerate(fused)}
    cross_rank = {r["chunk_id"]: i for i, r in enumerate(crossed)}
    sums = [fused_rank.get(r["chunk_id"], 99) + cross_rank.get(r["chunk_id"], 99) for r in merged]
    assert sums == sorted(sums)  # ordered by the sum of the two ranks


def test_altered_reranker_file_is_503_rerank_unavailable(harbor: Harbor, tmp_path: Path) -> None:
    copy = tmp_path / "reranker"
    shutil.copytree(resolve(CATALOGUE[RERANKER]), copy)
    with (copy / "model.onnx").open("r+b") as handle:  # flip bytes inside the weights
        handle.seek(4096)
        handle.write(b"\x00\x01\x02\x03" * 16)
    with pytest.raises(RerankUnavailable, match="sha256"):
        CrossEncoderReranker(RERANKER, copy)
    with pytest.raises(QueryFailed) as info:
        harbor.service(reranker_path=copy).answer("Which port?", variants={"rerank": "cross_encoder"})
    assert info.value.status == 503 and info.value.code == "rerank_unavailable"
    (copy / "model.onnx").unlink()
    with pytest.raises(QueryFailed, match="missing"):
        harbor.service(reranker_path=copy).answer("Which port?", variants={"rerank": "cross_encoder"})


def test_neighbours_join_the_context(harbor: Harbor) -> None:
    plain = harbor.service().answer("Which port does the harbor dashboard listen on?", top_k=1)
    expanded = harbor.service(neighbours=True).answer("Which port does the harbor dashboard listen on?", top_k=1)
    hit = plain["retrieved"][0]
    extra = [r for r in expanded["retrieved"] if r.get("neighbour_of")]
    assert len(plain["retrieved"]) == 1 and extra
    assert all(r["neighbour_of"] == hit["chunk_id"] and r["document_id"] == hit["document_id"] for r in extra)
    positions = sorted(int(r["chunk_id"].rsplit("-", 1)[1]) for r in extra)
    hit_position = int(hit["chunk_id"].rsplit("-", 1)[1])
    assert set(positions) <= {hit_position - 1, hit_position + 1}


def test_an_uncalibrated_rerank_band_never_declines_a_question(harbor: Harbor) -> None:
    # The MS MARCO cross-encoder scores documentation passages low when a question is worded unlike the page:
    # out of the box its probability only chooses between generate and refine; `ragline calibrate` fits a
    # lower band per corpus (docs/decisions/reranker.md).
    reply = harbor.service().answer("Where can I look at the dashboard?", variants={"rerank": "cross_encoder"})
    crag = reply["crag"]
    assert crag["scale"] == "rerank" and crag["bands"]["lower"] == 0.0
    assert crag["scores"]["initial"] < 0.05  # below the former band, which rewrote and then declined
    assert crag["action"] in ("refine", "generate") and reply["status"] == "answered"
