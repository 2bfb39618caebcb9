"""Generation nodes. `extractive` (the default, no language model) takes cited sentences from the
passages; `litellm` streams an answer from any provider through the harness (pipelines/adapters/llm_harness.py),
constrained to sentences with the passages they cite, and verifies each sentence as soon as it is complete."""

from __future__ import annotations

import inspect
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import numpy as np
from hamilton.function_modifiers import config

from pipelines.adapters.llm_harness import (
    GenerationUnavailable,
    LLMHarness,
    StructuredOutput,
    response_format,
    structured_output,
)
from pipelines.answering import answerability, asked
from pipelines.answering.answerability import GateVerdict
from pipelines.answering.citations import ValidatedSentence
from pipelines.answering.crag import knowledge_strips
from pipelines.answering.extractive import Chooser, ScoredSentence, SentenceRanker, answer_text, extract_answer
from pipelines.answering.litellm_generator import (
    MalformedReply,
    ModelSentence,
    Passage,
    ReplyReader,
    answer_schema,
    build_choose_messages,
    build_messages,
    build_quote_messages,
    choose_schema,
    cited_text,
    fit_passages,
    quotables,
    quote_schema,
    read_choose_reply,
    read_quote_reply,
    sentences_of,
)
from pipelines.answering.sentence_vectors import closeness, unit_headings, unit_passage_scores, vector_ranker
from pipelines.caching.embeddings import CachedVectors
from pipelines.ports import Embedder
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
    # litellm: the model's sentences withheld because no passage they cite supports them (each with why),
    # why the extractive answer replaced the model's reply (None: it did not), the kind of reply the model
    # wrote, and why the model's reply broke off after some released sentences (None: it did not).
    withheld: tuple[dict[str, Any], ...] = ()
    fallback: str | None = None
    model_kind: str | None = None
    truncated: str | None = None
    gate: GateVerdict | None = None  # the answer gate's verdict on an extractive answer (None: it did not read it)


def _english_only(reranker: CrossEncoderReranker, language: LanguageGuess) -> SentenceRanker | None:
    """The packaged cross-encoder's scores for an English question; None for any other (it was trained on
    English only, ../shared/MODELS.md)."""
    return reranker.scores if language.language == "en" else None


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
    return _english_only(reranker, guardrail_language)


@config.when(sentence_ranker="cross_encoder_vectors")
def answer_sentence_ranker__cross_encoder_vectors(
    reranker: CrossEncoderReranker,
    guardrail_language: LanguageGuess,
    embedder: Embedder,
    passage_vectors: CachedVectors,
    query_embedding: np.ndarray,
    context_candidates: list[Candidate],
) -> SentenceRanker | None:
    """The cross-encoder's reading and the embedding model's (the question's vector against each sentence under its
    heading), added as z-scores (pipelines/answering/sentence_vectors.py); English questions only, like the model."""
    return _vectors(
        reranker, guardrail_language, embedder, passage_vectors, query_embedding, context_candidates, passages=False
    )


@config.when(sentence_ranker="cross_encoder_vectors_rank")
def answer_sentence_ranker__cross_encoder_vectors_rank(
    reranker: CrossEncoderReranker,
    guardrail_language: LanguageGuess,
    embedder: Embedder,
    passage_vectors: CachedVectors,
    query_embedding: np.ndarray,
    context_candidates: list[Candidate],
) -> SentenceRanker | None:
    """`cross_encoder_vectors` with a third reading: the retrieval score of the passage each sentence comes from
    (pipelines/answering/sentence_vectors.py); English questions only."""
    return _vectors(
        reranker, guardrail_language, embedder, passage_vectors, query_embedding, context_candidates, passages=True
    )


@config.when(sentence_ranker="vectors_rank")
def answer_sentence_ranker__vectors_rank(
    guardrail_language: LanguageGuess,
    embedder: Embedder,
    passage_vectors: CachedVectors,
    query_embedding: np.ndarray,
    context_candidates: list[Candidate],
) -> SentenceRanker | None:
    """`cross_encoder_vectors_rank` without the cross-encoder: the cosine of the question and "heading: sentence"
    and the retrieval score of the sentence's passage (pipelines/answering/sentence_vectors.py); English questions
    only, as the other vector rankers, so the variants differ in one reading."""
    return _vectors(
        None, guardrail_language, embedder, passage_vectors, query_embedding, context_candidates, passages=True
    )


