"""The web pages in a real headless Chromium (Debian's chromium + chromedriver, via selenium): ask a
question and see a cited, streamed answer with its timings; open the console and see the versions."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import httpx
import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from evals.ab import NodeVariants, ab_report
from evals.answers import run_answers
from pipelines.adapters.token_table import TokenTable
from pipelines.golden_sets import load_golden
from pipelines.settings import PROJECT_ROOT
from query_graph.service import QueryService
from server.app import create_app
from tests.server.conftest import ServerEnv, live_server


@pytest.fixture
def live_url(server_env: ServerEnv) -> Iterator[str]:
    with live_server(server_env.settings, server_env.stores) as url:
        yield url


@pytest.fixture
def browser() -> Iterator[webdriver.Chrome]:
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-dev-shm-usage",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service("/usr/bin/chromedriver"))
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def test_chat_and_console_in_a_real_browser(live_url: str, browser: webdriver.Chrome, server_env: ServerEnv) -> None:
    wait = WebDriverWait(browser, 60)
    browser.get(live_url + "/")
    token = browser.find_element(By.ID, "token")
    token.send_keys("test-token", Keys.TAB)  # `change` stores it for the page's requests
    browser.find_element(By.ID, "question").send_keys("Which port does the harbor dashboard listen on?")
    browser.find_element(By.ID, "ask").click()

    wait.until(ec.text_to_be_present_in_element((By.ID, "status"), "answered"))
    # Sentences fade in (opacity 0 -> 1 over 0.25 s) and Selenium's `.text` is only the visible text:
    # wait for the answer to be shown rather than reading it the instant the status changes.
    wait.until(ec.text_to_be_present_in_element((By.ID, "answer"), "7420"))
    assert browser.find_elements(By.CSS_SELECTOR, "#answer .sentence .cite")
    citations = browser.find_elements(By.CSS_SELECTOR, "#citations li")
    assert citations and "config.md" in citations[0].text
    bar = browser.find_elements(By.CSS_SELECTOR, "#timing-bar div")
    assert len(bar) >= 3 and all(part.get_attribute("title").endswith(" ms") for part in bar)
    citations[0].click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "passage"), "7420"))

    # A sentence that introduces a code block brings it: shown as code, with its citation.
    question = browser.find_element(By.ID, "question")
    question.clear()
    question.send_keys("How do I upload to a registry of my own?")
    browser.find_element(By.ID, "ask").click()
    wait.until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, "#answer .sentence.code pre code"), "--registry"))
    code = browser.find_element(By.CSS_SELECTOR, "#answer .sentence.code pre code").text
    assert code == "harbor sync --registry https://registry.example.com"
    assert browser.find_elements(By.CSS_SELECTOR, "#answer .sentence.code .cite")

    # A sentence that introduces a list brings its items, each on a line of its own with its citation.
    question.clear()
    question.send_keys("What does harbor sync check before it uploads anything?")
    browser.find_element(By.ID, "ask").click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "answer"), "room for the downloaded artefacts"))
    items = browser.find_elements(By.CSS_SELECTOR, "#answer .sentence.item")
    assert [item.text.split("[source]")[0] for item in items] == [
        "- the registry answers at its address",
        "- the token in HARBOR_TOKEN is still valid",
        "- the disk has room for the downloaded artefacts",
    ]
    assert all(item.find_elements(By.CSS_SELECTOR, ".cite") for item in items)

    browser.get(live_url + "/console")
    token = browser.find_element(By.ID, "token")
    token.clear()
    token.send_keys(server_env.admin_token, Keys.TAB)
    wait.until(ec.text_to_be_present_in_element((By.ID, "versions"), server_env.version))
    versions = browser.find_element(By.ID, "versions").text
    assert "active" in versions
    wait.until(ec.text_to_be_present_in_element((By.ID, "nodes"), "exact_cache_lookup"))
    assert "hit rate" in browser.find_element(By.ID, "cache").text
    wait.until(ec.text_to_be_present_in_element((By.ID, "gaps"), "pages retrieved"))  # the content-gaps table
    assert browser.find_element(By.ID, "problem").text == ""
    # The access tokens, and revoking one from the page: its next request is refused.
    temporary = TokenTable(str(server_env.settings.postgres_dsn), server_env.settings.postgres_schema)
    name = f"browser-{uuid.uuid4().hex[:6]}"
    made = temporary.create(name, ["query"], ["staff"])[0]
    temporary.close()
    browser.find_element(By.ID, "refresh").click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "tokens"), name))
    assert "staff" in browser.find_element(By.ID, "tokens").text and made not in browser.page_source
    browser.find_element(By.CSS_SELECTOR, f'button[data-token="{name}"]').click()
    wait.until_not(ec.text_to_be_present_in_element((By.ID, "tokens"), name))
    assert httpx.get(live_url + "/v1/models", headers={"Authorization": f"Bearer {made}"}).status_code == 401


def test_a_reader_rates_an_answer_in_the_browser(
    live_url: str, browser: webdriver.Chrome, server_env: ServerEnv
) -> None:
    import psycopg

    wait = WebDriverWait(browser, 60)
    browser.get(live_url + "/")
    browser.find_element(By.ID, "token").send_keys("test-token", Keys.TAB)
    question = f"Which port does the harbor dashboard listen on? ({uuid.uuid4().hex[:6]})"
    browser.find_element(By.ID, "question").send_keys(question)
    browser.find_element(By.ID, "ask").click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "status"), "answered"))
    wait.until(ec.visibility_of_element_located((By.ID, "feedback")))
    browser.find_element(By.ID, "feedback-comment").send_keys("It should say how to change the port.")
    browser.find_element(By.ID, "rate-down").click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "feedback-state"), "kept"))
    assert not browser.find_element(By.ID, "rate-up").is_enabled()
    schema = server_env.settings.postgres_schema
    with psycopg.connect(str(server_env.settings.postgres_dsn)) as conn:
        row = conn.execute(
            f"SELECT f.rating, f.comment FROM {schema}.feedback f JOIN {schema}.replies r USING (reply_id) "
            "WHERE r.question = %s",
            (question,),
        ).fetchone()
    assert row == ("down", "It should say how to change the port.")
    # A new question hides the buttons until its own reply has an id.
    browser.find_element(By.ID, "question").clear()
    browser.find_element(By.ID, "question").send_keys("What is harbor?")
    browser.find_element(By.ID, "ask").click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "feedback-state"), ""))
    wait.until(lambda b: b.find_element(By.ID, "rate-up").is_enabled())


def test_a_follow_up_in_the_chat_page_continues_the_conversation(live_url: str, browser: webdriver.Chrome) -> None:
    wait = WebDriverWait(browser, 60)
    browser.get(live_url + "/")
    browser.find_element(By.ID, "token").send_keys("test-token", Keys.TAB)
    question = browser.find_element(By.ID, "question")
    question.send_keys(f"How long does harbor keep build logs? ({uuid.uuid4().hex[:6]})")
    browser.find_element(By.ID, "ask").click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "answer"), "14 days"))
    question.clear()
    question.send_keys("Which key changes that?")
    browser.find_element(By.ID, "ask").click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "answer"), "retention_days"))
    assert "build logs" in browser.find_element(By.ID, "standalone").text  # "Answered as: ..."
    turns = browser.find_elements(By.CSS_SELECTOR, "#thread li")
    assert len(turns) == 2 and "answered as" in turns[1].text
    browser.find_element(By.ID, "new-conversation").click()
    assert not browser.find_elements(By.CSS_SELECTOR, "#thread li")
    question.clear()
    question.send_keys("Which key changes that?")  # now alone: nothing to lean on
    browser.find_element(By.ID, "ask").click()
    wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "#thread li")))
    assert browser.find_element(By.ID, "standalone").text == ""


def test_inline_code_in_an_answer_is_shown_as_code(live_url: str, browser: webdriver.Chrome) -> None:
    """The chat page's own rendering of one sentence (a quote keeps the ticks of a span holding * or _)."""
    browser.get(live_url + "/")
    codes, text, cites = browser.execute_script(
        "const node = sentenceNode(arguments[0]);"
        "return [[...node.querySelectorAll('code')].map((c) => c.textContent), node.textContent,"
        " node.querySelectorAll('.cite').length];",
        "Set `RAGLINE_INCLUDE='[\"**/*.md\"]'` and keep `__init__.py`, not `` ` `` [C:abc-1].",
    )
    assert codes == ["RAGLINE_INCLUDE='[\"**/*.md\"]'", "__init__.py", "`"]
    assert text == "Set RAGLINE_INCLUDE='[\"**/*.md\"]' and keep __init__.py, not `[source]." and cites == 1


