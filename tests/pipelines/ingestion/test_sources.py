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

from pipelines.documents import sha256_text
from pipelines.ingestion.cleaners import clean_document
from pipelines.ingestion.loaders import SourceError
from pipelines.ingestion.sources import load_source
from pipelines.ingestion.sources.web import FetchPolicy
from pipelines.settings import READ_FORMATS, Settings
from tests.formats import PNG, new_users_docs, write_pdf


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


# The first bytes of a real PDF: its header and catalog, and no more (the PNG's are in tests.formats).
PDF = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n"


def test_a_binary_file_is_refused_by_name_not_indexed_as_noise(site: str, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text("# Guide\n\nCaf\xe9 cr\xe8me, in UTF-8.\n")
    (docs / "manual.pdf").write_bytes(PDF)
    (docs / "logo.png").write_bytes(PNG)
    with pytest.raises(SourceError, match=r"logo\.png is not a text document .* --exclude or RAGLINE_EXCLUDE"):
        load_source(str(docs), ["**"], [], tmp_path / "data")
    # A file that starts as a PDF and is none (a header alone) is named too, not indexed as noise.
    with pytest.raises(SourceError, match=r"manual\.pdf is a PDF whose text ragline cannot read: pypdf cannot"):
        load_source(str(docs), ["**"], ["*.png"], tmp_path / "data")
    [guide] = load_source(str(docs), ["**"], ["*.png", "*.pdf"], tmp_path / "data")
    assert "Café crème" in guide.text
    # A page fetched from a site is read the same way.
    (tmp_path / "www" / "docs" / "manual.pdf").write_bytes(PDF)
    listing = tmp_path / "urls.txt"
    listing.write_text(f"{site}/docs/manual.pdf\n")
    with pytest.raises(SourceError, match=r"docs/manual\.pdf is a PDF whose text ragline cannot read"):
        load_source(f"urls+{listing}", ["**"], [], tmp_path, FetchPolicy(delay_seconds=0.0))


def test_the_default_include_reads_every_format_the_cleaners_read(tmp_path: Path) -> None:
    docs = new_users_docs(tmp_path / "docs")
    settings = Settings(source=str(docs))
    assert sorted(p.removeprefix("**/*") for p in settings.include) == sorted(READ_FORMATS)
    documents = {d.document_id: d for d in load_source(str(docs), settings.include, settings.exclude, tmp_path)}
    assert sorted(documents) == [
        "FAQ.txt", "api/old.htm", "api/sync.html", "guide/install.rst", "guide/legacy.rest",
        "index.md", "manual.pdf", "notes.markdown",
    ]  # fmt: skip
    cleaned = {i: clean_document(d, docs) for i, d in documents.items()}
    titles = {i: d.title for i, d in cleaned.items()}
    assert titles["guide/install.rst"] == "Installing" and titles["api/sync.html"] == "harbor sync"
    assert titles["api/old.htm"] == "Old API" and titles["notes.markdown"] == "Notes"
    assert "Home | API" not in cleaned["api/sync.html"].text  # the cleaner, not the raw page
    # The PDF: its own title, then its text page by page under a heading per page, for citations.
    pdf = cleaned["manual.pdf"]
    assert pdf.title == "Harbor Operations Manual"
    assert pdf.text.startswith("# Harbor Operations Manual\n\n## Page 1\n\nHarbor operations manual\n")
    assert "## Page 2\n\nThe dashboard of a harbor server listens on port 7420 by default." in pdf.text
    # A document's hash is that of the text read, so an edit of the PDF's text makes a new content version.
    assert documents["manual.pdf"].content_hash == sha256_text(documents["manual.pdf"].text)


def test_pdf_text_is_read_page_by_page_and_unreadable_pdfs_are_named(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    # A page with only a drawing gets no heading; text that looks like Markdown structure stays text.
    (docs / "spec.pdf").write_bytes(write_pdf([["# not a heading", "``` not a fence"], None, ["Last page."]]))
    [spec] = load_source(str(docs), ["**/*.pdf"], [], tmp_path)
    assert spec.text == (
        "# spec\n\n## Page 1\n\n\\# not a heading\n\\``` not a fence\n\n## Page 3\n\nLast page.\n"
    )  # no title in the file: its name
    # A scan (pages without a text layer) and an encrypted PDF are refused by name, never indexed empty.
    (docs / "scan.pdf").write_bytes(write_pdf([None, None]))
    with pytest.raises(SourceError, match=r"scan\.pdf is a PDF .* none of its 2 page\(s\) has a text layer"):
        load_source(str(docs), ["scan.pdf"], [], tmp_path)
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(docs / "spec.pdf"))
    writer.encrypt(user_password="secret", algorithm="AES-128")
    with (docs / "locked.pdf").open("wb") as handle:
        writer.write(handle)
    with pytest.raises(SourceError, match=r"locked\.pdf is a PDF .* encrypted with a password"):
        load_source(str(docs), ["locked.pdf"], [], tmp_path)
    # Encrypted with an empty user password (a permissions-only PDF, common in the wild): it opens and is read.
    writer = PdfWriter(clone_from=PdfReader(docs / "spec.pdf"))
    writer.encrypt(user_password="", owner_password="owner", algorithm="AES-128")
    with (docs / "open.pdf").open("wb") as handle:
        writer.write(handle)
    [opened] = load_source(str(docs), ["open.pdf"], [], tmp_path)
    assert "Last page." in opened.text


def test_a_source_with_no_format_read_lists_the_formats_and_the_files_it_saw(site: str, tmp_path: Path) -> None:
    code = tmp_path / "code"
    (code / "src").mkdir(parents=True)
    for name in ("src/app.py", "src/util.py", "setup.cfg"):
        (code / name).write_text("x = 1\n")
    (code / "logo.png").write_bytes(PNG)
    include = list(Settings().include)
    with pytest.raises(SourceError) as caught:
        load_source(str(code), include, [], tmp_path / "data")
    message = str(caught.value)
    assert f"no documents under {code.resolve()} match include=" in message
    assert "ragline reads Markdown (.md, .markdown), reStructuredText (.rst, .rest), HTML (.html, .htm), " in message
    assert "plain text (.txt), PDF (.pdf)" in message
    assert "it holds 4 file(s) (2 .py, 1 .cfg, 1 .png): logo.png, setup.cfg, src/app.py, src/util.py" in message
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(SourceError, match="it holds no file"):
        load_source(str(empty), include, [], tmp_path / "data")
    # A git source says the same of its checkout.
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "main.go").write_text("package main\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "code only")
    with pytest.raises(SourceError, match=r"at [0-9a-f]{12} match .* it holds 1 file\(s\) \(1 \.go\): main\.go"):
        load_source(f"git+{repo}#main", include, [], tmp_path / "data")
    # A site's pages: those without a file ending are HTML pages, which the default include reads.
    listing = tmp_path / "urls.txt"
    listing.write_text(f"{site}/docs/one.html\n{site}/docs/\n{site}/robots.txt\n{site}/logo.svg\n")
    documents = load_source(f"urls+{listing}", include, [], tmp_path, FetchPolicy(delay_seconds=0.0))
    assert [d.document_id for d in documents] == ["docs/one.html", "docs/", "robots.txt"]
    listing.write_text(f"{site}/logo.svg\n{site}/feed.xml\n")
    with pytest.raises(SourceError, match=r"the pages listed .* it holds 2 file\(s\) .*: logo\.svg, feed\.xml"):
        load_source(f"urls+{listing}", include, [], tmp_path, FetchPolicy(delay_seconds=0.0))


def test_links_out_of_the_source_and_special_files_are_never_read(tmp_path: Path) -> None:
    import os

    secret = tmp_path / "home" / "id_rsa"
    secret.parent.mkdir()
    secret.write_text("-----BEGIN OPENSSH PRIVATE KEY----- not a doc\n")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "page.md").write_text("# Elsewhere\n\nA page outside the source.\n")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text("# Guide\n\nThe real page.\n")
    (docs / "notes.md").symlink_to(secret)  # a link to a file outside the source
    (docs / "more").symlink_to(outside, target_is_directory=True)  # a link to a folder outside it
    (docs / "inside.md").symlink_to(docs / "guide.md")  # even a link within the source is not followed
    os.mkfifo(docs / "pipe.md")  # reading it would block the build
    documents = load_source(str(docs), ["**"], [], tmp_path / "data")
    assert [d.document_id for d in documents] == ["guide.md"]
    assert all("PRIVATE KEY" not in d.text for d in documents)
    # A git checkout is read the same way: the link is committed, the file it names is not read.
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "--quiet", "--initial-branch", "main")
    (repo / "a.md").write_text("# A\n\nPage.\n")
    (repo / "notes.md").symlink_to(secret)
    git(repo, "add", ".")
    git(repo, "commit", "--quiet", "-m", "one")
    checked_out = load_source(f"git+{repo}", ["**"], [], tmp_path / "data")
    assert [d.document_id for d in checked_out] == ["a.md"]


