"""The labelled pairs the citation checks are measured on (evals/verify_pairs.py)."""

from __future__ import annotations

from evals.verify_pairs import ROOT, Pair, _negate, build_pairs, lexical_at, score
from pipelines.answering.verification import support_score


def test_a_negated_sentence_reverses_its_claim() -> None:
    assert _negate("A value of 0 is forbidden.") == "A value of 0 is not forbidden."
    assert _negate("The chart doesn't have the same version.") == "The chart does have the same version."
    assert _negate("Path operations are not evaluated in order.") == "Path operations are evaluated in order."
    # "not" inside a word is no negation; a sentence with neither a negation nor an auxiliary has none.
    assert _negate("Notice that Field comes from pydantic.") is None


def test_score_counts_right_verdicts_per_kind() -> None:
    pairs = [Pair("own", "s", "p", True), Pair("own", "s", "p", True), Pair("negated", "s", "p", False)]
    report = score(pairs, [True, False, True])
    assert (report["precision"], report["recall"]) == (0.5, 0.5)
    assert report["right_by_kind"] == {"own (supported)": "1/2", "negated (unsupported)": "0/1"}


def test_the_lexical_check_on_the_golden_sets_pairs_keeps_its_measured_figures() -> None:
    # The figures of docs/decisions/verifier.md: a rule change that loses a supported
    # pair or lets a kind of unsupported pair through shows here before it shows in answers.
    pairs = build_pairs([ROOT / "golden" / "fastapi_en.jsonl", ROOT / "golden" / "gitlab_en.jsonl"], ROOT / "corpora")
    report = lexical_at(pairs, [support_score(p.sentence, p.passage) for p in pairs], 0.6)
    assert (len(pairs), report["tp"], report["fn"]) == (195, 61, 0)
    # The one pair let through: two page sentences taken as one negated claim (a server checks one at a time).
    assert report["fp"] <= 1, report["right_by_kind"]