def _vectors(
    reranker: CrossEncoderReranker | None,
    language: LanguageGuess,
    embedder: Embedder,
    passage_vectors: CachedVectors,
    query_embedding: np.ndarray,
    candidates: list[Candidate],
    passages: bool,
) -> SentenceRanker | None:
    """The vector ranker over these passages' sentences, with their passages' fused scores when `passages`, and
    the cross-encoder's reading unless `reranker` is None; English questions only, as the cross-encoder. The
    sentences' vectors come from the embedding cache where the build stored them (`passage_vectors`)."""
    if language.language != "en":
        return None
    cross_encoder = None if reranker is None else _english_only(reranker, language)
    headings = unit_headings([c.chunk for c in candidates])
    scores = unit_passage_scores([(c.chunk, c.fused_score) for c in candidates]) if passages else None
    embed = partial(passage_vectors.vectors, embedder)
    return vector_ranker(cross_encoder, embed, query_embedding, headings, scores)


def answer_closeness(
    guardrail_language: LanguageGuess,
    embedder: Embedder,
    passage_vectors: CachedVectors,
    query_embedding: np.ndarray,
    context_candidates: list[Candidate],
    answer_pool: str = "narrow",  # the variant (graph config)
) -> SentenceRanker | None:
    """With `answer_pool=nearest` or `blended`, how close the embedding model puts each sentence (under its heading)
    to the question: the pool adds the closest sentences whatever their coverage, or is chosen by coverage and
    closeness together (pipelines/answering/extractive.py); English questions only, as the vector rankers it joins.
    None otherwise: the pool is chosen by coverage alone."""
    if answer_pool not in ("nearest", "blended") or guardrail_language.language != "en":
        return None
    headings = unit_headings([c.chunk for c in context_candidates])
    return closeness(partial(passage_vectors.vectors, embedder), query_embedding, headings)


@config.when(sentence_ranker="asked")
def answer_sentence_ranker__asked(
    reranker: CrossEncoderReranker, guardrail_language: LanguageGuess
) -> SentenceRanker | None:
    """The `asked` selection (pipelines/answering/asked.py) reads the cross-encoder's score of each candidate
    as two of its features, for English questions (the cross-encoder's language); others go without."""
    return _english_only(reranker, guardrail_language)


@config.when(answer_gate="off")
def answer_gate_ranker__off() -> SentenceRanker | None:
    """The extractive answer is said as chosen."""
    return None


@config.when(answer_gate="cross_encoder")
def answer_gate_ranker__cross_encoder(
    reranker: CrossEncoderReranker, guardrail_language: LanguageGuess
) -> SentenceRanker | None:
    """The packaged cross-encoder reads the question beside each sentence the answer would say
    (pipelines/answering/answerability.py); English questions only, like the model."""
    return _english_only(reranker, guardrail_language)


@config.when(answer_analyzer="plain")
def answer_words__plain() -> Analyzer:
    """Sentences and question compared word by word as written ("adding" is not "add")."""
    return analyzer("plain")


@config.when(answer_analyzer="snowball")
def answer_words__snowball() -> Analyzer:
    """Each word stemmed in its text's language, CJK text as character bigrams: the BM25 analyzer of the
    same name. Chosen on XQuAD (`ragline eval sentences --analyzers snowball`): without it a Chinese question shares
    no word with any sentence, since a run of Han characters is one word to the plain analyzer."""
    return analyzer("snowball")


@config.when(generator="extractive")
def draft_answer__extractive(
    question: str,
    context_candidates: list[Candidate],
    answer_sentences: int,
    min_answer_score: float,
    answer_sentence_ranker: SentenceRanker | None,
    answer_gate_ranker: SentenceRanker | None,
    answer_words: Analyzer,
    guardrail_language: LanguageGuess,
    answer_closeness: SentenceRanker | None = None,  # the `nearest` or `blended` pool's closeness (None: not read)
    sentence_ranker: str = "lexical",  # the variant (graph config)
    answer_scope: str = "passages",  # the variant (graph config)
    answer_span: str = "extended",  # the variant (graph config)
    answer_pool: str = "narrow",  # the variant (graph config)
    answer_antecedent: str = "off",  # the variant (graph config)
    answer_blocks: str = "read",  # the variant (graph config)
    answer_asks: str = "each",  # the variant (graph config)
    answer_subject: str = "off",  # the variant (graph config)
    answer_value: str = "off",  # the variant (graph config)
) -> Draft:
    """`sentence_ranker` (the graph's config): `asked` chooses the sentences by what the question asks
    (pipelines/answering/asked.py); otherwise `answer_sentence_ranker` orders them (None: by coverage).
    `answer_gate_ranker`: when given, the chosen sentences must answer the question by its score
    (pipelines/answering/answerability.py), or the reply is `no_answer`; `answer_value=asked`: a question that asks
    only for a value must get a sentence that holds one (`value_held`), or the reply is `no_answer`.
    `answer_closeness`: with `answer_pool=nearest` or `blended`, the embedding model's closeness that widens or chooses
    the ranker's pool."""
    return _extractive_draft(**locals())


