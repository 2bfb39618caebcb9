"""The extractive generator with neighbour context: a hit's own sentences answer before its neighbours'.

Real chunks throughout: a page cleaned and chunked by the real chunkers, token counts from the
packaged embedding model's tokenizer, neighbour context from `chunk_document(..., context=...)`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pytest

from evals.answers import quoted_in, statements
from pipelines.adapters.embedders import load_embedder
from pipelines.answering.citations import markers, validate
from pipelines.answering.crag import knowledge_strips
from pipelines.answering.extractive import (
    NEAREST,
    SentenceRanker,
    blended,
    extract_answer,
    marked_units,
    nearest,
    score_sentences,
)
from pipelines.answering.passage_units import prose_units
from pipelines.answering.sentence_vectors import closeness
from pipelines.answering.verification import check_citations
from pipelines.documents import Chunk, Document
from pipelines.ingestion.chunkers import chunk_document
from pipelines.ingestion.cleaners import clean_markdown
from pipelines.retrieval.rerank import CrossEncoderReranker
from pipelines.text.analysis import Analyzer, analyzer
from tests.pipelines.list_pages import PAGE as PAGE_WITH_LISTS

COUNT = load_embedder("bge-small-en-v1.5-int8").count_tokens

PAGE = """# Server { #server }

## Timeouts { #timeouts }

A slow request is stopped when the request timeout passes. The default request timeout is thirty seconds.

## Workers { #workers }

The RAGLINE_WORKERS variable sets the number of processes that serve requests.

## Logging { #logging }

