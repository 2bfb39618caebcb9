"""Permissions, end to end: pages given random access groups (by folder rule and by front matter), tokens of
random group sets, and every endpoint asked as each of them over a real loopback server. No chunk id, title,
document id or page-only word of a page a caller may not read ever reaches it: not through an answer, a
stream, a search, a passage, the OpenAI-compatible route, the MCP tools, voice, nor through an exact or
semantic cache entry another caller wrote. The coverage rule says the same of a word only a restricted page
holds as of a word no page holds.

The assignment is drawn from a seed (printed on failure; `RAGLINE_PERMISSION_SEED` replays one), the callers,
endpoints and questions by hypothesis."""

from __future__ import annotations

import json
import os
import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import anyio
import httpx
import httpx2
import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, TextContent

from pipelines.access import PUBLIC
from pipelines.adapters.embedded_services import EmbeddedServices
from pipelines.adapters.token_table import TokenTable
from pipelines.ingestion.build import BuildRequest
from pipelines.profiles import Stores, open_stores
from pipelines.settings import Settings
from pipelines.text.language import detect_question_language
from tests.server.audio import spoken
from tests.server.conftest import live_server, services_settings

GROUPS = ("staff", "eng", "legal")
SEED = int(os.environ.get("RAGLINE_PERMISSION_SEED") or random.SystemRandom().randrange(10**6))
_CONSONANTS, _VOWELS = "bdfgklmnprstvz", "aeiou"


def pseudo_word(rng: random.Random, taken: set[str]) -> str:
    """A word of no language, unique in the corpus: what leaks is unmistakable. A word that makes a question
    read as another language ("How do I restart the zusipogo service?" reads as German) is drawn again: the
    guardrail would refuse the question before the filter is reached."""
    while True:
        word = "".join(rng.choice(_CONSONANTS) + rng.choice(_VOWELS) for _ in range(4))
        english = all(detect_question_language(t.format(name=word)).language == "en" for t in TEMPLATES)
        if word not in taken and english:
            taken.add(word)
            return word


@dataclass(frozen=True)
class Page:
    document_id: str
    title: str
    name: str  # the word questions ask about
    secret: str  # a word only this page holds; never asked, so it appears in a reply only if the page leaked
    groups: tuple[str, ...]
    front_matter: bool

    def text(self, days: int) -> str:
        front = ""
        if self.front_matter:
            front = f"---\ntitle: {self.title}\naccess: [{', '.join(self.groups)}]\n---\n\n"
        return (
            f"{front}# {self.title}\n\n"
            f"The {self.name} service keeps its ledger in the {self.secret} vault. "
            f"To restart the {self.name} service, run `{self.name} restart --graceful`.\n\n"
            f"## Retention\n\nThe {self.name} service keeps old ledgers for {days} days before the "
            f"{self.secret} vault is compacted.\n"
        )


def draw_pages(rng: random.Random) -> tuple[list[Page], dict[str, list[str]]]:
    """Twelve pages: some public, some of one group by folder rule, some of one or two groups by front matter."""
    taken: set[str] = set()
    choices = [(PUBLIC,), ("staff",), ("eng",), ("legal",), ("staff", "eng"), ("eng", "legal")]
    pages, rules = [], {}
    for i in range(12):
        groups = (PUBLIC,) if i < 3 else ("staff",) if i == 3 else rng.choice(choices)
        name, secret = pseudo_word(rng, taken), pseudo_word(rng, taken)
        by_rule = len(groups) == 1 and groups != (PUBLIC,) and rng.random() < 0.5
        folder = f"internal/{groups[0]}" if by_rule else "pages"
        if by_rule:
            rules[f"internal/{groups[0]}/**"] = list(groups)
        pages.append(Page(f"{folder}/{name}.md", f"{name.capitalize()} runbook", name, secret, groups, not by_rule))
    return pages, rules


