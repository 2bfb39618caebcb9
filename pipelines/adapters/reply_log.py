"""Replies and what readers said of them, in PostgreSQL: every reply the server gives gets an id and a row, and
`POST /v1/feedback` adds a rating (up or down) and a comment to it, once per reply per token.

Replies are written by one background thread from a bounded queue, so a request never waits for PostgreSQL and
a PostgreSQL outage never fails a question (the rows of that time are dropped, and counted in the log). Feedback
is written at once: the reader is told whether it was kept. Rows older than `retention_days` are deleted when
the writer starts and once an hour after.
"""

from __future__ import annotations

import queue
import re
import threading
import time
from dataclasses import dataclass
from typing import Any

import psycopg
import structlog
from psycopg.types.json import Jsonb

from pipelines.adapters.postgres_pool import PostgresPool

log = structlog.get_logger(__name__)

RATINGS = ("up", "down")
_FLUSH_EVERY = 0.2  # seconds the writer waits to gather a batch


class UnknownReply(LookupError):
    """No reply has this id (or it is past retention)."""


class AlreadyRated(ValueError):
    """This token has already rated this reply."""


@dataclass(frozen=True)
class ReplyRecord:
    reply_id: str
    route: str
    token_name: str | None
    question: str
    standalone_question: str
    status: str
    answer: str
    citations: list[dict[str, Any]]
    pages: list[str]  # the document ids of the passages it retrieved, best first
    index_version: str | None
    language: str | None
    grade: str | None = None  # CRAG's grade of the retrieval (`correct`, `ambiguous`, `incorrect`), when graded


# Why a reply is a content gap: the docs did not answer, asked back, were rated down, or answered on retrieval
# CRAG did not grade `correct` (low confidence).
GAP_REASONS = ("no_answer", "clarify", "rated_down", "low_confidence")


