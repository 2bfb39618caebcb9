"""The held-out corpora in evals/corpora/<name>/docs/ (the source to index; README.md and the licence sit
beside it) and their question sets in evals/golden/ follow the golden format of
`../shared/golden/README.md`, and every evidence string is on the page it names.

The page text here is the page as a reader sees it, read without ragline's cleaners: an `.md` file as
written, an `.rst` file as written less the markup of its roles (":meth:`Context.invoke`" reads "Context.invoke";
an evidence string holding a role is refused), an `.html` file as the visible text of its `<article>` (Sphinx's
main content; the whole document when there is none). The questions were written from those pages before ragline
ran on them; whether ragline's cleaners keep each phrase is what the evaluation measures, not what this check
assumes. (The role rule is written out here rather than taken from the reStructuredText cleaner for that reason.)
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import pytest

from pipelines.golden_sets import normalise
from pipelines.settings import PROJECT_ROOT

CORPORA = PROJECT_ROOT / "evals" / "corpora"
GOLDEN = PROJECT_ROOT / "evals" / "golden"
# Each held-out set: its corpus folder under evals/corpora/ and the prefix of its ids.
SETS = {"alembic": "al", "coverage": "cv", "markdown": "md", "werkzeug": "wz", "marshmallow": "mm", "click": "ck",
        "structlog": "sl", "attrs": "at", "flask": "fl", "pymdown-extensions": "px", "anyio": "an", "cattrs": "ca",
        "hatch": "ht", "urllib3": "ul", "apscheduler": "as", "trio": "tr",
        "cookiecutter": "cc", "black": "bk", "doit": "di", "babel": "bb", "griffe": "gf", "behave": "bh",
        "docutils": "du", "celery": "ce", "aiohttp": "ah", "intake": "ik",
        "kombu": "kb", "mako": "mk", "cmd2": "cm", "peewee": "pw", "psycopg": "pg",
        "factory-boy": "fb", "flask-security": "fs", "django-tables2": "dt", "pint": "pt", "webob": "wo",
        "pecan": "pn", "sqlalchemy-utils": "su", "tornado": "tn", "cryptography": "cy",
        "stestr": "qs", "oslo-config": "zo", "nose2": "n2", "logbook": "lb", "django-guardian": "dg",
        "pycurl": "pc", "bleak": "bl", "mutagen": "mg", "circuits": "ci", "amqp": "aq",
        "pymongo": "pm", "jinja2": "jj", "bottle": "bo", "pyroute2": "pr", "ws4py": "ws", "paste": "ps",
        "requests": "rq", "pygments": "py", "cherrypy": "cp", "djangorestframework": "df",
        "eventlet": "ev", "wtforms": "wt", "mongoengine": "me", "testfixtures": "tf",
        "django-extensions": "dx", "agate": "ag", "pygit2": "gt",
        "django-channels": "dc", "kitchen": "ki", "pynacl": "na",
        "gevent": "gv", "sqlobject": "so", "lxml": "lx", "h5py": "h5", "flask-sqlalchemy": "fq", "ipyparallel": "ip",
        "distributed": "dd", "lmfit": "lm", "notebook": "nb", "bidict": "bi", "apispec": "ap", "fonttools": "ft", "ipython": "iy",
        "dask": "dk", "mdanalysis": "mn"}  # fmt: skip

TYPES = {"single-fact", "paraphrase", "identifier", "list", "comparison", "multi-page", "false-premise",
         "unanswerable", "off-topic", "vague"}  # fmt: skip
FIELDS = {"id": str, "question": str, "lang": str, "type": str, "expected": str, "pages": list,
          "evidence": list, "facts": list}  # fmt: skip
PAGE_SUFFIXES = (".rst", ".html", ".md", ".txt")
# A role (":meth:`Context.invoke`", ":ref:`title <target>`") is markup: the page reads "Context.invoke".
ROLE = re.compile(r":[\w:-]+:`")
# As Sphinx shows a role: "~a.b.c" reads "c", "!Name" reads "Name".
ROLE_TEXT = re.compile(r":[\w:-]+:`([~!]?)([^`<]*?)\s*(?:<[^>]*>)?`")
MAX_PAGES_PER_EVIDENCE = 3  # as ../shared/golden/check.py: a phrase on more pages does not tell them apart


_BLOCKS = {"p", "div", "section", "li", "ul", "ol", "dl", "dt", "dd", "pre", "table", "tr", "td", "th", "br",
           "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "article", "main", "figure", "figcaption"}  # fmt: skip


class _VisibleText(HTMLParser):
    """The text of an HTML page's `<article>` (or of the whole page without one), tags and scripts dropped."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.article: list[str] = []
        self.everything: list[str] = []
        self._depth = 0
        self._hidden = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self._hidden += 1
        elif tag == "article":
            self._depth += 1
        self._space(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self._hidden = max(0, self._hidden - 1)
        elif tag == "article":
            self._depth = max(0, self._depth - 1)
        self._space(tag)

    def _space(self, tag: str) -> None:
        """A block boundary separates words (normalisation collapses the extra white space); inline tags
        such as `<span class="pre">` inside one word do not."""
        if tag in _BLOCKS:
            self.handle_data(" ")

    def handle_data(self, data: str) -> None:
        if self._hidden:
            return
        self.everything.append(data)
        if self._depth:
            self.article.append(data)


def page_text(path: Path) -> str:
    raw = path.read_text(encoding="utf-8")
    if path.suffix == ".html":
        parser = _VisibleText()
        parser.feed(raw)
        parser.close()
        return "".join(parser.article or parser.everything)
    if path.suffix == ".rst":
        return ROLE_TEXT.sub(lambda m: m[2].rsplit(".", 1)[-1] if m[1] == "~" else m[2], raw)
    return raw


def corpus_pages(root: Path) -> dict[str, str]:
    """Every page of a corpus, by document id (the path relative to the corpus root), normalised."""
    return {
        path.relative_to(root).as_posix(): normalise(page_text(path))
        for path in sorted(root.rglob("*"))
        if path.suffix in PAGE_SUFFIXES and path.is_file()
    }


def read_set(name: str) -> list[dict]:
    lines = (GOLDEN / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def problems(name: str, prefix: str) -> list[str]:
    """Everything wrong with one held-out set, as ../shared/golden/check.py reads the shared ones."""
    pages = corpus_pages(CORPORA / name / "docs")
    found: list[str] = []
    seen: set[str] = set()
    for row in read_set(name):
        qid = row.get("id", "?")
        if set(row) - set(FIELDS) - {"notes"} or any(not isinstance(row.get(k), t) for k, t in FIELDS.items()):
            found.append(f"{qid}: fields {sorted(row)} do not follow the format")
            continue
        if qid in seen or not re.fullmatch(rf"{prefix}-\d{{3}}", qid):
            found.append(f"{qid}: duplicate id or not {prefix}-NNN")
        seen.add(qid)
        kind, expected = row["type"], row["expected"]
        wanted = {"unanswerable": "abstain", "off-topic": "abstain", "vague": "clarify"}.get(kind, "answer")
        if kind not in TYPES or expected != wanted or row["lang"] != "en" or not row["question"].strip():
            found.append(f"{qid}: type {kind!r} / expected {expected!r} / lang {row['lang']!r}")
        if expected != "answer":
            if row["pages"] or row["evidence"]:
                found.append(f"{qid}: an {expected} question names no pages and no evidence")
            continue
        if not row["pages"] or not row["evidence"] or not row["facts"] or len(set(row["pages"])) != len(row["pages"]):
            found.append(f"{qid}: an answer question needs distinct pages, evidence and facts")
            continue
        if kind == "multi-page" and (len(row["pages"]) < 2 or len(row["evidence"]) != len(row["pages"])):
            found.append(f"{qid}: a multi-page question has one evidence string on each of two or more pages")
        if kind == "list" and len(row["facts"]) < 2:
            found.append(f"{qid}: a list question states two or more facts")
        missing = [p for p in row["pages"] if p not in pages]
        if missing:
            found.append(f"{qid}: no such page {missing}")
            continue
        pairwise = len(row["evidence"]) == len(row["pages"])
        hit: set[str] = set()
        for i, evidence in enumerate(row["evidence"]):
            words = len(evidence.split())
            if ROLE.search(evidence):
                found.append(f"{qid}: evidence holds a reStructuredText role, markup no reader sees: {evidence!r}")
            if not 5 <= words <= 15:
                found.append(f"{qid}: evidence of {words} words (5-15): {evidence!r}")
            targets = [row["pages"][i]] if pairwise else row["pages"]
            text = normalise(evidence)
            on = [p for p in targets if text in pages[p]]
            if not on:
                found.append(f"{qid}: {evidence!r} is not on {targets}")
            hit.update(on)
            spread = sum(text in page for page in pages.values())
            if spread > MAX_PAGES_PER_EVIDENCE:
                found.append(f"{qid}: {evidence!r} is on {spread} pages")
        if not_hit := set(row["pages"]) - hit:
            found.append(f"{qid}: no evidence string on {sorted(not_hit)}")
    return found


@pytest.mark.parametrize("name", sorted(SETS))
def test_each_held_out_set_quotes_the_pages_it_names(name: str) -> None:
    assert problems(name, SETS[name]) == []


@pytest.mark.parametrize("name", sorted(SETS))
def test_each_held_out_set_has_thirty_questions_of_every_type(name: str) -> None:
    rows = read_set(name)
    types = Counter(row["type"] for row in rows)
    assert len(rows) >= 30
    assert set(types) == TYPES, f"missing types: {sorted(TYPES - set(types))}"
    assert types["multi-page"] >= 4 and types["paraphrase"] >= 5, types


@pytest.mark.parametrize("name", sorted(SETS))
def test_each_held_out_corpus_carries_its_licence_and_provenance(name: str) -> None:
    root = CORPORA / name
    readme = (root / "README.md").read_text(encoding="utf-8")
    assert any((root / licence).is_file() for licence in ("LICENSE", "LICENSE.txt", "LICENSE.md")), (
        "the project's licence"
    )
    assert re.search(r"\b[0-9a-f]{64}\b", readme), "the README names the sha256 of the sdist"
    # Big enough that retrieval must choose: many pages and 75,000 characters (APScheduler: 38 pages, 77 kB of
    # text), or a few long ones (Trio: 13 pages, 392 kB).
    pages = corpus_pages(root / "docs")
    size = sum(len(text) for text in pages.values())
    assert (len(pages) >= 15 and size >= 75_000) or (len(pages) >= 10 and size >= 200_000), (len(pages), size, name)


def test_a_phrase_missing_from_its_page_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check itself: a phrase that is not on its page, or is only in a script, is caught."""
    (tmp_path / "corpora" / "toy" / "docs").mkdir(parents=True)
    (tmp_path / "golden").mkdir()
    page = "<html><body><nav>run the migration first please now</nav><article><p>Use the <code>--sql</code> "
    page += "option to write a script.</p><script>var hidden = 'only in a script here';</script></article></body>"
    (tmp_path / "corpora" / "toy" / "docs" / "a.html").write_text(page + "</html>", encoding="utf-8")
    rows = [
        {"id": "ty-001", "question": "q", "lang": "en", "type": "identifier", "expected": "answer",
         "pages": ["a.html"], "evidence": ["Use the --sql option to write"], "facts": ["--sql"]},
        {"id": "ty-002", "question": "q", "lang": "en", "type": "single-fact", "expected": "answer",
         "pages": ["a.html"], "evidence": ["var hidden = only in a script"], "facts": ["x"]},
        {"id": "ty-003", "question": "q", "lang": "en", "type": "single-fact", "expected": "answer",
         "pages": ["a.html"], "evidence": ["run the migration first please"], "facts": ["x"]},
    ]  # fmt: skip
    (tmp_path / "golden" / "toy.jsonl").write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    monkeypatch.setattr(sys.modules[__name__], "CORPORA", tmp_path / "corpora")
    monkeypatch.setattr(sys.modules[__name__], "GOLDEN", tmp_path / "golden")
    found = problems("toy", "ty")
    assert {f.split(":")[0] for f in found} == {"ty-002", "ty-003"}, found