def test_console_shows_the_latest_ab_run_as_a_table(server_env: ServerEnv, browser: webdriver.Chrome) -> None:
    """An A/B result, made here as `ragline eval ab` makes it (the harbor golden set under two fusions, scored by
    evals.ab) and left in the data dir's pointer, is read as a table of metrics, not as raw JSON."""
    service = QueryService(
        server_env.settings.model_copy(update={"cache_prefix": f"test-ab-{uuid.uuid4().hex[:8]}"}), server_env.stores
    )
    questions = load_golden(PROJECT_ROOT / "tests" / "evals" / "fixtures" / "harbor.jsonl")
    node = NodeVariants.parse("fusion=rrf,convex")
    index = service.active()[1]  # one Qdrant Edge handle at a time: closed before the app opens its own
    try:
        runs = {
            label: run_answers(questions, lambda q, v=variant: service.answer(q, variants={"fusion": v}), index)
            for variant, label in zip(node.variants, node.labels(), strict=True)
        }
    finally:
        index.close()
    run = ab_report(runs, [node])
    report = server_env.settings.data_dir / "evals" / f"harbor.ab_{uuid.uuid4().hex[:8]}.json"
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(json.dumps(run))
    pointer = server_env.settings.ab_pointer_file
    pointer.write_text(json.dumps({"kind": "ab", "json": str(report)}))
    try:
        with live_server(server_env.settings, server_env.stores) as url:
            browser.get(url + "/console")
            token = browser.find_element(By.ID, "token")
            token.clear()
            token.send_keys(server_env.admin_token, Keys.TAB)
            WebDriverWait(browser, 60).until(ec.presence_of_element_located((By.CSS_SELECTOR, "#eval-table td")))
            rows = [
                [cell.text for cell in row.find_elements(By.TAG_NAME, "td")]
                for row in browser.find_elements(By.CSS_SELECTOR, "#eval-table tr")[1:]
            ]
    finally:
        pointer.unlink()
    first = run["comparisons"][0]
    assert len(rows) == len(run["comparisons"]) > 0
    assert rows[0][:3] == [first["metric"], f"{first['a']} → {first['b']}", f"{first['value_a']:.3f}"]
    assert rows[0][-1] == f"{first['p_value']:.3f}"


def test_passage_route_opens_a_citation(server_env: ServerEnv) -> None:
    from fastapi.testclient import TestClient

    with TestClient(create_app(server_env.settings, server_env.stores)) as client:
        auth = {"Authorization": "Bearer test-token"}
        reply = client.post(
            "/v1/query", json={"question": "Which port does the harbor dashboard listen on?"}, headers=auth
        )
        chunk_id = reply.json()["citations"][0]["chunk_id"]
        passage = client.get(f"/v1/passages/{chunk_id}", headers=auth).json()
        assert (
            passage["chunk_id"] == chunk_id
            and "7420" in passage["text"]
            and passage["document_id"] == "guide/config.md"
        )
        missing = client.get("/v1/passages/nope", headers=auth)
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
        assert client.get("/").headers["content-type"].startswith("text/html")
        assert "ragline console" in client.get("/console").text
