"""An LLM judge (through litellm) whose every verdict carries a quote the code checks.

The judge splits each answer sentence into claims and, for each claim, must quote the passage text
that supports it (or give no quote). A claim counts as supported only when its quote is really in
the passage it names, that passage is one the sentence cites, and the quote holds at least half of the
claim's content words; the judge's word alone counts for nothing. Facts are checked the same way against the answer: a fact is stated only with a quote
from the answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog

from evals.golden import normalise
from pipelines.adapters.llm_harness import request_key
from pipelines.answering.citations import MARKER, split_sentences
from pipelines.text.analysis import analyze

log = structlog.get_logger(__name__)

PROMPT_VERSION = "judge-v1"

SYSTEM = (
    "You check answers against source passages. Reply with one JSON object and nothing else. "
    "For each numbered statement, split it into atomic claims; for each claim give the id of the one "
    "passage among that statement's cited passages that supports it and copy, character for character, "
    "the shortest span of that passage that supports it. If no cited passage supports a claim, give "
    'null for both. Shape: {"statements": [{"index": 1, "claims": [{"claim": "...", "chunk_id": "..." '
    'or null, "quote": "..." or null}]}], "facts": [{"fact": "...", "stated": true or false, "quote": '
    '"span copied from the answer" or null}]}. For facts, say whether the answer states each one, '
    "quoting the answer."
)


@dataclass
class Claim:
    statement: int
    claim: str
    chunk_id: str | None
    quote: str | None
    supported: bool  # decided by the code: the quote is in a passage the statement cites


@dataclass
class JudgedAnswer:
    claims: list[Claim] = field(default_factory=list)
    statement_support: list[bool] = field(default_factory=list)
    citations_relevant: list[bool] = field(default_factory=list)
    facts: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None

    @property
    def faithfulness(self) -> float | None:
        return sum(c.supported for c in self.claims) / len(self.claims) if self.claims else None

    @property
    def citation_recall(self) -> float | None:
        s = self.statement_support
        return sum(s) / len(s) if s else None

    @property
    def citation_precision(self) -> float | None:
        c = self.citations_relevant
        return sum(c) / len(c) if c else None

    @property
    def facts_correct(self) -> float | None:
        return sum(f["verified"] for f in self.facts) / len(self.facts) if self.facts else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "faithfulness": self.faithfulness,
            "citation_precision": self.citation_precision,
            "citation_recall": self.citation_recall,
            "facts_correct": self.facts_correct,
            "claims": [c.__dict__ for c in self.claims],
            "facts": self.facts,
            "error": self.error,
        }


def strip_markers(sentence: str) -> str:
    """A sentence without its citation markers, punctuation closed up where a marker stood before it."""
    return re.sub(r"\s+([.!?,;:。！？])", r"\1", MARKER.sub("", sentence)).strip()


def parse_json_object(text: str) -> dict[str, Any]:
    """The first JSON object in a reply (models sometimes wrap it in a code fence)."""
    match = re.search(r"\{.*\}", text, re.DOTALL)
    if not match:
        raise ValueError("the judge's reply holds no JSON object")
    value = json.loads(match.group(0))
    if not isinstance(value, dict):
        raise ValueError("the judge's reply is not a JSON object")
    return value


def build_request(question: str, answer: str, sources: Mapping[str, str], facts: Sequence[str]) -> dict[str, Any]:
    numbered = []
    for number, sentence in enumerate(split_sentences(answer), start=1):
        text = strip_markers(sentence)
        if text:
            numbered.append({"index": number, "statement": text, "cites": MARKER.findall(sentence)})
    return {
        "question": question,
        "answer": strip_markers(answer),
        "statements": numbered,
        "passages": [{"chunk_id": cid, "text": text} for cid, text in sources.items()],
        "facts": list(facts),
    }


QUOTE_OVERLAP = 0.5  # share of the claim's content words its quote must hold


def says(quote: str, claim: str) -> bool:
    """The quote holds at least half of the claim's content words (stemmed): a real span of the passage
    that is about something else does not support the claim, whatever the judge says. A small judge
    model was seen copying any sentence of the passage; this is what makes its control run fail."""
    wanted = set(analyze(claim))
    return bool(wanted) and len(wanted & set(analyze(quote))) / len(wanted) >= QUOTE_OVERLAP


def check(payload: dict[str, Any], verdict: dict[str, Any], sources: Mapping[str, str]) -> JudgedAnswer:
    """Turn the judge's verdict into scores, trusting only quotes found where they are said to be."""
    judged = JudgedAnswer()
    cites = {s["index"]: s["cites"] for s in payload["statements"]}
    supported_by: dict[int, set[str]] = {i: set() for i in cites}
    raw = {int(s.get("index", 0)): s.get("claims") or [] for s in verdict.get("statements", []) if isinstance(s, dict)}
    for index in cites:
        claims = raw.get(index) or [{"claim": "", "chunk_id": None, "quote": None}]
        all_supported = True
        for c in claims:
            chunk_id, quote = c.get("chunk_id"), c.get("quote")
            ok = (
                isinstance(quote, str)
                and chunk_id in cites[index]
                and chunk_id in sources
                and bool(normalise(quote))
                and normalise(quote) in normalise(sources[chunk_id])
                and says(quote, str(c.get("claim") or ""))
            )
            judged.claims.append(Claim(index, str(c.get("claim", "")), chunk_id, quote, ok))
            if ok:
                supported_by[index].add(chunk_id)
            all_supported &= ok
        judged.statement_support.append(all_supported)
        for chunk_id in cites[index]:
            judged.citations_relevant.append(chunk_id in supported_by[index])
    answer = normalise(payload["answer"])
    stated = {str(f.get("fact")): f for f in verdict.get("facts", []) if isinstance(f, dict)}
    for fact in payload["facts"]:
        entry = stated.get(fact, {})
        quote = entry.get("quote")
        verified = (
            bool(entry.get("stated"))
            and isinstance(quote, str)
            and bool(normalise(quote))
            and normalise(quote) in answer
        )
        judged.facts.append({"fact": fact, "stated": bool(entry.get("stated")), "quote": quote, "verified": verified})
    return judged


