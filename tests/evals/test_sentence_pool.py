"""The pool study (evals/studies/sentence_pool.py): labels, features and the first-k counts it reports."""

from __future__ import annotations

from evals.studies.sentence_pool import FEATURES, compare, features, hits, labelled


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