def _extractive_draft(
    question: str,
    context_candidates: list[Candidate],
    answer_sentences: int,
    min_answer_score: float,
    answer_sentence_ranker: SentenceRanker | None,
    answer_gate_ranker: SentenceRanker | None,
    answer_words: Analyzer,
    guardrail_language: LanguageGuess,
    answer_closeness: SentenceRanker | None = None,  # the `nearest` or `blended` pool's closeness (None: not read)
    sentence_ranker: str = "lexical",  # the variant (graph config)
    answer_scope: str = "passages",  # the variant (graph config)
    answer_span: str = "extended",  # the variant (graph config)
    answer_pool: str = "narrow",  # the variant (graph config)
    answer_antecedent: str = "off",  # the variant (graph config)
    answer_blocks: str = "read",  # the variant (graph config)
    answer_asks: str = "each",  # the variant (graph config)
    answer_subject: str = "off",
    answer_value: str = "off",
    chooser: Chooser | None = None,
) -> Draft:
    """The extractive answer (`draft_answer__extractive`); `chooser` picks its first sentence among the sentence
    ranker's best (`llm_answer=choose`, `_chosen_draft`)."""
    chunks = [c.chunk for c in context_candidates]
    if sentence_ranker == "asked":
        ranker = "asked"
        text, used = asked.answer(
            question,
            chunks,
            max_sentences=answer_sentences,
            min_score=min_answer_score,
            words=answer_words,
            language=guardrail_language.language,
            ranker=answer_sentence_ranker,
        )
    else:
        ranker = "lexical" if answer_sentence_ranker is None else sentence_ranker
        text, used = extract_answer(
            question,
            chunks,
            max_sentences=answer_sentences,
            min_score=min_answer_score,
            ranker=answer_sentence_ranker,
            words=answer_words,
            language=guardrail_language.language,
            scope=answer_scope,
            span=answer_span,
            pool=answer_pool,
            antecedent=answer_antecedent == "on",
            blocks=answer_blocks == "read",
            asks=answer_asks,
            subject=answer_subject == "term",
            chooser=chooser,
            closeness=answer_closeness,
        )
    gate = None
    if answer_gate_ranker is not None and text:
        gate = answerability.judged(question, [s.text for s in used], answer_gate_ranker)
        if not gate.answers:
            text = ""
    if answer_value == "asked" and text:
        held = answerability.value_held(question, used, chunks)
        if not held.answers:
            gate, text = held, ""
    return Draft(text, "extractive", "answer" if text else "no_answer", sentence_ranker=ranker, gate=gate)


def _watched(tokens: Iterator[str], raw: list[str]) -> Iterator[str]:
    for token in tokens:
        raise_if_cancelled()
        raw.append(token)
        yield token


def _strips(question: str, candidate: Candidate, words: Analyzer) -> Passage:
    """A candidate as the model reads it: the knowledge strips of its passage (a refined context is strips
    already, and stays as it is)."""
    chunk = candidate.chunk
    text = knowledge_strips(question, chunk.generation_text, words=words, language=chunk.language)
    return Passage(chunk.chunk_id, chunk.title, text)


def _extractive_fallback(reason: str, arguments: dict[str, Any], model: Draft) -> Draft:
    """The extractive answer from the same passages, for a reply the model wrote badly, and why. The
    extractive node is called with the arguments it takes (its signature is its own)."""
    extractive = _extractive_draft(**_taken(arguments))
    return replace(
        extractive,
        generator="litellm",
        provider=model.provider,
        withheld=model.withheld,
        fallback=reason,
        model_kind=model.model_kind,
    )


def _taken(arguments: dict[str, Any]) -> dict[str, Any]:
    """The arguments of a litellm draft that the extractive answer takes (its signature is its own)."""
    takes = inspect.signature(draft_answer__extractive).parameters
    return {k: v for k, v in arguments.items() if k in takes}


