"""The translation table on pages chunked by the real chunkers: a translated chunk links to its original's
chunk by section anchor, else by the position of its section when both pages have the same outline."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from structlog.testing import capture_logs

from pipelines.adapters.embedders import load_embedder
from pipelines.adapters.qdrant_edge import EdgeShardIndex, EdgeShardWriter
from pipelines.documents import Chunk, Document, chunk_key
from pipelines.ingestion.build import clean_documents
from pipelines.ingestion.chunkers import chunk_document
from pipelines.ingestion.loaders import load_directory
from pipelines.retrieval.translations import Originals, OriginalsCache, Outline
from pipelines.text.analysis import SparseVector

_ANCHOR = re.compile(r"\s*\{ #[\w-]+ \}$")
COUNT = load_embedder("bge-small-en-v1.5-int8").count_tokens

# A page and its translation with the same outline (heading levels 1, 2, 2, 3, 2).
ENGLISH = """# Running the server

The server is started with the `serve` command. This page describes its options and its logs.

## Ports

The server listens on port 8600 by default. Pass another port with the option `--port` when it starts.

## Logging

The server writes its log to standard output and keeps the files of the last 14 days on disk.

### Log levels

There are 5 log levels, from debug to critical; the default is info.

## Stopping

A running server stops after 30 seconds of grace once it receives a termination signal.
"""

# Translated headings without explicit anchors: every anchor is a slug of a Spanish heading.
SPANISH = """# Ejecutar el servidor

El servidor se inicia con la orden `serve`. Esta página describe sus opciones y sus registros.

## Puertos

El servidor escucha en el puerto 8600 de forma predeterminada. Indica otro puerto con la opción `--port`
al arrancar. Si el puerto ya está ocupado por otro proceso, el servidor no arranca y lo dice en el
registro; elige entonces otro puerto libre o detén el proceso que lo ocupa antes de volver a intentarlo.
En contenedores, recuerda publicar el mismo puerto hacia fuera para que los clientes lo alcancen.

## Registro

El servidor escribe su registro en la salida estándar y guarda en disco los archivos de los últimos 14 días.

### Niveles de registro

Hay 5 niveles de registro, de depuración a crítico; el predeterminado es info.

## Detener

