"""What a question asks (pipelines/text/asks.py): one thing, or two, and the clauses that ask them."""

from __future__ import annotations

from pipelines.text.asks import asks_two, split_asks


def test_a_question_asks_two_things_only_with_a_second_question_clause() -> None:
    assert asks_two("What is the default backup_keep_time, and how do I prune old backups?")
    assert asks_two("What's the default log size and which setting changes it?")
    assert asks_two("Is the port fixed? Which setting changes it?")
    # One ask: a statement before the question, a clause before a comma, nouns joined by "and", a bare "how".
    assert not asks_two("My job logs get truncated. What is the default maximum log size?")
    assert not asks_two("After mounting a sub-application at /subapi, where do I find its docs?")
    assert not asks_two("Which settings configure the ban for Git and the container registry?")
    assert not asks_two("It doesn't work, what's wrong?")
    assert not asks_two("Can FastAPI serve gRPC, and how?")
    assert not asks_two("¿Qué puerto usa el servidor y cómo lo cambio?")  # English patterns only


def test_each_ask_keeps_the_statements_before_the_question() -> None:
    question = "I run the runner in Docker. Which section do I need, and what do I add to docker run?"
    assert split_asks(question) == [
        "I run the runner in Docker. Which section do I need",
        "I run the runner in Docker. what do I add to docker run?",
    ]
    assert split_asks("Is the port fixed? Which setting changes it?") == [
        "Is the port fixed?",
        "Which setting changes it?",
    ]
    assert split_asks("Which port does it use?") == ["Which port does it use?"]
