"""What an answer can quote from a passage (sentences, list items, table rows) and the blocks a sentence
introduces: the code block or the list after a colon."""

from __future__ import annotations

from pipelines.answering.passage_units import (
    BLOCK_READ_CHARS,
    block_parts,
    block_readings,
    introduced,
    paragraph_units,
    prose_units,
)
from tests.pipelines.list_pages import SPECS, STEPS


def test_each_list_item_is_a_unit_of_its_own_without_its_bullet_or_number() -> None:
    units = prose_units(SPECS)
    # Joined, the items made one run-on "sentence" that no page has.
    assert "Linux-based system (ideally Debian-based)" in units
    assert "2 GB of RAM + 1 GB of swap" in units
    assert not any("Debian-based) 2 GB" in u for u in units)
    assert "Of the above, disk speed matters most." in units
    # A nested item belongs to its parent: alone, "HDD" or "With docs for FastAPI" says nothing.
    assert "A storage with a good random I/O performance, in order of preference: SSD HDD" in units
    assert "Restart Harbor:" not in prose_units(STEPS)  # two words: too short to answer on its own
    assert "Edit /etc/harbor/harbor.rb:" not in prose_units(STEPS)
    assert "A banned client receives a 403 error." in prose_units(STEPS)


def test_a_colon_sentence_introduces_the_list_after_it_and_the_list_ends_at_the_next_paragraph() -> None:
    found = introduced(SPECS)
    block = found["The minimum specs with which Harbor runs are:"]
    assert block.startswith("- Linux-based system") and block.rstrip().endswith("- HDD")
    assert "disk speed" not in block
    # Every item is a part, nested ones too, each without markup after a "-".
    assert block_parts(block) == [
        "- Linux-based system (ideally Debian-based)",
        "- 2 GB of RAM + 1 GB of swap",
        "- 20 GB of available storage",
        "- A storage with a good random I/O performance, in order of preference:",
        "- SSD",
        "- HDD",
    ]


def test_numbered_steps_keep_their_numbers_and_their_code_shown_from_the_margin() -> None:
    block = introduced(STEPS)["To configure the failed authentication ban:"]
    assert "403" not in block  # the paragraph after the list is not the list's
    assert block_parts(block) == [
        "1. Edit /etc/harbor/harbor.rb:",
        "```ruby\nharbor['ban'] = { 'maxretry' => 10, 'bantime' => 3600 }\n```",
        "1. Restart Harbor:",
        "```shell\nsudo harbor-ctl restart\n```",
    ]


def test_a_list_inside_code_or_after_a_sentence_without_a_colon_is_introduced_by_nothing() -> None:
    text = (
        "The file looks like this:\n\n```yaml\n- name: web\n- name: worker\n```\n\nWorkers run jobs.\n\n- one\n- two\n"
    )
    found = introduced(text)
    assert list(found) == ["The file looks like this:"] and found["The file looks like this:"].startswith("```yaml")


def test_a_full_width_colon_announces_a_block_too() -> None:
    text = "在终端中运行以下命令来启动服务器：\n\n```bash\nharbor serve\n```\n\n所需的软件如下：\n\n- Python 3.11\n- Redis 7\n"
    found = introduced(text)
    assert found["在终端中运行以下命令来启动服务器："] == "```bash\nharbor serve\n```"
    assert block_parts(found["所需的软件如下："]) == ["- Python 3.11", "- Redis 7"]


def test_a_code_span_keeps_its_stars_and_underscores_while_emphasis_goes() -> None:
    text = 'Set `RAGLINE_INCLUDE` to `["**/*.md"]`: a **bold** word, _this_ and `__init__.py` read as written.'
    units = prose_units(text)
    # A span with markup characters keeps its ticks, so a unit read again (CRAG's strips) stays the same.
    assert units == ['Set RAGLINE_INCLUDE to `["**/*.md"]`: a bold word, this and `__init__.py` read as written.']
    assert prose_units(" ".join(units)) == units
    # A span of two ticks holds a tick; read wrongly, the spans after it ran into their neighbours' words.
    text = "Matching ignores the characters `` ` `` and `*`. Then set `RAGLINE_GOLDEN_FILE` to it."
    units = prose_units(text)
    assert units == ["Matching ignores the characters `` ` `` and `*`.", "Then set RAGLINE_GOLDEN_FILE to it."]
    assert prose_units(" ".join(units)) == units
    # In a table cell too; a link keeps its text, code span or not.
    rows = prose_units("| when | what |\n|---|---|\n| `0 3 * * *` | the [`nightly`](ops.md#x) build runs |")
    assert rows == ["`0 3 * * *` | the nightly build runs"]


def test_a_unit_that_introduces_a_block_is_read_with_the_block_without_its_fences() -> None:
    text = (
        "Open the console:\n\n```bash\npython -m harbor\n```\n\nThese are kept:\n\n- logs\n- builds\n\n"
        "A sentence with no colon.\n\n- a list it does not introduce\n"
    )
    readings = block_readings(text)
    assert readings == {
        "Open the console:": "Open the console: python -m harbor",
        "These are kept:": "These are kept: - logs - builds",
    }
    long = "The flags are:\n\n" + "".join(f"- flag number {n} does something\n" for n in range(100))
    assert len(block_readings(long)["The flags are:"]) <= len("The flags are: ") + BLOCK_READ_CHARS


def test_a_passage_split_once_is_split_the_same_again_whatever_a_caller_did_with_it() -> None:
    text = "Logs are kept for 14 days. Set `retention_days` to change it.\n\n- first item of a list\n- second item here"
    first = paragraph_units(text)
    first[0].append("A sentence the page never had.")
    first.append(["Another one."])
    assert paragraph_units(text) == [
        ["Logs are kept for 14 days.", "Set retention_days to change it."],
        ["first item of a list"],
        ["second item here"],
    ]


def test_a_labelled_value_completes_the_sentence_before_it_and_other_fragments_are_dropped() -> None:
    """ "Default: 5" is two words, no unit on its own: it goes on the sentence it completes. A fragment that labels
    no value ("If.", "Example:") is dropped as before, and so is a labelled value that opens its paragraph."""
    text = (
        "How many recovery codes to generate. Default:: `5`\n\n"
        "Files are read from the cache. If.\n\n"
        "Use a lazy function for mutable values. Example:\n\n"
        "Type: int\n"
    )
    assert paragraph_units(text) == [
        ["How many recovery codes to generate. Default:: 5"],
        ["Files are read from the cache."],
        ["Use a lazy function for mutable values."],
    ]
