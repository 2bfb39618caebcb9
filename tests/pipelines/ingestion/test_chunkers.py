from __future__ import annotations

import json
from dataclasses import replace

from pipelines.adapters.embedders import load_embedder
from pipelines.answering.crag import knowledge_strips
from pipelines.documents import Chunk, Document, plain_text
from pipelines.ingestion.chunkers import chunk_heading
from pipelines.ingestion.cleaners import clean_markdown

COUNT = load_embedder("bge-small-en-v1.5-int8").count_tokens


def doc(text: str, title: str = "Page") -> Document:
    clean, found = clean_markdown(text)
    return Document("a/page.md", "file:///a/page.md", clean, "h", "now", title=found or title)


def test_sections_carry_heading_path_and_anchor() -> None:
    chunks = chunk_heading(
        doc("# Top\n\nIntro text here.\n\n## Ports { #ports }\n\nPort 7420 is the default.\n"), COUNT
    )
    ports = next(c for c in chunks if "7420" in c.text)
    assert ports.heading_path == ["Top", "Ports"]
    assert ports.anchor == "ports" and ports.source_uri.endswith("#ports")
    assert ports.text.startswith("## Ports")


def test_no_chunk_exceeds_the_limit_and_code_pieces_keep_fences() -> None:
    code = "\n".join(f"print('line {i} of a rather long generated script body')" for i in range(200))
    chunks = chunk_heading(doc(f"# Code\n\n```python\n{code}\n```\n"), COUNT, target=120, limit=150, overlap=20)
    assert len(chunks) > 3
    for chunk in chunks:
        assert chunk.token_count <= 150
        body = chunk.text.split("\n", 2)[2]
        assert body.startswith("```python") and body.rstrip().endswith("```")


def test_split_table_repeats_its_header() -> None:
    rows = "\n".join(f"| key_{i} | {i} | a setting that controls behaviour number {i} |" for i in range(80))
    chunks = chunk_heading(doc(f"# Table\n\n| key | default | meaning |\n|---|---|---|\n{rows}\n"), COUNT, 120, 150, 20)
    assert len(chunks) > 2
    assert all("| key | default | meaning |" in c.text for c in chunks)


def test_every_sentence_of_a_long_section_is_kept() -> None:
    sentences = [f"Sentence number {i} talks about topic {i * 7}." for i in range(120)]
    chunks = chunk_heading(doc("# Long\n\n" + " ".join(sentences)), COUNT, target=100, limit=120, overlap=20)
    joined = " ".join(c.text for c in chunks)
    assert all(s in joined for s in sentences)
    assert all(c.token_count <= 120 for c in chunks)


def test_admonitions_front_matter_and_includes_are_cleaned() -> None:
    text = "---\ntitle: Configuring\n---\n\n# Config\n\n/// tip | Offline\nCopy the wheels.\n///\n\n{* ../src/x.py hl[3] *}\n"
    clean, title = clean_markdown(text)
    assert title == "Configuring"
    assert "**Offline:**" in clean and "Copy the wheels." in clean
    assert "///" not in clean and "{*" not in clean


LONG_PAGE = (
    "# Guide { #guide }\n\nIntro sentence one. Intro sentence two.\n\n"
    "## Setup\n\n"
    + " ".join(f"Setup step {i} configures the harbor option number {i}." for i in range(60))
    + "\n\n```python\n"
    + "\n".join(f"value_{i} = compute({i})" for i in range(40))
    + "\n```\n\n## Usage { #usage }\n\nRun `harbor sync` to upload. Then check the dashboard.\n"
)


def test_fixed_windows_overlap_stay_under_the_limit_and_lose_nothing() -> None:
    from pipelines.ingestion.chunkers import chunk_fixed
    from pipelines.ingestion.index_checks import lost_text

    page = doc(LONG_PAGE)
    chunks = chunk_fixed(page, COUNT, target=100, limit=120, overlap=20)
    assert len(chunks) > 5
    assert all(c.strategy == "fixed" and c.token_count <= 120 for c in chunks)
    # Consecutive windows share their boundary text (the overlap).
    first, second = chunks[0].text, chunks[1].text
    assert second.split()[0] in first.split()[-30:]
    # A window carries the heading in effect where it starts.
    assert chunks[0].anchor == "guide" and chunks[1].heading_path == ["Guide", "Setup"]
    assert lost_text([page], chunks)["passed"]


