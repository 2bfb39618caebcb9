"""Voice: transcribe an uploaded clip, or transcribe it and answer the question it asks."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, File, Request, UploadFile
from starlette.concurrency import run_in_threadpool

from pipelines.adapters.model_catalogue import ModelIntegrityError
from pipelines.adapters.speech import AudioError, AudioTooLong, Transcriber, Transcript
from pipelines.settings import Settings
from server.deps import QueryScope, ServiceDep, SettingsDep, caller_access
from server.errors import ApiError
from server.observe import observe_reply
from server.routes.query import check_question
from server.schemas import ERROR_RESPONSES

router = APIRouter(prefix="/v1/voice", tags=["voice"], dependencies=[QueryScope])

VOICE_RESPONSES: dict[int | str, dict[str, Any]] = {
    **ERROR_RESPONSES,
    400: {"description": "The upload is not decodable audio (`undecodable_audio`) or has no speech."},
    413: {"description": "Audio larger than RAGLINE_MAX_AUDIO_BYTES or longer than RAGLINE_MAX_AUDIO_SECONDS."},
}
AudioField = Annotated[
    UploadFile, File(description="The spoken question: wav, mp3, ogg or webm (any format PyAV decodes).")
]


async def read_limited(request: Request, audio: UploadFile, settings: Settings) -> bytes:
    # An oversized Content-Length was refused before parsing (server/limits.py); this catches the rest.
    limit = settings.max_audio_bytes
    data = await audio.read(limit + 1)
    if len(data) > limit:
        raise ApiError(413, "audio_too_large", f"audio exceeds the limit of {limit} bytes")
    return data


async def transcribe(request: Request, audio: UploadFile, settings: Settings) -> Transcript:
    data = await read_limited(request, audio, settings)
    transcriber: Transcriber = request.app.state.transcriber
    try:
        return await run_in_threadpool(transcriber.transcribe, data, settings.max_audio_seconds)
    except AudioError as exc:
        raise ApiError(400, "undecodable_audio", str(exc)) from exc
    except AudioTooLong as exc:
        raise ApiError(413, "audio_too_long", str(exc)) from exc
    except ModelIntegrityError as exc:
        raise ApiError(503, "speech_model_unavailable", str(exc)) from exc


@router.post("/transcribe", responses=VOICE_RESPONSES)
async def voice_transcribe(request: Request, audio: AudioField, settings: SettingsDep) -> dict[str, Any]:
    """The transcript of the clip, with the detected language and the time it took."""
    return {"transcript": (await transcribe(request, audio, settings)).as_dict()}


@router.post("/query", responses=VOICE_RESPONSES)
async def voice_query(
    request: Request, audio: AudioField, service: ServiceDep, settings: SettingsDep
) -> dict[str, Any]:
    """Transcribe the clip and answer it like POST /v1/query; the reply carries the transcript. The language
    gate judges the language whisper heard when it is sure enough (`guardrail.language_source`: `speech`)."""
    transcript = await transcribe(request, audio, settings)
    if not transcript.text.strip():
        raise ApiError(400, "no_speech", "no speech was recognised in the audio")
    check_question(transcript.text, settings)
    # Whisper's language (and how sure it is) goes to the language gate instead of the transcript's words.
    reply = await run_in_threadpool(
        service.answer,
        transcript.text,
        language=transcript.language,
        language_probability=transcript.language_probability,
        access=caller_access(request),
    )
    reply = {**reply, "transcript": transcript.as_dict()}
    observe_reply(request, reply, transcript.text, "/v1/voice/query")
    return reply
