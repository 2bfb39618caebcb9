"""Sources: a git repository the test creates, and URL lists / sitemaps served by a local http.server."""

from __future__ import annotations

import http.server
import itertools
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from pipelines.ingestion.loaders import SourceError
from pipelines.ingestion.sources import load_source
from pipelines.ingestion.sources.web import FetchPolicy


def git(cwd: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@x"}
    import os

    done = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, env={**os.environ, **env}, check=True
    )
    return done.stdout.strip()


def test_git_source_reads_the_named_ref(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "--quiet", "--initial-branch", "main")
    (repo / "docs").mkdir()
    (repo / "docs" / "a.md").write_text("# A\n\nFirst version.\n")
    git(repo, "add", ".")
    git(repo, "commit", "--quiet", "-m", "one")
    git(repo, "tag", "v1")
    (repo / "docs" / "a.md").write_text("# A\n\nSecond version.\n")
    (repo / "docs" / "b.md").write_text("# B\n\nNew page.\n")
    git(repo, "commit", "--quiet", "-am", "two")
    git(repo, "add", ".")
    git(repo, "commit", "--quiet", "-m", "three")

    old = load_source(f"git+{repo}#v1", ["docs/**"], [], tmp_path / "data")
    assert [d.document_id for d in old] == ["docs/a.md"] and "First version." in old[0].text
    assert old[0].source_uri.startswith(f"{repo}@") and old[0].content_hash and old[0].fetched_at
    new = load_source(f"git+{repo}#main", ["docs/**"], [], tmp_path / "data")  # same cache folder, updated
    assert [d.document_id for d in new] == ["docs/a.md", "docs/b.md"] and "Second version." in new[0].text
    with pytest.raises(SourceError, match="not found"):
        load_source(f"git+{repo}#no-such-ref", ["**"], [], tmp_path / "data")
    with pytest.raises(SourceError, match="git fetch failed"):
        load_source(f"git+{tmp_path / 'missing'}", ["**"], [], tmp_path / "data")


class Site(http.server.SimpleHTTPRequestHandler):
    hits: ClassVar[list[tuple[float, str]]] = []
    flaky: ClassVar[dict[str, int]] = {}

    def log_message(self, *args: object) -> None:  # keep test output quiet
        pass

    def do_GET(self) -> None:
        Site.hits.append((time.monotonic(), self.path))
        if Site.flaky.get(self.path, 0) > 0:
            Site.flaky[self.path] -= 1
            self.send_error(503)
            return
        super().do_GET()


@pytest.fixture
def site(tmp_path: Path) -> Iterator[str]:
    root = tmp_path / "www"
    (root / "docs").mkdir(parents=True)
    (root / "private").mkdir()
    (root / "docs" / "one.html").write_text("<html><body><main><h1>One</h1><p>Page one.</p></main></body></html>")
    (root / "docs" / "two.html").write_text("<html><body><h1>Two</h1><p>Page two.</p></body></html>")
    (root / "docs" / "big.html").write_text("<p>" + "x" * 5000 + "</p>")
    (root / "private" / "secret.html").write_text("<p>secret</p>")
    (root / "robots.txt").write_text("User-agent: *\nDisallow: /private/\n")
    Site.hits, Site.flaky = [], {}
    handler = lambda *a, **k: Site(*a, directory=str(root), **k)  # noqa: E731
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    sitemap = "".join(f"<url><loc>{base}/docs/{p}.html</loc></url>" for p in ("one", "two"))
    (root / "sitemap.xml").write_text(
        f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{sitemap}</urlset>'
    )
    yield base
    server.shutdown()
    server.server_close()


def test_sitemap_is_fetched_politely_with_retries(site: str, tmp_path: Path) -> None:
    Site.flaky["/docs/two.html"] = 2  # two 503s, then the page
    policy = FetchPolicy(delay_seconds=0.2, retries=3, backoff_seconds=0.05)
    docs = load_source(f"sitemap+{site}/sitemap.xml", ["**"], [], tmp_path, policy)
    assert [d.document_id for d in docs] == ["docs/one.html", "docs/two.html"]
    assert docs[0].source_uri == f"{site}/docs/one.html" and "Page one." in docs[0].text
    page_hits = [t for t, p in Site.hits if p != "/robots.txt"]
    gaps = [b - a for a, b in itertools.pairwise(page_hits)]
    assert min(gaps) >= 0.19  # the delay between two requests to one host
    assert [p for _, p in Site.hits].count("/docs/two.html") == 3


def test_url_list_honours_robots_size_limit_and_gives_up(site: str, tmp_path: Path) -> None:
    listing = tmp_path / "urls.txt"
    policy = FetchPolicy(delay_seconds=0.0, retries=1, backoff_seconds=0.01, max_bytes=2000)
    listing.write_text(f"# pages\n{site}/docs/one.html\n{site}/private/secret.html\n")
    with pytest.raises(SourceError, match=r"robots\.txt disallows"):
        load_source(f"urls+{listing}", ["**"], [], tmp_path, policy)
    listing.write_text(f"{site}/docs/big.html\n")
    with pytest.raises(SourceError, match="byte limit"):
        load_source(f"urls+{listing}", ["**"], [], tmp_path, policy)
    Site.flaky["/docs/one.html"] = 5
    listing.write_text(f"{site}/docs/one.html\n")
    with pytest.raises(SourceError, match="gave up after 2 attempts"):
        load_source(f"urls+{listing}", ["**"], [], tmp_path, policy)
    listing.write_text(f"{site}/docs/one.html\n{site}/docs/two.html\n")
    docs = load_source(f"urls+{listing}", ["docs/two*"], [], tmp_path, policy)
    assert [d.document_id for d in docs] == ["docs/two.html"]


# The first bytes of real files of each kind: a PDF's header, a PNG's signature and header chunk.
PDF = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n"
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10\x00\x00\x00\x10\x08\x06\x00\x00\x00"


def test_a_binary_file_is_refused_by_name_not_indexed_as_noise(site: str, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text("# Guide\n\nCaf\xe9 cr\xe8me, in UTF-8.\n")
    (docs / "manual.pdf").write_bytes(PDF)
    (docs / "logo.png").write_bytes(PNG)
    with pytest.raises(SourceError, match=r"logo\.png is not a text document .* --exclude or RAGLINE_EXCLUDE"):
        load_source(str(docs), ["**"], [], tmp_path / "data")
    with pytest.raises(SourceError, match=r"manual\.pdf is not a text document"):
        load_source(str(docs), ["**"], ["*.png"], tmp_path / "data")
    [guide] = load_source(str(docs), ["**"], ["*.png", "*.pdf"], tmp_path / "data")
    assert "Café crème" in guide.text
    # A page fetched from a site is read the same way.
    (tmp_path / "www" / "docs" / "manual.pdf").write_bytes(PDF)
    listing = tmp_path / "urls.txt"
    listing.write_text(f"{site}/docs/manual.pdf\n")
    with pytest.raises(SourceError, match=r"docs/manual\.pdf is not a text document"):
        load_source(f"urls+{listing}", ["**"], [], tmp_path, FetchPolicy(delay_seconds=0.0))
