"""Generation nodes. `extractive` (the default, no language model) takes cited sentences from the
passages; `litellm` streams an answer from any provider through the harness (pipelines/adapters/llm_harness.py)
and validates, cites and verifies each sentence as soon as it is complete."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from hamilton.function_modifiers import config

from pipelines.adapters.llm_harness import LLMHarness
from pipelines.answering import asked
from pipelines.answering.citations import CitationError, UncitedAnswer, ValidatedSentence, markers
from pipelines.answering.extractive import SentenceRanker, extract_answer
from pipelines.answering.litellm_generator import CLARIFY, NO_ANSWER, Passage, attach_citation, build_messages, classify
from pipelines.answering.litellm_generator import sentences_as_they_complete as complete_sentences
from pipelines.retrieval.rerank import CrossEncoderReranker
from pipelines.text.analysis import Analyzer, analyzer
from pipelines.text.language import LanguageGuess
from query_graph.nodes.retrieval import Candidate
from query_graph.sink import raise_if_cancelled


@dataclass(frozen=True)
class Draft:
    """What a generator produced, before validation: text with `[C:<chunk_id>]` markers."""

    text: str
    generator: str
    kind: str = "answer"  # answer | no_answer | clarify
    provider: dict[str, Any] | None = None
    # Sentences the generator already validated while streaming (litellm), and those it dropped.
    checked: tuple[ValidatedSentence, ...] | None = None
    dropped: tuple[str, ...] = ()
    attached: int = 0  # citations attached after generation to sentences that had none
    sentence_ranker: str | None = None  # what ordered an extractive answer's sentences


@config.when(sentence_ranker="lexical")
def answer_sentence_ranker__lexical() -> SentenceRanker | None:
    """Sentences ordered by how much of the question they cover (pipelines/answering/extractive.py)."""
    return None


@config.when(sentence_ranker="cross_encoder")
def answer_sentence_ranker__cross_encoder(
    reranker: CrossEncoderReranker, guardrail_language: LanguageGuess
) -> SentenceRanker | None:
    """The packaged cross-encoder reads the question beside each sentence. It was trained on English
    only (../shared/MODELS.md): a question in another language keeps the lexical order."""
    return reranker.scores if guardrail_language.language == "en" else None


@config.when(sentence_ranker="asked")
def answer_sentence_ranker__asked(
    reranker: CrossEncoderReranker, guardrail_language: LanguageGuess
) -> SentenceRanker | None:
    """The `asked` selection (pipelines/answering/asked.py) reads the cross-encoder's score of each candidate
    as two of its features, for English questions (the cross-encoder's language); others go without."""
    return reranker.scores if guardrail_language.language == "en" else None


@config.when(answer_analyzer="plain")
def answer_words__plain() -> Analyzer:
    """Sentences and question compared word by word as written ("adding" is not "add")."""
    return analyzer("plain")


@config.when(answer_analyzer="snowball")
def answer_words__snowball() -> Analyzer:
    """Each word stemmed in its text's language, CJK text as character bigrams: the BM25 analyzer of the
    same name. Chosen on XQuAD (evals/RESULTS.md "Answer analyzer"): without it a Chinese question shares
    no word with any sentence, since a run of Han characters is one word to the plain analyzer."""
    return analyzer("snowball")


@config.when(generator="extractive")
def draft_answer__extractive(
    question: str,
    context_candidates: list[Candidate],
    answer_sentences: int,
    min_answer_score: float,
    answer_sentence_ranker: SentenceRanker | None,
    answer_words: Analyzer,
    guardrail_language: LanguageGuess,
    sentence_ranker: str = "lexical",
) -> Draft:
    """`sentence_ranker` (the graph's config): `asked` chooses the sentences by what the question asks
    (pipelines/answering/asked.py); otherwise `answer_sentence_ranker` orders them (None: by coverage)."""
    if sentence_ranker == "asked":
        text, _ = asked.answer(
            question,
            [c.chunk for c in context_candidates],
            max_sentences=answer_sentences,
            min_score=min_answer_score,
            words=answer_words,
            language=guardrail_language.language,
            ranker=answer_sentence_ranker,
        )
        return Draft(text=text, generator="extractive", kind="answer" if text else "no_answer", sentence_ranker="asked")
    text, _ = extract_answer(
        question,
        [c.chunk for c in context_candidates],
        max_sentences=answer_sentences,
        min_score=min_answer_score,
        ranker=answer_sentence_ranker,
        words=answer_words,
        language=guardrail_language.language,
    )
    ranker = "lexical" if answer_sentence_ranker is None else "cross_encoder"
    return Draft(text=text, generator="extractive", kind="answer" if text else "no_answer", sentence_ranker=ranker)


def _watched(tokens: Iterator[str], raw: list[str]) -> Iterator[str]:
    for token in tokens:
        raise_if_cancelled()
        raw.append(token)
        yield token


@config.when(generator="litellm")
def draft_answer__litellm(
    question: str,
    context_candidates: list[Candidate],
    llm_harness: LLMHarness,
    sentence_checker: Any,
    verify_min_support: float,
) -> Draft:
    """Stream the model's answer; release each sentence once it is validated (and cited) and verified."""
    if not context_candidates:
        return Draft("", "litellm", kind="no_answer")
    passages = [Passage(c.chunk.chunk_id, c.chunk.title, c.chunk.generation_text) for c in context_candidates]
    supplied = {p.chunk_id for p in passages}
    stream = llm_harness.stream(build_messages(question, passages))
    raw: list[str] = []
    released: list[ValidatedSentence] = []
    dropped: list[str] = []
    attached = 0
    kind = "answer"
    try:
        for sentence in complete_sentences(_watched(iter(stream), raw)):
            if not released and not dropped and sentence.upper().startswith((NO_ANSWER, CLARIFY)):
                kind = classify(sentence)
            if kind != "answer":
                continue  # a refusal or a clarifying question is not released sentence by sentence
            unknown = sorted({m for m in markers(sentence) if m not in supplied})
            if unknown:
                raise CitationError(unknown)
            cited = attach_citation(sentence, passages, verify_min_support)
            if cited is None:
                dropped.append(sentence)
                continue
            attached += not markers(sentence)
            checked = ValidatedSentence(cited, list(dict.fromkeys(markers(cited))))
            released.append(checked)
            sentence_checker.release(len(released) - 1, checked)
    finally:
        stream.close()
    provider = stream.provider
    info = None
    if provider is not None:
        info = {"model": provider.model, "role": provider.role, "fallback_used": provider.role == "fallback"}
        info["attempts"] = stream.attempts
    text = "".join(raw).strip()
    if kind == "answer" and not released and text:
        raise UncitedAnswer(f"none of the model's {len(dropped)} sentence(s) is supported by a supplied passage")
    if kind == "clarify":
        text = text[len(CLARIFY) :].strip() if text.upper().startswith(CLARIFY) else text
    return Draft(text, "litellm", kind, info, tuple(released), tuple(dropped), attached)
