"""Measure the lexical citation check on labelled (sentence, passage, supported?) pairs.

    python -m evals.verify_pairs [--golden ../shared/golden/fastapi_en.jsonl ../shared/golden/gitlab_en.jsonl]
        [--corpora ../shared/corpora] [--threshold 0.6]

Pairs are built from the golden sets' evidence (no language model involved):
- supported: the page sentence holding a question's evidence, with the paragraph it stands in;
  and the question's `facts`, joined into one sentence, with the page window around the evidence
  when every fact occurs in that window;
- unsupported: the same sentences with another question's paragraph or window (a passage on another
  page); and the evidence sentence with one of its numbers changed, against its own paragraph
  (the "related but wrong" case a similarity score would pass), and with one of its identifiers
  (`root_path`, `gitlab.rb`, `/subapi`) swapped for another question's, against its own paragraph
  (the right fact told of another setting or command).
Reported: precision and recall of `supported` at the threshold, and a sweep of thresholds.
"""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import dataclass
from pathlib import Path

from evals.golden import load_golden, normalise
from pipelines.verify import support_score

ROOT = Path(__file__).resolve().parent.parent.parent / "shared"
CORPUS_OF = {"fastapi_en": "fastapi-docs", "gitlab_en": "gitlab-docs"}


@dataclass(frozen=True)
class Pair:
    kind: str
    sentence: str
    passage: str
    supported: bool


def _paragraphs(text: str) -> list[str]:
    return [normalise(p) for p in re.split(r"\n\s*\n", text) if p.strip()]


def _sentence_with(paragraph: str, evidence: str) -> str:
    start = paragraph.find(evidence)
    stop = paragraph.rfind(". ", 0, start) if start > 0 else -1
    left = stop + 2 if stop >= 0 else 0
    right = paragraph.find(". ", start + len(evidence))
    return paragraph[left : right + 1 if right != -1 else len(paragraph)].strip()


def _bump_number(sentence: str) -> str | None:
    match = re.search(r"\b\d+(\.\d+)*\b", sentence)
    if not match:
        return None
    number = match.group(0)
    head, _, tail = number.partition(".")
    changed = str(int(head) + 7) + (f".{tail}" if tail else "")
    return sentence[: match.start()] + changed + sentence[match.end() :]


_IDENT = re.compile(r"(?<![\w./-])(?=[\w./-]*[a-z])[a-z_/][\w-]*[_./-][\w./-]*\w")


def _identifiers(sentence: str) -> list[str]:
    return [m.group(0) for m in _IDENT.finditer(sentence) if not m.group(0).startswith("http")]


def _swap_identifier(sentence: str, paragraph: str, others: list[str]) -> str | None:
    """The sentence with its first identifier replaced by the first of `others` its paragraph lacks."""
    own = _identifiers(sentence)
    replacement = next((o for o in others if o not in paragraph), None)
    if not own or replacement is None:
        return None
    return sentence.replace(own[0], replacement, 1)


def build_pairs(golden: list[Path], corpora: Path) -> list[Pair]:
    items = []  # (sentence, paragraph, facts sentence or None, window)
    for path in golden:
        root = corpora / CORPUS_OF[path.stem]
        for q in load_golden(path):
            if q.expected != "answer":
                continue
            for page, evidence in zip(q.pages, q.evidence, strict=False):
                raw = (root / page).read_text(encoding="utf-8")
                needle = normalise(evidence)
                paragraph = next((p for p in _paragraphs(raw) if needle in p), None)
                if paragraph is None:
                    continue
                whole = normalise(raw)
                at = whole.find(needle)
                window = whole[max(0, at - 1200) : at + 1200] if at >= 0 else paragraph
                facts = [normalise(f) for f in q.facts]
                fact_sentence = "; ".join(q.facts) + "." if facts and all(f in window for f in facts) else None
                items.append((_sentence_with(paragraph, needle), paragraph, fact_sentence, window))
    pairs: list[Pair] = []
    for i, (sentence, paragraph, facts, window) in enumerate(items):
        other_paragraph, other_window = items[(i + len(items) // 2) % len(items)][1::2]
        pairs.append(Pair("evidence/own paragraph", sentence, paragraph, True))
        pairs.append(Pair("evidence/other paragraph", sentence, other_paragraph, False))
        if facts:
            pairs.append(Pair("facts/own window", facts, window, True))
            pairs.append(Pair("facts/other window", facts, other_window, False))
        bumped = _bump_number(sentence)
        if bumped and bumped != sentence:
            pairs.append(Pair("evidence with a number changed/own paragraph", bumped, paragraph, False))
        others = [name for other in items[i + 1 :] + items[:i] for name in _identifiers(other[0])]
        swapped = _swap_identifier(sentence, paragraph, others)
        if swapped:
            pairs.append(Pair("evidence with an identifier swapped/own paragraph", swapped, paragraph, False))
    return pairs


def score(pairs: list[Pair], threshold: float) -> dict[str, float]:
    predicted = [support_score(p.sentence, p.passage) >= threshold for p in pairs]
    tp = sum(p and x.supported for p, x in zip(predicted, pairs, strict=True))
    fp = sum(p and not x.supported for p, x in zip(predicted, pairs, strict=True))
    fn = sum((not p) and x.supported for p, x in zip(predicted, pairs, strict=True))
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    return {
        "threshold": threshold,
        "precision": round(precision, 3),
        "recall": round(recall, 3),
        "tp": tp,
        "fp": fp,
        "fn": fn,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--golden",
        type=Path,
        nargs="+",
        default=[ROOT / "golden" / "fastapi_en.jsonl", ROOT / "golden" / "gitlab_en.jsonl"],
    )
    parser.add_argument("--corpora", type=Path, default=ROOT / "corpora")
    parser.add_argument("--threshold", type=float, default=0.6)
    args = parser.parse_args()
    pairs = build_pairs(args.golden, args.corpora)
    kinds: dict[str, list[float]] = {}
    for p in pairs:
        kinds.setdefault(f"{p.kind} ({'supported' if p.supported else 'unsupported'})", []).append(
            support_score(p.sentence, p.passage)
        )
    report = {
        "pairs": len(pairs),
        "supported": sum(p.supported for p in pairs),
        "at_threshold": score(pairs, args.threshold),
        "sweep": [score(pairs, t / 10) for t in range(3, 10)],
        "mean_score_by_kind": {k: round(sum(v) / len(v), 3) for k, v in kinds.items()},
        "pairs_by_kind": {k: len(v) for k, v in kinds.items()},
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