def test_sentence_window_indexes_small_units_with_wider_context() -> None:
    from pipelines.ingestion.chunkers import chunk_sentence_window

    page = doc(LONG_PAGE)
    chunks = chunk_sentence_window(page, COUNT, target=200, limit=250, sentences=2)
    step = next(c for c in chunks if "Setup step 10 " in c.text)
    assert step.text.count("Setup step") == 2  # two sentences indexed
    assert step.context_text is not None and step.context_text.startswith("## Setup")
    assert "Setup step 8 " in step.context_text and "Setup step 13 " in step.context_text
    assert COUNT(step.context_text) <= 200 + 10
    assert step.generation_text == step.context_text
    code = [c for c in chunks if "value_0 =" in c.text]
    assert code and code[0].text.startswith("```python")


def test_chunk_ids_are_unique_across_strategies_and_no_strategy_loses_text() -> None:
    from pipelines.ingestion.chunkers import STRATEGIES, chunk_document
    from pipelines.ingestion.index_checks import lost_text

    page = doc(LONG_PAGE)
    chunks = [c for s in STRATEGIES for c in chunk_document(page, s, COUNT, target=100, limit=120, overlap=20)]
    ids = [c.chunk_id for c in chunks]
    assert len(ids) == len(set(ids)) and {c.strategy for c in chunks} == set(STRATEGIES)
    assert lost_text([page], chunks)["passed"]
    # Break it on purpose: drop one heading chunk and the check names what went missing.
    dropped = [c for c in chunks if not (c.strategy == "heading" and "Setup step 30 " in c.text)]
    report = lost_text([page], dropped)
    assert not report["passed"] and report["examples"][0]["strategy"] == "heading"
    assert any("Setup step 30 " in e["text"] for e in report["examples"])


def test_an_unknown_strategy_is_a_clear_error() -> None:
    import pytest

    from pipelines.ingestion.chunkers import chunk_document

    with pytest.raises(ValueError, match="unknown chunk strategy 'nope'"):
        chunk_document(doc("# A\n\nText."), "nope", COUNT)


def test_an_enormous_sentence_keeps_its_place() -> None:
    from pipelines.ingestion.chunkers import _split_prose

    pieces = _split_prose("Short one. " + "word " * 30 + "end. Last.", lambda s: len(s.split()), 10)
    assert pieces[0] == "Short one." and pieces[-1].endswith("Last.")


def test_a_table_row_wider_than_its_header_allows_stays_within_the_limit() -> None:
    # GitLab's settings tables pad their header cells: header + one long row exceeded the limit.
    from pipelines.ingestion.chunkers import STRATEGIES, chunk_document
    from pipelines.ingestion.index_checks import lost_text

    # Header cells long enough that header + row cannot share a chunk; the delimiter row is padded too.
    wide = " ".join(f"column{i}" for i in range(40))
    header = f"| Setting | Description of {wide} |\n|" + "-" * 70 + "|" + "-" * 210 + "|"
    long_row = "| `output_limit` | " + " ".join(f"The limit applies to job log number {i}." for i in range(25)) + " |"
    page = doc(f"# Runners\n\n{header}\n| `name` | The runner's name. |\n{long_row}\n| `url` | The URL. |\n")
    for strategy in STRATEGIES:
        chunks = chunk_document(page, strategy, COUNT, target=100, limit=120, overlap=20)
        assert all(c.token_count <= 120 for c in chunks), strategy
        assert lost_text([page], chunks)["passed"], strategy


def test_comment_lines_in_code_fences_are_not_taken_for_headings() -> None:
    from pipelines.ingestion.chunkers import chunk_document
    from pipelines.ingestion.index_checks import lost_text

    page = doc("# Sizing\n\nSet the limits.\n\n```yaml\nresources:\n# limits:\n#   memory: 4G   # = (2 * 1.5G)\n```\n")
    chunks = chunk_document(page, "sentence_window", COUNT, target=100, limit=120, overlap=20)
    assert lost_text([page], chunks)["passed"]


