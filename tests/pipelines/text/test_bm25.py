from __future__ import annotations

from pipelines.text.analysis import analyze, document_vector, query_vector, term_index


def test_identifiers_versions_and_config_keys_stay_whole() -> None:
    terms = analyze("Set memory_bytes in [runners.docker] since 16.11.1, using OAuth2PasswordRequestForm.")
    for whole in ("memory_bytes", "[runners.docker]", "16.11.1", "oauth2passwordrequestform"):
        assert whole in terms
    for part in ("memory", "bytes", "runners", "docker", "password", "request", "form"):
        assert part in terms
    assert "in" not in terms and "since" in terms


def test_document_vector_saturates_term_frequency() -> None:
    once = document_vector(["port"], avg_length=1)
    many = document_vector(["port"] * 10, avg_length=10)
    assert once.indices == [term_index("port")]
    assert 1.0 <= many.values[0] < 2.2  # (k1 + 1) bounds a saturated term


def test_query_vector_has_unique_terms() -> None:
    vector = query_vector("port port PORT")
    assert vector.indices == [term_index("port")] and vector.values == [1.0]
