from __future__ import annotations

import pytest

from pipelines.answering.citations import (
    CitationError,
    join_sentences,
    markers,
    split_sentences,
    strip_markers,
    validate,
)


def test_ascii_sentences_keep_their_markers_and_numbers_stay_whole() -> None:
    text = "Harbor listens on 7420 [C:a-1]. Version 2.5 reads app.py too. [C:b-2] Does it?"
    assert split_sentences(text) == [
        "Harbor listens on 7420 [C:a-1].",
        "Version 2.5 reads app.py too. [C:b-2]",
        "Does it?",
    ]


def test_cjk_and_indic_terminators_split_without_spaces() -> None:
    assert split_sentences("端口是7420。[C:a-1]日志保留十四天！") == ["端口是7420。[C:a-1]", "日志保留十四天！"]
    assert split_sentences("यह पहला वाक्य है। यह दूसरा है॥") == ["यह पहला वाक्य है।", "यह दूसरा है॥"]


def test_validate_releases_only_cited_sentences() -> None:
    released, dropped = validate("Cited here [C:a-1]. Not cited. Also cited [C:b-2][C:a-1].", ["a-1", "b-2"])
    assert [s.chunk_ids for s in released] == [["a-1"], ["b-2", "a-1"]]
    assert dropped == ["Not cited."]


def test_marker_naming_an_unsupplied_chunk_fails() -> None:
    with pytest.raises(CitationError) as info:
        validate("Invented [C:zz-9]. Fine [C:a-1].", ["a-1"])
    assert info.value.unknown == ["zz-9"]


def test_markers_and_stripping() -> None:
    assert markers("x [C:a-1] y [C:b_2]") == ["a-1", "b_2"]
    assert strip_markers("The port is 7420 [C:a-1].") == "The port is 7420."
    assert strip_markers("仪表板默认监听端口 7420 [C:a-1]。下一句") == "仪表板默认监听端口 7420。下一句"
    # The page's own space before a leading dot stays: "method.add_task()" is an identifier no page has.
    assert strip_markers("Pass it with the method .add_task(): [C:a-1].") == "Pass it with the method .add_task():."


CODE = "```python\nimport app.settings\n\n# Set the port. Then start.\nserve(port=7420)\n```"


def test_a_code_block_is_one_sentence_with_its_marker() -> None:
    answer = f"Start the server like this: [C:a].\n\n{CODE}\n[C:a].\n\nIt listens on 7420 [C:a]."
    assert split_sentences(answer) == [
        "Start the server like this: [C:a].",
        f"{CODE}\n[C:a].",  # the full stops inside the code end nothing
        "It listens on 7420 [C:a].",
    ]
    released, dropped = validate(answer, ["a"])
    assert [s.text for s in released] == split_sentences(answer) and not dropped
    # Joined again, the block stands on lines of its own and splits into the same sentences.
    assert join_sentences(split_sentences(answer)) == answer
    # A block still arriving (a stream) runs to the end of the text, so its sentence is not complete yet.
    assert split_sentences("Run: [C:a].\n\n```bash\nmake test. And") == ["Run: [C:a].", "```bash\nmake test. And"]
    # A model's own layout: the marker on the closing fence's line, and prose after the block with no full stop
    # before it. The block still ends its sentence, marker included, and the prose is a sentence of its own.
    model = "Use this:\n```toml\nport = 7420\n``` [C:a]\nThen restart the server [C:b]."
    assert split_sentences(model) == ["Use this:\n```toml\nport = 7420\n``` [C:a]", "Then restart the server [C:b]."]
    # Three backticks inside a line are not a fence.
    assert split_sentences("Write ``` in a line. Then stop.") == ["Write ``` in a line.", "Then stop."]


def test_a_list_item_is_one_sentence_to_the_end_of_its_line_and_stands_on_a_line_of_its_own() -> None:
    answer = (
        "To upgrade: [C:a].\n\n1. Stop the server [C:a].\n2. Install the new version. Then start it [C:a]."
        "\n\nIt keeps your data [C:b]."
    )
    assert split_sentences(answer) == [
        "To upgrade: [C:a].",
        "1. Stop the server [C:a].",  # "1." is the item's number, not a sentence of its own
        "2. Install the new version. Then start it [C:a].",  # one item, one sentence, released by its marker
        "It keeps your data [C:b].",
    ]
    # Joined again, each item starts a line, and the text after the list a paragraph of its own.
    assert join_sentences(split_sentences(answer)) == answer
    # An item starts a sentence even when the text before it has no full stop.
    assert split_sentences("Do this:\n- edit the file [C:a].") == ["Do this:", "- edit the file [C:a]."]
    # A number inside a sentence still ends it when a full stop follows, as before.
    assert split_sentences("The limit is 10. It applies per user.") == ["The limit is 10.", "It applies per user."]


def test_an_abbreviation_ends_a_sentence_only_where_a_sentence_ends() -> None:
    text = "Pass a path, e.g. /items, or a key, i.e. the id. Compare X vs. Y. Logs, metrics, etc. are kept. Logs etc. The end."
    assert split_sentences(text) == [
        "Pass a path, e.g. /items, or a key, i.e. the id.",
        "Compare X vs. Y.",
        "Logs, metrics, etc. are kept.",
        "Logs etc.",  # before a capital letter "etc." ends its sentence
        "The end.",
    ]
    # A word that only ends like one is no abbreviation.
    assert split_sentences("Read the fetc. Then go.") == ["Read the fetc.", "Then go."]
    # An ellipsis before a lowercase word is inside its sentence (a placeholder, a trailing-off clause); before a
    # capital letter it ends one.
    text = "The build fails with a message (... is not a text document). Wait for it... Done."
    assert split_sentences(text) == [
        "The build fails with a message (... is not a text document).",
        "Wait for it...",
        "Done.",
    ]
