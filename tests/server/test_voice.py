"""Voice routes with real speech (espeak-ng) through the packaged faster-whisper base model."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.server.audio import spoken, tone_wav, transcode
from tests.server.conftest import ROOT, AppFactory

QUESTION = "Which port does the harbor dashboard listen on?"


def test_spoken_question_gets_a_cited_answer_with_its_transcript(client: TestClient) -> None:
    response = client.post("/v1/voice/query", files={"audio": ("q.wav", spoken(QUESTION), "audio/wav")}, headers=ROOT)
    assert response.status_code == 200, response.text
    body = response.json()
    transcript = body["transcript"]
    assert transcript["language"] == "en" and transcript["model"] == "whisper-base"
    assert body["guardrail"]["language"] == "en" and body["guardrail"]["language_source"] == "speech"
    assert "dashboard" in transcript["text"].lower() and "port" in transcript["text"].lower()
    assert body["status"] == "answered" and "7420" in body["answer"] and body["citations"]


def test_compressed_formats_transcribe(client: TestClient) -> None:
    ogg = transcode(spoken("The dashboard listens on port seven thousand."), "ogg", "libopus")
    response = client.post("/v1/voice/transcribe", files={"audio": ("q.ogg", ogg, "audio/ogg")}, headers=ROOT)
    assert response.status_code == 200, response.text
    assert "dashboard" in response.json()["transcript"]["text"].lower()


def test_bad_audio_is_refused_clearly(make_client: AppFactory) -> None:
    with make_client(max_audio_bytes=200_000, max_audio_seconds=2.0) as client:
        garbage = client.post(
            "/v1/voice/transcribe", files={"audio": ("q.wav", b"RIFF not audio", "audio/wav")}, headers=ROOT
        )
        assert garbage.status_code == 400 and garbage.json()["error"]["code"] == "undecodable_audio"
        too_big = client.post(
            "/v1/voice/transcribe", files={"audio": ("q.wav", b"\0" * 300_000, "audio/wav")}, headers=ROOT
        )
        assert too_big.status_code == 413 and "200000 bytes" in too_big.json()["error"]["message"]
        just_over = client.post(  # under the multipart slack: refused by the route, after parsing
            "/v1/voice/transcribe", files={"audio": ("q.wav", b"\0" * 220_000, "audio/wav")}, headers=ROOT
        )
        assert just_over.status_code == 413 and "audio exceeds the limit of 200000 bytes" in just_over.text
        too_long = client.post("/v1/voice/query", files={"audio": ("t.wav", tone_wav(3.0), "audio/wav")}, headers=ROOT)
        assert too_long.status_code == 413 and "limit is 2 s" in too_long.json()["error"]["message"]
        missing = client.post("/v1/voice/transcribe", data={"other": "x"}, headers=ROOT)
        assert missing.status_code == 422 and "audio" in missing.json()["error"]["message"]
