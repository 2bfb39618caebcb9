"""Conversations in PostgreSQL: each turn's question, the standalone question it was answered as, and the reply,
so a follow-up is read with the turns before it. A conversation belongs to the token that started it: another
token naming its id gets the same answer as for an id that never existed. Turns older than `retention_days`
are deleted (once an hour, by the process that writes).
"""

from __future__ import annotations

import re
import time
import uuid
from typing import Any

import psycopg

from pipelines.adapters.postgres_pool import PostgresPool
from pipelines.text.followups import Turn


class UnknownConversation(LookupError):
    """No conversation has this id for this token (never started, another token's, or past retention)."""


class ConversationStore:
    def __init__(self, dsn: str, schema: str = "ragline", retention_days: float = 30.0) -> None:
        if not re.fullmatch(r"[a-z_][a-z0-9_]*", schema):
            raise ValueError(f"invalid schema name {schema!r}")
        self.dsn, self.schema, self.retention_days = dsn, schema, retention_days
        self.pool = PostgresPool(dsn, f"conversation store ({schema})", self._ensure)
        self._connect = self.pool.connection
        self._pruned_at = 0.0

    def _ensure(self, conn: psycopg.Connection[dict[str, Any]]) -> None:
        s = self.schema
        with conn.cursor() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"ragline-conversations-{s}",))
            cur.execute(f"CREATE SCHEMA IF NOT EXISTS {s}")
            cur.execute(
                f"""CREATE TABLE IF NOT EXISTS {s}.conversation_turns (
                    conversation_id text NOT NULL,
                    turn integer NOT NULL,
                    token_digest text NOT NULL,
                    question text NOT NULL,
                    standalone_question text NOT NULL,
                    answer text NOT NULL,
                    status text NOT NULL,
                    reply_id text,
                    created_at timestamptz NOT NULL DEFAULT now(),
                    PRIMARY KEY (conversation_id, turn)
                )"""
            )
            cur.execute(
                f"CREATE INDEX IF NOT EXISTS conversation_turns_created_at ON {s}.conversation_turns (created_at)"
            )
        conn.commit()

    @staticmethod
    def new_id() -> str:
        return uuid.uuid4().hex

    def history(self, conversation_id: str, token_digest: str, turns: int) -> list[Turn]:
        """The conversation's last `turns` turns, oldest first; `UnknownConversation` unless this token has one
        under this id."""
        with self._connect() as conn:
            rows = conn.execute(
                f"""SELECT question, standalone_question, answer, token_digest FROM {self.schema}.conversation_turns
                    WHERE conversation_id = %s ORDER BY turn DESC LIMIT %s""",
                (conversation_id, turns),
            ).fetchall()
        if not rows or any(row["token_digest"] != token_digest for row in rows):
            raise UnknownConversation(f"no conversation {conversation_id!r} was started with this token")
        return [Turn(row["question"], row["standalone_question"], row["answer"]) for row in reversed(rows)]

    def append(
        self,
        conversation_id: str,
        token_digest: str,
        question: str,
        standalone_question: str,
        answer: str,
        status: str,
        reply_id: str | None = None,
    ) -> int:
        """Add the next turn (numbered from 1); the number it got. Two turns racing for one number: the later
        one takes the next."""
        values = (conversation_id, token_digest, question, standalone_question, answer, status, reply_id)
        for attempt in range(3):
            try:
                return self._insert_turn(values)
            except psycopg.errors.UniqueViolation:
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def _insert_turn(self, values: tuple[str | None, ...]) -> int:
        with self._connect() as conn:
            row = conn.execute(
                f"""INSERT INTO {self.schema}.conversation_turns (conversation_id, turn, token_digest, question,
                        standalone_question, answer, status, reply_id)
                    SELECT %s, coalesce(max(turn), 0) + 1, %s, %s, %s, %s, %s, %s
                    FROM {self.schema}.conversation_turns WHERE conversation_id = %s
                    RETURNING turn""",
                (*values, values[0]),
            ).fetchone()
            if time.monotonic() - self._pruned_at > 3600:
                conn.execute(
                    f"DELETE FROM {self.schema}.conversation_turns "
                    "WHERE created_at < now() - make_interval(secs => %s)",
                    (self.retention_days * 86400.0,),
                )
                self._pruned_at = time.monotonic()
        assert row is not None
        return int(row["turn"])

    def close(self) -> None:
        self.pool.close()