Worker processes log how many requests they serve, with the worker number and its memory use.
"""

OWN = "The RAGLINE_WORKERS variable sets the number of processes that serve requests."
NEIGHBOUR = "Worker processes log how many requests they serve, with the worker number and its memory use."
QUESTION = "How many worker processes serve requests?"


def page_chunks(context: int, text: str = PAGE) -> list[Chunk]:
    clean, title = clean_markdown(text)
    page = Document("en/server.md", "file:///en/server.md", clean, "h", "now", title=title or "Server")
    return chunk_document(page, "heading", COUNT, context=context)


def workers_chunk(context: int, text: str = PAGE) -> Chunk:
    return next(c for c in page_chunks(context, text) if c.anchor == "workers")


def test_the_hits_own_sentence_answers_before_a_neighbour_sharing_more_question_words() -> None:
    hit = workers_chunk(context=300)
    assert hit.context_text is not None and NEIGHBOUR in hit.context_text and OWN in hit.text
    # Scored together (the rule before own-first), the neighbour's sentence wins: it has every question word.
    together = sorted(score_sentences(QUESTION, [hit]), key=lambda s: -s.score)
    assert together[0].text == NEIGHBOUR and not together[0].own

    answer, used = extract_answer(QUESTION, [hit])

    assert [s.text for s in used] == [OWN] and all(s.own for s in used)
    assert "RAGLINE_WORKERS" in answer and "memory" not in answer
    assert markers(answer) == [hit.chunk_id]
    # Every released sentence is found in (and supported by) the text the generator saw for the cited chunk.
    assert_released_quoted_and_supported(answer, hit)


def test_with_context_the_answer_is_the_one_without_it_when_the_own_text_answers() -> None:
    hit = workers_chunk(context=300)
    alone = workers_chunk(context=0)
    assert alone.context_text is None and alone.chunk_id == hit.chunk_id
    (wide, wide_used), (narrow, narrow_used) = extract_answer(QUESTION, [hit]), extract_answer(QUESTION, [alone])
    assert wide == narrow
    assert [(s.text, s.score) for s in wide_used] == [(s.text, s.score) for s in narrow_used]


def test_a_neighbour_repeating_an_own_sentence_does_not_make_it_own_twice() -> None:
    page = PAGE + "\n## Recap { #recap }\n\n" + OWN + "\n"
    hit, alone = workers_chunk(context=300, text=page), workers_chunk(context=0, text=page)
    assert hit.context_text is not None and hit.context_text.count(OWN) == 2
    assert [unit for unit, own in marked_units(hit) if own] == [unit for unit, _ in marked_units(alone)]
    (wide, wide_used), (narrow, narrow_used) = extract_answer(QUESTION, [hit]), extract_answer(QUESTION, [alone])
    assert wide == narrow and wide.count("RAGLINE_WORKERS") == 1
    assert [(s.text, s.score) for s in wide_used] == [(s.text, s.score) for s in narrow_used]


def test_the_neighbours_answer_when_no_own_sentence_does() -> None:
    hit = workers_chunk(context=300)
    question = "What is the default request timeout?"
    assert extract_answer(question, [workers_chunk(context=0)])[0] == ""  # the hit alone cannot answer

    answer, used = extract_answer(question, [hit])

    assert "thirty seconds" in answer and used and not any(s.own for s in used)
    assert set(markers(answer)) == {hit.chunk_id}  # a neighbour's sentence cites the hit it was read with
    assert all(quoted_in(s.text, [hit.generation_text]) for s in statements(answer))


def test_a_neighbours_sentence_links_to_the_neighbours_section() -> None:
    for strategy in ("heading", "heading_packed"):
        clean, title = clean_markdown(PAGE)
        page = Document("en/server.md", "file:///en/server.md", clean, "h", "now", title=title or "Server")
        # Targets small enough that each section is its own chunk, the others its context.
        chunks = chunk_document(page, strategy, COUNT, context=300, target=20, limit=40, overlap=0)
        hit = next(c for c in chunks if OWN in c.text)
        answer, used = extract_answer("What is the default request timeout?", [hit])
        assert "thirty seconds" in answer and not any(s.own for s in used), strategy
        # The quote is the Timeouts section's, read as the Workers hit's context: the link goes there.
        assert hit.anchor == "workers" and {hit.anchor_for(s.text) for s in used} == {"timeouts"}, strategy
        assert hit.source_uri_for(used[0].text) == "file:///en/server.md#timeouts"


def test_a_sentence_that_is_one_hits_own_and_anothers_neighbour_is_said_once() -> None:
    chunks = page_chunks(context=300)
    timeouts = next(c for c in chunks if c.anchor == "timeouts")
    hit = workers_chunk(context=300)
    question = "What is the default request timeout?"
    answer, used = extract_answer(question, [hit, timeouts])
    assert "thirty seconds" in answer
    # Own-first: the sentence is the timeouts chunk's own, so it cites that chunk, once.
    assert len(used) == len({s.text for s in used}) and all(s.chunk_id == timeouts.chunk_id for s in used)


def test_a_sentence_written_twice_is_said_once_and_its_place_goes_to_the_next() -> None:
    # A page that repeats a sentence (a caption under two screenshots, a note under two tables): quoted once, and the
    # place a second copy would take goes to the next best sentence.
    text = PAGE.replace(
        "The RAGLINE_WORKERS variable sets the number of processes that serve requests.",
        "The RAGLINE_WORKERS variable sets the number of processes that serve requests. Each worker serves requests "
        "on its own. The RAGLINE_WORKERS variable sets the number of processes that serve requests.",
    )
    hit = workers_chunk(context=0, text=text)
    answer, used = extract_answer(QUESTION, [hit], max_sentences=2)
    assert answer.count(OWN[:-1]) == 1
    assert [s.text for s in used] == [OWN, "Each worker serves requests on its own."]


def test_crag_strips_of_a_chunk_without_neighbours_are_all_its_own() -> None:
    alone = workers_chunk(context=0)
    stripped = replace(alone, context_text=knowledge_strips(QUESTION, alone.generation_text))
    assert stripped.context_text is not None and stripped.context_text != alone.text
    assert marked_units(stripped) and all(own for _, own in marked_units(stripped))
    assert extract_answer(QUESTION, [stripped])[0] == extract_answer(QUESTION, [alone])[0]


SERVER_FACTS = [
    "The server listens on port 7420 unless RAGLINE_PORT sets another port for the server.",
    "The server on port 7420 serves the chat page, and the server's port is printed at start-up.",
    "Old logs are deleted after fourteen days.",
]


def test_a_question_of_two_asks_gets_a_sentence_for_each_ask() -> None:
    chunk = Chunk("srv-0", "server.md", "Server", ["Server"], "", "", "heading", "en", 0, " ".join(SERVER_FACTS))
    question = "Which port does the server listen on, and how long are rotated logs kept?"
    one, _ = extract_answer(question, [chunk], max_sentences=2, each_ask=False)
    both, used = extract_answer(question, [chunk], max_sentences=2)
    # Scored as one question, the two sentences sharing most of its words both answer the port.
    assert "fourteen days" not in one and one.count("7420") == 2
    assert "7420" in both and "fourteen days" in both and len(used) == 2
    assert [s.position for s in used] == sorted(s.position for s in used)  # still in passage order
    # A question of one ask is answered as before.
    single = "Which port does the server listen on?"
    assert extract_answer(single, [chunk]) == extract_answer(single, [chunk], each_ask=False)


RETENTION = Chunk(
    "r-0", "guide/config.md", "Configuration", ["Configuration", "Retention"], "retention", "", "heading", "en", 0,
    "Harbor keeps build logs for 14 days. The `retention_days` key in `harbor.toml` changes how long logs are kept.",
)  # fmt: skip
PORTS_ZH = Chunk(
    "z-0", "zh/config.md", "配置", ["配置"], "", "", "heading", "zh", 0,
    "仪表板默认监听端口 7420。设置 HARBOR_PORT 可以换一个端口。",
)  # fmt: skip


def test_the_snowball_analyzer_matches_a_question_worded_in_other_inflections() -> None:
    question = "How long is a build log kept?"  # the page says "keeps build logs"
    plain, _ = extract_answer(question, [RETENTION], words=analyzer("plain"), language="en")
    stemmed, _ = extract_answer(question, [RETENTION], words=analyzer("snowball"), language="en")
    assert "14 days" not in plain
    assert "Harbor keeps build logs for 14 days [C:r-0]." in stemmed


def test_a_chinese_question_is_answered_from_character_bigrams() -> None:
    # To the plain analyzer a run of Han characters is one word: nothing matches, nothing is answered.
    question = "仪表板默认用哪个端口？"
    assert extract_answer(question, [PORTS_ZH], words=analyzer("plain"), language="zh") == ("", [])
    text, used = extract_answer(question, [PORTS_ZH], words=analyzer("snowball"), language="zh")
    # A Chinese sentence of few spaces is still a sentence (`words_in`), and the one that answers is quoted.
    assert text == "仪表板默认监听端口 7420 [C:z-0]。" and len(used) == 1


SETTINGS_PAGE = """# Runner settings { #settings }

