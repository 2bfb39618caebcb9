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

from pipelines.answering.asked import asked_kinds, holds_kind
from pipelines.answering.extractive import ScoredSentence, SentenceRanker
from pipelines.answering.passage_units import CODE_SPAN, block_readings, plain
from pipelines.documents import Chunk
from pipelines.text.asks import split_asks

MIN_LOGIT = -4.0
# `answer_value=asked`: the kinds of value a question may ask for alone (pipelines/answering/asked.py `asked_kinds`)
# and be declined when the answer holds none of them.
VALUE_KINDS = frozenset({"default", "port", "number", "version", "status"})


@dataclass(frozen=True)
class GateVerdict:
    """Whether the answer's sentences answer the question, with the gate's evidence: the best one and its score."""

    answers: bool
    best_score: float | None = None  # the cross-encoder's best logit; None when the gate read nothing
    best_sentence: str | None = None
    read: int = 0  # sentences the cross-encoder read
    missing_value: tuple[str, ...] = ()  # `answer_value`: the kinds asked for that no sentence of the answer holds

    def as_reply(self) -> dict[str, object]:
        reply: dict[str, object] = {"answers": self.answers, "best_score": self.best_score, "sentences_read": self.read}
        if self.missing_value:
            reply["missing_value"] = list(self.missing_value)
        return reply


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


def value_asked(question: str) -> frozenset[str]:
    """The kinds of value the question asks for when it asks for nothing else (a default, a port, a number, a
    version, a status code: `VALUE_KINDS`), each of its asks (`split_asks`) read alone; empty for any question one of
    whose asks asks how, which, whether or where, or nothing the patterns read."""
    kinds: set[str] = set()
    for ask in split_asks(question) or [question]:
        found = asked_kinds(ask)
        if not found or not found <= VALUE_KINDS:
            return frozenset()
        kinds |= found
    return frozenset(kinds)


def value_held(question: str, used: Sequence[ScoredSentence], chunks: Sequence[Chunk]) -> GateVerdict:
    """`answer_value=asked`: the verdict on an answer to a question that asks only for a value. Open when the
    question asks for something else too, or some quoted sentence (read with the block it introduces) holds a
    value of an asked kind that the question does not name (`holds_kind`); closed, naming the kinds, otherwise: the
    passages name what was asked about without giving its value."""
    kinds = value_asked(question)
    if not kinds or not used:
        return OPEN
    for s in used:
        text = chunks[s.rank - 1].generation_text
        reading = block_readings(text).get(s.text, s.text)
        codes = [c for c in (m.group(2) for m in CODE_SPAN.finditer(text)) if plain(c) in s.text or c in s.text]
        if any(holds_kind(k, reading, question, codes, reading != s.text) for k in kinds):
            return OPEN
    return GateVerdict(False, missing_value=tuple(sorted(kinds)))
