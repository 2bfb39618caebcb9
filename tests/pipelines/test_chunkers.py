from __future__ import annotations

from pipelines.chunkers import chunk_heading
from pipelines.cleaners import clean_markdown
from pipelines.documents import Document
from pipelines.embedders import load_embedder

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
