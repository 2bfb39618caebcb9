"""Measure the citation checks on labelled (sentence, passage, supported?) pairs.

    python -m evals.verify_pairs [--golden ../shared/golden/fastapi_en.jsonl ../shared/golden/gitlab_en.jsonl]
        [--corpora ../shared/corpora] [--threshold 0.6] [--verifiers lexical,llm] [--out FILE.json]
    python -m evals.verify_pairs --set [evals/data/verify_pairs.jsonl] [--rerank] [--llm zone|all]
        [--llm-cache FILE.json] [--out FILE.json]

`--set` measures every variant on the labelled set of evals/verify_set.py (pairs made from the corpora, with
hard negatives), thresholds calibrated on its `tuning` half and figures reported for `held_out`
(docs/benchmarks.md, "Citation verifier"). Without `--set`, the golden-evidence pairs below:

`lexical` is `pipelines.answering.verification.support_score` at the threshold; `llm` is the `verify=llm` judge
(`pipelines.answering.verification.judge_support`) with the generator's model and server from the `RAGLINE_LLM_*`
settings, as a server would run it; `lexical+llm` counts a pair supported only when both say so.

Pairs are built from the golden sets' evidence (no language model involved):
- supported: the page sentence holding a question's evidence, with the paragraph it stands in;
  and the question's `facts`, joined into one sentence, with the page window around the evidence
  when every fact occurs in that window;
- unsupported: the same sentences with another question's paragraph or window (a passage on another
  page); and the evidence sentence with one of its numbers changed, against its own paragraph
  (the "related but wrong" case a similarity score would pass), and with one of its identifiers
  (`root_path`, `gitlab.rb`, `/subapi`) swapped for another question's, against its own paragraph
  (the right fact told of another setting or command); and the evidence sentence negated ("is" ->
  "is not", "cannot" -> "can"), against its own paragraph: every word is there, the claim is reversed.
Reported: precision and recall of `supported` at the threshold, and a sweep of thresholds.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from evals.golden import load_golden, normalise
from evals.verify_set import OUT as SET_FILE
from evals.verify_set import LabelledPair, load_pairs
from pipelines.adapters.llm_harness import LLMHarness
from pipelines.answering.verification import (
    LLM_ZONE,
    STRICT_MIN_SUPPORT,
    judge_score,
    judge_support,
    strict_check,
    support_score,
)
from pipelines.logs import configure_logging
from pipelines.settings import Settings

log = structlog.get_logger(__name__)

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


_NEGATED = {"cannot": "can", "can't": "can", "won't": "will", "doesn't": "does", "don't": "do", "isn't": "is",
            "aren't": "are", "never": "always"}  # fmt: skip
_NEGATION = re.compile(r"\b(cannot|can't|won't|doesn't|don't|isn't|aren't|never|not)\b ?", re.I)
_AUXILIARY = re.compile(r"\b(is|are|was|were|can|must|should|will|does|do|has|have|may)\b", re.I)


def _negate(sentence: str) -> str | None:
    """The sentence with its claim reversed: its first negation taken out, else a `not` after its first
    auxiliary verb; None when it has neither."""
    negation = _NEGATION.search(sentence)
    if negation:
        word = negation.group(1).lower()
        kept = _NEGATED.get(word, "")
        return sentence[: negation.start()] + (f"{kept} " if kept else "") + sentence[negation.end() :]
    auxiliary = _AUXILIARY.search(sentence)
    if auxiliary is None:
        return None
    return sentence[: auxiliary.end()] + " not" + sentence[auxiliary.end() :]


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
    for i, (sentence, paragraph, facts_sentence, window) in enumerate(items):
        other_paragraph, other_window = items[(i + len(items) // 2) % len(items)][1::2]
        pairs.append(Pair("evidence/own paragraph", sentence, paragraph, True))
        pairs.append(Pair("evidence/other paragraph", sentence, other_paragraph, False))
        if facts_sentence:
            pairs.append(Pair("facts/own window", facts_sentence, window, True))
            pairs.append(Pair("facts/other window", facts_sentence, other_window, False))
        bumped = _bump_number(sentence)
        if bumped and bumped != sentence:
            pairs.append(Pair("evidence with a number changed/own paragraph", bumped, paragraph, False))
        others = [name for other in items[i + 1 :] + items[:i] for name in _identifiers(other[0])]
        swapped = _swap_identifier(sentence, paragraph, others)
        if swapped:
            pairs.append(Pair("evidence with an identifier swapped/own paragraph", swapped, paragraph, False))
        negated = _negate(sentence)
        if negated:
            pairs.append(Pair("evidence negated/own paragraph", negated, paragraph, False))
    return pairs


def score(pairs: list[Pair], predicted: list[bool]) -> dict[str, Any]:
    """Precision and recall of `supported`, and per kind how many pairs the verdicts got right."""
    truth = [p.supported for p in pairs]
    tp = sum(p and t for p, t in zip(predicted, truth, strict=True))
    fp = sum(p and not t for p, t in zip(predicted, truth, strict=True))
    fn = sum((not p) and t for p, t in zip(predicted, truth, strict=True))
    by_kind: dict[str, list[int]] = {}
    for pair, said in zip(pairs, predicted, strict=True):
        right = by_kind.setdefault(_kind(pair), [0, 0])
        right[0] += said == pair.supported
        right[1] += 1
    return {
        "precision": round(tp / (tp + fp), 3) if tp + fp else 1.0,
        "recall": round(tp / (tp + fn), 3) if tp + fn else 1.0,
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "right_by_kind": {kind: f"{right}/{n}" for kind, (right, n) in by_kind.items()},
    }


def _kind(pair: Pair) -> str:
    return f"{pair.kind} ({'supported' if pair.supported else 'unsupported'})"


def lexical_at(pairs: list[Pair], scores: list[float], threshold: float) -> dict[str, Any]:
    """The lexical check's figures at one threshold, from each pair's `support_score`."""
    return {"threshold": threshold} | score(pairs, [s >= threshold for s in scores])


def judged(pairs: list[Pair], judge: Callable[[str, str], bool]) -> tuple[list[bool], list[float]]:
    """Each pair's verdict and the seconds it took, with progress in the log."""
    verdicts, seconds = [], []
    for number, pair in enumerate(pairs, start=1):
        started = time.perf_counter()
        verdicts.append(judge(pair.sentence, pair.passage))
        seconds.append(time.perf_counter() - started)
        if number % 10 == 0 or number == len(pairs):
            log.info("verify_pairs_progress", done=number, of=len(pairs))
    return verdicts, seconds


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
    parser.add_argument("--verifiers", default="lexical", help="comma-separated: lexical, llm")
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "--set", type=Path, nargs="?", const=SET_FILE, help=f"measure on the labelled set instead (default {SET_FILE})"
    )
    parser.add_argument("--llm-cache", type=Path, help="--set: JSON of judge_score per pair id, read and extended")
    parser.add_argument("--llm", choices=["zone", "all"], help="--set: ask the RAGLINE_LLM_* model (which pairs)")
    parser.add_argument("--rerank", action="store_true", help="--set: score the pairs with the cross-encoder too")
    args = parser.parse_args()
    configure_logging("INFO")
    if args.set is not None:
        labelled = load_pairs(args.set)
        llm: dict[str, float] | None = None
        if args.llm_cache and args.llm_cache.exists():
            llm = json.loads(args.llm_cache.read_text(encoding="utf-8"))
        if args.llm:
            asked = labelled if args.llm == "all" else [p for p in labelled if in_llm_zone(p)]
            cache = args.llm_cache or Path("verify_set_llm.json")
            llm = llm_scores(asked, LLMHarness.from_settings(Settings()), cache)
        rerank = rerank_scores(labelled) if args.rerank else None
        text = json.dumps(
            {"set": str(args.set), "pairs": len(labelled)} | evaluate_set(labelled, llm, rerank), indent=2
        )
        if args.out:
            args.out.write_text(text + "\n", encoding="utf-8")
        print(text)
        return
    pairs = build_pairs(args.golden, args.corpora)
    scores = [support_score(p.sentence, p.passage) for p in pairs]
    kinds: dict[str, list[float]] = {}
    for p, value in zip(pairs, scores, strict=True):
        kinds.setdefault(_kind(p), []).append(value)
    report: dict[str, Any] = {
        "pairs": len(pairs),
        "supported": sum(p.supported for p in pairs),
        "at_threshold": lexical_at(pairs, scores, args.threshold),
        "sweep": [lexical_at(pairs, scores, t / 10) for t in range(3, 10)],
        "mean_score_by_kind": {k: round(sum(v) / len(v), 3) for k, v in kinds.items()},
        "pairs_by_kind": {k: len(v) for k, v in kinds.items()},
    }
    if "llm" in args.verifiers.split(","):
        settings = Settings()
        harness = LLMHarness.from_settings(settings)
        verdicts, seconds = judged(pairs, lambda sentence, passage: judge_support(harness, sentence, passage)[0])
        lexical = [value >= args.threshold for value in scores]
        report["llm"] = {"model": settings.llm_model, "seconds_p50": round(sorted(seconds)[len(seconds) // 2], 2)}
        report["llm"] |= score(pairs, verdicts) | {"verdicts": verdicts}
        report["lexical+llm"] = score(pairs, [a and b for a, b in zip(lexical, verdicts, strict=True)])
    text = json.dumps(report, indent=2)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    print(text)


# --- the labelled set of evals/verify_set.py -----------------------------------------------------------------


def llm_scores(pairs: list[LabelledPair], harness: LLMHarness, cache: Path) -> dict[str, float]:
    """`judge_score` of every pair, kept in `cache` (JSON, pair id -> score) as it goes, so a long run can be
    resumed; pairs are asked in passage order, so the server's prompt cache reads each passage once."""
    done: dict[str, float] = json.loads(cache.read_text(encoding="utf-8")) if cache.exists() else {}
    todo = sorted((p for p in pairs if p.id not in done), key=lambda p: (p.passage, p.id))
    for number, pair in enumerate(todo, start=1):
        started = time.perf_counter()
        done[pair.id] = round(judge_score(harness, pair.claim, pair.passage), 4)
        log.info("verify_set_llm", done=number, of=len(todo), seconds=round(time.perf_counter() - started, 1))
        cache.write_text(json.dumps(done, indent=0, sort_keys=True) + "\n", encoding="utf-8")
    return done


def in_llm_zone(pair: LabelledPair) -> bool:
    """The pairs the `llm_score` variant asks the model about: gates passed, not every word in the passage."""
    score, why = strict_check(pair.claim, pair.passage)
    return LLM_ZONE <= score < STRICT_MIN_SUPPORT and (why is None or why.startswith("only"))


def calibrated(scores: list[float], truth: list[bool], floor: float = 0.95) -> float:
    """The threshold with the highest recall among those whose precision reaches `floor` (else the one of the
    highest F1), over the scores themselves: run on the tuning half only."""
    best: tuple[tuple[float, float], float] = ((-1.0, -1.0), 1.0)
    for t in sorted(set(scores)):
        said = [s >= t for s in scores]
        tp = sum(a and b for a, b in zip(said, truth, strict=True))
        fp = sum(a and not b for a, b in zip(said, truth, strict=True))
        fn = sum(b and not a for a, b in zip(said, truth, strict=True))
        p, r = (tp / (tp + fp) if tp + fp else 1.0), (tp / (tp + fn) if tp + fn else 1.0)
        key = (
            (r, 2 * p * r / (p + r) if p + r else 0.0) if p >= floor else (-1.0, 2 * p * r / (p + r) if p + r else 0.0)
        )
        if key > best[0]:
            best = (key, t)
    return best[1]


def figures(pairs: list[LabelledPair], said: list[bool]) -> dict[str, Any]:
    """Precision, recall and F1 of `supported`, and per kind the share of pairs the verdicts got right."""
    tp = sum(a and p.supported for a, p in zip(said, pairs, strict=True))
    fp = sum(a and not p.supported for a, p in zip(said, pairs, strict=True))
    fn = sum(p.supported and not a for a, p in zip(said, pairs, strict=True))
    precision, recall = (tp / (tp + fp) if tp + fp else 1.0), (tp / (tp + fn) if tp + fn else 1.0)
    kinds: dict[str, list[int]] = {}
    for a, p in zip(said, pairs, strict=True):
        right = kinds.setdefault(p.kind, [0, 0])
        right[0] += a == p.supported
        right[1] += 1
    return {
        "pairs": len(pairs),
        "precision": round(precision, 3),
        "recall": round(recall, 3),
        "f1": round(2 * precision * recall / (precision + recall), 3) if precision + recall else 0.0,
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "right_by_kind": {k: f"{r}/{n}" for k, (r, n) in sorted(kinds.items())},
    }


def evaluate_set(
    pairs: list[LabelledPair], llm: dict[str, float] | None = None, rerank: dict[str, float] | None = None
) -> dict[str, Any]:
    """Every verifier variant on the held-out half, thresholds calibrated on the tuning half.

    `llm`: pair id -> `judge_score`; `rerank`: pair id -> cross-encoder logit of (claim, passage).
    A variant that needs a score a pair lacks is reported on the pairs that have it (`pairs` says how many)."""
    lexical = {p.id: support_score(p.claim, p.passage) for p in pairs}
    strict = {p.id: strict_check(p.claim, p.passage) for p in pairs}
    gated = {i: why is None or why.startswith("only") for i, (_, why) in strict.items()}
    verdicts: dict[str, Callable[[LabelledPair], bool | None]] = {
        "off": lambda p: True,
        "lexical (support >= 0.6, the old default)": lambda p: lexical[p.id] >= 0.6,
        "strict": lambda p: strict[p.id][1] is None,
    }
    thresholds: dict[str, float] = {}
    tuning = [p for p in pairs if p.half == "tuning"]
    for name, given in (("llm_score", llm), ("rerank", rerank)):
        if given is None:
            continue
        table: dict[str, float] = given
        scored = [p for p in tuning if p.id in table]
        alone = calibrated([table[p.id] for p in scored], [p.supported for p in scored])
        zone = [p for p in scored if gated[p.id] and LLM_ZONE <= strict[p.id][0] < STRICT_MIN_SUPPORT]
        mixed = calibrated([table[p.id] for p in zone], [p.supported for p in zone]) if zone else 0.5
        thresholds |= {f"{name} alone": alone, f"strict or (zone and {name})": mixed}

        def alone_at(p: LabelledPair, t: float = alone, table: dict[str, float] = table) -> bool | None:
            return table[p.id] >= t if p.id in table else None

        def mixed_at(p: LabelledPair, t: float = mixed, table: dict[str, float] = table) -> bool | None:
            if strict[p.id][1] is None:
                return True
            if not gated[p.id] or strict[p.id][0] < LLM_ZONE:
                return False
            return table[p.id] >= t if p.id in table else None

        verdicts[f"{name} alone (>= {alone:.3g})"] = alone_at
        verdicts[f"strict or (zone and {name} >= {mixed:.3g})"] = mixed_at
        if name == "llm_score":

            def yes_no(p: LabelledPair, table: dict[str, float] = table) -> bool | None:
                return table[p.id] > 0.5 if p.id in table else None

            def lexical_and_yes(p: LabelledPair, table: dict[str, float] = table) -> bool | None:
                return (lexical[p.id] >= 0.6 and table[p.id] > 0.5) if p.id in table else None

            verdicts["llm yes/no (P(yes) > 0.5)"] = yes_no
            verdicts["lexical and llm yes/no"] = lexical_and_yes
    report: dict[str, Any] = {"thresholds (from tuning)": thresholds, "variants": {}}
    for half in ("held_out", "tuning"):
        chosen = [p for p in pairs if p.half == half]
        for name, verdict in verdicts.items():
            said = [(p, verdict(p)) for p in chosen]
            kept = [(p, v) for p, v in said if v is not None]
            report["variants"].setdefault(name, {})[half] = figures([p for p, _ in kept], [bool(v) for _, v in kept])
    return report


def rerank_scores(pairs: list[LabelledPair]) -> dict[str, float]:
    """The packaged cross-encoder's logit of the passage's relevance to the claim read as a query (a logit, not
    its probability: relevant passages' probabilities all round to 1)."""
    from pipelines.retrieval.rerank import CrossEncoderReranker

    s = Settings()
    ranker = CrossEncoderReranker(s.reranker_model, s.reranker_path, 512)
    return {p.id: round(ranker.scores(p.claim, [p.passage])[0], 3) for p in pairs}


if __name__ == "__main__":
    main()