@dataclass
class PermissionEnv:
    settings: Settings
    stores: Stores
    pages: list[Page]
    tokens: dict[frozenset[str], str]  # caller's groups (without public) -> token
    chunk_ids: dict[str, list[str]]  # document id -> its chunks' ids
    nowhere: str


@pytest.fixture(scope="module")
def permission_env(tmp_path_factory: pytest.TempPathFactory, embedded: EmbeddedServices) -> Iterator[PermissionEnv]:
    from assets.build import build_index

    rng = random.Random(SEED)
    pages, rules = draw_pages(rng)
    root = tmp_path_factory.mktemp("permissions")
    corpus = root / "docs"
    for page in pages:
        path = corpus / page.document_id
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(page.text(rng.randrange(3, 90)))
    base = services_settings(root, embedded)
    settings = base.model_copy(
        update={
            "source": str(corpus),
            "exclude": [],
            "access_rules": rules,
            "semantic_cache_threshold": 0.9,  # a semantic cache in force: its entries must stay per group set
            "topic_floor": None,
            "rate_limit_per_second": 0.0,
            "rate_limit_per_address_per_second": 0.0,
            "token_cache_seconds": 0.0,
        }
    )
    assert settings.postgres_dsn is not None
    stores = open_stores(settings)
    build_index(settings, stores, BuildRequest.from_settings(settings))
    version = stores.registry.active()
    assert version is not None
    index = stores.open_index(version.location)
    chunk_ids: dict[str, list[str]] = {}
    for chunk in index.scroll_chunks():
        chunk_ids.setdefault(chunk.document_id, []).append(chunk.chunk_id)
        page = next(p for p in pages if p.document_id == chunk.document_id)
        assert sorted(chunk.access) == sorted(page.groups), (chunk.document_id, chunk.access, page.groups)
    index.close()
    table = TokenTable(settings.postgres_dsn, settings.postgres_schema)
    tokens = {}
    for size in range(len(GROUPS) + 1):
        for combo in _combinations(GROUPS, size):
            tokens[frozenset(combo)] = table.create(f"caller-{'-'.join(combo) or 'public'}", ["query"], list(combo))[0]
    table.close()
    yield PermissionEnv(settings, stores, pages, tokens, chunk_ids, pseudo_word(rng, {p.name for p in pages}))
    stores.close()
    with psycopg.connect(settings.postgres_dsn, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {settings.postgres_schema} CASCADE")


def _combinations(items: tuple[str, ...], size: int) -> list[tuple[str, ...]]:
    from itertools import combinations

    return list(combinations(items, size))


@pytest.fixture(scope="module")
def base_url(permission_env: PermissionEnv) -> Iterator[str]:
    with live_server(permission_env.settings, permission_env.stores) as url:
        yield url


def readable(page: Page, caller: frozenset[str]) -> bool:
    return bool(set(page.groups) & (caller | {PUBLIC}))


def forbidden(env: PermissionEnv, caller: frozenset[str]) -> dict[str, str]:
    """What must never reach this caller: each unreadable page's secret word, title, id and chunk ids."""
    out: dict[str, str] = {}
    for page in env.pages:
        if readable(page, caller):
            continue
        for value in (page.secret, page.title, page.document_id, *env.chunk_ids[page.document_id]):
            out[value] = page.document_id
    return out


def assert_no_leak(env: PermissionEnv, caller: frozenset[str], text: str, what: str) -> None:
    leaked = {value: doc for value, doc in forbidden(env, caller).items() if value.lower() in text.lower()}
    assert not leaked, f"seed {SEED}: {what} as {sorted(caller) or ['public']} leaked {leaked}"


def headers(env: PermissionEnv, caller: frozenset[str]) -> dict[str, str]:
    return {"Authorization": f"Bearer {env.tokens[caller]}"}


def ask(url: str, env: PermissionEnv, caller: frozenset[str], endpoint: str, question: str) -> str:
    """One request of `endpoint` as `caller`; the whole response as text (every field, every event)."""
    h = headers(env, caller)
    with httpx.Client(base_url=url, timeout=300) as http:
        if endpoint == "query":
            response = http.post("/v1/query", json={"question": question}, headers=h)
        elif endpoint == "stream":
            response = http.post("/v1/query/stream", json={"question": question}, headers=h)
        elif endpoint == "search":
            response = http.post("/v1/search", json={"query": question, "top_k": 10}, headers=h)
        elif endpoint in ("chat", "chat_stream"):
            body = {"model": "ragline", "messages": [{"role": "user", "content": question}]}
            response = http.post("/v1/chat/completions", json={**body, "stream": endpoint == "chat_stream"}, headers=h)
        elif endpoint == "mcp_search":
            return mcp_call(url, h, "search_docs", {"query": question, "top_k": 10})
        elif endpoint == "mcp_ask":
            return mcp_call(url, h, "ask_docs", {"question": question})
        else:
            raise AssertionError(endpoint)
    assert response.status_code == 200, (endpoint, response.text)
    return response.text


def mcp_call(url: str, h: dict[str, str], tool: str, arguments: dict[str, Any]) -> str:
    async def call() -> CallToolResult:
        transport = streamable_http_client(f"{url}/mcp", http_client=httpx2.AsyncClient(headers=h, timeout=300))
        async with Client(transport, read_timeout_seconds=300) as client:
            return await client.call_tool(tool, arguments)

    result = anyio.run(call)
    text = "".join(block.text for block in result.content if isinstance(block, TextContent))
    return text + json.dumps(result.structured_content)


ENDPOINTS = ["query", "stream", "search", "chat", "chat_stream", "mcp_search", "mcp_ask"]
TEMPLATES = [
    "How do I restart the {name} service?",
    "Where does the {name} service keep its ledger?",
    "How long are old ledgers kept before the vault is compacted?",  # every page answers it: only the filter helps
    "How do I restart a service gracefully?",
]


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), derandomize=False)
@given(data=st.data())
def test_no_restricted_page_reaches_a_caller_outside_its_groups(
    permission_env: PermissionEnv, base_url: str, data: st.DataObject
) -> None:
    env = permission_env
    caller = data.draw(st.sampled_from(sorted(env.tokens, key=sorted)), label="caller")
    endpoint = data.draw(st.sampled_from(ENDPOINTS), label="endpoint")
    page = data.draw(st.sampled_from(env.pages), label="page")
    template = data.draw(st.sampled_from(TEMPLATES), label="template")
    question = template.format(name=page.name)
    text = ask(base_url, env, caller, endpoint, question)
    assert_no_leak(env, caller, text, f"{endpoint} {question!r}")
    if endpoint in ("search", "mcp_search") and "{name}" in template and readable(page, caller):
        assert page.document_id in text, f"seed {SEED}: a page the caller may read is missing from {endpoint}"


