"""A request's conversation: the turns a follow-up is read with (`conversation_id` in the request), and the turn
its reply adds. Without an id, a reply starts a conversation; its `conversation_id` continues it."""

from __future__ import annotations

from typing import Any

import structlog
from fastapi import Request

from pipelines.adapters.conversations import ConversationStore, UnknownConversation
from pipelines.ports import StoreUnavailable
from pipelines.text.followups import Turn
from server.errors import ApiError

log = structlog.get_logger(__name__)


class RequestConversation:
    """Built before the answer (the history read, or a new id), recorded after it (`record`). Blocking: call it
    from a worker thread."""

    def __init__(self, request: Request, conversation_id: str | None) -> None:
        self.store: ConversationStore = request.app.state.conversations
        self.token_digest: str = request.state.principal.digest
        self.turns: int = request.app.state.settings.conversation_turns
        self.id = conversation_id or self.store.new_id()
        self.continued = conversation_id is not None
        self.history: list[Turn] = []

    def load(self) -> list[Turn]:
        if self.continued:
            try:
                self.history = self.store.history(self.id, self.token_digest, self.turns)
            except UnknownConversation as exc:
                raise ApiError(404, "unknown_conversation", str(exc)) from exc
            except StoreUnavailable as exc:
                raise ApiError(503, "conversations_unavailable", str(exc)) from exc
        return self.history

    def record(self, question: str, reply: dict[str, Any]) -> None:
        """Add the reply as the conversation's next turn and name the conversation in the reply. A store that
        fails now loses the turn, not the reply (logged)."""
        reply["conversation_id"] = self.id
        try:
            self.store.append(
                self.id,
                self.token_digest,
                question,
                str(reply.get("standalone_question") or question),
                str(reply.get("answer", "")),
                str(reply.get("status", "")),
            )
        except Exception as exc:  # the store failed now: the reply stands, only the thread loses the turn
            log.warning("conversation_turn_lost", conversation_id=self.id, error=str(exc)[:200])
