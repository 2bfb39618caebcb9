"""Verification nodes: does each cited chunk say what its sentence says?

Variants (`verify`): `off`; `lexical` (support score over content words, numbers and identifiers,
pipelines/answering/verification.py, at `verify_min_support`); `strict` (the default: `lexical` with gates, a
claim supported only when every content word, number, identifier and code span is in the passage as written
and no negation is reversed); `llm` (a yes/no judge through the litellm harness, as the model writes it);
`llm_score` (`strict`, and a claim that fails it only for a word the passage lacks, with at least
`LLM_ZONE` of its weight there, decided by the model's calibrated P(yes): paraphrases pass, a reversed fact
does not). Measured on the labelled pairs of evals/data/verify_pairs.jsonl (docs/benchmarks.md). An unsupported citation
is removed (and a sentence left with none is withheld, never cited to another passage) or flagged
(`verify_action`); either way the
reply's `verification` field lists it with the reason. Verification fails closed: a judge that
cannot be reached fails the request (503 `verification_unavailable`).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from hamilton.function_modifiers import config

from pipelines.adapters.llm_harness import GenerationUnavailable, LLMHarness
from pipelines.answering.citations import MARKER, ValidatedSentence, close_gaps, join_sentences, strip_markers
from pipelines.answering.verification import (
    LLM_MIN_YES,
    LLM_ZONE,
    STRICT_MIN_SUPPORT,
    Check,
    check_citations,
    check_strict,
    judge_score,
    judge_support,
    strict_check,
)
from pipelines.retrieval.retriever import Candidate
from query_graph.nodes.validation import ValidatedAnswer
from query_graph.sink import release


class VerificationUnavailable(RuntimeError):
    """The `llm` judge could not be reached: citations cannot be checked, so nothing is released."""


@dataclass
class SentenceChecker:
    mode: str  # off | lexical | strict | llm | llm_score
    passages: dict[str, str]
    min_support: float
    action: str  # remove | flag
    harness: LLMHarness | None = None
    _memo: dict[str, tuple[ValidatedSentence | None, list[dict[str, Any]]]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _judge(self, sentence: str, chunk_id: str) -> Check:
        assert self.harness is not None
        try:
            ok, verdict = judge_support(self.harness, sentence, self.passages[chunk_id])
        except GenerationUnavailable as exc:
            raise VerificationUnavailable(f"the verification judge failed: {exc}") from exc
        return Check(chunk_id, 1.0 if ok else 0.0, ok, "judge: yes" if ok else f"judge: {verdict[:40]}")

    def _scored(self, sentence: str, chunk_id: str) -> Check:
        """`llm_score`: `strict` first; the model is asked only of a claim that fails it for a missing word."""
        passage = self.passages[chunk_id]
        score, why = strict_check(sentence, passage)
        if why is None or not why.startswith("only") or score < LLM_ZONE:
            return Check(chunk_id, round(score, 4), why is None, why or "supported")
        assert self.harness is not None
        try:
            p_yes = judge_score(self.harness, sentence, passage)
        except GenerationUnavailable as exc:
            raise VerificationUnavailable(f"the verification judge failed: {exc}") from exc
        ok = p_yes >= LLM_MIN_YES
        return Check(chunk_id, round(p_yes, 4), ok, f"judge: P(yes) {p_yes:.2f}" + ("" if ok else f"; {why}"))

    def checks(self, sentence: ValidatedSentence) -> list[Check]:
        cited = [(c, self.passages[c]) for c in sentence.chunk_ids]
        if self.mode == "lexical":
            return check_citations(sentence.text, cited, self.min_support)
        if self.mode == "strict":
            return check_strict(sentence.text, cited)
        if self.mode == "llm":
            return [self._judge(sentence.text, c) for c in sentence.chunk_ids]
        if self.mode == "llm_score":
            return [self._scored(sentence.text, c) for c in sentence.chunk_ids]
        return []

    def check(self, sentence: ValidatedSentence) -> tuple[ValidatedSentence | None, list[dict[str, Any]]]:
        """(the sentence as released or None, report entries); the same sentence is checked once."""
        with self._lock:
            if sentence.text in self._memo:
                return self._memo[sentence.text]
        checks = self.checks(sentence)
        bad = [c for c in checks if not c.supported]
        report = [
            {
                "sentence": strip_markers(sentence.text),
                "chunk_id": c.chunk_id,
                "score": c.score,
                "reason": c.reason,
                "action": "removed" if self.action == "remove" else "flagged",
            }
            for c in bad
        ]
        kept: ValidatedSentence | None = sentence
        if bad and self.action == "remove":
            gone = {c.chunk_id for c in bad}
            left = [c for c in sentence.chunk_ids if c not in gone]
            text = close_gaps(MARKER.sub(lambda m: "" if m.group(1) in gone else m.group(0), sentence.text))
            # A sentence left with no supported citation is withheld: citing it to another passage afterwards
            # would be a citation nobody wrote, and the check that failed would prove nothing.
            kept = ValidatedSentence(text, left) if left else None
            if kept is None:
                for entry in report:
                    entry["action"] = "withheld"
        with self._lock:
            self._memo[sentence.text] = (kept, report)
        return kept, report

    def release(self, index: int, sentence: ValidatedSentence) -> None:
        """Check a sentence and, when it stays, hand it to a streaming caller straight away."""
        kept, _ = self.check(sentence)
        if kept is not None:
            release(index, kept)


def _passages(context_candidates: list[Candidate]) -> dict[str, str]:
    return {c.chunk.chunk_id: c.chunk.generation_text for c in context_candidates}


@config.when(verify="off")
def sentence_checker__off(context_candidates: list[Candidate], verify_action: str) -> SentenceChecker:
    return SentenceChecker("off", _passages(context_candidates), 0.0, verify_action)


@config.when(verify="lexical")
def sentence_checker__lexical(
    context_candidates: list[Candidate], verify_min_support: float, verify_action: str
) -> SentenceChecker:
    return SentenceChecker("lexical", _passages(context_candidates), verify_min_support, verify_action)


@config.when(verify="strict")
def sentence_checker__strict(context_candidates: list[Candidate], verify_action: str) -> SentenceChecker:
    return SentenceChecker("strict", _passages(context_candidates), STRICT_MIN_SUPPORT, verify_action)


@config.when(verify="llm_score")
def sentence_checker__llm_score(
    context_candidates: list[Candidate], verify_action: str, llm_harness: LLMHarness
) -> SentenceChecker:
    return SentenceChecker("llm_score", _passages(context_candidates), STRICT_MIN_SUPPORT, verify_action, llm_harness)


@config.when(verify="llm")
def sentence_checker__llm(
    context_candidates: list[Candidate], verify_action: str, llm_harness: LLMHarness
) -> SentenceChecker:
    return SentenceChecker("llm", _passages(context_candidates), 0.0, verify_action, llm_harness)


@dataclass(frozen=True)
class VerifiedAnswer:
    sentences: list[ValidatedSentence]
    report: dict[str, Any]

    @property
    def text(self) -> str:
        return join_sentences(s.text for s in self.sentences)


def verified_answer(validated_answer: ValidatedAnswer, sentence_checker: SentenceChecker) -> VerifiedAnswer:
    kept: list[ValidatedSentence] = []
    problems: list[dict[str, Any]] = []
    for index, sentence in enumerate(validated_answer.sentences):
        released, report = sentence_checker.check(sentence)
        problems.extend(report)
        if released is not None:
            kept.append(released)
            release(index, released)
    checked = sum(len(s.chunk_ids) for s in validated_answer.sentences) if sentence_checker.mode != "off" else 0
    return VerifiedAnswer(kept, {"mode": sentence_checker.mode, "checked": checked, "unsupported": problems})