class ReplyLog:
    def __init__(
        self, dsn: str, schema: str = "ragline", retention_days: float = 90.0, queue_size: int = 10_000
    ) -> None:
        if not re.fullmatch(r"[a-z_][a-z0-9_]*", schema):
            raise ValueError(f"invalid schema name {schema!r}")
        self.dsn, self.schema, self.retention_days = dsn, schema, retention_days
        self._queue: queue.Queue[ReplyRecord | None] = queue.Queue(maxsize=queue_size)
        self.pool = PostgresPool(dsn, f"reply log ({schema})", self._ensure)
        self._connect = self.pool.connection
        self._lock = threading.Lock()
        self._writer: threading.Thread | None = None
        self.dropped = 0
        self._pending = 0
        self._idle = threading.Condition()

    def _ensure(self, conn: psycopg.Connection[dict[str, Any]]) -> None:
        s = self.schema
        with conn.cursor() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"ragline-replies-{s}",))
            cur.execute(f"CREATE SCHEMA IF NOT EXISTS {s}")
            cur.execute(
                f"""CREATE TABLE IF NOT EXISTS {s}.replies (
                    reply_id text PRIMARY KEY,
                    created_at timestamptz NOT NULL DEFAULT now(),
                    route text NOT NULL,
                    token_name text,
                    question text NOT NULL,
                    standalone_question text NOT NULL,
                    status text NOT NULL,
                    answer text NOT NULL,
                    citations jsonb NOT NULL,
                    pages jsonb NOT NULL,
                    index_version text,
                    language text
                )"""
            )
            cur.execute(f"ALTER TABLE {s}.replies ADD COLUMN IF NOT EXISTS grade text")
            cur.execute(f"CREATE INDEX IF NOT EXISTS replies_created_at ON {s}.replies (created_at)")
            cur.execute(
                f"""CREATE TABLE IF NOT EXISTS {s}.feedback (
                    reply_id text NOT NULL REFERENCES {s}.replies (reply_id) ON DELETE CASCADE,
                    token_digest text NOT NULL,
                    token_name text,
                    rating text NOT NULL CHECK (rating IN ('up', 'down')),
                    comment text NOT NULL DEFAULT '',
                    created_at timestamptz NOT NULL DEFAULT now(),
                    PRIMARY KEY (reply_id, token_digest)
                )"""
            )
        conn.commit()

    # -- replies ---------------------------------------------------------------------------------------------

    def record(self, reply: ReplyRecord) -> None:
        """Queue a reply for the writer; never blocks and never raises (a full queue drops it, counted)."""
        self._start_writer()
        with self._idle:
            self._pending += 1
        try:
            self._queue.put_nowait(reply)
        except queue.Full:
            with self._idle:
                self._pending -= 1
                self._idle.notify_all()
            self.dropped += 1
            log.warning("reply_log_dropped", reply_id=reply.reply_id, dropped=self.dropped, reason="queue full")

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until every queued reply is written (or dropped); False if `timeout` passed first."""
        deadline = time.monotonic() + timeout
        with self._idle:
            while self._pending:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._idle.wait(left)
        return True

    def _start_writer(self) -> None:
        if self._writer is not None:
            return
        with self._lock:
            if self._writer is None:
                self._writer = threading.Thread(target=self._write_forever, name="ragline-reply-log", daemon=True)
                self._writer.start()

    def _write_forever(self) -> None:
        pruned_at = 0.0
        while True:
            first = self._queue.get()
            if first is None:
                return
            batch = [first]
            time.sleep(_FLUSH_EVERY)
            while len(batch) < 500:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    self._queue.put(None)  # stop after this batch
                    break
                batch.append(item)
            try:
                self._insert(batch)
                if time.monotonic() - pruned_at > 3600:
                    self.prune()
                    pruned_at = time.monotonic()
            except Exception as exc:  # PostgreSQL down or refusing: the replies of now are not kept
                self.dropped += len(batch)
                log.warning("reply_log_dropped", replies=len(batch), dropped=self.dropped, error=str(exc)[:200])
            finally:
                with self._idle:
                    self._pending -= len(batch)
                    self._idle.notify_all()

    def _insert(self, batch: list[ReplyRecord]) -> None:
        rows = [
            (
                r.reply_id,
                r.route,
                r.token_name,
                r.question,
                r.standalone_question,
                r.status,
                r.answer,
                Jsonb(r.citations),
                Jsonb(r.pages),
                r.index_version,
                r.language,
                r.grade,
            )
            for r in batch
        ]
        with self._connect() as conn, conn.cursor() as cur:
            cur.executemany(
                f"""INSERT INTO {self.schema}.replies (reply_id, route, token_name, question, standalone_question,
                    status, answer, citations, pages, index_version, language, grade)
                    VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (reply_id) DO NOTHING""",
                rows,
            )

    def prune(self) -> int:
        """Delete replies (and their feedback) older than the retention; the number deleted."""
        with self._connect() as conn:
            deleted = conn.execute(
                f"DELETE FROM {self.schema}.replies WHERE created_at < now() - make_interval(secs => %s)",
                (self.retention_days * 86400.0,),
            ).rowcount
        return int(deleted or 0)

    def reply(self, reply_id: str) -> dict[str, Any] | None:
        with self._connect() as conn:
            return conn.execute(f"SELECT * FROM {self.schema}.replies WHERE reply_id = %s", (reply_id,)).fetchone()

    # -- feedback --------------------------------------------------------------------------------------------

    def rate(self, reply_id: str, token_digest: str, token_name: str | None, rating: str, comment: str) -> None:
        """Keep a reader's rating of a reply; `UnknownReply` or `AlreadyRated` when it cannot be kept."""
        if rating not in RATINGS:
            raise ValueError(f"rating must be one of {RATINGS}, not {rating!r}")
        if self.reply(reply_id) is None:
            self.flush(2.0)  # a reply of a moment ago may still be in the writer's queue
            if self.reply(reply_id) is None:
                raise UnknownReply(f"no reply has the id {reply_id!r}")
        try:
            with self._connect() as conn:
                conn.execute(
                    f"""INSERT INTO {self.schema}.feedback (reply_id, token_digest, token_name, rating, comment)
                        VALUES (%s, %s, %s, %s, %s)""",
                    (reply_id, token_digest, token_name, rating, comment),
                )
        except psycopg.errors.UniqueViolation as exc:
            raise AlreadyRated(f"this token has already rated the reply {reply_id!r}") from exc

    def candidates(self, since_days: float | None = None) -> list[dict[str, Any]]:
        """Replies rated down or not answered (no_answer, clarify), newest first, with their ratings: what
        `ragline feedback export` turns into golden-set candidates."""
        window = "" if since_days is None else "AND r.created_at >= now() - make_interval(secs => %(secs)s)"
        with self._connect() as conn:
            return conn.execute(
                f"""SELECT r.*, coalesce(json_agg(json_build_object('rating', f.rating, 'comment', f.comment))
                        FILTER (WHERE f.reply_id IS NOT NULL), '[]') AS feedback
                    FROM {self.schema}.replies r LEFT JOIN {self.schema}.feedback f USING (reply_id)
                    WHERE (r.status IN ('no_answer', 'clarify') OR f.rating = 'down') {window}
                    GROUP BY r.reply_id ORDER BY r.created_at DESC""",
                {"secs": (since_days or 0) * 86400.0},
            ).fetchall()

    def gap_replies(self, hours: float, limit: int = 5000) -> list[dict[str, Any]]:
        """The replies of the last `hours` that point at a content gap, newest first, each with its `reasons`
        (a subset of GAP_REASONS): not answered, asked back, rated down by someone, or answered on retrieval
        CRAG did not grade `correct`."""
        with self._connect() as conn:
            rows = conn.execute(
                f"""SELECT r.reply_id, r.created_at, r.question, r.standalone_question, r.status, r.pages, r.grade,
                        bool_or(f.rating = 'down') AS rated_down
                    FROM {self.schema}.replies r LEFT JOIN {self.schema}.feedback f USING (reply_id)
                    WHERE r.created_at >= now() - make_interval(secs => %s)
                    GROUP BY r.reply_id
                    HAVING r.status IN ('no_answer', 'clarify') OR bool_or(f.rating = 'down')
                        OR (r.status = 'answered' AND r.grade IN ('ambiguous', 'incorrect'))
                    ORDER BY r.created_at DESC LIMIT %s""",
                (hours * 3600.0, limit),
            ).fetchall()
        for row in rows:
            reasons = [row["status"]] if row["status"] in ("no_answer", "clarify") else []
            if row.pop("rated_down"):
                reasons.append("rated_down")
            if row["status"] == "answered" and row["grade"] in ("ambiguous", "incorrect"):
                reasons.append("low_confidence")
            row["reasons"] = reasons
        return rows

    def close(self) -> None:
        if self._writer is not None:
            self._queue.put(None)
            self._writer.join(timeout=10)
            self._writer = None
        self.pool.close()
