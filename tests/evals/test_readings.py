"""Readings: a person's verdict counts only for the very answer that was read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evals.readings import (
    Reading,
    ReadingError,
    agreement,
    answer_digest,
    blind_items,
    load_readings,
    main,
    score,
    unblind,
)
from pipelines.golden_sets import GoldenQuestion, half_of

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


def test_two_arms_read_blind_come_back_as_a_reading_per_arm_and_a_tally(tmp_path: Path) -> None:
    golden = write(
        tmp_path / "golden.jsonl",
        [
            {"id": f"q-{n}", "question": f"Question {n}?", "facts": [f"fact {n}"], "evidence": [f"evidence {n}"]}
            for n in range(1, 5)
        ],
    )
    base = report(("q-1", "answered", "Same [C:a-1]."), ("q-2", "answered", "Old."), ("q-3", "answered", "Bad."))
    base["questions"].append({"id": "q-4", "half": half_of("q-4"), "expected": "answer", "status": "no_answer"})
    variant = report(("q-1", "answered", "Same [C:b-9]."), ("q-2", "answered", "New."), ("q-3", "no_answer", ""))
    variant["questions"].append(
        {"id": "q-4", "half": half_of("q-4"), "expected": "answer", "status": "answered", "answer": "Found."}
    )
    paths = {}
    for name, rep in (("base", base), ("variant", variant)):
        paths[name] = tmp_path / f"{name}.json"
        paths[name].write_text(json.dumps(rep))
    items, key = tmp_path / "items.jsonl", tmp_path / "key.json"
    argv = ["blind", f"set.base={paths['base']}", f"set.variant={paths['variant']}", "--golden", str(golden)]
    assert main([*argv, "--out", str(items), "--key", str(key), "--readers", "2", "--seed", "7"]) == 0
    files = [tmp_path / "items.1.jsonl", tmp_path / "items.2.jsonl"]
    read = [[json.loads(line) for line in f.read_text().splitlines()] for f in files]
    every = [item for rows in read for item in rows]
    # One item per distinct answer: q-1's two arms wrote the same words; q-3 and q-4 were answered by one arm.
    assert sorted(i["answer"] for i in every) == ["Bad.", "Found.", "New.", "Old.", "Same."]
    assert all(set(i) == {"item", "question", "facts", "evidence", "answer", "verdict", "note"} for i in every)
    assert "base" not in "".join(f.read_text() for f in files)  # nothing names an arm
    q2 = [n for n, rows in enumerate(read) if any(i["question"] == "Question 2?" for i in rows)]
    assert len(q2) == 1  # both answers of a question go to one reader
    verdict = {"Same.": "correct", "Old.": "partial", "New.": "correct", "Bad.": "wrong", "Found.": "partial"}
    for f, rows in zip(files, read, strict=True):
        write(f, [{**i, "verdict": verdict[i["answer"]]} for i in rows])
    out = tmp_path / "readings"
    assert main(["unblind", str(key), *map(str, files), "--out-dir", str(out)]) == 0
    base_score = score(base, load_readings(out / "set.base.jsonl"))["all"]
    variant_score = score(variant, load_readings(out / "set.variant.jsonl"))["all"]
    assert (base_score["correct"], base_score["partial"], base_score["wrong"], base_score["unread"]) == (1, 1, 1, [])
    assert (variant_score["correct"], variant_score["partial"], variant_score["declined"]) == (2, 1, 1)
    _, tally = unblind(json.loads(key.read_text()), [json.loads(x) for f in files for x in f.read_text().splitlines()])
    # q-2 better (partial -> correct), q-3 same (wrong -> declined), q-4 better (declined -> partial); q-1 equal text.
    assert tally["set"]["differing"] == 3
    assert (tally["set"]["second_better"], tally["set"]["second_worse"], tally["set"]["same"]) == (2, 0, 1)
    assert tally["set"]["set.variant"] == {"correct": 1, "partial": 1, "wrong": 1}


def test_an_item_left_unread_is_refused(tmp_path: Path) -> None:
    key = {
        "arms": {"set": ["set.a", "set.b"]},
        "items": {"x1": {"id": "q-1", "answer_sha256": "ab", "arms": ["set.a"]}},
    }
    with pytest.raises(ReadingError, match="1 items have no verdict"):
        unblind(key, [])
    with pytest.raises(ReadingError, match="verdict None"):
        unblind(key, [{"item": "x1", "verdict": None}])


def test_blind_reading_of_the_differing_answers_only_tallies_the_same() -> None:
    """`--differing`: a question both arms answer in the same words is not read (the tally never counts it), and
    the items that are read unblind without it."""
    golden = {
        f"q-{n}": GoldenQuestion(f"q-{n}", f"Question {n}?", facts=[f"fact {n}"], evidence=[f"evidence {n}"])
        for n in range(1, 4)
    }
    base = report(("q-1", "answered", "Same [C:a-1]."), ("q-2", "answered", "Old."), ("q-3", "answered", "Bad."))
    variant = report(("q-1", "answered", "Same [C:b-9]."), ("q-2", "answered", "New."), ("q-3", "no_answer", ""))
    files, key = blind_items({"set.base": base, "set.variant": variant}, golden, seed=3, differing=True)
    assert sorted(i["answer"] for i in files[0]) == ["Bad.", "New.", "Old."]
    verdict = {"Old.": "partial", "New.": "correct", "Bad.": "wrong"}
    _, tally = unblind(key, [{**i, "verdict": verdict[i["answer"]]} for i in files[0]])
    assert tally["set"]["differing"] == 2 and tally["set"]["second_better"] == 1 and tally["set"]["same"] == 1
    every, _ = blind_items({"set.base": base, "set.variant": variant}, golden, seed=3)
    assert len(every[0]) == 4  # without it, q-1's one answer is read too


def test_two_readers_agreement_counts_the_answers_both_read_and_kappa(tmp_path: Path) -> None:
    def reading(rows: list[tuple[str, str, str]]) -> dict[str, Reading]:
        path = tmp_path / f"r{len(list(tmp_path.iterdir()))}.jsonl"
        path.write_text("".join(json.dumps({"id": i, "answer_sha256": h, "verdict": v}) + "\n" for i, h, v in rows))
        return load_readings(path)

    first = reading([("a", "1", "correct"), ("b", "2", "wrong"), ("c", "3", "partial"), ("d", "4", "correct")])
    second = reading([("a", "1", "correct"), ("b", "2", "partial"), ("c", "3", "partial"), ("d", "9", "wrong")])
    found = agreement(first, second)
    # d's words differ between the two readings: not the same answer, so not compared.
    assert found["answers"] == 3 and found["same_verdict"] == 2 and found["only_one_read"] == 1
    assert found["pairs"]["wrong->partial"] == 1 and found["counts"]["second"]["partial"] == 2
    # observed 2/3; chance (1*1 + 1*2 + 1*0) / 9 = 1/3; kappa (2/3 - 1/3) / (2/3) = 0.5
    assert found["kappa"] == 0.5
    assert agreement(first, first)["kappa"] == 1.0