Un servidor en marcha se detiene tras 30 segundos de gracia cuando recibe una señal de terminación.
"""

HEADINGS = {  # each Spanish heading line and the English one it translates
    "# Ejecutar el servidor": "# Running the server",
    "## Puertos": "## Ports",
    "## Registro": "## Logging",
    "### Niveles de registro": "### Log levels",
    "## Detener": "## Stopping",
}


def build(tmp_path: Path, pages: dict[str, str], strategy: str, **sizes: int) -> list[Chunk]:
    """The pages written to a folder, loaded, cleaned and chunked as a build does; each chunk read back
    from its payload, as the table reads them from the index."""
    for name, text in pages.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    documents = clean_documents(load_directory(tmp_path, ["**/*.md"], []), root=tmp_path)
    chunks = [c for d in documents for c in chunk_document(d, strategy, COUNT, **sizes)]
    return [Chunk.from_payload(c.payload()) for c in chunks]


def original_text(table: Originals, chunks: list[Chunk], chunk: Chunk) -> str | None:
    key = table.of(chunk_key(chunk.chunk_id))
    return next((c.text for c in chunks if chunk_key(c.chunk_id) == key), None)


def holds_original_of_first_section(chunk: Chunk, original: str | None) -> bool:
    """Whether `original` holds the English section of the one the translated chunk starts with (each
    chunk of these strategies starts with its first section's heading line)."""
    heading = HEADINGS[_ANCHOR.sub("", chunk.text.split("\n", 1)[0])]
    return original is not None and heading in [_ANCHOR.sub("", line) for line in original.splitlines()]


def first_keys(chunks: list[Chunk], document_id: str) -> dict[str, str]:
    """Anchor -> key of the first chunk of the page holding it."""
    keys: dict[str, str] = {}
    for chunk in sorted((c for c in chunks if c.document_id == document_id), key=lambda c: c.position):
        keys.setdefault(chunk.anchor, chunk_key(chunk.chunk_id))
    return keys


@pytest.mark.parametrize(
    ("strategy", "sizes"),
    [
        # One chunk per section; the long Spanish section `Puertos` is cut in pieces.
        ("heading", {"target": 60, "limit": 70, "overlap": 0}),
        # Short sections packed together, the two languages packed differently.
        ("heading_packed", {"target": 90, "limit": 100, "overlap": 0}),
    ],
)
def test_a_translation_without_its_anchors_links_by_the_position_of_its_section(
    tmp_path: Path, strategy: str, sizes: dict[str, int]
) -> None:
    chunks = build(tmp_path, {"en/server.md": ENGLISH, "es/server.md": SPANISH}, strategy, **sizes)
    english = [c for c in chunks if c.language == "en"]
    spanish = [c for c in chunks if c.language == "es"]
    assert not {c.anchor for c in spanish} & {c.anchor for c in english}  # no anchor in common
    # A section cut in pieces (heading), sections packed differently (heading_packed): a chunk's place in
    # its page is not its section's place.
    assert sum(c.text.startswith("## Puertos") for c in spanish) > 1 and len(spanish) != len(english)
    table = Originals(chunks, "en")
    assert table.linked_by == {"anchor": 0, "position": len(spanish)} and table.unlinked == 0
    for chunk in spanish:
        original = original_text(table, chunks, chunk)
        assert holds_original_of_first_section(chunk, original), (chunk.text, original)


@pytest.mark.parametrize("strategy", ["heading", "heading_packed"])
@pytest.mark.parametrize(
    "changed",
    [
        SPANISH.replace("### Niveles de registro", "## Niveles de registro"),  # a level changed
        SPANISH.replace("## Detener\n", "## Detener\n\nUna sección más.\n\n## Señales\n"),  # a section added
        SPANISH.split("## Detener")[0],  # the last section not translated yet
    ],
    ids=["level", "added", "missing"],
)
def test_pages_of_different_outlines_get_no_link(tmp_path: Path, strategy: str, changed: str) -> None:
    sizes = {"target": 60, "limit": 70, "overlap": 0}
    chunks = build(tmp_path, {"en/server.md": ENGLISH, "es/server.md": changed}, strategy, **sizes)
    spanish = [c for c in chunks if c.language == "es"]
    table = Originals(chunks, "en")
    assert len(table) == 0 and table.linked_by == {"anchor": 0, "position": 0}
    assert table.unlinked == len(spanish)


def test_explicit_anchors_win_and_moved_sections_get_no_position_link(tmp_path: Path) -> None:
    english = ENGLISH.replace("## Ports", "## Ports { #ports }").replace("## Stopping", "## Stopping { #stop }")
    # Same outline; `Puertos` keeps its anchor, the other headings are slugs of their Spanish words.
    kept = SPANISH.replace("## Puertos", "## Puertos { #ports }")
    # The same outline with two sections swapped: by position `Detener` would take `Ports`' original.
    swapped = (
        SPANISH.replace("## Puertos", "## Detener { #stop }", 1)
        .replace("## Detener\n", "## Puertos { #ports }\n")
        .replace("## Registro", "## Registro { #logging-es }")
    )
    pages = {"en/server.md": english, "es/server.md": kept, "es/swapped.md": swapped, "en/swapped.md": english}
    chunks = build(tmp_path, pages, "heading", target=60, limit=70, overlap=0)
    table = Originals(chunks, "en")
    originals = first_keys(chunks, "en/server.md")
    kept_chunks = [c for c in chunks if c.document_id == "es/server.md"]
    ports = [c for c in kept_chunks if c.anchor == "ports"]
    assert len(ports) > 1 and all(table.of(chunk_key(c.chunk_id)) == originals["ports"] for c in ports)
    for chunk in kept_chunks:  # the others by position, to the original of their own section
        assert holds_original_of_first_section(chunk, original_text(table, chunks, chunk)), chunk.text
    moved = [c for c in chunks if c.document_id == "es/swapped.md"]
    moved_originals = first_keys(chunks, "en/swapped.md")
    for chunk in moved:  # the anchored sections wherever they moved; the others nowhere
        assert table.of(chunk_key(chunk.chunk_id)) == moved_originals.get(chunk.anchor), chunk.text
    linked = [c for c in moved if c.anchor in moved_originals]
    assert {c.anchor for c in linked} == {"ports", "stop"}
    assert table.linked_by == {"anchor": len(ports) + len(linked), "position": len(kept_chunks) - len(ports)}
    assert table.unlinked == len(moved) - len(linked) > 0


def test_fixed_windows_link_by_anchor_only(tmp_path: Path) -> None:
    chunks = build(tmp_path, {"en/server.md": ENGLISH, "es/server.md": SPANISH}, "fixed", target=40, limit=50)
    table = Originals(chunks, "en")
    assert len(table) == 0 and table.unlinked == sum(1 for c in chunks if c.language == "es")


def test_an_outline_lists_a_section_cut_in_pieces_once_and_headings_sharing_a_slug_twice() -> None:
    text = (
        "# Top\n\nIntro.\n\n## Long\n\n"
        + " ".join(["A sentence of some length here."] * 40)
        + "\n\n### Short\n\nEnd.\n"
    )
    page = Document("en/p.md", "file:///en/p.md", text, "h", "now", title="Top", language="en")
    chunks = chunk_document(page, "heading", COUNT, target=60, limit=70, overlap=0)
    assert len(chunks) > 4
    outline = Outline.of(reversed(chunks))  # payloads come back in any order
    assert outline.levels == (1, 2, 3) and outline.anchors == ("top", "long", "short")
    assert [outline.first[chunk_key(c.chunk_id)] for c in chunks] == [0] + [1] * (len(chunks) - 2) + [2]
    # A heading and the subheading right under it can share a slug (FastAPI's Spanish `# Códigos de Estado
    # Adicionales` over `## Códigos de estado adicionales`): two sections, not one cut in two.
    text = "# Status codes\n\nIntro.\n\n## Status codes\n\nMore.\n\n## Docs\n\nEnd.\n"
    page = Document("es/p.md", "file:///es/p.md", text, "h", "now", title="Status codes", language="es")
    outline = Outline.of(chunk_document(page, "heading", COUNT))
    assert outline.levels == (1, 2, 2) and outline.anchors == ("status-codes", "status-codes", "docs")


def test_the_table_of_a_shard_counts_its_links_and_logs_them_once(tmp_path: Path) -> None:
    sizes = {"target": 90, "limit": 100, "overlap": 0}
    chunks = build(tmp_path / "corpus", {"en/server.md": ENGLISH, "es/server.md": SPANISH}, "heading_packed", **sizes)
    writer = EdgeShardWriter(tmp_path / "shard", 4)
    writer.upsert(chunks, np.ones((len(chunks), 4)), [SparseVector([1], [1.0]) for _ in chunks])
    writer.close()
    index = EdgeShardIndex(tmp_path / "shard")
    cache = OriginalsCache()
    try:
        with capture_logs() as logs:
            table = cache.table("v-1", index, "heading_packed", "en")
            assert cache.table("v-1", index, "heading_packed", "en") is table
    finally:
        index.close()
    spanish = sum(c.language == "es" for c in chunks)
    assert len(table) == spanish and table.linked_by == {"anchor": 0, "position": spanish}
    built = [e for e in logs if e["event"] == "translation_originals_built"]
    assert built == [
        {
            "event": "translation_originals_built",
            "log_level": "info",
            "version": "v-1",
            "strategy": "heading_packed",
            "linked": spanish,
            "by_anchor": 0,
            "by_position": spanish,
            "unlinked": 0,
        }
    ]
