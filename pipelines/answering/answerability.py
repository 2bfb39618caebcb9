"""Does the answer answer the question, or do its sentences only share the question's words? (`answer_gate`)

The extractive answer quotes the sentences that cover most of the question's words. When the passages are about
something else that happens to use those words (a question the documents do not answer, or one that retrieval
missed), the best-covering sentences are still quoted, and the reply reads as an answer that is not one. Word
overlap cannot tell the two apart; a cross-encoder, which reads the question beside each sentence, can.

The gate reads the sentences the answer is about to say. When the packaged cross-encoder scores every one of
them below `MIN_LOGIT`, none answers the question and the reply is `no_answer`. Reading only the answer's own
sentences (one to three) costs 30 to 45 ms a reply on 2 cores; reading every qualifying sentence and its
neighbours (seven on average on XQuAD) abstained less at the same threshold.

`MIN_LOGIT` was chosen on XQuAD English's tuning half (`pipelines.golden_sets.half_of` of each question's id),
questions on Wikipedia paragraphs, not on our golden sets: each question answered once from its article's
paragraphs and once with the answering paragraph taken away (the other paragraphs share its words and do not
answer it). The rule: the highest threshold at which at most 0.5% of the questions whose answer held the
answer span lose it (`python -m evals.studies.answer_sentences gate`). The held-out half, the golden sets and
the held-out corpora say whether it holds: on documentation it declines about one useful answer for every two
junk quotes, so it is off by default (docs/decisions/answer-gate.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pipelines.answering.extractive import SentenceRanker

MIN_LOGIT = -4.0


@dataclass(frozen=True)
class GateVerdict:
    """Whether the answer's sentences answer the question, with the gate's evidence: the best one and its score."""

    answers: bool
    best_score: float | None = None  # the cross-encoder's best logit; None when the gate read nothing
    best_sentence: str | None = None
    read: int = 0  # sentences the cross-encoder read

    def as_reply(self) -> dict[str, object]:
        return {"answers": self.answers, "best_score": self.best_score, "sentences_read": self.read}


OPEN = GateVerdict(True)  # the gate is off, or had nothing to read


def judged(
    question: str, sentences: Sequence[str], ranker: SentenceRanker, min_logit: float = MIN_LOGIT
) -> GateVerdict:
    """The verdict on the sentences an answer says: open when the cross-encoder scores one of them at least
    `min_logit`; open when there are none (an empty answer is `no_answer` already)."""
    texts = list(dict.fromkeys(sentences))
    if not texts:
        return OPEN
    scores = [float(s) for s in ranker(question, texts)]
    best = max(range(len(texts)), key=lambda i: scores[i])
    return GateVerdict(scores[best] >= min_logit, round(scores[best], 3), texts[best], len(texts))
