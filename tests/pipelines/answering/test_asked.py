"""The `asked` selection: the sentence that holds the asked-for value, nothing from pages it does not need,
no sentence twice, a premise corrected first, the table row with its header, no answer when nothing covers.

Real pages, cleaned and chunked by the real chunkers (token counts from the packaged embedder's tokenizer).
"""

from __future__ import annotations

from evals.answers import quoted_in, statements
from pipelines.adapters.embedders import load_embedder
from pipelines.answering import asked
from pipelines.answering.citations import markers, validate
from pipelines.answering.verification import check_citations
from pipelines.documents import Chunk, Document
from pipelines.ingestion.chunkers import chunk_document
from pipelines.ingestion.cleaners import clean_markdown
from pipelines.text.analysis import analyzer

COUNT = load_embedder("bge-small-en-v1.5-int8").count_tokens
WORDS = analyzer("snowball")

METRICS = """# Metrics { #metrics }

## Listen address { #listen-address }

The metrics server is started by the listen_address setting in the global section of the configuration file.
The listen address names the host and the port the metrics server listens on.
If the listen address does not contain a port, it defaults to 9252.

## Log size { #log-size }

| Setting | Description | Default |
|---|---|---|
| output_limit | Maximum build log size in kilobytes. | 4096 |
| log_format | The format of the runner's own log lines. | runner |
"""

PATHS = """# Path parameters { #path }

## Required { #required }

You can declare a path parameter with Path to add metadata such as a title.
A path parameter is always required as it has to be part of the path.
Declaring a default value for it has no effect.
"""

OTHER = """# Deployment { #deployment }

## Ports { #ports }

A reverse proxy listens on a port of its own and forwards requests to the metrics server and the app.
"""


def chunks_of(text: str, name: str) -> list[Chunk]:
    clean, title = clean_markdown(text)
    page = Document(f"en/{name}.md", f"file:///en/{name}.md", clean, "h", "now", title=title or name)
    return chunk_document(page, "heading", COUNT, context=0)


def said(question: str, chunks: list[Chunk]) -> tuple[str, list[asked.Candidate]]:
    picks = asked.select(question, chunks, words=WORDS, language="en")
    return asked.render(picks), picks


def test_kinds_are_read_from_the_question() -> None:
    assert "port" in asked.asked_kinds("Which port does the metrics server listen on?")
    assert "default" in asked.asked_kinds("What is the default log size?")
    assert "number" in asked.asked_kinds("How many workers serve requests?")
    assert "yesno" in asked.asked_kinds("Can a path parameter be optional?")
    assert asked.asked_kinds("What is a path parameter?") == frozenset()
    # A value the question already names is not the value it asks for.
    assert asked.holds_kind("port", "it defaults to 9252.", "Which port does it listen on?")
    assert not asked.holds_kind("port", "it listens on 9252.", "Does it listen on 9252?")


def test_the_sentence_holding_the_asked_for_port_answers_not_the_one_naming_the_setting() -> None:
    text, picks = said(
        "Which port does the metrics server listen on if listen_address has no port?", chunks_of(METRICS, "m")
    )
    assert "9252" in text
    assert any(p.sentence.text.startswith("If the listen address does not contain a port") for p in picks)


def test_a_table_row_comes_with_its_header_and_every_quote_is_in_its_chunk() -> None:
    chunks = chunks_of(METRICS, "m")
    text, _ = said("What is the default maximum build log size and which setting changes it?", chunks)
    assert "output_limit | Maximum build log size in kilobytes" in text and "4096" in text
    assert text.index("Setting | Description | Default") < text.index("output_limit")
    released, dropped = validate(text, [c.chunk_id for c in chunks])
    assert released and not dropped
    passages = {c.chunk_id: c.generation_text for c in chunks}
    for s in statements(text):
        assert quoted_in(s.text, [passages[c] for c in s.chunk_ids])
    for sentence in released:
        assert all(
            c.supported for c in check_citations(sentence.text, [(m, passages[m]) for m in markers(sentence.text)], 0.5)
        )


def test_no_sentence_twice_and_nothing_from_a_page_the_answer_does_not_need() -> None:
    metrics = chunks_of(METRICS, "m")
    twice = [*metrics, *chunks_of(METRICS, "copy")]  # the same sentences in two passages
    text, picks = said("Which port does the metrics server listen on by default?", twice + chunks_of(OTHER, "o"))
    assert text.count("it defaults to 9252") == 1
    assert len({p.document_id for p in picks}) == 1
    assert "reverse proxy" not in text


def test_a_yes_no_question_with_a_false_premise_is_corrected_first() -> None:
    text, picks = said(
        "Can I make a path parameter optional by giving it a default value with Path?", chunks_of(PATHS, "p")
    )
    assert picks and asked.NEGATION.search(picks[0].sentence.text)
    assert text.startswith(picks[0].sentence.text.rstrip("."))


def test_no_answer_when_no_sentence_covers_the_question() -> None:
    assert said("What is the boiling point of mercury in kelvin?", chunks_of(PATHS, "p")) == ("", [])


def test_with_the_cross_encoder_a_passage_that_only_shares_the_questions_words_gives_no_answer() -> None:
    from pipelines.retrieval.rerank import CrossEncoderReranker
    from pipelines.settings import Settings

    s = Settings()
    ranker = CrossEncoderReranker(s.reranker_model, s.reranker_path, s.rerank_max_tokens).scores
    chunks = chunks_of(METRICS, "m")
    port = asked.select("Which port does the metrics server listen on by default?", chunks, words=WORDS, ranker=ranker)
    assert "9252" in asked.render(port)
    # "log format" and "setting" are in the table; what it costs is nowhere.
    cost = asked.select("What does the log format setting cost per month?", chunks, words=WORDS, ranker=ranker)
    assert cost == [] and asked.select("What does the log format setting cost per month?", chunks, words=WORDS)