def _chosen_draft(
    arguments: dict[str, Any], harness: LLMHarness, form: StructuredOutput, decline: bool = False
) -> Draft:
    """`llm_answer=choose`: the extractive answer, whose first sentence the model picks among the sentence ranker's
    best `CHOICES` (docs/decisions/llm-answer.md). The reply is one number, read whole; the sentences are the
    pages' own, cited as always, so the check has nothing to withhold. A reply that is not the JSON asked for
    leaves the extractive answer as it is, and says why; with nothing to choose between, the model is not asked.
    `choose_or_decline` (`decline`): the model may also reply that no sentence answers, and the reply is then
    `no_answer`."""
    seen: dict[str, Any] = {}

    def choose(question: str, texts: Sequence[str]) -> int | None:
        schema = response_format(choose_schema(len(texts), decline), form)
        text, seen["provider"] = _whole_reply(harness, build_choose_messages(question, texts, decline), schema)
        try:
            at = read_choose_reply(text, len(texts), decline)
        except MalformedReply as exc:
            seen["fallback"] = f"the model's reply is not the JSON asked for: {exc}"
            return None
        if at < 0:
            seen["declined"] = True
            return None
        return at

    draft = _extractive_draft(**_taken(arguments), chooser=choose)
    if seen.get("declined"):
        provider = seen.get("provider")
        return Draft(
            "", "litellm", "no_answer", provider=provider, model_kind="no_answer", sentence_ranker="llm_choice"
        )
    chose = "provider" in seen and "fallback" not in seen
    return replace(
        draft,
        generator="litellm",
        provider=seen.get("provider"),
        fallback=seen.get("fallback"),
        model_kind="answer" if chose else None,
        sentence_ranker="llm_choice" if chose else draft.sentence_ranker,
    )


def _whole_reply(
    harness: LLMHarness, messages: list[dict[str, str]], schema: dict[str, Any]
) -> tuple[str, dict[str, Any] | None]:
    """A short reply read whole (a few tokens: `quote`'s numbers, `choose`'s one), and which provider gave it."""
    stream = harness.stream(messages, response_format=schema)
    raw: list[str] = []
    try:
        for _ in _watched(iter(stream), raw):
            pass
    finally:
        stream.close()
    return "".join(raw).strip(), _provider_info(stream)


def _provider_info(stream: Any) -> dict[str, Any] | None:
    """Which provider answered (the reply's `provider`), once the stream is done; None before any answered."""
    provider = stream.provider
    if provider is None:
        return None
    role = provider.role
    return {"model": provider.model, "role": role, "fallback_used": role == "fallback", "attempts": stream.attempts}


def _quoted_draft(
    question: str,
    candidates: list[Candidate],
    passages: list[Passage],
    harness: LLMHarness,
    form: StructuredOutput,
    most: int,
    arguments: dict[str, Any],
) -> Draft:
    """The model's choice of the passages' numbered sentences, quoted as the pages write them, each cited to its
    passage (a sentence ending in a colon brings its block, as an extractive answer's does). The reply is a
    dozen tokens, read whole. A reply that is not the JSON asked for, or chooses nothing, gives the extractive
    answer, and says why; `no_answer` is the model's to give."""
    units = quotables(passages)
    if not units:
        return Draft("", "litellm", kind="no_answer")
    schema = response_format(quote_schema(len(units), most), form)
    text, info = _whole_reply(harness, build_quote_messages(question, passages, units), schema)
    model = Draft(text, "litellm", "answer", info, None, model_kind=None)
    try:
        kind, numbers = read_quote_reply(text, len(units))
    except MalformedReply as exc:
        return _extractive_fallback(f"the model's reply is not the JSON asked for: {exc}", arguments, model)
    model = replace(model, model_kind=kind)
    if kind == "no_answer":
        return replace(model, text="", kind="no_answer")
    if not numbers:
        return _extractive_fallback("the model answered with no sentence", arguments, model)
    chosen = [
        ScoredSentence(
            units[n - 1].text, candidates[units[n - 1].passage].chunk.chunk_id, units[n - 1].passage + 1, n, 0.0
        )
        for n in numbers
    ]
    return replace(model, text=answer_text(chosen, [c.chunk for c in candidates]), sentence_ranker="llm")


