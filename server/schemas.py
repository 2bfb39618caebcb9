"""Request and reply models of the HTTP API (they document the OpenAPI schema)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from pipelines.text.language import ISO_639_1


class QueryRequest(BaseModel):
    question: str = Field(
        min_length=1, description="The question, in plain language.", examples=["Which port does the server listen on?"]
    )
    top_k: int | None = Field(None, ge=1, le=50, description="Candidates kept after fusion (default from settings).")
    variants: dict[str, str] | None = Field(
        None,
        description="Per-request strategy per node (`{node: variant}`); an unknown one is a 400 listing the valid ones.",
        examples=[{"rerank": "none"}],
    )
    conversation_id: str | None = Field(
        None,
        pattern=r"^[0-9a-f]{32}$",
        description="Continue this conversation (the `conversation_id` of an earlier reply to this token): a "
        "follow-up is answered as the standalone question it asks in it. Unset: a new conversation starts.",
    )
    language: str | None = Field(
        None,
        pattern=r"^[A-Za-z]{2}(?:[-_][A-Za-z0-9]{2,8})?$",
        description="The question's language as an ISO 639-1 code (a region or script suffix, `pt-BR`, is "
        "dropped). The language gate judges it instead of the language detected from the words "
        "(`guardrail.language_source`: `request`); an unknown code is a 422.",
        examples=["de"],
    )

    # Strict: a JSON 19.0 is not the integer 19, nor 0 a boolean; what the schema forbids is refused (422).
    model_config = {
        "strict": True,
        "json_schema_extra": {
            "examples": [
                {"question": "Which port does the server listen on?", "top_k": 8},
                {"question": "Welchen Port nutzt der Server?", "language": "de"},
            ]
        },
    }

    @field_validator("language")
    @classmethod
    def _known_language(cls, value: str | None) -> str | None:
        return language_code(value)


def language_code(value: str | None) -> str | None:
    """An ISO 639-1 code from `de`, `pt-BR` or `zh_Hant`; a ValueError (a 422) for an unknown one."""
    if value is None:
        return None
    code = value.replace("_", "-").split("-")[0].lower()
    if code not in ISO_639_1:
        raise ValueError(f"{value!r} is not an ISO 639-1 language code")
    return code


class Citation(BaseModel):
    chunk_id: str
    document_id: str
    title: str
    anchor: str
    source_uri: str
    score: float


class Retrieved(BaseModel):
    chunk_id: str
    document_id: str
    title: str
    anchor: str
    heading_path: list[str]
    source_uri: str
    language: str | None = Field(None, description="The chunk's language (ISO code): which retrieval lane found it.")
    fused_rank: int
    fused_score: float
    dense_rank: int | None
    dense_score: float | None
    bm25_rank: int | None
    bm25_score: float | None
    rerank_score: float | None = Field(None, description="Cross-encoder probability, when the rerank node ran.")
    neighbour_of: str | None = Field(None, description="The hit this chunk neighbours, when expansion added it.")
    bridge_of: str | None = Field(
        None, description="The hit whose section heading named this chunk's bridge, when the bridge hop added it."
    )
    bridge: str | None = Field(None, description="The identifier the bridge hop found this chunk by.")


class IndexRef(BaseModel):
    content_version: str
    embedding_fingerprint: str


class QueryReply(BaseModel):
    # Extra fields the query graph adds (guardrail decision, CRAG trace, provider, ...) pass through.
    model_config = ConfigDict(extra="allow")

    # Set by the server for every reply it sends (a reply of `QueryService.answer` alone has neither).
    reply_id: str | None = Field(None, description="This reply's id: rate it with `POST /v1/feedback`.")
    conversation_id: str | None = Field(
        None, description="The conversation this reply is a turn of: send it to continue it."
    )
    standalone_question: str = Field(description="What was answered: the question, or the follow-up made standalone.")
    status: Literal["answered", "no_answer", "clarify", "refused"]
    answer: str
    citations: list[Citation]
    retrieved: list[Retrieved]
    timings_ms: dict[str, float] = Field(description="Milliseconds per DAG node, and `total`.")
    index: IndexRef
    cache: str = Field(description="`hit`, `miss` or `bypass` (cache down), or a finer kind the graph reports.")
    generator: str


class ErrorBody(BaseModel):
    code: str
    message: str


class ErrorReply(BaseModel):
    error: ErrorBody


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorReply, "description": "Unknown variant override (the message lists the valid ones)."},
    401: {"model": ErrorReply, "description": "Missing or invalid bearer token."},
    403: {"model": ErrorReply, "description": "The token lacks the scope this route needs."},
    413: {"model": ErrorReply, "description": "Question longer than the limit."},
    422: {"model": ErrorReply, "description": "Malformed request."},
    429: {
        "model": ErrorReply,
        "description": "Rate limit of the token or of the client address exceeded, or too many streams open "
        "(`too_many_streams`); see `Retry-After`.",
    },
    502: {"model": ErrorReply, "description": "The generator cited a chunk it was not given (`invalid_citation`)."},
    503: {"model": ErrorReply, "description": "A store is unavailable or no index is active."},
    504: {"model": ErrorReply, "description": "The work ran past RAGLINE_REQUEST_TIMEOUT_SECONDS (`request_timeout`)."},
}
# The question routes answer 404 for a conversation_id this token has no conversation under.
CONVERSATION_NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorReply, "description": "`unknown_conversation`: no conversation of this token has this id."},
}
# Routes that name a thing in their path (a chunk, a build, a version, a model) answer 404 when it does not exist.
NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorReply, "description": "No such thing (`not_found`) under the name in the path."},
}


class SearchRequest(BaseModel):
    model_config = ConfigDict(strict=True)  # as QueryRequest

    query: str = Field(min_length=1, description="What to search for.", examples=["dashboard port"])
    top_k: int | None = Field(None, ge=1, le=50, description="Passages returned (default from settings).")
    variants: dict[str, str] | None = Field(
        None,
        description="Per-request retrieval strategy per node (`{node: variant}`), as for `/v1/query`.",
        examples=[{"rerank": "cross_encoder"}],
    )
    language: str | None = Field(
        None,
        pattern=r"^[A-Za-z]{2}(?:[-_][A-Za-z0-9]{2,8})?$",
        description="The query's language as an ISO 639-1 code, as for `/v1/query`.",
    )

    @field_validator("language")
    @classmethod
    def _known_language(cls, value: str | None) -> str | None:
        return language_code(value)


class PassageScores(BaseModel):
    fused_score: float | None
    dense_score: float | None
    bm25_score: float | None
    rerank_score: float | None


class SearchPassage(BaseModel):
    rank: int
    chunk_id: str
    document_id: str
    title: str
    heading_path: list[str]
    anchor: str = Field(description="The section the passage best matches (the chunk's first one otherwise).")
    source_uri: str = Field(description="A link to that section: the page's URI with the anchor.")
    language: str | None
    text: str
    score: float = Field(
        description="What the passages are ranked by: the reranker's probability when it ran, else the fused score."
    )
    scores: PassageScores


class SearchReply(BaseModel):
    model_config = ConfigDict(extra="allow")

    status: Literal["ok", "refused"]
    message: str | None = Field(None, description="Why a refused query got no passages.")
    passages: list[SearchPassage]
    index: IndexRef
    timings_ms: dict[str, float]
