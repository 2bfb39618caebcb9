"""The pool study (evals/studies/sentence_pool.py): labels, features and the first-k counts it reports."""

from __future__ import annotations

from evals.studies.sentence_pool import FEATURES, compare, features, hits, labelled, model_choices
from tests.llm_loopback import loopback_llm


def _row(question: str, texts: list[str], evidence: list[bool], default: list[float]) -> dict[str, object]:
    pool = [
        {
            "text": t,
            "heading": "Config > Timeouts",
            "rank": n + 1,
            "position": n,
            "coverage": 0.1 * (n + 1),
            "in_pool": True,
            "default": d,
            "cross_encoder": -d,
            "cosine": 0.5 + 0.01 * n,
            "evidence": e,
        }
        for n, (t, e, d) in enumerate(zip(texts, evidence, default, strict=True))
    ]
    return {"id": "q", "question": question, "pool": pool, "corpus": "c"}


def test_a_sentence_is_evidence_when_it_holds_a_golden_string_or_a_long_one_holds_it() -> None:
    evidence = ["The default timeout is 30 seconds, after which the request is cancelled."]
    assert labelled("Note: the default timeout is 30 seconds, after which the request is cancelled.", evidence)
    assert labelled("The default timeout is 30 seconds,", evidence)  # a long part of a longer evidence string
    assert not labelled("30 seconds", evidence)  # too short to say it is the evidence
    assert not labelled("Timeouts are set per request.", evidence)


def test_first_k_counts_only_questions_whose_pool_holds_the_evidence() -> None:
    rows = [
        _row("What is the default timeout?", ["a one", "b two", "c three"], [False, True, False], [3.0, 2.0, 1.0]),
        _row("What is the port?", ["d four", "e five"], [False, False], [1.0, 0.0]),
    ]
    by_default = lambda r: [c["default"] for c in r["pool"]]  # noqa: E731
    assert hits(rows, by_default, 1) == (0, 1) and hits(rows, by_default, 2) == (1, 1)
    by_cross_encoder = lambda r: [c["cross_encoder"] for c in r["pool"]]  # noqa: E731
    assert hits(rows, by_cross_encoder, 1) == (0, 1)
    x = features(rows[0])
    assert x.shape == (3, len(FEATURES)) and (x[:, 0] == 1.0).all()
    # "default" asks for a value; no candidate holds a digit, so that feature is 0 throughout.
    assert (x[:, FEATURES.index("value_asked_and_digit")] == 0.0).all()


def test_compare_fits_on_some_rows_and_reports_every_scorer_on_others() -> None:
    train = [
        _row(
            f"What is the default timeout {n}?", ["x 1", "y 2", "z 3"], [n % 3 == i for i in range(3)], [1.0, 2.0, 3.0]
        )
        for n in range(12)
    ]
    report = compare(train, train[:3])
    assert set(report["weights"]) == set(FEATURES)
    assert {"default@1", "learned@3", "coverage@1"} <= set(report["test"])
    assert report["test"]["evidence_in_pool"] == 3


def test_model_choices_asks_over_http_for_the_rankers_best_and_counts_what_it_names() -> None:
    """`choose` replayed on recorded pools, against a real OpenAI-compatible server on loopback (its choice: the
    listed sentence sharing most words with the question)."""
    texts = ["Logs are rotated daily.", "The request timeout defaults to 30 seconds.", "Timeouts are logged."]
    answered = _row("What does the request timeout default to?", texts, [False, True, False], [3.0, 2.0, 1.0])
    missed = {**_row("Which port?", texts, [False, False, False], [3.0, 2.0, 1.0]), "id": "q2"}
    with loopback_llm() as llm:
        report = model_choices([answered, missed], llm.api_base, "loopback")
        [body] = llm.bodies  # a question whose evidence is not among the best is not asked
    assert "[2] The request timeout defaults to 30 seconds." in body["messages"][-1]["content"]
    assert (report["questions"], report["ranker_first"], report["model_choice"]) == (1, 0, 1)
    assert report["by_corpus"] == {"c": {"ranker_hit": 0, "hit": 1}}
