"""The load report records its command without the access token it was given."""

from __future__ import annotations

from evals.load_http import _masked


def test_token_is_left_out_of_the_recorded_command() -> None:
    argv = ["--url", "http://127.0.0.1:8000", "--token", "s3cret", "--concurrency", "1,8"]
    assert _masked(argv) == ["--url", "http://127.0.0.1:8000", "--token", "<token>", "--concurrency", "1,8"]
    assert _masked(["--token=s3cret", "--hits", "300"]) == ["--token=<token>", "--hits", "300"]
    assert "s3cret" not in " ".join(_masked(argv))