def test_every_passage_of_a_restricted_page_is_404_outside_its_groups(
    permission_env: PermissionEnv, base_url: str
) -> None:
    env = permission_env
    with httpx.Client(base_url=base_url, timeout=60) as http:
        for caller in env.tokens:
            for page in env.pages:
                for chunk_id in env.chunk_ids[page.document_id]:
                    response = http.get(f"/v1/passages/{chunk_id}", headers=headers(env, caller))
                    if readable(page, caller):
                        assert response.status_code == 200 and response.json()["title"] == page.title
                    else:
                        # Answered as an id that never existed: the reply says nothing of the page.
                        assert response.status_code == 404, (caller, page.document_id, response.text)
                        unknown = http.get("/v1/passages/000000000000-0", headers=headers(env, caller))
                        assert response.text.replace(chunk_id, "<id>") == unknown.text.replace("000000000000-0", "<id>")


def test_a_cache_entry_written_by_a_reader_never_reaches_a_caller_outside(
    permission_env: PermissionEnv, base_url: str
) -> None:
    """A staff caller's answer about a staff page is cached (exact and semantic); the same question, and a
    paraphrase of it, asked by a public caller get neither that entry nor the page."""
    env = permission_env
    staff = frozenset({"staff"})
    page = next(p for p in env.pages if p.groups == ("staff",))
    question = f"Where does the {page.name} service keep its ledger? ({uuid.uuid4().hex[:6]})"
    with httpx.Client(base_url=base_url, timeout=300) as http:
        first = http.post("/v1/query", json={"question": question}, headers=headers(env, staff)).json()
        assert first["status"] == "answered" and page.secret in first["answer"], first
        again = http.post("/v1/query", json={"question": question}, headers=headers(env, staff)).json()
        assert again["cache"] == "hit"
        outsider = frozenset[str]()
        # The paraphrase first: the only entry near it is the staff caller's. (Asked after it, the question itself
        # may hit the outsider's own entry for the paraphrase, which is fine.)
        for n, asked in enumerate((question.replace("Where does", "Where, please, does"), question)):
            reply = http.post("/v1/query", json={"question": asked}, headers=headers(env, outsider))
            assert reply.status_code == 200
            assert n > 0 or reply.json()["cache"] == "miss", reply.json()
            assert_no_leak(env, outsider, reply.text, f"cached {asked!r}")


