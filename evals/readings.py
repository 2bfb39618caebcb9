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

Two variants compared by a reading must be read blind: the reader must not know which variant wrote an answer.
`blind` takes reports labelled `CORPUS.ARM=REPORT.json` (two arms of a corpus, any number of corpora) and the
golden files, and writes the items to read: one per distinct answer of each `answer` question (two arms that wrote
the same words share one item), each with the question, its golden facts and evidence, and an opaque item id; the
questions shuffled, the answers of one question side by side in a shuffled order, split over `--readers` files
so each question's answers go to one reader. The key (item id -> arm and question) goes to a file the reader is not
given. A reader writes `verdict` and `note` into each line. `unblind` turns the filled-in items back into a reading
file per arm (`CORPUS.ARM.jsonl`, the format above) and counts, on the questions whose arms' answers differ, each
arm's verdicts (a declined answer counts as wrong) and how often the second arm read better or worse.

    python -m evals.readings blind attrs.sentence=a.json attrs.extended=b.json --golden G.jsonl \
        --out items.jsonl --key key.json --readers 2 [--differing]
    python -m evals.readings unblind key.json items.1.jsonl items.2.jsonl --out-dir readings/

A second reader of the same answers (the same items, read without the first reader's verdicts) says how firm a
reading is: `agree` counts the verdicts both give and Cohen's kappa.

    python -m evals.readings agree readings/a.default.jsonl second/a.default.jsonl
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import secrets
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipelines.answering.citations import strip_markers
from pipelines.golden_sets import GoldenQuestion, half_of, load_golden

VERDICTS = ("correct", "partial", "wrong")
RANK = {"wrong": 0, "partial": 1, "correct": 2}


class ReadingError(ValueError):
    """A reading file that cannot be used: bad JSON, a missing field, an unknown verdict, an id read twice."""


@dataclass(frozen=True)
class Reading:
    id: str
    answer_sha256: str
    verdict: str
    note: str = ""


def _json_lines(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each non-blank line of a JSONL file with where it is (`path:line`); a line that is not JSON is refused."""
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            try:
                yield f"{path}:{number}", json.loads(line)
            except json.JSONDecodeError as exc:
                raise ReadingError(f"{path}:{number}: not JSON ({exc.msg})") from exc


def answer_digest(answer: str) -> str:
    """The SHA-256 of what the reader read: the answer without its `[C:...]` markers."""
    return hashlib.sha256(strip_markers(answer).encode("utf-8")).hexdigest()


def load_readings(path: Path) -> dict[str, Reading]:
    readings: dict[str, Reading] = {}
    for where, row in _json_lines(path):
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


def blind_items(
    reports: dict[str, dict[str, Any]],
    golden: dict[str, GoldenQuestion],
    *,
    readers: int = 1,
    seed: int | None = None,
    differing: bool = False,
) -> tuple[list[list[dict[str, Any]]], dict[str, Any]]:
    """The items each reader reads, and the key that unblinds them. `reports` maps `CORPUS.ARM` to a report.
    `differing`: only the questions whose arms' answers differ (the only ones the comparison counts); the
    others are not read, and their answers get no reading file line."""
    rng = random.Random(seed if seed is not None else secrets.randbits(64))
    arms: dict[str, list[str]] = {}
    for label in reports:
        corpus, _, arm = label.rpartition(".")
        if not corpus or not arm:
            raise ReadingError(f"label {label!r} is not CORPUS.ARM")
        arms.setdefault(corpus, []).append(label)
    key: dict[str, Any] = {"arms": arms, "items": {}, "answers": {}}
    questions: list[list[dict[str, Any]]] = []
    for labels in arms.values():
        by_id: dict[str, dict[str, dict[str, Any]]] = {}
        for label in labels:
            for q in reports[label]["questions"]:
                if q.get("expected") == "answer":
                    by_id.setdefault(q["id"], {})[label] = q
        for qid, per_arm in sorted(by_id.items()):
            digests = {
                label: (answer_digest(q["answer"]) if q.get("status") == "answered" else None)
                for label, q in per_arm.items()
            }
            key["answers"][qid] = digests
            distinct: dict[str, list[str]] = {}
            for label, digest in digests.items():
                if digest is not None:
                    distinct.setdefault(digest, []).append(label)
            if not distinct or (differing and len(set(digests.values())) == 1):
                continue
            gold = golden.get(qid)
            if gold is None:
                raise ReadingError(f"{qid}: not in the golden files given")
            items = []
            for digest, holders in distinct.items():
                item_id = secrets.token_hex(6)
                key["items"][item_id] = {"id": qid, "answer_sha256": digest, "arms": holders}
                answer = strip_markers(per_arm[holders[0]]["answer"])
                items.append(
                    {
                        "item": item_id,
                        "question": gold.question,
                        "facts": gold.facts,
                        "evidence": gold.evidence,
                        "answer": answer,
                        "verdict": None,
                        "note": "",
                    }
                )
            rng.shuffle(items)
            questions.append(items)
    rng.shuffle(questions)
    files: list[list[dict[str, Any]]] = [[] for _ in range(max(1, readers))]
    for n, items in enumerate(questions):
        files[n % len(files)].extend(items)
    return files, key


def unblind(
    key: dict[str, Any], verdicts: list[dict[str, Any]]
) -> tuple[dict[str, list[dict[str, Any]]], dict[str, Any]]:
    """Reading lines per arm label, and per corpus the tally over the questions whose arms' answers differ."""
    seen: dict[str, dict[str, Any]] = {}
    for row in verdicts:
        entry = key["items"].get(row.get("item"))
        if entry is None:
            raise ReadingError(f"item {row.get('item')!r} is not in the key")
        if row.get("verdict") not in VERDICTS:
            raise ReadingError(
                f"item {row['item']}: verdict {row.get('verdict')!r} is not one of {', '.join(VERDICTS)}"
            )
        seen[row["item"]] = {**entry, "verdict": row["verdict"], "note": row.get("note", "")}
    missing = sorted(set(key["items"]) - set(seen))
    if missing:
        raise ReadingError(f"{len(missing)} items have no verdict, first {missing[0]}")
    readings: dict[str, list[dict[str, Any]]] = {}
    verdict_of: dict[tuple[str, str], str] = {}
    for entry in seen.values():
        for label in entry["arms"]:
            line = {"id": entry["id"], "answer_sha256": entry["answer_sha256"], "verdict": entry["verdict"]}
            readings.setdefault(label, []).append({**line, "note": entry["note"]})
            verdict_of[(label, entry["id"])] = entry["verdict"]
    tally: dict[str, Any] = {}
    for corpus, labels in key["arms"].items():
        if len(labels) != 2:
            continue
        first, second = labels  # in the order given to `blind`: the second is compared with the first
        counts = {label: dict.fromkeys(VERDICTS, 0) for label in (first, second)}
        better = worse = same = 0
        for qid, digests in key["answers"].items():
            if first not in digests or second not in digests or digests[first] == digests[second]:
                continue
            a = verdict_of.get((first, qid), "wrong")  # declined: no answer is a wrong one
            b = verdict_of.get((second, qid), "wrong")
            counts[first][a] += 1
            counts[second][b] += 1
            better += RANK[b] > RANK[a]
            worse += RANK[b] < RANK[a]
            same += RANK[b] == RANK[a]
        tally[corpus] = {
            "differing": better + worse + same,
            **counts,
            "second_better": better,
            "second_worse": worse,
            "same": same,
        }
    for lines in readings.values():
        lines.sort(key=lambda line: line["id"])
    return readings, tally


def agreement(first: dict[str, Reading], second: dict[str, Reading]) -> dict[str, Any]:
    """How two readings of the same answers agree: over the answers both read (the same id and the same words),
    each reader's verdict counts, how many verdicts are the same, the table of verdict pairs (first -> second) and
    Cohen's kappa (agreement beyond what the two readers' own verdict shares give by chance; 1 is full agreement, 0
    no better than chance). A figure read by one reader is only as firm as this."""
    shared = sorted(i for i in first if i in second and first[i].answer_sha256 == second[i].answer_sha256)
    pairs = [(first[i].verdict, second[i].verdict) for i in shared]
    n = len(pairs)
    same = sum(a == b for a, b in pairs)
    counts = {who: {v: sum(p[k] == v for p in pairs) for v in VERDICTS} for k, who in enumerate(("first", "second"))}
    chance = sum(counts["first"][v] * counts["second"][v] for v in VERDICTS) / (n * n) if n else 0.0
    kappa = (same / n - chance) / (1 - chance) if n and chance < 1 else None
    return {
        "answers": n,
        "same_verdict": same,
        "counts": counts,
        "pairs": {f"{a}->{b}": sum(p == (a, b) for p in pairs) for a in VERDICTS for b in VERDICTS},
        "kappa": round(kappa, 3) if kappa is not None else None,
        "only_one_read": len(set(first) ^ set(second))
        + sum(first[i].answer_sha256 != second[i].answer_sha256 for i in first if i in second),
    }


def _jsonl(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.readings")
    actions = parser.add_subparsers(dest="action", required=True)
    for name in ("score", "unread"):
        action = actions.add_parser(name)
        action.add_argument("answers", help="a `ragline eval answers` report")
        action.add_argument("readings", help="a reading file (JSONL); may be missing for `unread`")
        action.add_argument("--out", help="unread: where to write the lines to fill in")
    make = actions.add_parser("blind", help="items to read without knowing which arm wrote them")
    make.add_argument("reports", nargs="+", help="CORPUS.ARM=REPORT.json, two arms per corpus, baseline first")
    make.add_argument("--golden", nargs="+", required=True, help="the golden files the reports were run on")
    make.add_argument("--out", required=True, help="items file; with --readers N, N files ITEMS.1.jsonl ...")
    make.add_argument("--key", required=True, help="where to write the key (keep it from the readers)")
    make.add_argument("--readers", type=int, default=1)
    make.add_argument("--seed", type=int, help="shuffle seed (default: random)")
    make.add_argument("--differing", action="store_true", help="only questions whose arms' answers differ")
    back = actions.add_parser("unblind", help="reading files per arm from the filled-in items")
    back.add_argument("key")
    back.add_argument("items", nargs="+", help="the filled-in items files")
    back.add_argument("--out-dir", required=True)
    agree = actions.add_parser("agree", help="how two readings of the same answers agree (Cohen's kappa)")
    agree.add_argument("first")
    agree.add_argument("second")
    args = parser.parse_args(argv)
    try:
        if args.action == "agree":
            print(json.dumps(agreement(load_readings(Path(args.first)), load_readings(Path(args.second))), indent=2))
            return 0
        if args.action == "blind":
            return _blind(args)
        if args.action == "unblind":
            return _unblind(args)
        report = json.loads(Path(args.answers).read_text(encoding="utf-8"))
        path = Path(args.readings)
        readings = load_readings(path) if path.exists() or args.action == "score" else {}
    except (ReadingError, OSError) as exc:
        parser.error(str(exc))
    if args.action == "score":
        print(json.dumps(score(report, readings), indent=2))
        return 0
    lines = unread_template(report, readings)
    if args.out:
        Path(args.out).write_text(_jsonl(lines), encoding="utf-8")
        print(f"{len(lines)} answers to read: {args.out}")
    else:
        print(_jsonl(lines), end="")
    return 0


def _blind(args: argparse.Namespace) -> int:
    reports: dict[str, dict[str, Any]] = {}
    for spec in args.reports:
        label, sep, path = spec.partition("=")
        if not sep:
            raise ReadingError(f"{spec!r} is not CORPUS.ARM=REPORT.json")
        reports[label] = json.loads(Path(path).read_text(encoding="utf-8"))
    golden = {q.id: q for path in args.golden for q in load_golden(Path(path))}
    files, key = blind_items(reports, golden, readers=args.readers, seed=args.seed, differing=args.differing)
    out = Path(args.out)
    names = [out] if len(files) == 1 else [out.with_suffix(f".{n}{out.suffix}") for n in range(1, len(files) + 1)]
    for name, items in zip(names, files, strict=True):
        name.write_text(_jsonl(items), encoding="utf-8")
        print(f"{len(items)} items to read: {name}")
    Path(args.key).write_text(json.dumps(key, indent=1), encoding="utf-8")
    return 0


def _unblind(args: argparse.Namespace) -> int:
    key = json.loads(Path(args.key).read_text(encoding="utf-8"))
    verdicts = [row for path in args.items for _, row in _json_lines(Path(path))]
    readings, tally = unblind(key, verdicts)
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for label, lines in readings.items():
        (out_dir / f"{label}.jsonl").write_text(_jsonl(lines), encoding="utf-8")
    print(json.dumps(tally, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