def test_padded_table_delimiter_rows_are_compacted() -> None:
    clean, _ = clean_markdown("# T\n\n| a | b |\n|:-----------|-------------:|\n| 1 | 2 |\n")
    assert "|:---|---:|" in clean.replace(" ", "")


def test_a_code_line_longer_than_the_limit_is_cut_and_nothing_is_lost() -> None:
    # FastAPI's stream-data page holds a base64 image on one line: 2,512 tokens to the e5 tokenizer.
    import base64
    import hashlib

    from pipelines.ingestion.chunkers import STRATEGIES, chunk_document
    from pipelines.ingestion.index_checks import lost_text

    blob = base64.b64encode(b"".join(hashlib.sha256(bytes([i])).digest() for i in range(60))).decode()
    page = doc(f'# Stream\n\nSimulate a file.\n\n```python\nimage_base64 = "{blob}"\nprint(1)\n```\n')
    for strategy in STRATEGIES:
        chunks = chunk_document(page, strategy, COUNT, target=100, limit=120, overlap=20)
        assert all(c.token_count <= 120 for c in chunks), strategy
        assert lost_text([page], chunks)["passed"], strategy
    # Break it on purpose: drop one piece of the blob and the check notices.
    heading = chunk_document(page, "heading", COUNT, target=100, limit=120, overlap=20)
    assert len(heading) > 4
    assert not lost_text([page], heading[:2] + heading[3:])["passed"]


def test_a_prose_word_longer_than_the_limit_is_cut_and_nothing_is_lost() -> None:
    # hatch's users page: a paragraph of superscript links with no space between them, 746 tokens as one word.
    from pipelines.ingestion.chunkers import STRATEGIES, chunk_document
    from pipelines.ingestion.index_checks import lost_text

    links = "|".join(f"[{i}](https://github.com/example/project-{i}/blob/main/pyproject.toml#L1-L3)" for i in range(40))
    page = doc(f"# Users\n\n## Industry\n\nThese projects use it.\n\n<sup>[{links}]</sup> Example Corp.\n")
    for strategy in STRATEGIES:
        chunks = chunk_document(page, strategy, COUNT, target=100, limit=120, overlap=20)
        assert all(c.token_count <= 120 for c in chunks), strategy
        assert lost_text([page], chunks)["passed"], strategy


def test_heading_packed_joins_short_sections_and_keeps_long_ones_apart() -> None:
    from pipelines.ingestion.chunkers import chunk_heading_packed

    steps = "".join(f"## Step {i}\n\nRun command number {i} and check its output.\n\n" for i in range(12))
    long_section = " ".join(f"Sentence {i} about the long topic goes here." for i in range(60))
    page = doc(f"# Guide\n\nIntro.\n\n{steps}## Long\n\n{long_section}\n\n## After\n\nThe end.\n")
    heading = chunk_heading(page, COUNT, target=100, limit=120, overlap=20)
    packed = chunk_heading_packed(page, COUNT, target=100, limit=120, overlap=20)
    assert len(packed) < len(heading)
    assert all(c.token_count <= 100 or c.heading_path[-1] == "Long" for c in packed)
    first = packed[0]
    # Several short sections in one chunk, each with its own heading line; the first names the chunk.
    assert first.text.count("## Step") >= 2 and first.heading_path == ["Guide"]
    # The long section is cut as the heading strategy cuts it, never merged with its neighbours.
    longs = [c for c in packed if "long topic" in c.text]
    assert [c.text for c in longs] == [c.text for c in heading if "long topic" in c.text]
    assert all("## Step" not in c.text and "The end." not in c.text for c in longs)
    assert packed[-1].text == "## After\n\nThe end."


