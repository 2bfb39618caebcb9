"""Readings: a person's verdict counts only for the very answer that was read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evals.readings import ReadingError, answer_digest, load_readings, main, score
from pipelines.golden_sets import half_of

ROOT = Path(__file__).resolve().parents[2]


def report(*questions: tuple[str, str, str]) -> dict[str, Any]:
    """(id, status, answer) of `answer` questions."""
    return {
        "questions": [
            {"id": i, "half": half_of(i), "expected": "answer", "status": status, "answer": answer}
            for i, status, answer in questions
        ]
    }


def write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_a_reading_counts_only_while_the_answer_is_the_one_read(tmp_path: Path) -> None:
    readings = load_readings(
        write(
            tmp_path / "r.jsonl",
            [
                {"id": "q-1", "answer_sha256": answer_digest("Port 7420."), "verdict": "correct"},
                {"id": "q-2", "answer_sha256": answer_digest("It depends."), "verdict": "wrong", "note": "no value"},
            ],
        )
    )
    same = score(report(("q-1", "answered", "Port 7420."), ("q-2", "answered", "It depends.")), readings)["all"]
    assert (same["correct"], same["wrong"], same["unread"], same["correct_share"]) == (1, 1, [], 0.5)
    changed = score(report(("q-1", "answered", "Port 7421."), ("q-2", "answered", "It depends.")), readings)["all"]
    assert changed["unread"] == ["q-1"] and changed["correct"] == 0 and changed["correct_share"] is None
    renamed = score(report(("q-1", "answered", "Port 7420 [C:new-3]."), ("q-2", "answered", "It depends.")), readings)
    assert renamed["all"]["correct"] == 1  # a rebuilt index renames the chunk; the words read are the same
    declined = score(report(("q-1", "answered", "Port 7420."), ("q-3", "no_answer", "I don't know.")), readings)
    assert (
        declined["all"]["declined"] == 1 and declined["all"]["correct_share"] == 0.5
    )  # declined counts as not correct


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"id": "q-1", "answer_sha256": "ab", "verdict": "fine"}, "verdict 'fine' is not one of"),
        ({"id": "q-1", "verdict": "correct"}, "missing answer_sha256"),
    ],
)
def test_a_bad_reading_is_refused_with_its_line(tmp_path: Path, row: dict[str, Any], message: str) -> None:
    path = write(tmp_path / "r.jsonl", [{"id": "q-0", "answer_sha256": "cd", "verdict": "wrong"}, row])
    with pytest.raises(ReadingError, match=rf"r\.jsonl:2: {message}"):
        load_readings(path)


def test_an_answer_read_twice_is_refused(tmp_path: Path) -> None:
    row = {"id": "q-1", "answer_sha256": "ab", "verdict": "wrong"}
    with pytest.raises(ReadingError, match="q-1 is read twice"):
        load_readings(write(tmp_path / "r.jsonl", [row, row]))


def test_unread_answers_are_written_out_to_be_read(tmp_path: Path) -> None:
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps(report(("q-1", "answered", "Port 7420."), ("q-2", "answered", "New."))))
    readings = write(
        tmp_path / "r.jsonl", [{"id": "q-1", "answer_sha256": answer_digest("Port 7420."), "verdict": "correct"}]
    )
    out = tmp_path / "todo.jsonl"
    assert main(["unread", str(answers), str(readings), "--out", str(out)]) == 0
    todo = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(t["id"], t["verdict"], t["answer"]) for t in todo] == [("q-2", None, "New.")]
    assert todo[0]["answer_sha256"] == answer_digest("New.")


GOLDEN = {p.stem: p for folder in (ROOT / "../shared/golden", ROOT / "evals/golden") for p in folder.glob("*.jsonl")}


@pytest.mark.parametrize("path", sorted((ROOT / "evals/data/readings").glob("*.jsonl")), ids=lambda p: p.name)
def test_the_committed_readings_load_and_name_questions_of_their_golden_set(path: Path) -> None:
    golden_set = path.name.split(".")[0]  # <set>.<generator>.jsonl
    ids = {json.loads(line)["id"] for line in GOLDEN[golden_set].read_text().splitlines() if line.strip()}
    readings = load_readings(path)
    assert readings and set(readings) <= ids
