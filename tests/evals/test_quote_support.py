"""`quote_support`: a statement of an answer counts as supported when the passage it cites holds it, read as
the answer reads the passage (links as their text, table rows as cells joined by " | ")."""

from __future__ import annotations

from evals.answers import quoted_in

PASSAGE = """## Pull policies

You can also add multiple pull policies, retry a failed pull, or restrict pull policies.
View details in the [pull policies documentation](../executors/docker.md#pull-policies).

| Setting | Description |
|---|---|
| `pull_policy` | The image pull policy: `never`, `if-not-present` or `always` (default). |
"""


def test_a_quote_is_found_as_the_answer_reads_the_passage() -> None:
    assert quoted_in(
        "You can also add multiple pull policies, retry a failed pull, or restrict pull policies.", [PASSAGE]
    )
    assert quoted_in("View details in the pull policies documentation.", [PASSAGE])  # a link is its text
    row = "pull_policy | The image pull policy: never, if-not-present or always (default)."
    assert quoted_in(row, [PASSAGE])
    assert quoted_in("- View details in the pull policies documentation", [PASSAGE])  # a list item's bullet


def test_what_the_passage_does_not_say_is_not_found() -> None:
    assert not quoted_in("The image pull policy defaults to never.", [PASSAGE])
    assert not quoted_in("View details in the registry documentation.", [PASSAGE])
    assert not quoted_in("pull_policy | The image pull policy: always.", [PASSAGE])
    assert not quoted_in("", [PASSAGE])
    assert not quoted_in("You can also add multiple pull policies.", [])


DEFINITION = """`TOKEN_MAX_AGE` - Specifies the lifetime of a token. After that many seconds the token stops working.

`RETRIES` - How often a request is retried. Each retry waits a second.
"""


def test_a_sentence_said_after_its_definition_term_is_a_quote_of_that_description() -> None:
    assert quoted_in("TOKEN_MAX_AGE - After that many seconds the token stops working.", [DEFINITION])
    assert not quoted_in("TOKEN_MAX_AGE - After that many seconds the token is renewed.", [DEFINITION])
    assert not quoted_in("MAX_AGE_OF_TOKENS - After that many seconds the token stops working.", [DEFINITION])
    assert not quoted_in("TOKEN_MAX_AGE - After that many seconds the token stops working.", [PASSAGE])