def test_neighbour_context_widens_what_the_generator_reads_within_the_budget() -> None:
    from pipelines.ingestion.chunkers import chunk_document

    sections = "".join(f"## Part {i}\n\nFact number {i} is stated here in a sentence.\n\n" for i in range(8))
    page = doc(f"# Guide\n\n{sections}")
    plain = chunk_document(page, "heading", COUNT, target=100, limit=120, overlap=20)
    wide = chunk_document(page, "heading", COUNT, context=60, target=100, limit=120, overlap=20)
    assert [c.text for c in wide] == [c.text for c in plain]  # the index matches the same units
    assert all(c.context_text is None for c in plain)
    middle = wide[4]
    assert middle.text in middle.generation_text and middle.generation_text != middle.text
    # Neighbours on both sides, in page order, and the whole within the budget.
    assert wide[3].text in middle.generation_text and wide[5].text in middle.generation_text
    assert middle.generation_text.index(wide[3].text) < middle.generation_text.index(wide[5].text)
    assert COUNT(middle.generation_text) <= 60 + 4
    # A budget no neighbour fits leaves the chunk alone; sentence_window keeps its own context.
    tight = chunk_document(page, "heading", COUNT, context=1, target=100, limit=120, overlap=20)
    assert all(c.context_text is None for c in tight)
    windows = chunk_document(page, "sentence_window", COUNT, context=60, target=100, limit=120, overlap=20)
    own = chunk_document(page, "sentence_window", COUNT, target=100, limit=120, overlap=20)
    assert [c.context_text for c in windows] == [c.context_text for c in own]


def test_a_packed_chunk_links_a_quote_to_its_own_section() -> None:
    from pipelines.ingestion.chunkers import chunk_heading_packed

    page = doc(
        "# Guide\n\n## Install\n\nRun the *installer* once.\n\n## Ports { #ports }\n\nPort `7420` is the default.\n"
    )
    (chunk,) = chunk_heading_packed(page, COUNT)
    assert chunk.anchor == "guide" and "## Install" in chunk.text and "## Ports" in chunk.text
    assert chunk.anchor_for("Port 7420 is the default.") == "ports"
    assert chunk.source_uri_for("Port 7420 is the default.") == "file:///a/page.md#ports"
    assert chunk.anchor_for("Run the installer once.") == "install"
    assert chunk.anchor_for("A sentence from elsewhere.") == chunk.anchor


def test_a_list_item_quoted_with_the_answers_bullet_finds_its_section() -> None:
    from pipelines.ingestion.chunkers import chunk_heading_packed

    page = doc(
        "# Guide\n\n## Install\n\nRun the installer once.\n\n## Ports { #ports }\n\n* port 7420 for the dashboard\n"
    )
    (chunk,) = chunk_heading_packed(page, COUNT)
    # The answer writes every item with "- "; the page wrote "* ", which the plain text drops.
    assert chunk.anchor_for("- port 7420 for the dashboard") == "ports"


def test_a_quote_with_a_link_or_underscore_emphasis_finds_its_section() -> None:
    from pipelines.answering.extractive import extract_answer
    from pipelines.documents import find_quote, plain_text
    from pipelines.ingestion.chunkers import chunk_heading_packed

    page = doc(
        "# Guide\n\n## Install\n\nRun the installer once on every host.\n\n## Ports { #ports }\n\n"
        "The dashboard listens on port 7420 unless [the `--port` flag](../cli.md#port) says _otherwise_.\n"
    )
    (chunk,) = chunk_heading_packed(page, COUNT)
    answer, used = extract_answer("Which port does the dashboard listen on?", [chunk])
    quote = used[0].text
    assert "7420" in answer and "](" not in quote and "_otherwise_" not in quote  # quoted as the generator does
    assert plain_text(chunk.text).find(plain_text(quote)) == -1  # not verbatim in the chunk
    assert chunk.anchor_for(quote) == "ports"
    plain = plain_text(chunk.text)
    where = find_quote(plain, "unless the --port flag says otherwise.")
    assert plain[where:].startswith("unless [the --port flag]")  # an offset in the plain text itself
    assert find_quote(plain, "a sentence that is not there") == -1 and find_quote(plain, "") == 0