@config.when(generator="litellm")
def draft_answer__litellm(
    question: str,
    context_candidates: list[Candidate],
    llm_harness: LLMHarness,
    sentence_checker: Any,
    answer_words: Analyzer,
    llm_context_chars: int,
    llm_structured_output: str,
    answer_sentences: int,
    min_answer_score: float,
    answer_sentence_ranker: SentenceRanker | None,
    answer_gate_ranker: SentenceRanker | None,
    guardrail_language: LanguageGuess,
    sentence_ranker: str,
    answer_closeness: SentenceRanker | None = None,  # the `nearest` or `blended` pool's closeness (None: not read)
    llm_answer: str = "write",  # the variant (graph config)
    # The extractive answer's variants (graph config), for the fallback to answer as the request chose.
    answer_scope: str = "passages",
    answer_span: str = "extended",
    answer_pool: str = "narrow",
    answer_antecedent: str = "off",
    answer_blocks: str = "read",
    answer_asks: str = "each",
    answer_subject: str = "off",
    answer_value: str = "off",
) -> Draft:
    """`llm_answer=quote`: the model chooses which numbered sentences to quote (`_quoted_draft`). Otherwise stream the model's JSON reply (pipelines/answering/litellm_generator.py): each sentence with the passages
    it cites, released the moment its object closes and its citations pass verification. A sentence none of
    whose cited passages supports it is withheld, never cited to another passage. A reply the model wrote
    badly (not the JSON asked for, or no sentence left) gives the extractive answer instead, and says why."""
    arguments = dict(locals())
    if not context_candidates:
        return Draft("", "litellm", kind="no_answer")
    passages = fit_passages([_strips(question, c, answer_words) for c in context_candidates], llm_context_chars)
    form = structured_output(llm_structured_output)
    if llm_answer == "quote":
        return _quoted_draft(question, context_candidates, passages, llm_harness, form, answer_sentences, arguments)
    if llm_answer in ("choose", "choose_or_decline"):
        return _chosen_draft(arguments, llm_harness, form, decline=llm_answer == "choose_or_decline")
    schema = response_format(answer_schema(len(passages)), form)
    stream = llm_harness.stream(build_messages(question, passages), response_format=schema)
    raw: list[str] = []
    reader = ReplyReader()
    checked: list[ValidatedSentence] = []
    withheld: list[dict[str, Any]] = []
    waiting: list[ModelSentence] = []  # sentences read before the reply said it is an answer

    def take(sentence: ModelSentence) -> None:
        cited = cited_text(sentence, passages)
        if cited is None:
            withheld.append({"sentence": sentence.text, "sources": list(sentence.sources), "reason": "no such passage"})
            return
        whole = ValidatedSentence(*cited)
        kept, report = sentence_checker.check(whole)
        if kept is None or not set(kept.chunk_ids) <= set(whole.chunk_ids):  # a recited sentence is withheld too
            reasons = "; ".join(dict.fromkeys(r["reason"] for r in report)) or "unsupported"
            withheld.append({"sentence": sentence.text, "chunk_ids": whole.chunk_ids, "reason": reasons})
            return
        checked.append(whole)
        sentence_checker.release(len(checked) - 1, whole)

    broke: str | None = None
    try:
        for sentence in sentences_of(_watched(iter(stream), raw), reader):
            if reader.kind == "answer":
                for early in waiting:
                    take(early)
                waiting.clear()
                take(sentence)
            else:
                waiting.append(sentence)
    except GenerationUnavailable as exc:
        if not checked:
            raise  # nothing said yet: the provider's failure is a 503, as before the first token
        # Sentences already released (a stream showed them) stay; the reply says where the model stopped.
        broke = f"the model stopped before the end of its reply: {str(exc)[:120]}"
    finally:
        stream.close()
    info = _provider_info(stream)
    text = "".join(raw).strip()
    try:
        reply = reader.finish()
        kind, problem = reply["kind"], None
    except MalformedReply as exc:
        kind, problem = reader.kind or "answer", str(exc)
    model = Draft(text, "litellm", "answer", info, tuple(checked), (), 0, withheld=tuple(withheld), model_kind=kind)
    if kind == "no_answer" and problem is None:
        return replace(model, kind="no_answer", checked=())
    if kind == "clarify":
        asks = [s for s in waiting if s.text] if problem is None else []
        if asks:
            return replace(model, text=asks[0].text, kind="clarify", checked=())
        return _extractive_fallback("the model asked back but wrote no question", arguments, model)
    if kind == "answer" and reader.kind != "answer":  # the kind came last: its sentences are read now
        for early in waiting:
            take(early)
        model = replace(model, checked=tuple(checked), withheld=tuple(withheld))
    if checked:
        return replace(model, fallback=None, truncated=broke or problem)
    if problem is not None:
        return _extractive_fallback(f"the model's reply is not the JSON asked for: {problem}", arguments, model)
    if withheld:
        reason = f"none of the model's {len(withheld)} sentence(s) is supported by the passage it cites"
        return _extractive_fallback(reason, arguments, model)
    return _extractive_fallback("the model answered with no sentence", arguments, model)
