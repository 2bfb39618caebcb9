"""The `strict` citation check: a claim is supported only when the passage says it, number, name and all."""

from __future__ import annotations

from evals.verify_set import load_pairs
from pipelines.answering.verification import check_strict, code_not_as_written, strict_check, support_score

PASSAGE = (
    "The dashboard listens on port 7420 by default. Set `HARBOR_PORT` to choose another port. "
    "Build logs are kept for 14 days and are not uploaded to the server."
)


def _ok(claim: str, passage: str = PASSAGE) -> bool:
    return strict_check(claim, passage)[1] is None


def test_a_quoted_sentence_and_a_shortened_one_are_supported() -> None:
    assert _ok("The dashboard listens on port 7420 by default.")
    assert _ok("The dashboard listens on port 7420.")
    assert _ok("Set `HARBOR_PORT` to choose another port [C:abc].")


def test_a_changed_number_is_rejected_and_says_which() -> None:
    score, why = strict_check("Build logs are kept for 15 days.", PASSAGE)
    assert score == 0.0 and why is not None and "15" in why
    assert not _ok("The dashboard listens on port 7421 by default.")


def test_a_negation_put_in_or_taken_out_is_rejected() -> None:
    assert not _ok("The dashboard does not listen on port 7420.")
    assert not _ok("Build logs are uploaded to the server.")
    assert _ok("Build logs are not uploaded to the server.")


def test_a_swapped_identifier_is_rejected_even_when_its_words_are_there() -> None:
    # A code span names one thing as written: `harbor_port` is another case, `--port` is no word "port".
    assert not _ok("Set `harbor_port` to choose another port.")
    assert code_not_as_written("Use `--port` to choose another port.", PASSAGE) == "--port"
    assert not _ok("Use `--port` to choose another port.")
    assert not _ok("The `Dashboard` listens on port 7420.")
    # The lexical check alone lets them through: every word is in the passage.
    assert support_score("Use `--port` to choose another port.", PASSAGE) >= 0.6


def test_a_word_the_passage_lacks_makes_the_claim_unsupported() -> None:
    # An antonym: every other word is there, which a share of words at 0.6 lets through.
    claim = "Build logs are kept for 14 days and are not downloaded to the server."
    assert support_score(claim, PASSAGE) >= 0.6 and not _ok(claim)
    [check] = check_strict(claim, [("c1", PASSAGE)])
    assert not check.supported and "content words" in check.reason and check.chunk_id == "c1"


def test_the_committed_set_loads_and_strict_keeps_its_tuning_figures() -> None:
    # evals/data/verify_pairs.jsonl made by evals/verify_set.py (seed 26); the figures of docs/benchmarks.md.
    pairs = [p for p in load_pairs() if p.half == "tuning"]
    said = [strict_check(p.claim, p.passage)[1] is None for p in pairs]
    tp = sum(s and p.supported for s, p in zip(said, pairs, strict=True))
    fp = sum(s and not p.supported for s, p in zip(said, pairs, strict=True))
    assert (len(pairs), tp, fp) == (205, 74, 0)


def test_a_quote_of_a_code_span_glued_to_its_plural_is_supported_and_a_changed_one_is_not() -> None:
    # Markdown writes "`attr.ib`s"; the answer quotes the sentence with its markup gone, "attr.ibs".
    passage = "The decorator searches the class body for instances of `attr.ib`s and collects them in order."
    quoted = "The decorator searches the class body for instances of attr.ibs and collects them in order."
    assert strict_check(quoted, passage) == (1.0, None)
    changed = "The decorator searches the class body for instances of attr.fields and collects them in order."
    assert strict_check(changed, passage)[1] is not None