class JudgeUnavailable(RuntimeError):
    """The judge model cannot be reached: the evaluation stops rather than score without it."""


class JudgeTimedOut(RuntimeError):
    """One verdict took longer than the judge's timeout (a small local model can ramble for minutes): that
    answer is reported unjudged and the run goes on, unlike an unreachable judge."""


class Judge:
    """A judge model reached through litellm (any provider, or an OpenAI-compatible `api_base`)."""

    def __init__(
        self,
        model: str,
        api_base: str | None = None,
        api_key: str | None = None,
        timeout: float = 120,
        max_tokens: int = 1024,
    ):
        self.model, self.api_base, self.timeout = model, api_base, timeout
        self.api_key = request_key(api_key, api_base)  # a local server (`--judge-api-base`) gets `none`
        # A verdict for a few sentences fits in far fewer tokens; the bound stops a model that repeats
        # itself (the packaged 1.5B model once wrote 1,434 tokens, 115 s on 2 cores) from outlasting the timeout.
        self.max_tokens = max_tokens

    def complete(self, payload: dict[str, Any]) -> str:
        import litellm

        try:
            response = litellm.completion(
                model=self.model,
                messages=[
                    {"role": "system", "content": SYSTEM},
                    {"role": "user", "content": json.dumps(payload, ensure_ascii=False)},
                ],
                temperature=0,
                api_base=self.api_base,
                api_key=self.api_key,
                timeout=self.timeout,
                max_tokens=self.max_tokens,
                # JSON mode: llama.cpp's server then samples under a JSON grammar, so a small model's verdict
                # always parses (the packaged 1.5B model broke its JSON in 5 of 8 verdicts without it); a
                # provider without JSON mode gets the request without it.
                response_format={"type": "json_object"},
                drop_params=True,
            )
        except litellm.Timeout as exc:
            raise JudgeTimedOut(f"judge {self.model} gave no verdict within {self.timeout:g} s") from exc
        except Exception as exc:  # litellm maps every provider failure to its own exception types
            raise JudgeUnavailable(f"judge {self.model} at {self.api_base or 'its provider'} failed: {exc}") from exc
        return str(response.choices[0].message.content or "")

    def judge(self, question: str, answer: str, sources: Mapping[str, str], facts: Sequence[str]) -> JudgedAnswer:
        payload = build_request(question, answer, sources, facts)
        try:
            verdict = parse_json_object(self.complete(payload))
        except (ValueError, json.JSONDecodeError, JudgeTimedOut) as exc:
            log.warning("judge_reply_unusable", error=str(exc))
            # An unusable verdict is reported and left out of the averages (it says nothing either way).
            return _failed(payload, str(exc))
        return check(payload, verdict, sources)


def _failed(payload: dict[str, Any], error: str) -> JudgedAnswer:
    judged = check(payload, {}, {})
    judged.error = error
    return judged