def test_a_file_over_the_size_limit_and_too_many_files_are_refused_by_name(tmp_path: Path) -> None:
    from pipelines.ingestion.loaders import MAX_FILE_BYTES, read_bounded, select_paths

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nSmall page.\n")
    (docs / "build.log.md").write_text("x" * 5000)
    paths = select_paths(docs, ["**"], [])
    assert [rel for rel, _ in read_bounded(docs, paths)] == ["a.md", "build.log.md"]  # the real limit: 20 MB
    assert MAX_FILE_BYTES == 20_000_000
    # The same check with smaller limits, so the test writes kilobytes, not megabytes.
    with pytest.raises(SourceError, match=r"build\.log\.md is 5000 bytes, over the 4096-byte limit"):
        read_bounded(docs, paths, max_file_bytes=4096)
    with pytest.raises(SourceError, match="matches 2 files, more than ragline reads from one source"):
        read_bounded(docs, paths, max_files=1)


def test_the_build_allow_list_admits_its_folders_repositories_and_hosts_only(tmp_path: Path) -> None:
    from pipelines.ingestion.sources import source_allowed

    settings = Settings(
        source=str(tmp_path / "docs"),
        build_sources=[
            str(tmp_path / "more"),
            "git+https://example.org/docs.git",
            "sitemap+https://docs.example.org/a.xml",
        ],
    )
    admitted = [
        str(tmp_path / "docs"),
        str(tmp_path / "docs" / "sub"),
        str(tmp_path / "more" / "x"),
        "git+https://example.org/docs.git#v2",
        "sitemap+https://docs.example.org/other.xml",
    ]
    refused = [
        str(tmp_path),
        str(tmp_path / "docs" / ".." / "secret"),
        "/etc",
        "git+https://example.org/docs.git.evil",
        "git+https://example.org/other.git",
        "sitemap+http://docs.example.org/a.xml",
        "sitemap+https://docs.example.org.evil.com/a.xml",
        f"urls+{tmp_path / 'docs' / 'list.txt'}",
    ]
    assert [s for s in admitted if not source_allowed(s, settings)] == []
    assert [s for s in refused if source_allowed(s, settings)] == []
