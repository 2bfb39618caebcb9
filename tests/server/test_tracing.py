"""Langfuse tracing, received by a local OTLP/HTTP endpoint: a trace per request, a span per node,
no raw text unless RAGLINE_TRACE_RAW_CONTENT is on, and no delay when Langfuse is unreachable."""

from __future__ import annotations

import socket
import time
import uuid
from typing import Any

from pipelines.adapters.tracing import sha256_text
from tests.server.conftest import ROOT, AppFactory, fresh_question
from tests.server.otlp_receiver import Received, otlp_receiver


def wait_for_spans(received: Received, count: int) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 15
    while len(received.spans) < count and time.monotonic() < deadline:
        time.sleep(0.1)
    return received.spans


def keys() -> dict[str, str]:
    # A fresh key pair per app: the Langfuse SDK shares its resources per public key within a process.
    return {"langfuse_public_key": f"pk-{uuid.uuid4().hex[:8]}", "langfuse_secret_key": "sk-test"}


def test_a_trace_per_request_with_node_spans_and_no_raw_text(make_client: AppFactory) -> None:
    question = fresh_question("Which port does the harbor dashboard listen on?")
    with otlp_receiver() as (url, received), make_client(langfuse_host=url, **keys()) as client:
        reply = client.post("/v1/query", json={"question": question}, headers=ROOT).json()
        client.app.state.tracer.flush()
        spans = wait_for_spans(received, 2)
    assert received.paths[0] == "/api/public/otel/v1/traces" and received.authorizations[0].startswith("Basic ")
    roots = [s for s in spans if s["name"] == "ragline.query"]
    assert len(roots) == 1
    root = roots[0]["attributes"]
    assert root["ragline.question.sha256"] == sha256_text(question)
    assert root["ragline.status"] == "answered" and root["ragline.route"] == "/v1/query"
    assert root["ragline.citations.chunk_ids"] == [c["chunk_id"] for c in reply["citations"]]
    assert root["ragline.index.content_version"] == reply["index"]["content_version"]
    nodes = {s["attributes"]["ragline.node"] for s in spans if s["name"].startswith("node.")}
    assert nodes == {k for k in reply["timings_ms"] if k != "total"}
    assert all(s["parent_id"] == roots[0]["span_id"] for s in spans if s["name"].startswith("node."))
    everything = b"".join(received.raw_bodies)
    assert question.encode() not in everything and b"7420" not in everything  # neither question nor answer


def test_raw_content_only_when_asked(make_client: AppFactory) -> None:
    question = fresh_question("How long does harbor keep build logs?")
    with otlp_receiver() as (url, received), make_client(langfuse_host=url, trace_raw_content=True, **keys()) as client:
        client.post("/v1/query", json={"question": question}, headers=ROOT)
        client.app.state.tracer.flush()
        spans = wait_for_spans(received, 1)
    root = next(s for s in spans if s["name"] == "ragline.query")["attributes"]
    assert root["langfuse.observation.input"] == question and "14 days" in root["langfuse.observation.output"]


def test_an_unreachable_langfuse_never_delays_a_reply(make_client: AppFactory) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}"
    with make_client(langfuse_host=dead, trace_timeout_seconds=1.0, **keys()) as client:
        question = {"question": fresh_question("How long does harbor keep build logs?")}
        client.post("/v1/query", json=question, headers=ROOT)  # warm
        started = time.perf_counter()
        response = client.post("/v1/query", json=question, headers=ROOT)
        elapsed = time.perf_counter() - started
    assert response.status_code == 200 and elapsed < 0.5, elapsed
