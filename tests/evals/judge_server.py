"""A loopback OpenAI-compatible chat server that plays a rule-following judge, for testing the judge path.

It reads the JSON request `evals.judge` sends and, for each statement, quotes the statement itself
from the first cited passage that contains it (no quote when none does), as an honest judge would.
Under the path prefix `/liar` it instead invents a quote for every claim, so the test can show the
code refuses quotes that are not in the passage; under `/copier` it quotes real text of the cited passage
that does not say the claim (its last sentence; what a small model was seen doing); under `/garbage` it
answers prose, not JSON; under `/slow` it answers after `SLOW_SECONDS` (a model rambling past the timeout).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SLOW_SECONDS = 2.0


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[`*]", "", text.lower())).strip()


def verdict(payload: dict[str, Any], liar: bool, copier: bool = False) -> dict[str, Any]:
    passages = {p["chunk_id"]: p["text"] for p in payload["passages"]}
    statements = []
    for s in payload["statements"]:
        # The statement as the passage has it: a quoted table row gains a closing full stop in the answer.
        said = s["statement"].rstrip(".!?。！？ ")
        source = next((c for c in s["cites"] if c in passages and _norm(said) in _norm(passages[c])), None)
        if liar:
            claim = {"claim": s["statement"], "chunk_id": (s["cites"] or [None])[0], "quote": "an invented quote"}
        elif copier:
            cited = next((c for c in s["cites"] if c in passages), None)
            last = re.split(r"(?<=[.!?])\s+", passages[cited].strip())[-1] if cited else None
            claim = {"claim": s["statement"], "chunk_id": cited, "quote": last}
        else:
            claim = {"claim": s["statement"], "chunk_id": source, "quote": said if source else None}
        statements.append({"index": s["index"], "claims": [claim]})
    answer = payload["answer"]
    facts = [
        {"fact": f, "stated": _norm(f) in _norm(answer), "quote": f if _norm(f) in _norm(answer) else None}
        for f in payload["facts"]
    ]
    return {"statements": statements, "facts": facts}


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        if self.path.startswith("/slow"):
            time.sleep(SLOW_SECONDS)
        payload = json.loads(body["messages"][-1]["content"])
        found = verdict(payload, self.path.startswith("/liar"), self.path.startswith("/copier"))
        content = "```json\n" + json.dumps(found) + "\n```"
        if self.path.startswith("/garbage"):
            content = "The answer looks fine to me."
        reply = {
            "id": "chatcmpl-judge",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "judge"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        return


@contextmanager
def judge_server() -> Iterator[str]:
    """Serve on a free loopback port; yields the base URL (`.../v1`), stops on exit."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
