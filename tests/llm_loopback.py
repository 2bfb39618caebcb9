"""A real OpenAI-compatible HTTP server on loopback for the litellm tests: a test double of a provider.

It speaks the chat-completions protocol (JSON, and SSE when `stream` is true) over a real socket, so
litellm, its HTTP client and our harness run for real; only the completion itself comes from a small
deterministic procedure instead of a language model: the context sentence that shares the most words
with the question, in the JSON reply the generator's schema asks for (pipelines/answering/litellm_generator.py). Behaviours can be scripted per request (`fail` with 500, `hang`, `break` mid-stream)
to exercise retries, the circuit breaker, the deadline and the fallback.
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

from pipelines.answering.litellm_generator import CHOOSE_ASK, DECLINE_ASK

_WORD = re.compile(r"[A-Za-z0-9_]+")
_STOP = {"the", "a", "an", "is", "of", "to", "in", "on", "and", "what", "which", "how", "does", "do", "for", "it"}


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text) if w.lower() not in _STOP}


def _passages(prompt: str) -> list[tuple[str, str]]:
    """(number, text) of each `[<n>] title\\ntext` block of our prompt (the passages are numbered from 1)."""
    body = prompt.split("Question:")[0]
    blocks = re.split(r"\n\n(?=\[\d+\] )", body)
    out = []
    for block in blocks:
        match = re.match(r"\s*(?:Passages:\s*)?\[(\d+)\][^\n]*\n(.*)", block, re.S)
        if match:
            out.append((match.group(1), match.group(2)))
    return out


def _reply(kind: str, *sentences: tuple[str, list[int]]) -> str:
    return json.dumps({"kind": kind, "sentences": [{"text": t, "sources": s} for t, s in sentences]})


def answer_for(messages: list[dict[str, str]], mode: str) -> str:
    prompt = messages[-1]["content"]
    if messages[0]["role"] == "system" and messages[0]["content"].startswith("Rewrite the user's last question"):
        first = prompt.split("Q: ", 1)[1].split("\n", 1)[0]  # a follow-up made standalone
        last = prompt.split("Last question: ", 1)[1].split("\n", 1)[0]
        return f"{last.rstrip('?')}, asked after: {first.rstrip('?')}?"
    if "Answer with one word: yes or no" in prompt:  # the verification judge
        passage = prompt.split("Passage:", 1)[1].split("Sentence:", 1)[0]
        sentence = prompt.split("Sentence:", 1)[1].split("Does the passage", 1)[0]
        words = _words(sentence)
        return "yes" if words and len(words & _words(passage)) / len(words) >= 0.7 else "no"
    if prompt.startswith("Rewrite this question"):
        return " ".join(sorted(_words(prompt.split("Question:", 1)[1])))
    if DECLINE_ASK in prompt and mode == "no_answer":  # `choose_or_decline`: no listed sentence answers
        return json.dumps({"sentence": 0})
    if CHOOSE_ASK in prompt or DECLINE_ASK in prompt:  # `choose`: the sentence sharing most words with the question
        question = _words(prompt.split("Question:", 1)[1].split("Sentences:", 1)[0])
        listed = re.findall(r"^\[(\d+)\] (.*)$", prompt, re.MULTILINE)
        number = max(listed, key=lambda item: (len(question & _words(item[1])), -int(item[0])))[0]
        return f"Sentence {number} answers it." if mode == "prose" else json.dumps({"sentence": int(number)})
    if mode == "no_answer":
        return _reply("no_answer")
    if mode == "clarify":
        question = "Which part of harbor do you mean: installing it, configuring it or the CLI?"
        return _reply("clarify", (question, [1]))
    question = _words(prompt.rsplit("Question:", 1)[1])
    passages = _passages(prompt)
    best: tuple[int, str, str] = (-1, "", "")
    for number, text in passages:
        prose = " ".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
        for sentence in re.split(r"(?<=[.!?])\s+", prose):
            score = len(question & _words(sentence))
            if score > best[0] and len(sentence.split()) >= 4:
                best = (score, number, sentence.strip())
    _, number, sentence = best
    if mode == "prose":  # a server that ignores `response_format`
        return f"{sentence} Harbor is a tool."
    if mode == "padded":  # one true sentence, one that no passage supports
        return _reply("answer", (sentence, [int(number)]), ("Harbor is written in Rust and Go.", [int(number)]))
    if mode == "wrong_source":  # the right sentence, cited to another passage
        other = next(n for n, _ in passages if n != number)
        return _reply("answer", (sentence, [int(other)]))
    if mode == "long":  # many cited sentences, to watch them arrive (and stop) one by one
        return _reply("answer", *[(sentence, [int(number)]) for _ in range(12)])
    if mode == "forged":  # a passage number that was not given (a server that ignores the schema)
        return _reply("answer", (sentence, [99]))
    return _reply("answer", (sentence, [int(number)]))


class LoopbackLLM:
    def __init__(self, mode: str = "markers", token_delay: float = 0.0) -> None:
        self.mode, self.token_delay = mode, token_delay
        self.script: list[str] = []  # behaviour of the next requests: ok | fail | hang | break
        self.requests = 0
        self.authorizations: list[str | None] = []  # each request's Authorization header
        self.bodies: list[dict[str, Any]] = []  # each request's JSON body
        self.tokens_sent = 0
        self.disconnected = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        llm = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                llm.requests += 1
                llm.authorizations.append(self.headers.get("Authorization"))
                llm.bodies.append(body)
                behaviour = llm.script.pop(0) if llm.script else "ok"
                if behaviour == "fail":
                    payload = json.dumps({"error": {"message": "scripted failure", "type": "server_error"}}).encode()
                    self.send_response(500)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                if behaviour == "hang":
                    time.sleep(5)
                text = answer_for(body.get("messages", []), llm.mode)
                if body.get("stream"):
                    self._stream(text, behaviour == "break")
                else:
                    self._json(text)

            def _json(self, text: str) -> None:
                payload = json.dumps(
                    {
                        "id": "cmpl-loopback",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": "loopback",
                        "choices": [
                            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                        ],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def _event(self, delta: dict[str, str], finish: str | None = None) -> None:
                chunk = {
                    "id": "cmpl-loopback",
                    "object": "chat.completion.chunk",
                    "created": int(time.time()),
                    "model": "loopback",
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                }
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()

            def _stream(self, text: str, broken: bool) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                tokens = re.findall(r"\S+\s*", text)
                try:
                    self._event({"role": "assistant", "content": ""})
                    for i, token in enumerate(tokens):
                        if broken and i == len(tokens) // 2:
                            self.wfile.flush()
                            self.connection.shutdown(2)  # the provider dies mid-answer
                            return
                        self._event({"content": token})
                        llm.tokens_sent += 1
                        if llm.token_delay:
                            time.sleep(llm.token_delay)
                    self._event({}, "stop")
                    self.wfile.write(b"data: [DONE]\n\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    llm.disconnected.set()
                self.close_connection = True

        return Handler

    def start(self) -> LoopbackLLM:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@contextmanager
def loopback_llm(mode: str = "markers", token_delay: float = 0.0) -> Iterator[LoopbackLLM]:
    server = LoopbackLLM(mode, token_delay).start()
    try:
        yield server
    finally:
        server.stop()


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
