"""The language whisper hears steers the language gate of a spoken question (real espeak-ng speech,
the packaged whisper-base model): a sure detection outside the index is refused exactly as the typed
question is, and an unsure one is set aside for the transcript's words."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.server.audio import spoken
from tests.server.conftest import ROOT

SPANISH = "¿En qué puerto escucha el panel de control de harbor? Necesito saberlo para configurar el servidor."


def test_a_spoken_language_outside_the_index_is_refused_like_the_typed_question(client: TestClient) -> None:
    response = client.post(
        "/v1/voice/query", files={"audio": ("q.wav", spoken(SPANISH, "es", 130), "audio/wav")}, headers=ROOT
    )
    assert response.status_code == 200, response.text
    body = response.json()
    transcript = body["transcript"]
    assert transcript["language"] == "es" and transcript["language_probability"] >= 0.5, transcript
    assert body["status"] == "refused" and body["guardrail"]["rule"] == "language.unsupported"
    assert body["guardrail"]["language"] == "es" and body["guardrail"]["language_source"] == "speech"
    assert body["guardrail"]["confidence"] == round(transcript["language_probability"], 3)

    typed = client.post("/v1/query", json={"question": transcript["text"]}, headers=ROOT).json()
    assert typed["status"] == "refused" and typed["answer"] == body["answer"]
    assert typed["guardrail"]["rule"] == body["guardrail"]["rule"] and typed["guardrail"]["language_source"] == "text"


def test_an_unsure_detection_is_set_aside_for_the_words(client: TestClient) -> None:
    """Synthetic Italian fools whisper-base (it hears Japanese at about 0.16): the transcript's words decide."""
    audio = spoken("Su quale porta ascolta la dashboard di harbor?", "it", 150)
    response = client.post("/v1/voice/query", files={"audio": ("q.wav", audio, "audio/wav")}, headers=ROOT)
    assert response.status_code == 200, response.text
    body = response.json()
    probability = body["transcript"]["language_probability"]
    assert probability < 0.5, body["transcript"]
    assert body["guardrail"]["language_source"] == "text"
    assert body["guardrail"]["speech_language"] == body["transcript"]["language"]
    assert body["guardrail"]["speech_probability"] == round(probability, 4)
