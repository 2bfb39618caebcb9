"""MyST Markdown reads as Sphinx shows it (pipelines/ingestion/myst_text.py), through the Markdown cleaner."""

from __future__ import annotations

from pipelines.answering.passage_units import plain
from pipelines.ingestion.cleaners import clean_markdown
from pipelines.ingestion.myst_text import myst_to_markdown

PAGE = """(harbor-ports)=
# Ports

% a comment for the page's authors

The dashboard listens on {attr}`~harbor.Settings.port`, set by {func}`harbor.configure`; see {doc}`the guide <guide>`
and {class}`!Pool`. Its version is {data}`harbor.__version_info__`.

:::{note}
Ports below 1024 need root.

```python
harbor.configure(port=8080)
```
:::

```{versionadded} 2.1
The {envvar}`HARBOR_PORT` variable.
```

```{toctree}
:maxdepth: 2
guide
```

```{doctest}
>>> harbor.configure(port=1)
```

```{testsetup}
import harbor
```

- Set the port in the file:

  ```{code-block} toml
  port = 7420
  ```

```{eval-rst}
.. warning:: Use :func:`harbor.reload` after a change.
```

```text
{func}`kept` inside a code block
```
"""


def test_myst_page_reads_as_sphinx_shows_it() -> None:
    text, title = clean_markdown(PAGE, "ports.md")
    assert title == "Ports"
    # Roles: their text as code, "~" keeps the last part, a titled reference its title (prose); labels and comments
    # unseen.
    assert "listens on `port`, set by `harbor.configure`; see the guide\nand `Pool`." in text
    # As code, a name's underscores are not read as emphasis when an answer quotes the sentence.
    assert "Its version is `harbor.__version_info__`." in text
    assert "harbor.__version_info__" in plain(text)
    assert "(harbor-ports)=" not in text and "authors" not in text and "{" not in text.split("```text")[0]
    # An admonition is a labelled paragraph of prose, its code still a code block.
    assert "**Note:**\nPorts below 1024 need root.\n\n```python\nharbor.configure(port=8080)\n```" in text
    assert "Added in version 2.1:\nThe `HARBOR_PORT` variable." in text
    # What the page does not show is gone; a doctest stays code, its set-up does not.
    assert "maxdepth" not in text and "guide\n```" not in text and "import harbor" not in text
    assert "```\n>>> harbor.configure(port=1)\n```" in text
    # In a list item the code block stays in the item; eval-rst is read as reStructuredText.
    assert "- Set the port in the file:\n\n  ```toml\n  port = 7420\n  ```" in text
    assert "**Warning:** Use `harbor.reload` after a change." in text
    # Inside a plain code block nothing is touched.
    assert "```text\n{func}`kept` inside a code block\n```" in text


def test_plain_markdown_passes_unchanged() -> None:
    page = "# Title\n\n% of users keep the default.\n\n(a) first, (b) second.\n\n```\n{x}\n```\n"
    assert myst_to_markdown(page) == page
