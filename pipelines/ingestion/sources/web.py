"""URL-list and sitemap sources, fetched politely: robots.txt honoured, a pause between requests to one
host, retries with exponential backoff on connection errors, 429 and 5xx, and a size limit per page."""

from __future__ import annotations

import datetime as dt
import time
import urllib.robotparser
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from urllib.parse import urljoin, urlparse

import httpx
import structlog

from pipelines.documents import Document
from pipelines.ingestion.loaders import SourceError, matches, nothing_matched, text_document

log = structlog.get_logger(__name__)
USER_AGENT = "ragline-indexer/0.1 (+https://github.com/ragline)"
_RETRY_STATUS = {429, 500, 502, 503, 504}


@dataclass
class FetchPolicy:
    delay_seconds: float = 1.0
    retries: int = 3
    backoff_seconds: float = 0.5
    max_bytes: int = 5_000_000
    timeout_seconds: float = 20.0
    user_agent: str = USER_AGENT


@dataclass
class PoliteFetcher:
    """One client for a whole source: remembers each host's robots.txt and when it was last asked."""

    policy: FetchPolicy
    _client: httpx.Client = field(init=False)
    _robots: dict[str, urllib.robotparser.RobotFileParser] = field(default_factory=dict)
    _last: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._client = httpx.Client(
            timeout=self.policy.timeout_seconds, follow_redirects=True, headers={"User-Agent": self.policy.user_agent}
        )

    def close(self) -> None:
        self._client.close()

    def _wait_turn(self, host: str) -> None:
        pause = self._last.get(host, -1e9) + self.policy.delay_seconds - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        self._last[host] = time.monotonic()

    def allowed(self, url: str) -> bool:
        parts = urlparse(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        if origin not in self._robots:
            parser = urllib.robotparser.RobotFileParser()
            try:
                response = self._get(f"{origin}/robots.txt", check_robots=False)
                parser.parse(response.decode("utf-8", errors="replace").splitlines())
            except SourceError:
                parser.parse([])  # no robots.txt (or unreachable): nothing is disallowed
            self._robots[origin] = parser
        return self._robots[origin].can_fetch(self.policy.user_agent, url)

    def get(self, url: str) -> bytes:
        return self._get(url, check_robots=True)

    def _get(self, url: str, check_robots: bool) -> bytes:
        if check_robots and not self.allowed(url):
            raise SourceError(f"robots.txt disallows {url}")
        host = urlparse(url).netloc
        last_error = ""
        for attempt in range(self.policy.retries + 1):
            if attempt:
                time.sleep(self.policy.backoff_seconds * 2 ** (attempt - 1))
            self._wait_turn(host)
            try:
                with self._client.stream("GET", url) as response:
                    if response.status_code in _RETRY_STATUS:
                        last_error = f"HTTP {response.status_code}"
                        continue
                    if response.status_code >= 400:
                        raise SourceError(f"{url}: HTTP {response.status_code}")
                    declared = int(response.headers.get("content-length") or 0)
                    if declared > self.policy.max_bytes:
                        raise SourceError(f"{url} is {declared} bytes, over the {self.policy.max_bytes}-byte limit")
                    body = bytearray()
                    for piece in response.iter_bytes():
                        body.extend(piece)
                        if len(body) > self.policy.max_bytes:
                            raise SourceError(f"{url} is over the {self.policy.max_bytes}-byte limit")
                    return bytes(body)
            except httpx.HTTPError as exc:
                last_error = str(exc) or type(exc).__name__
        raise SourceError(f"{url}: gave up after {self.policy.retries + 1} attempts ({last_error})")


def url_document_id(url: str) -> str:
    """A page's id is its URL path without the leading slash (`index` for the root)."""
    path = urlparse(url).path.lstrip("/")
    return path or "index"


def included(document_id: str, include: list[str], exclude: list[str]) -> bool:
    """A page selected by the globs. A page whose path has no file ending (`docs/install/`, `guide/intro`) is
    matched as the HTML page a server sends for it, as well as by its own path: the default include of every
    format read selects it, and so does `**/*.html`."""
    names = [document_id]
    if "." not in PurePosixPath(document_id).name or document_id.endswith("/"):
        names.append(document_id.rstrip("/") + ".html")
    return any(matches(n, include) for n in names) and not matches(document_id, exclude)


def fetch_pages(urls: Iterable[str], include: list[str], exclude: list[str], policy: FetchPolicy) -> list[Document]:
    fetcher = PoliteFetcher(policy)
    documents: list[Document] = []
    urls = list(dict.fromkeys(urls))
    listed = [url_document_id(url) for url in urls]
    try:
        for url in urls:
            doc_id = url_document_id(url)
            if not included(doc_id, include, exclude):
                continue
            body = fetcher.get(url)
            documents.append(text_document(doc_id, url, body, dt.datetime.now(dt.UTC).isoformat()))
            log.debug("page_fetched", url=url, bytes=len(body))
    finally:
        fetcher.close()
    if not documents:
        raise nothing_matched("the pages listed", include, exclude, listed)
    return documents


def load_url_list(path: Path, include: list[str], exclude: list[str], policy: FetchPolicy) -> list[Document]:
    if not path.is_file():
        raise SourceError(f"URL list {path} does not exist")
    urls = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]
    urls = [u for u in urls if u and not u.startswith("#")]
    bad = [u for u in urls if urlparse(u).scheme not in ("http", "https")]
    if bad:
        raise SourceError(f"URL list {path} holds addresses that are not http(s): {bad[:3]}")
    return fetch_pages(urls, include, exclude, policy)


def sitemap_urls(sitemap: str, fetcher: PoliteFetcher, depth: int = 0) -> list[str]:
    """Every page URL a sitemap lists, following nested sitemap indexes (up to 3 levels)."""
    try:
        root = ET.fromstring(fetcher.get(sitemap))
    except ET.ParseError as exc:
        raise SourceError(f"sitemap {sitemap} is not XML: {exc}") from exc
    locs = [el.text.strip() for el in root.iter() if el.tag.endswith("loc") and el.text]
    if root.tag.endswith("sitemapindex"):
        if depth >= 3:
            raise SourceError(f"sitemap index nesting too deep at {sitemap}")
        return [u for child in locs for u in sitemap_urls(urljoin(sitemap, child), fetcher, depth + 1)]
    return [urljoin(sitemap, u) for u in locs]


def load_sitemap(sitemap: str, include: list[str], exclude: list[str], policy: FetchPolicy) -> list[Document]:
    fetcher = PoliteFetcher(policy)
    try:
        urls = sitemap_urls(sitemap, fetcher)
    finally:
        fetcher.close()
    if not urls:
        raise SourceError(f"sitemap {sitemap} lists no pages")
    return fetch_pages(urls, include, exclude, policy)