OPS_PAGE = """# Operations { #operations }

## Install { #install }

Run the *installer* once on every host.

## Ports { #ports }

Port `7420` is the default for the dashboard.

## Logs { #logs }

Logs rotate every night at midnight.

## Backups { #backups }

Backups are kept for fourteen days on the archive disk.

## Upgrades { #upgrades }

Upgrade one host at a time and wait for it to rejoin.
"""
# Each section's sentence as the extractive generator quotes it (markup dropped), with its anchor.
OPS_QUOTES = {
    "install": "Run the installer once on every host.",
    "ports": "Port 7420 is the default for the dashboard.",
    "logs": "Logs rotate every night at midnight.",
    "backups": "Backups are kept for fourteen days on the archive disk.",
    "upgrades": "Upgrade one host at a time and wait for it to rejoin.",
}


def ops_chunks(strategy: str, context: int) -> list[Chunk]:
    from pipelines.ingestion.chunkers import chunk_document

    return chunk_document(doc(OPS_PAGE), strategy, COUNT, context=context, target=30, limit=60, overlap=0)


def test_a_quote_from_a_neighbour_links_to_the_neighbours_section() -> None:
    for strategy in ("heading_packed", "heading"):
        chunks = ops_chunks(strategy, context=60)
        hit = next(c for c in chunks if "7420" in c.text)
        assert hit.context_text is not None, strategy
        neighbours = [
            a for a, q in OPS_QUOTES.items() if q.split()[0] not in hit.text and q.split()[0] in hit.context_text
        ]
        assert len(neighbours) >= 2, strategy  # sentences the generator sees only through the context
        for anchor, quote in OPS_QUOTES.items():
            if plain_text(quote) in plain_text(hit.generation_text):
                assert hit.anchor_for(quote) == anchor, (strategy, quote)
                assert hit.source_uri_for(quote) == f"file:///a/page.md#{anchor}"
        assert hit.anchor_for("A sentence from elsewhere.") == hit.anchor
        # What is recorded is where each section starts in the context's plain text: offsets and anchors only.
        seen = plain_text(hit.context_text)
        for offset, anchor in hit.extra["context_sections"]:
            assert seen[offset:].startswith("#") and isinstance(anchor, str)
        assert hit.extra["context_chars"] == len(seen)


def test_context_sections_survive_the_payload_and_old_payloads_keep_the_hits_anchor() -> None:
    hit = next(c for c in ops_chunks("heading_packed", context=60) if "7420" in c.text)
    neighbour = OPS_QUOTES["backups"]
    assert neighbour.split()[0] not in hit.text and hit.anchor != "backups"
    stored = json.loads(json.dumps(hit.payload()))  # as a vector store keeps it
    assert Chunk.from_payload(stored) == hit and Chunk.from_payload(stored).anchor_for(neighbour) == "backups"
    # Small: a few bytes a section, nothing of the neighbours' text.
    added = {k: stored["extra"][k] for k in ("context_sections", "context_chars")}
    assert len(json.dumps(added)) < 24 * len(added["context_sections"]) + 24
    # An index written before the context carried its sections: it loads, and links as it did.
    old = {**stored, "extra": {k: v for k, v in stored["extra"].items() if not k.startswith("context_")}}
    assert Chunk.from_payload(old).anchor_for(neighbour) == hit.anchor
    assert Chunk.from_payload(old).anchor_for(OPS_QUOTES["logs"]) == "logs"  # its own sections still link
    # A context rewritten at query time (CRAG's strips) no longer matches the offsets: the hit's anchor.
    stripped = replace(hit, context_text=knowledge_strips("How long are backups kept?", hit.generation_text))
    assert neighbour in stripped.generation_text and stripped.anchor_for(neighbour) == hit.anchor


def test_a_context_within_one_section_records_nothing() -> None:
    long_section = " ".join(f"Sentence {i} about the long topic goes here." for i in range(40))
    chunks = chunk_heading(doc(f"# Long\n\n{long_section}\n"), COUNT, target=60, limit=80, overlap=0)
    from pipelines.ingestion.chunkers import with_neighbour_context

    wide = with_neighbour_context(chunks, 150)
    assert len(wide) > 2 and all(c.context_text is not None for c in wide)
    assert all("context_sections" not in c.extra for c in wide)
    assert wide[1].anchor_for("Sentence 0 about the long topic goes here.") == "long"