def _shape(reply: dict[str, Any], word: str) -> dict[str, Any]:
    """What a reader sees of a reply, with the one word the two questions differ in masked."""
    keep = {k: reply.get(k) for k in ("status", "generator", "answer", "citations", "coverage")}
    return json.loads(json.dumps(keep).replace(word.capitalize(), "<word>").replace(word, "<word>"))


def test_a_word_only_a_restricted_page_holds_reads_as_a_word_no_page_holds(
    permission_env: PermissionEnv, base_url: str
) -> None:
    env = permission_env
    outsider = frozenset[str]()
    hidden = [p for p in env.pages if not readable(p, outsider)]
    assert hidden, f"seed {SEED}: no restricted page"
    with httpx.Client(base_url=base_url, timeout=300) as http:

        def reply(word: str, caller: frozenset[str]) -> dict[str, Any]:
            # Written as a name (capitalised inside the sentence), the rest of the words in every page; the
            # coverage rule's names half (off by default, a variant a request may choose) reads it.
            question = f"How long does the {word.capitalize()} vault keep old ledgers?"
            body = {"question": question, "variants": {"coverage_names": "on"}}
            response = http.post("/v1/query", json=body, headers=headers(env, caller))
            assert response.status_code == 200
            return response.json()

        for page in hidden:
            restricted = reply(page.secret, outsider)
            nowhere = reply(env.nowhere, outsider)
            assert _shape(restricted, page.secret) == _shape(nowhere, env.nowhere), (page.document_id, SEED)
        # The rule is not blind: a caller who may read the page is not told the word is missing.
        insider = frozenset(g for g in hidden[0].groups if g != PUBLIC)
        assert reply(hidden[0].secret, insider)["coverage"]["covered"]
        assert not reply(env.nowhere, insider)["coverage"]["covered"]


def test_a_spoken_question_about_a_restricted_page_leaks_nothing(permission_env: PermissionEnv, base_url: str) -> None:
    env = permission_env
    outsider = frozenset[str]()
    audio = spoken("How long are old ledgers kept before the vault is compacted?")
    with httpx.Client(base_url=base_url, timeout=300) as http:
        response = http.post(
            "/v1/voice/query", files={"audio": ("q.wav", audio, "audio/wav")}, headers=headers(env, outsider)
        )
    assert response.status_code == 200, response.text
    assert "compacted" in response.json()["transcript"]["text"].lower()
    assert_no_leak(env, outsider, response.text, "voice")
