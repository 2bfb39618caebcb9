"""Answers read by a person: a verdict per answer that stays valid while the answer stays the same.

`facts_present` counts a golden fact only when the answer repeats it as written, and a judge model is only as good
as the model. A careful reading is the third measure: someone reads each answer against its question's golden
facts and evidence and writes down `correct` (states what was asked), `partial` (some of it, or the right page
without the asked-for value) or `wrong` (does not answer, or says something false), with a short note.

A reading file is JSONL, one answer a line: `{"id": ..., "answer_sha256": ..., "verdict": ..., "note": ...}`.
`answer_sha256` is the SHA-256 of the answer text as `ragline eval answers` wrote it, less its citation markers (a
rebuilt index names its chunks anew; the reader reads the words), so a reading counts only for the very answer that
was read: when a change of ragline changes an answer, its reading no longer applies and the
answer is listed as unread until someone reads it again (replace its line with the new reading: an id is read
once). Nothing is inferred for an unread answer.

    python -m evals.readings score ANSWERS.json READINGS.jsonl        (per half: correct, partial, wrong, unread)
    python -m evals.readings unread ANSWERS.json READINGS.jsonl --out TEMPLATE.jsonl   (lines to fill in)
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipelines.answering.citations import strip_markers
from pipelines.golden_sets import half_of

VERDICTS = ("correct", "partial", "wrong")


class ReadingError(ValueError):
    """A reading file that cannot be used: bad JSON, a missing field, an unknown verdict, an id read twice."""


@dataclass(frozen=True)
class Reading:
    id: str
    answer_sha256: str
    verdict: str
    note: str = ""


def answer_digest(answer: str) -> str:
    """The SHA-256 of what the reader read: the answer without its `[C:...]` markers."""
    return hashlib.sha256(strip_markers(answer).encode("utf-8")).hexdigest()


def load_readings(path: Path) -> dict[str, Reading]:
    readings: dict[str, Reading] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ReadingError(f"{where}: not JSON ({exc.msg})") from exc
        missing = [k for k in ("id", "answer_sha256", "verdict") if not row.get(k)]
        if missing:
            raise ReadingError(f"{where}: missing {', '.join(missing)}")
        if row["verdict"] not in VERDICTS:
            raise ReadingError(f"{where}: verdict {row['verdict']!r} is not one of {', '.join(VERDICTS)}")
        if row["id"] in readings:
            raise ReadingError(f"{where}: {row['id']} is read twice")
        readings[row["id"]] = Reading(row["id"], row["answer_sha256"], row["verdict"], row.get("note", ""))
    return readings


def reading_of(readings: dict[str, Reading], question: dict[str, Any]) -> Reading | None:
    """The reading of this answer, if its words are the ones that were read."""
    reading = readings.get(question["id"])
    return reading if reading is not None and reading.answer_sha256 == answer_digest(question["answer"]) else None


def answered(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The report's `answer` questions that got an answer: what a reading reads."""
    return [q for q in report["questions"] if q.get("expected") == "answer" and q.get("status") == "answered"]


def score(report: dict[str, Any], readings: dict[str, Reading]) -> dict[str, dict[str, Any]]:
    """Per half of the report (`all`, then each half present): of its `answer` questions, how many got no answer
    (`declined`), and of those answered how many were read correct, partial and wrong, and which are unread (no
    reading, or the answer changed since). `correct_share` is correct over every `answer` question, declined
    ones included; it is given only when every answer was read."""
    asked = [q for q in report["questions"] if q.get("expected") == "answer"]
    halves: dict[str, list[dict[str, Any]]] = {"all": asked}
    for q in asked:  # a report written before the halves were recorded: the split is the id's
        halves.setdefault(q.get("half") or half_of(q["id"]), []).append(q)
    out: dict[str, dict[str, Any]] = {}
    for half, questions in halves.items():
        counts = dict.fromkeys(VERDICTS, 0)
        unread: list[str] = []
        declined = 0
        for q in questions:
            if q.get("status") != "answered":
                declined += 1
                continue
            reading = reading_of(readings, q)
            if reading is None:
                unread.append(q["id"])
            else:
                counts[reading.verdict] += 1
        out[half] = {
            "answer_questions": len(questions),
            "declined": declined,
            **counts,
            "correct_share": None if unread else round(counts["correct"] / len(questions), 3),
            "unread": unread,
        }
    return out


def unread_template(report: dict[str, Any], readings: dict[str, Reading]) -> list[dict[str, Any]]:
    """A line to fill in for each answer that has no valid reading, with the answer to read."""
    return [
        {"id": q["id"], "answer_sha256": answer_digest(q["answer"]), "verdict": None, "note": "", "answer": q["answer"]}
        for q in answered(report)
        if reading_of(readings, q) is None
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.readings")
    parser.add_argument("action", choices=["score", "unread"])
    parser.add_argument("answers", help="a `ragline eval answers` report")
    parser.add_argument("readings", help="a reading file (JSONL); may be missing for `unread`")
    parser.add_argument("--out", help="unread: where to write the lines to fill in")
    args = parser.parse_args(argv)
    report = json.loads(Path(args.answers).read_text(encoding="utf-8"))
    path = Path(args.readings)
    try:
        readings = load_readings(path) if path.exists() or args.action == "score" else {}
    except (ReadingError, OSError) as exc:
        parser.error(str(exc))
    if args.action == "score":
        print(json.dumps(score(report, readings), indent=2))
        return 0
    lines = unread_template(report, readings)
    text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
        print(f"{len(lines)} answers to read: {args.out}")
    else:
        print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
