"""`eval answers`: the whole query pipeline per golden question, scored stage by stage.

Deterministic scores (always): reply kind, facts present by normalised match, citation validity
(every marker names a supplied chunk that exists in the index), and quote checks (a cited sentence
is found in the text of the chunk it cites). With a judge (`evals.judge`), faithfulness and ALCE
citation precision / recall come from the judge's claims, each backed by a quote the code checks
in the cited chunk; a control run judges every answer against another question's chunks.
Every figure is reported over all the questions run and, beside it, over each half of the held-out
protocol's split (`halves`); each question's record names its half.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog

from evals.golden import HALVES, GoldenQuestion, evidence_rank, half_of, normalise, page_at
from evals.judge import Judge, JudgedAnswer, strip_markers
from evals.stats import mean, percentile
from pipelines.answering.citations import MARKER, split_sentences
from pipelines.answering.extractive import TERM_SUBJECT
from pipelines.answering.passage_units import prose_units
from pipelines.documents import Chunk
from pipelines.ports import VectorIndex
from pipelines.text.markdown import LIST_ITEM

log = structlog.get_logger(__name__)

EXPECTED_STATUS = {"answer": "answered", "abstain": "no_answer", "clarify": "clarify"}

# Runs one question through the pipeline: returns the reply dict, or raises with an error code.
AskFn = Callable[[str], dict[str, Any]]


@dataclass
class Statement:
    """One answer sentence without its markers, and the chunk ids it cites."""

    text: str
    chunk_ids: list[str]


def statements(answer: str) -> list[Statement]:
    out = []
    for sentence in split_sentences(answer):
        ids = MARKER.findall(sentence)
        text = strip_markers(sentence)
        if text:
            out.append(Statement(text, ids))
    return out


def quoted_in(text: str, sources: Sequence[str]) -> bool:
    """The normalised text (less its closing punctuation, and a list item's bullet, which the answer writes
    as "-" whatever the source's) occurs in one of the normalised sources, as written or as an answer reads
    it: the source's quotable units (`prose_units`), where a link is its text and a table row its cells
    joined by " | ". Read only as written, a quoted sentence holding a link or a table row counted as
    unsupported."""
    needle = normalise(LIST_ITEM.sub("", text, count=1)).rstrip(".!?。！？ ")
    if bool(needle) and any(needle in normalise(s) or needle in _as_read(s) for s in sources):
        return True
    # A sentence of a definition's description said after its term ("term - sentence", `answer_subject=term`): a
    # quote when the source opens a paragraph with that term and holds the sentence.
    subject = TERM_SUBJECT.match(text)
    if subject is None:
        return False
    term, rest = normalise(subject.group(0)), normalise(text[subject.end() :]).rstrip(".!?。！？ ")
    return bool(rest) and any(term in _as_read(s) and (rest in normalise(s) or rest in _as_read(s)) for s in sources)


@functools.lru_cache(maxsize=1024)
def _as_read(source: str) -> str:
    return normalise(" ".join(prose_units(source)))


@dataclass
class AnswerRecord:
    id: str
    expected: str
    status: str
    answer: str
    citations: list[dict[str, Any]]
    verification: Any
    timings_ms: dict[str, float] = field(default_factory=dict)
    kind_correct: bool = False
    facts_present: float | None = None  # answer questions only
    evidence_in_answer: float | None = None  # answer questions: every evidence string quoted in the answer
    citation_validity: float | None = None  # answered replies with markers only
    quote_support: float | None = None  # share of statements found in a chunk they cite
    sentences: float | None = None  # answered replies: how many statements the answer makes
    evidence5: float | None = None  # retrieval seen by the pipeline, answer questions only
    page5: float | None = None
    mrr: float | None = None
    judged: JudgedAnswer | None = None
    control: JudgedAnswer | None = None
    error: str | None = None
    fallback: str | None = None  # why the extractive answer replaced a language model's reply
    withheld: int = 0  # a language model's sentences withheld: no passage they cite supports them
    answer_gate: dict[str, Any] | None = None  # the answer gate's verdict, when the variant read the answer
    # Why the reply took its kind: CRAG's action on the retrieval score, and what the coverage rule found missing.
    crag_action: str | None = None
    uncovered: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        out = {
            "id": self.id,
            "half": half_of(self.id),
            "status": self.status,
            "answer": self.answer,
            "citations": self.citations,
            "verification": self.verification,
            "expected": self.expected,
            "kind_correct": self.kind_correct,
            "facts_present": self.facts_present,
            "evidence_in_answer": self.evidence_in_answer,
            "citation_validity": self.citation_validity,
            "quote_support": self.quote_support,
            "sentences": self.sentences,
            # the retrieval the answer read (answer questions): evidence and page in its first five passages
            "evidence5": self.evidence5,
            "page5": self.page5,
            "first_sentence_ms": self.timings_ms.get("first_sentence"),
            "withheld_sentences": self.withheld,
            "fallback": self.fallback,
            "answer_gate": self.answer_gate,
            "crag_action": self.crag_action,
            "uncovered": self.uncovered,
        }
        if self.judged is not None:
            out["judge"] = self.judged.as_dict()
        if self.error:
            out["error"] = self.error
        return out


def _chunks_by_id(index: VectorIndex, ids: Sequence[str]) -> dict[str, Chunk]:
    return {c.chunk_id: c for c in index.get_chunks(list(dict.fromkeys(ids)))} if ids else {}


def _uncovered(coverage: dict[str, Any] | None) -> dict[str, Any] | None:
    """The coverage rule's finding when it found the question not covered (None when covered or not run)."""
    if not coverage or coverage.get("covered", True):
        return None
    return {k: coverage.get(k) for k in ("rule", "uncovered_names", "absent_terms")}


def score_reply(question: GoldenQuestion, reply: dict[str, Any], index: VectorIndex) -> AnswerRecord:
    status = reply.get("status", "error")
    answer = reply.get("answer", "")
    record = AnswerRecord(
        id=question.id,
        expected=question.expected,
        status=status,
        answer=answer,
        citations=reply.get("citations", []),
        verification=reply.get("verification"),
        timings_ms=reply.get("timings_ms", {}),
        kind_correct=status == EXPECTED_STATUS.get(question.expected),
        fallback=(reply.get("fallback") or {}).get("reason"),
        withheld=int((reply.get("verification") or {}).get("withheld_sentences", 0)),
        answer_gate=reply.get("answer_gate"),
        crag_action=(reply.get("crag") or {}).get("action"),
        uncovered=_uncovered(reply.get("coverage")),
    )
    retrieved_ids = [c["chunk_id"] for c in reply.get("retrieved", [])]
    cited = [cid for s in statements(answer) for cid in s.chunk_ids] if status == "answered" else []
    chunks = _chunks_by_id(index, retrieved_ids + cited)
    if question.expected == "answer":
        said = normalise(answer) if status == "answered" else ""
        record.facts_present = mean([float(normalise(f) in said) for f in question.facts]) if question.facts else None
        # The golden evidence is prose the answer can quote: markers out, so a quote across a marker counts.
        quoted = normalise(strip_markers(answer)) if status == "answered" else ""
        record.evidence_in_answer = float(
            bool(question.evidence) and all(normalise(e) in quoted for e in question.evidence)
        )
        texts = [chunks[c].generation_text for c in retrieved_ids if c in chunks]
        rank = evidence_rank(question.evidence, texts, 10)
        record.evidence5 = float(rank is not None and rank <= 5)
        record.mrr = 1.0 / rank if rank else 0.0
        record.page5 = float(page_at(question.pages, [chunks[c].document_id for c in retrieved_ids if c in chunks], 5))
    if status == "answered":
        supplied = set(retrieved_ids)
        if cited:
            record.citation_validity = mean([float(c in supplied and c in chunks) for c in cited])
        parts = statements(answer)
        record.sentences = float(len(parts))
        record.quote_support = mean(
            [float(quoted_in(s.text, [chunks[c].generation_text for c in s.chunk_ids if c in chunks])) for s in parts]
        )
    return record


@dataclass
class AnswerRun:
    records: list[AnswerRecord]
    judge_model: str | None = None

    def of_half(self, half: str) -> AnswerRun:
        """The same run over the questions of one half of the held-out protocol's split."""
        return AnswerRun([r for r in self.records if half_of(r.id) == half], self.judge_model)

    def per_question(self) -> list[dict[str, Any]]:
        return [r.as_dict() for r in self.records]

    def overall(self) -> dict[str, Any]:
        kinds: dict[str, dict[str, int]] = {}
        for expected in ("answer", "abstain", "clarify"):
            group = [r for r in self.records if r.expected == expected]
            kinds[expected] = {"n": len(group), "correct": sum(r.kind_correct for r in group)}

        def avg(values: list[float | None]) -> float | None:
            present = [v for v in values if v is not None]
            return round(mean(present), 4) if present else None

        judged = [r.judged for r in self.records if r.judged is not None and r.judged.error is None]
        out: dict[str, Any] = {
            "reply_kind": kinds,
            "citation_validity": avg([r.citation_validity for r in self.records]),
            "facts_present": avg([r.facts_present for r in self.records]),
            "evidence_in_answer": avg([r.evidence_in_answer for r in self.records]),
            "faithfulness": avg([j.faithfulness for j in judged]) if judged else None,
            "citation_precision": avg([j.citation_precision for j in judged]) if judged else None,
            "citation_recall": avg([j.citation_recall for j in judged]) if judged else None,
            "quote_support": avg([r.quote_support for r in self.records]),
            "sentences_per_answer": avg([r.sentences for r in self.records]),
            "errors": sum(1 for r in self.records if r.error),
            # A language model's reply: sentences withheld, replies the extractive answer replaced, and the
            # time from the request to its first validated sentence (replies that released one).
            "withheld_sentences": sum(r.withheld for r in self.records),
            "replies_with_withheld": sum(1 for r in self.records if r.withheld),
            "fallbacks": sum(1 for r in self.records if r.fallback),
            "first_sentence_ms": _quantiles(
                [r.timings_ms["first_sentence"] for r in self.records if "first_sentence" in r.timings_ms]
            ),
        }
        if judged:
            control = [r.control for r in self.records if r.control is not None and r.control.error is None]
            control_faith = avg([c.faithfulness for c in control])
            out["judge"] = {
                "model": self.judge_model,
                "answers_judged": len(judged),
                "judge_errors": sum(1 for r in self.records if r.judged is not None and r.judged.error),
                "facts_correct": avg([j.facts_correct for j in judged]),
                "control": {
                    "answers": len(control),
                    "faithfulness": control_faith,
                    # The judge is trusted only if the same answers look unfaithful against unrelated chunks.
                    "unfaithful_as_expected": control_faith is not None and control_faith < 0.5,
                },
            }
        else:
            # Without a judge, faithfulness falls back to the quote check and says so.
            out["faithfulness_method"] = "quote_check (no judge)"
        return out

    def report(self, half: str = "all", halves: Sequence[str] = HALVES) -> dict[str, Any]:
        """`overall` over every question run, `halves` the same block per half (`half`: the run's `--half`)."""
        return {
            "overall": self.overall(),
            "half": half,
            "halves": {h: {"overall": self.of_half(h).overall()} for h in halves},
            "questions": self.per_question(),
        }


def run_answers(
    questions: Sequence[GoldenQuestion],
    ask: AskFn,
    index: VectorIndex,
    judge: Judge | None = None,
    on_error: Callable[[Exception], str] | None = None,
) -> AnswerRun:
    records: list[AnswerRecord] = []
    for question in questions:
        try:
            reply = ask(question.question)
        except Exception as exc:  # a failed request is scored as such, never as a fake no_answer
            code = on_error(exc) if on_error else type(exc).__name__
            if on_error is None:
                raise
            records.append(AnswerRecord(question.id, question.expected, "error", "", [], None, error=code))
            continue
        records.append(score_reply(question, reply, index))
    if judge is not None:
        judge_records(records, questions, index, judge)
    return AnswerRun(records, judge.model if judge else None)


def judge_records(
    records: Sequence[AnswerRecord], questions: Sequence[GoldenQuestion], index: VectorIndex, judge: Judge
) -> None:
    """Judge every answered reply against its cited chunks, and (control) against the chunks cited by
    the next answered reply of another question."""
    by_id = {q.id: q for q in questions}
    answered = [r for r in records if r.status == "answered" and r.citations]
    cited = {r.id: [c["chunk_id"] for c in r.citations] for r in answered}
    chunks = _chunks_by_id(index, [cid for ids in cited.values() for cid in ids])
    for i, record in enumerate(answered):
        sources = {cid: chunks[cid].generation_text for cid in cited[record.id] if cid in chunks}
        record.judged = judge.judge(by_id[record.id].question, record.answer, sources, by_id[record.id].facts)
        if len(answered) > 1:
            other = answered[(i + 1) % len(answered)]
            foreign = {cid: chunks[cid].generation_text for cid in cited[other.id] if cid in chunks}
            if set(foreign) - set(sources):
                # The answer's markers point at chunks the control set does not have: the judge sees
                # the foreign passages under the cited ids, so only their content can support a claim.
                relabelled = dict(zip(sources or cited[record.id], foreign.values(), strict=False))
                record.control = judge.judge(by_id[record.id].question, record.answer, relabelled, [])


def _quantiles(values: list[float]) -> dict[str, float | int | None]:
    """p50 and p95 of some milliseconds, and how many there were."""
    if not values:
        return {"n": 0, "p50": None, "p95": None}
    return {"n": len(values), "p50": round(percentile(values, 50), 1), "p95": round(percentile(values, 95), 1)}