## Global settings { #global }

The settings below go in the global section of the runner's configuration file.
| Setting | Description |
|---------|-------------|
| `check_interval` | How often the runner polls for new jobs, in seconds. |
| `output_limit`   | Maximum build log size in kilobytes. Default is `4096` (4 MB). |
| `shutdown_timeout` | How long a [graceful shutdown](https://example.com/shutdown) waits, in seconds. |

Change the file, then restart the runner.
"""


def section_chunk(text: str, path: str, anchor: str) -> Chunk:
    """The `heading` chunk of one section of a page, cleaned and chunked by the real code."""
    clean, title = clean_markdown(text)
    page = Document(path, f"file:///{path}", clean, "h", "now", title=title or path)
    return next(c for c in chunk_document(page, "heading", COUNT) if c.anchor == anchor)


def assert_released_quoted_and_supported(answer: str, chunk: Chunk) -> None:
    """Validation releases every sentence, each is found in the chunk's text and lexical verification supports it."""
    released, dropped = validate(answer, [chunk.chunk_id])
    assert released and not dropped
    assert all(quoted_in(s.text, [chunk.generation_text]) for s in statements(answer))
    assert all(
        c.supported
        for s in statements(answer)
        for c in check_citations(s.text, [(chunk.chunk_id, chunk.generation_text)], 0.6)
    )


def settings_chunk() -> Chunk:
    return section_chunk(SETTINGS_PAGE, "en/settings.md", "global")


def test_a_fact_kept_in_a_table_row_is_quoted_and_cited_sentence_by_sentence() -> None:
    chunk = settings_chunk()
    question = "What is the maximum build log size, and what is its default?"

    answer, used = extract_answer(question, [chunk], words=analyzer("snowball"), language="en")

    # The row reads as in the source with the markup gone: its cells joined by " | ".
    assert used[0].text == "output_limit | Maximum build log size in kilobytes. Default is 4096 (4 MB)."
    # Each sentence of the row carries the marker, so validation releases both and drops nothing.
    assert "output_limit | Maximum build log size in kilobytes [C:" in answer and "Default is 4096 (4 MB) [C:" in answer
    assert len(validate(answer, [chunk.chunk_id])[0]) >= 2
    assert_released_quoted_and_supported(answer, chunk)


def test_table_rows_are_units_and_the_header_and_rule_are_not() -> None:
    units = [unit for unit, _ in marked_units(settings_chunk())]
    # Prose with no blank line before the table stays prose; the header names columns and is left out.
    assert "The settings below go in the global section of the runner's configuration file." in units
    assert not any("Setting" in u and "Description" in u for u in units) and not any("---" in u for u in units)
    assert "shutdown_timeout | How long a graceful shutdown waits, in seconds." in units  # links keep their text
    assert "Change the file, then restart the runner." in units
    assert sum(" | " in u for u in units) == 3


CLI_PAGE = """# Command line { #cli }

## Sync { #sync }

The sync command uploads local artefacts to the registry. To upload to another registry, pass its address:

```bash
harbor sync --registry https://registry.example.com
```

The sync command prints a summary. Its output looks like this:

```console
<font color="#4E9A06">synced</font> 3 artefacts
```

The sync command retries a failed upload three times.
"""


def cli_chunk() -> Chunk:
    return section_chunk(CLI_PAGE, "en/cli.md", "sync")


def test_a_sentence_that_introduces_a_code_block_brings_the_block_cited() -> None:
    chunk = cli_chunk()
    question = "How do I upload artefacts to another registry?"

    answer, used = extract_answer(question, [chunk], words=analyzer("snowball"), language="en")

    assert "To upload to another registry, pass its address:" in [s.text for s in used]
    code = "```bash\nharbor sync --registry https://registry.example.com\n```"
    assert f"pass its address: [C:{chunk.chunk_id}].\n\n{code}\n[C:{chunk.chunk_id}]." in answer
    assert any(s.text.startswith("```bash") for s in validate(answer, [chunk.chunk_id])[0])
    assert_released_quoted_and_supported(answer, chunk)


def test_only_a_sentence_ending_in_a_colon_brings_code_and_never_rendered_html() -> None:
    chunk = cli_chunk()
    # The terminal session is introduced by a colon too, but it is HTML, not code to copy.
    answer, used = extract_answer("What does the sync command output look like?", [chunk])
    assert "Its output looks like this:" in [s.text for s in used] and "```" not in answer and "<font" not in answer
    # A placeholder in angle brackets is not HTML: that block is code to show.
    page = "# Ports { #ports }\n\nPoint the client at the server:\n\n```bash\ncurl http://<host>:7420/health\n```\n"
    ports = section_chunk(page, "en/ports.md", "ports")
    answer, _ = extract_answer("How do I point the client at the server?", [ports])
    assert "```bash\ncurl http://<host>:7420/health\n```" in answer
    # A sentence without a colon brings nothing, even right above a block.
    answer, _ = extract_answer("How many times does the sync command retry a failed upload?", [chunk])
    assert "three times" in answer and "```" not in answer


def test_crag_strips_keep_the_code_a_kept_sentence_introduces() -> None:
    chunk = cli_chunk()
    question = "How do I upload artefacts to another registry?"
    strips = knowledge_strips(question, chunk.generation_text, words=analyzer("snowball"), language="en")
    assert "```bash\nharbor sync --registry" in strips and "<font" not in strips
    stripped = replace(chunk, context_text=strips)
    answer, _ = extract_answer(question, [stripped], words=analyzer("snowball"), language="en")
    assert "pass its address: [C:" in answer and "```bash\nharbor sync --registry" in answer


def test_crag_strips_read_back_as_the_units_they_kept() -> None:
    text = "| key | meaning |\n|---|---|\n| retention_days | days build logs are kept |\n\nOld build logs are deleted at night."
    chunk = Chunk("k-0", "config.md", "Config", ["Config"], "", "", "heading", "en", 0, text)
    strips = knowledge_strips("How long are build logs kept?", text, words=analyzer("snowball"), language="en")
    # Joined by spaces, the row (no full stop) ran into the next sentence: a sentence the passage never had.
    assert prose_units(strips) == ["retention_days | days build logs are kept", "Old build logs are deleted at night."]
    answer, _ = extract_answer("How long are build logs kept?", [replace(chunk, context_text=strips)])
    assert answer and all(quoted_in(s.text, [text]) for s in statements(answer))


def test_a_sentence_that_introduces_a_list_brings_every_item_cited_on_a_line_of_its_own() -> None:
    chunk = section_chunk(PAGE_WITH_LISTS, "en/small.md", "requirements")
    answer, used = extract_answer("What are the minimum specs to run Harbor?", [chunk], words=analyzer("snowball"))
    marker = f"[C:{chunk.chunk_id}]"
    assert used[0].text == "The minimum specs with which Harbor runs are:"
    assert answer.startswith(
        f"The minimum specs with which Harbor runs are: {marker}.\n\n"
        f"- Linux-based system (ideally Debian-based) {marker}.\n"
        f"- 2 GB of RAM + 1 GB of swap {marker}.\n"
        f"- 20 GB of available storage {marker}.\n"
        f"- A storage with a good random I/O performance, in order of preference: {marker}.\n"
        f"- SSD {marker}.\n"
        f"- HDD {marker}."
    )
    assert_released_quoted_and_supported(answer, chunk)
    # An item is a unit too: a question that asks for it quotes it, and it is not said again after its list.
    answer, used = extract_answer(
        "What are the minimum specs to run Harbor, and how much available storage does it need?",
        [chunk],
        words=analyzer("snowball"),
    )
    assert "20 GB of available storage" in [s.text for s in used]
    assert answer.count("20 GB of available storage") == 1


def test_numbered_steps_come_with_the_code_of_each_step() -> None:
    chunk = section_chunk(PAGE_WITH_LISTS, "en/small.md", "ban")
    answer, _ = extract_answer("How do I configure the failed authentication ban?", [chunk], words=analyzer("snowball"))
    marker = f"[C:{chunk.chunk_id}]"
    assert (
        f"To configure the failed authentication ban: {marker}.\n\n1. Edit /etc/harbor/harbor.rb: {marker}." in answer
    )
    assert f"```ruby\nharbor['ban'] = {{ 'maxretry' => 10, 'bantime' => 3600 }}\n```\n{marker}." in answer
    assert f"1. Restart Harbor: {marker}.\n\n```shell\nsudo harbor-ctl restart\n```" in answer
    released, dropped = validate(answer, [chunk.chunk_id])
    assert not dropped and "1. Restart Harbor: " + marker + "." in [s.text for s in released]
    assert_released_quoted_and_supported(answer, chunk)


def test_crag_strips_keep_the_list_a_kept_sentence_introduces_once() -> None:
    chunk = section_chunk(PAGE_WITH_LISTS, "en/small.md", "requirements")
    question = "What are the minimum specs and storage to run Harbor?"
    strips = knowledge_strips(question, chunk.generation_text, words=analyzer("snowball"), language="en")
    assert strips.count("20 GB of available storage") == 1 and "- 2 GB of RAM" in strips
    answer, _ = extract_answer(question, [replace(chunk, context_text=strips)], words=analyzer("snowball"))
    assert "- 2 GB of RAM + 1 GB of swap [C:" in answer


def test_a_chinese_sentence_ending_in_a_full_width_colon_brings_its_code() -> None:
    page = "# 服务器 { #server }\n\n## 启动 { #start }\n\n在终端中运行以下命令来启动服务器：\n\n```bash\nharbor serve\n```\n"
    chunk = replace(section_chunk(page, "zh/server.md", "start"), language="zh")
    answer, _ = extract_answer("如何启动服务器？", [chunk], words=analyzer("snowball"), language="zh")
    assert answer.startswith("在终端中运行以下命令来启动服务器： [C:") and "```bash\nharbor serve\n```" in answer


SCHEDULE_PAGE = """# Builds { #builds }

## Schedule { #schedule }

The nightly build runs on the cron `0 3 * * *`, and it indexes the files matching `**/*.md`.
"""


def test_a_quoted_code_span_says_what_the_page_says() -> None:
    """Without its stars the cron read `0 3`, and the glob `/.md`: a quote that the page does not hold."""
    chunk = section_chunk(SCHEDULE_PAGE, "en/builds.md", "schedule")
    question = "When does the nightly build run?"
    answer, _ = extract_answer(question, [chunk], words=analyzer("snowball"), language="en")
    assert "the cron `0 3 * * *`, and it indexes the files matching `**/*.md` [C:" in answer
    assert_released_quoted_and_supported(answer, chunk)
    # CRAG's strips are the passage's units read again: the same quote, still the chunk's own sentence.
    stripped = replace(chunk, context_text=knowledge_strips(question, chunk.generation_text))
    again, used = extract_answer(question, [stripped], words=analyzer("snowball"), language="en")
    assert again == answer and all(s.own for s in used)


def test_scope_page_keeps_the_best_sentences_page_and_each_asks_own_best() -> None:
    ports = Chunk(
        "p-0", "guide/ports.md", "Ports", ["Ports"], "", "", "heading", "en", 0,
        "The dashboard listens on port 7420 by default. Set `HARBOR_PORT` to move the dashboard to another port.",
    )  # fmt: skip
    other = Chunk(
        "o-0", "guide/proxy.md", "Proxy", ["Proxy"], "", "", "heading", "en", 0,
        "A proxy in front of the dashboard can listen on another port.",
    )  # fmt: skip
    words = analyzer("snowball")
    question = "Which port does the dashboard listen on?"
    _, used = extract_answer(question, [ports, other], words=words)
    assert {s.chunk_id for s in used} == {"p-0", "o-0"}  # the other page's sentence shares the words
    paged, used = extract_answer(question, [ports, other], words=words, scope="page")
    assert {s.chunk_id for s in used} == {"p-0"} and "7420" in paged and "proxy" not in paged
    # Two asks answered on two pages: each ask's best sentence stays, whatever its page.
    two = "Which port does the dashboard listen on, and how long are build logs kept?"
    _, used = extract_answer(two, [ports, RETENTION], words=words, scope="page")
    assert {s.chunk_id for s in used} == {"p-0", "r-0"}


LIMITS = """# Limits { #limits }

Werkhaus reads a form in parts, with three limits:

- `max_part_size` - Stop parsing a form if any of its fields is larger than this many bytes. Uploaded files
  can be larger, they are written to disk instead. The default is 500kB. Raise it for long text fields.
- `max_parts` - Stop parsing a form with more fields than this. The default is 1000.

| Setting | Meaning | Default |
|---|---|---|
| `max_depth` | Stop parsing nested fields deeper than this | 8 levels |
| `max_keys` | Stop parsing a form with more keys than this | 256 keys |
"""


def test_span_paragraph_quotes_the_value_the_next_sentence_of_the_item_gives() -> None:
    chunk = page_chunks(0, LIMITS)[0]
    question = "How large can one form field be before parsing stops?"
    words = analyzer("snowball")
    alone, used = extract_answer(question, [chunk], words=words, max_sentences=1)
    assert "max_part_size" in alone and "500kB" not in alone
    answer, used = extract_answer(question, [chunk], words=words, max_sentences=3, span="paragraph")
    # The best sentence, then the item's next two in the page's order, each cited; the budget ends the item.
    assert [s.position for s in used] == [used[0].position, used[0].position + 1, used[0].position + 2]
    assert "The default is 500kB" in answer and "Raise it" not in answer and "max_parts" not in answer
    assert_released_quoted_and_supported(answer, chunk)
    # A table row is a paragraph of its own: its neighbours are other records, never its continuation.
    row, used = extract_answer("How deep can nested fields go?", [chunk], words=words, span="paragraph")
    assert "8 levels" in row and "256 keys" not in row
    try:
        extract_answer(question, [chunk], words=words, span="page")
    except ValueError as error:
        assert "sentence, paragraph" in str(error)
    else:
        raise AssertionError("an unknown span was accepted")


def test_span_continued_keeps_every_chosen_sentence_and_adds_at_most_two() -> None:
    chunk = page_chunks(0, LIMITS)[0]
    question = "How large can one form field be before parsing stops?"
    words = analyzer("snowball")
    alone, chosen = extract_answer(question, [chunk], words=words, max_sentences=1)
    answer, used = extract_answer(question, [chunk], words=words, max_sentences=1, span="continued")
    # Only the best sentence is continued, by the next two of its item, whatever `max_sentences` says.
    assert {s.text for s in chosen} < {s.text for s in used} and len(used) == len(chosen) + 2
    assert "500kB" not in alone and "The default is 500kB" in answer and "Raise it" not in answer
    # With three chosen sentences, all three stay: two more, never one of them pushed out.
    question = "What does Werkhaus stop parsing when a form field is too large?"
    _, chosen = extract_answer(question, [chunk], words=words, max_sentences=3)
    answer, used = extract_answer(question, [chunk], words=words, max_sentences=3, span="continued")
    assert len(chosen) == 3 and {s.text for s in chosen} < {s.text for s in used} and len(used) == 5
    assert "Raise it" not in answer
    assert_released_quoted_and_supported(answer, chunk)


def test_span_extended_takes_the_continuation_the_cross_encoder_reads_as_the_better_answer() -> None:
    chunk = page_chunks(0, LIMITS)[0]
    words = analyzer("snowball")
    ranker = CrossEncoderReranker("ms-marco-MiniLM-L-12-v2-int8").scores
    # Asked so that the sentence naming the setting leads by a margin: "What is the default size limit of a form
    # field?" was a near tie with "The default is 500kB.", which the int8 model broke either way on two CPU kinds.
    question = "What is the default of the setting that stops parsing a form when a field is too large?"
    alone, chosen = extract_answer(question, [chunk], words=words, ranker=ranker, max_sentences=1)
    answer, used = extract_answer(question, [chunk], words=words, ranker=ranker, max_sentences=1, span="extended")
    # The value two sentences on, past a sentence that says nothing of it; the item's last sentence stays out.
    assert "max_part_size" in alone and "500kB" not in alone
    assert [s.position for s in used] == [chosen[0].position + n for n in range(3)]
    assert "The default is 500kB" in answer and "Raise it" not in answer
    assert_released_quoted_and_supported(answer, chunk)
    # A paragraph that goes on to other subjects: the sentence that answers stays alone.
    mixed = page_chunks(0, MIXED)[0]
    question = "Which port does the dashboard listen on?"
    alone, chosen = extract_answer(question, [mixed], words=words, ranker=ranker, max_sentences=1)
    answer, used = extract_answer(question, [mixed], words=words, ranker=ranker, max_sentences=1, span="extended")
    assert "7420" in alone and (answer, used) == (alone, chosen)
    # Every chosen sentence stays whatever the ranker says; without a ranker the span is the sentence.
    question = "What is the default size limit of a form field?"
    _, chosen = extract_answer(question, [chunk], words=words, ranker=ranker, max_sentences=3)
    _, used = extract_answer(question, [chunk], words=words, ranker=ranker, max_sentences=3, span="extended")
    assert {s.text for s in chosen} <= {s.text for s in used}
    plain = extract_answer(question, [chunk], words=words, max_sentences=1)
    assert extract_answer(question, [chunk], words=words, max_sentences=1, span="extended") == plain


MIXED = """# About Harbor

The dashboard listens on port 7420 by default. Build logs are kept for 14 days. The project was started in 2019 by
a team in Berlin.
"""


UPLOADS = """# Uploads

Uploads are written to the media folder of the project before any handler reads them. A request whose body passes
the upload limit is refused with status 413 before it is read. The upload limit is 10 MB unless RAGLINE_MAX_UPLOAD
changes it. Uploaded files are scanned for viruses when the scanner is enabled. The media folder is cleaned every
night. Thumbnails are made for images only. Each upload is logged with its size and its owner.
"""


def test_pool_wide_lets_the_ranker_read_a_sentence_sharing_few_of_the_question_words() -> None:
    chunk = page_chunks(0, UPLOADS)[0]
    words = analyzer("snowball")
    cross_encoder = CrossEncoderReranker("ms-marco-MiniLM-L-12-v2-int8").scores
    read: list[str] = []

    def ranker(question: str, texts: Sequence[str]) -> Sequence[float]:
        read.extend(texts)  # the real model's scores; which sentences it was given is what the test reads
        return cross_encoder(question, texts)

    question = "How big can a file be when uploading it to the media folder?"
    coverage = {s.text: s.score for s in score_sentences(question, [chunk], words=words)}
    limit = next(text for text in coverage if "10 MB" in text)
    assert 0.05 <= coverage[limit] < 0.15 <= max(coverage.values())  # the value's sentence does not qualify alone
    narrow, _ = extract_answer(question, [chunk], words=words, ranker=ranker, pool="narrow")
    assert limit not in read and "10 MB" not in narrow
    read.clear()
    wide, _ = extract_answer(question, [chunk], words=words, ranker=ranker, pool="wide")
    assert limit in read and "10 MB" in wide
    assert_released_quoted_and_supported(wide, chunk)
    # Nothing reaching the minimum is still no answer, however wide the pool.
    assert extract_answer("Which colours can a theme use?", [chunk], words=words, ranker=ranker, pool="wide") == (
        "",
        [],
    )
    try:
        extract_answer(question, [chunk], words=words, ranker=ranker, pool="everything")
    except ValueError as error:
        assert "narrow, wide, nearest, blended" in str(error)
    else:
        raise AssertionError("an unknown pool was accepted")


def _closeness_of(question: str) -> tuple[Chunk, Analyzer, SentenceRanker, SentenceRanker, list[str]]:
    """The uploads page's chunk, the stemming analyzer, the embedding model's closeness to `question`, and the
    cross-encoder as a ranker that records the texts it was given (which sentences it read is what the tests read)."""
    chunk = page_chunks(0, UPLOADS)[0]
    cross_encoder = CrossEncoderReranker("ms-marco-MiniLM-L-12-v2-int8").scores
    embedder = load_embedder("bge-small-en-v1.5-int8")
    read: list[str] = []

    def ranker(question: str, texts: Sequence[str]) -> Sequence[float]:
        read.extend(texts)
        return cross_encoder(question, texts)

    near = closeness(embedder.embed_passages, embedder.embed_query(question), {})
    return chunk, analyzer("snowball"), near, ranker, read


def test_pool_nearest_adds_the_sentences_the_embedding_model_puts_closest() -> None:
    question = "How large may an uploaded file be?"
    chunk, words, near, ranker, read = _closeness_of(question)
    coverage = {s.text: s.score for s in score_sentences(question, [chunk], words=words)}
    limit = next(text for text in coverage if "10 MB" in text)

    narrow, _ = extract_answer(question, [chunk], words=words, ranker=ranker, pool="narrow", closeness=near)
    assert limit not in read and "10 MB" not in narrow  # its coverage is below the minimum
    assert coverage[limit] < 0.15 <= max(coverage.values())
    read.clear()
    widened, _ = extract_answer(question, [chunk], words=words, ranker=ranker, pool="nearest", closeness=near)
    assert limit in read and "10 MB" in widened
    assert_released_quoted_and_supported(widened, chunk)
    # At most `NEAREST` sentences join the pool, the closest first.
    added = nearest(
        question,
        [s for s in score_sentences(question, [chunk], words=words) if s.score >= 0.15],
        score_sentences(question, [chunk], words=words),
        near,
    )
    assert len(added) <= NEAREST and limit in [s.text for s in added]
    # Nothing reaching the minimum is still no answer, however near a sentence is.
    other = "Which colours can a theme use?"
    assert extract_answer(other, [chunk], words=words, ranker=ranker, pool="nearest", closeness=near) == ("", [])


def test_pool_blended_is_chosen_by_coverage_and_closeness_together() -> None:
    question = "How large may an uploaded file be?"
    chunk, words, near, ranker, read = _closeness_of(question)
    every = score_sentences(question, [chunk], words=words)
    limit = next(s.text for s in every if "10 MB" in s.text)

    answer, _ = extract_answer(question, [chunk], words=words, ranker=ranker, pool="blended", closeness=near)
    assert limit in read and "10 MB" in answer  # below the coverage minimum, but the closest by meaning
    assert_released_quoted_and_supported(answer, chunk)
    # The pool keeps its size: the best two by the summed z-scores hold the value's sentence, not the sentences
    # that only cover the question's words best.
    pool = blended(question, every, near, size=2)
    assert len(pool) == 2 and limit in [s.text for s in pool]
    by_coverage = sorted(every, key=lambda s: -s.score)[:2]
    assert limit not in [s.text for s in by_coverage]
    # Nothing reaching the minimum is still no answer.
    other = "Which colours can a theme use?"
    assert extract_answer(other, [chunk], words=words, ranker=ranker, pool="blended", closeness=near) == ("", [])


LIMIT = """# Forms

Form fields that are not files are read into memory, up to `MAX_FORM_MEMORY_SIZE` bytes in all. If this limit is
exceeded, the request is refused with status 413 before the view runs. Files are streamed to disk instead.

Uploaded files keep their names. They are stored in the upload folder until the request ends.
"""


def test_antecedent_brings_the_sentence_a_quoted_sentence_points_back_to() -> None:
    chunk = page_chunks(0, LIMIT)[0]
    words = analyzer("snowball")
    question = "What status does the client get when a form is refused for exceeding the limit?"
    alone, chosen = extract_answer(question, [chunk], words=words, max_sentences=1)
    assert alone.startswith("If this limit is exceeded")
    answer, used = extract_answer(question, [chunk], words=words, max_sentences=1, antecedent=True)
    # The sentence before it in its paragraph, in the page's order, cited like the rest.
    assert [s.position for s in used] == [chosen[0].position - 1, chosen[0].position]
    assert answer.startswith("Form fields that are not files") and "MAX_FORM_MEMORY_SIZE" in answer
    assert_released_quoted_and_supported(answer, chunk)
    # A sentence that does not point back, or opens its paragraph, stays alone.
    question = "Where are uploaded files stored until the request ends?"
    plain = extract_answer(question, [chunk], words=words, max_sentences=1)
    assert plain[0].startswith("They are stored") or plain[0].startswith("Uploaded files keep")
    kept = extract_answer(question, [chunk], words=words, max_sentences=2, antecedent=True)
    assert len([t for t in kept[1] if t.text.startswith("Uploaded files keep")]) == 1  # never quoted twice
    first = extract_answer("Which fields are read into memory?", [chunk], words=words, max_sentences=1)
    assert extract_answer("Which fields are read into memory?", [chunk], words=words, max_sentences=1,
                          antecedent=True) == first  # fmt: skip


EXTENSIONS = """# Templates

A template is a folder of files with placeholders. Templates can also use Jinja extensions of their own, which
the user must install before generating a project from the template. Extensions add filters and tags.

By default these are switched on in every template:

- `jinja2_time.TimeExtension`, which adds the `now` tag for the current date
- `harbor.extensions.SlugifyExtension`, which adds the `slugify` filter for project names

Template authors list any other extension they need in the template's settings file.
"""


def test_blocks_read_lets_a_sentence_be_chosen_for_the_list_it_introduces() -> None:
    chunk = page_chunks(0, EXTENSIONS)[0]
    words = analyzer("snowball")
    ranker = CrossEncoderReranker("ms-marco-MiniLM-L-12-v2-int8").scores
    question = "Which filter turns a project name into a slug, and which tag gives today's date?"
    introducer = "By default these are switched on in every template:"
    # Alone, the sentence shares no word of the question: neither coverage nor the ranker can choose it.
    for chosen_by in (None, ranker):
        _, alone = extract_answer(question, [chunk], words=words, ranker=chosen_by, max_sentences=1)
        answer, used = extract_answer(question, [chunk], words=words, ranker=chosen_by, max_sentences=1, blocks=True)
        assert introducer not in [s.text for s in alone]
        assert used[0].text == introducer
        # Quoted as always: the sentence, then its list, each item cited; the block is not said twice.
        assert "the slugify filter" in answer and answer.count("SlugifyExtension") == 1
        assert_released_quoted_and_supported(answer, chunk)


def test_with_a_ranker_asks_each_gives_each_ask_its_own_ranked_best() -> None:
    ranker = CrossEncoderReranker("ms-marco-MiniLM-L-12-v2-int8").scores
    facts = [
        SERVER_FACTS[0],
        "Behind a proxy the server still listens on port 7420 and the proxy forwards to it.",
        "Rotated logs are deleted after fourteen days.",
    ]
    chunk = Chunk("srv-0", "server.md", "Server", ["Server"], "", "", "heading", "en", 0, " ".join(facts))
    question = "Which port does the server listen on, and how long are rotated logs kept?"
    whole, _ = extract_answer(question, [chunk], max_sentences=2, ranker=ranker)
    each, used = extract_answer(question, [chunk], max_sentences=2, ranker=ranker, asks="each")
    # Read against the whole question, the ranker's two best both answer the port.
    assert "fourteen days" not in whole and whole.count("7420") == 2
    assert "7420" in each and "fourteen days" in each and len(used) == 2
    single = "Which port does the server listen on?"
    assert extract_answer(single, [chunk], ranker=ranker, asks="each") == extract_answer(single, [chunk], ranker=ranker)
    with pytest.raises(ValueError, match="answer asks"):
        extract_answer(single, [chunk], ranker=ranker, asks="every")


SETTINGS_REFERENCE = """# Configuration

`RECOVERY_CODES_N` - Sets how many codes a user gets. Each code works once and is kept hashed. Default: 5.

`TOKEN_MAX_AGE` - Specifies the lifetime of an authentication token. After that many seconds the token stops working.
Tokens never expire when it is None.
"""


def test_subject_writes_the_defined_term_before_a_later_sentence_of_its_description() -> None:
    chunk = page_chunks(0, SETTINGS_REFERENCE)[0]
    words = analyzer("snowball")
    question = "After how many seconds does a login token stop working?"
    alone, used = extract_answer(question, [chunk], words=words, max_sentences=1)
    assert alone.startswith("After that many seconds") and "TOKEN_MAX_AGE" not in alone
    answer, same = extract_answer(question, [chunk], words=words, max_sentences=1, subject=True)
    assert same == used  # the same sentence, said with its subject
    assert answer.startswith("TOKEN_MAX_AGE - After that many seconds the token stops working [C:")
    assert_released_quoted_and_supported(answer, chunk)
    # A sentence that opens its description, or names the term itself, is quoted as it is.
    first = "What does TOKEN_MAX_AGE specify?"
    assert extract_answer(first, [chunk], words=words, subject=True) == extract_answer(first, [chunk], words=words)
    # The term is said once: a later sentence after the one that opens with it follows alone.
    both, two = extract_answer(
        "How many codes does a user get, and is each code kept hashed?", [chunk], words=words, subject=True
    )
    assert [t.position for t in two] == [0, 1] and both.count("RECOVERY_CODES_N - ") == 1
    # Sentences of two descriptions: each said after its own term.
    answer, two = extract_answer(
        "Is each code kept hashed, and how long does a token work?", [chunk], words=words, subject=True
    )
    assert answer.startswith("RECOVERY_CODES_N - Each code works once") and "TOKEN_MAX_AGE - After" in answer
    assert_released_quoted_and_supported(answer, chunk)


HANDLERS_PAGE = """# Handlers

A handler that buffers records keeps them in memory until an error arrives, then writes all of them at once.
Once triggered, the buffering handler stays triggered and does not reset; it forwards every later record.
Records below the level threshold of the handler are dropped when no error happens.
"""


def test_a_chooser_picks_the_first_sentence_among_the_rankers_best_and_nothing_is_dropped() -> None:
    chunk = page_chunks(0, HANDLERS_PAGE)[0]
    words = analyzer("snowball")
    ranker = CrossEncoderReranker("ms-marco-MiniLM-L-12-v2-int8").scores
    question = "Does the buffering handler reset after it is triggered?"
    plain, used = extract_answer(question, [chunk], words=words, ranker=ranker, max_sentences=1)
    offered: list[list[str]] = []

    def last_offered(asked: str, texts: Sequence[str]) -> int:
        offered.append(list(texts))
        return len(texts) - 1  # the ranker's last: a pick it did not put first

    answer, chosen = extract_answer(
        question, [chunk], words=words, ranker=ranker, max_sentences=1, chooser=last_offered
    )
    [texts] = offered
    assert 2 <= len(texts) <= 3 and texts[0] == used[0].text  # every sentence that qualifies, the ranker's order
    assert [s.text for s in chosen] == [texts[-1], used[0].text]  # the pick first, then the answer as it was
    assert answer.startswith(texts[-1].rstrip(".")) and used[0].text.rstrip(".") in answer
    assert_released_quoted_and_supported(answer, chunk)
    # A chooser that makes no choice leaves the answer as it was.
    assert extract_answer(question, [chunk], words=words, ranker=ranker, max_sentences=1,
                          chooser=lambda q, t: None) == (plain, used)  # fmt: skip
