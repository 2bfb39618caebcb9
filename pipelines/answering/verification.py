"""Citation verification: does the cited passage say what the sentence says?

`support_score` is the lexical check: the share of a sentence's content words, numbers and
identifiers that the passage contains, after light suffix stripping. Identifiers weigh double and
numbers triple, and a number or identifier missing from the passage halves the score: a wrong port
or version makes a wrong answer, and so does a right port given to another command (a model wrote
"The `harbor sync` command uses port 7420" from a passage about the dashboard's port). The words of
a code span count as identifiers. A sentence that negates what the passage affirms, or the other way
round, has its score halved as well ("`0` is not forbidden" against "`0` is forbidden": every word is
there). It asks "does this text say this?" more strictly than a similarity score would: every word
the sentence adds beyond the passage lowers it. Measured on labelled pairs by `evals/verify_pairs.py`
(docs/operations.md). Chinese and Japanese text, written without spaces, is
compared by overlapping character pairs (as BM25 reads it): a paraphrased Chinese sentence is a run of
characters that never occurs whole in its passage.

`judge_support` is the `llm` check: a language model asked the same question, yes or no.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from pipelines.adapters.llm_harness import GenerationUnavailable, LLMHarness, _litellm, request_key
from pipelines.answering.citations import split_sentences, strip_markers
from pipelines.answering.passage_units import CODE_SPAN, plain
from pipelines.text.analysis import analyze_snowball


def terms_of(text: str) -> list[str]:
    """Plain terms (no stemming: `stem` below does the light stripping), CJK runs as character pairs."""
    return analyze_snowball(text, None)


_NUMBER = re.compile(r"^\d[\d.,:]*$")
_IDENTIFIER = re.compile(r"[_.\-/]|[a-z][A-Z]|\d")
# Words joined by hyphens or slashes: prose writes them either way ("JavaScript/CSS", "JavaScript and CSS").
_COMPOUND = re.compile(r"[^\W\d_]+(?:[-/][^\W\d_]+)+")
# Words that carry no claim of their own in an answer sentence.
_LIGHT = frozenset(
    [
        "also",
        "just",
        "only",
        "very",
        "more",
        "most",
        "some",
        "other",
        "such",
        "same",
        "each",
        "every",
        "all",
        "both",
        "either",
        "neither",
        "should",
        "would",
        "could",
        "might",
        "must",
        "may",
        "shall",
        "one",
        "two",
        "default",
        "can",
        "use",
        "used",
        "using",
        "set",
    ]
)
# English negations: a sentence that has one and the passage sentence that holds its claim has not (or the
# other way round) says the opposite with the same words ("0 is forbidden" / "0 is not forbidden").
_NEGATION = re.compile(r"\b(?:not|never|cannot|no longer|neither|nor)\b|n['’]t\b", re.IGNORECASE)
_FENCED = re.compile(r"^\s*(```|~~~).*?^\s*\1[^\n]*$", re.MULTILINE | re.DOTALL)
_SUFFIXES = ("ing", "edly", "ed", "es", "s", "ly", "ment", "ness", "ation")


def stem(term: str) -> str:
    if _IDENTIFIER.search(term):
        return term  # identifiers and numbers match exactly
    for suffix in _SUFFIXES:
        if term.endswith(suffix) and len(term) - len(suffix) >= 3:
            return term[: -len(suffix)]
    return term


def claim_terms(sentence: str) -> dict[str, float]:
    """The sentence's content terms with their weights (numbers 3, identifiers 2, words 1)."""
    weights: dict[str, float] = {}
    text = strip_markers(sentence)
    in_code = _code_words(text)
    for raw in re.findall(r"\S+", text):
        for term in terms_of(raw):
            if term in _LIGHT or len(term) < 2:
                continue
            heavy = bool(_IDENTIFIER.search(raw.strip(".,;:()'\"`"))) or term in in_code
            weight = 3.0 if _NUMBER.match(term) else 2.0 if heavy else 1.0
            weights[stem(term)] = max(weights.get(stem(term), 0.0), weight)
    return weights


def _code_words(text: str) -> set[str]:
    return {term for span in CODE_SPAN.finditer(text) for term in terms_of(span.group(2)) if len(term) >= 2}


def exact_terms(sentence: str) -> set[str]:
    """The terms a passage must contain as written: numbers, identifiers, and the words of code spans."""
    text = strip_markers(sentence)
    return {t for t in terms_of(text) if _IDENTIFIER.search(t)} | _code_words(text)


def support_score(sentence: str, passage: str) -> float:
    """Weighted share of the sentence's claim terms found in the passage, 0..1 (1 when it has none)."""
    terms = claim_terms(sentence)
    if not terms:
        return 1.0
    present = _present(passage)
    exact = exact_terms(sentence)
    missing = exact - present
    if missing:  # the passage may still write them another way; read it as an answer quotes it, markup gone
        lowered = plain(passage).lower()
        present |= {t for t in missing if _written_in(t, lowered) or _compound_in(t, present)}
    share = sum(w for t, w in terms.items() if t in present) / sum(terms.values())
    # A number or identifier the passage does not contain makes the claim wrong however much else
    # matches (a long sentence with one changed port, version or command name would otherwise pass).
    if not exact <= present:
        share *= 0.5
    if share > 0 and _reversed(sentence, terms, passage):
        share *= 0.5
    return share


def _present(passage: str) -> set[str]:
    """The passage's terms, as written and as an answer quotes it with its markup gone: a code span followed by
    letters ("`attr.ib`s") reads as one word ("attr.ibs") in a quote, two in the markup."""
    return {stem(t) for t in terms_of(passage)} | {stem(t) for t in terms_of(plain(passage))}


def _reversed(sentence: str, terms: dict[str, float], passage: str) -> bool:
    """The sentence negates what the passage affirms, or affirms what it negates: the same words with the
    opposite meaning. A negation's scope is the first content word after it ("does not require a restart":
    `requir`). The sentence's negated word must be negated in the passage sentence that has it and most
    of the claim (or, when none has it, in a passage sentence holding most of the claim); a word that the
    passage sentence holding most of the claim (half of it at least) negates must not be affirmed.
    Lexical, English negations, prose only: a `not` in code negates nothing a sentence says."""
    text = strip_markers(sentence)
    if "```" in text:
        return False
    mine = _negated_words(text)
    if not mine and not _NEGATION.search(passage):
        return False
    parts = [(sum(w for t, w in terms.items() if t in stems), stems, negated) for stems, negated in _prose(passage)]
    best = max((held for held, _, _ in parts), default=0.0)
    near = [negated for held, _, negated in parts if held > 0 and held >= best / 2]
    for word in mine:
        having = [(held, negated) for held, stems, negated in parts if word in stems]
        top = max((held for held, _ in having), default=0.0)
        if not any([negated for held, negated in having if held == top] or near):
            return True
    whole = sum(terms.values())
    return any(
        word in terms and word not in mine
        for held, _, negated in parts
        if held == best and held >= whole / 2
        for word in negated
    )


@lru_cache(maxsize=256)
def _prose(passage: str) -> tuple[tuple[frozenset[str], tuple[str, ...]], ...]:
    """Each prose sentence of a passage as its stemmed terms and negated words (kept: an answer checks
    several sentences against one passage, and a model's sentence against every passage). Not
    `passage_units.prose_units`: it drops headings and short sentences and splits tables into rows, which
    moves the sentence that holds most of a claim (two supported labelled pairs lost, one true model
    sentence rejected, when tried)."""
    return tuple(
        (frozenset(stem(t) for t in terms_of(part)), tuple(_negated_words(part)))
        for paragraph in re.split(r"\n\s*\n", plain(_FENCED.sub("\n\n", passage)))
        for part in split_sentences(paragraph)
    )


def _negated_words(text: str) -> list[str]:
    """The first content word after each negation, up to the end of its clause; `""` for a negation with
    none (it still counts as one)."""
    words = []
    for match in _NEGATION.finditer(text):
        clause = re.split(r"[,;:.!?()]", text[match.end() :], maxsplit=1)[0]
        scope = [stem(t) for t in terms_of(clause) if t not in _LIGHT and len(t) >= 2]
        words.append(scope[0] if scope else "")
    return words


def _written_in(term: str, lowered_passage: str) -> bool:
    """The term stands in the passage as written, inside a longer token too (a path inside a URL)."""
    return re.search(rf"(?<![a-z0-9]){re.escape(term)}(?![a-z0-9])", lowered_passage) is not None


def _compound_in(term: str, present: set[str]) -> bool:
    """A compound of plain words stands when each word does; a name with `_`, `.` or digits must be whole."""
    return _COMPOUND.fullmatch(term) is not None and all(stem(part) in present for part in re.split(r"[-/]", term))


# The `strict` check: a claim is supported only when every content word of it is in the passage (a quoted
# sentence always is) and no gate fails. Calibrated on the tuning half of evals/data/verify_pairs.jsonl
# (docs/benchmarks.md, "Citation verifier"): 0.95 gave precision 0.950 there, at the target with no margin; 1.0 gave 1.000.
STRICT_MIN_SUPPORT = 1.0
# The `llm_score` check: a claim whose every word is in the passage is supported as `strict` has it; one that
# holds at least LLM_ZONE of the weight and passes the gates is decided by the model's P(yes) against
# LLM_MIN_YES; below LLM_ZONE it is not supported, and the model is not asked. 0.955 is the packaged 1.5B model's
# calibration on the tuning half's 30 such pairs (the least P(yes) at which precision stayed 0.95): it rates
# antonyms as highly as paraphrases, so at that threshold it lets almost nothing through that `strict` rejects.
# A stronger model needs its own calibration (`python -m evals.verify_pairs --set --llm zone`).
LLM_ZONE = 0.6
LLM_MIN_YES = 0.955


def code_not_as_written(sentence: str, passage: str) -> str | None:
    """The first code span of the sentence that the passage does not contain as written (case and all, not
    inside a longer name), or None. A code span names one thing exactly: `gitaly` is not the prose word
    Gitaly, and `set` is not `--set`."""
    for match in CODE_SPAN.finditer(strip_markers(sentence)):
        name = match.group(2).strip()
        if name and not re.search(rf"(?<![\w\-/]){re.escape(name)}(?![\w\-])", passage):
            return name
    return None


def strict_check(sentence: str, passage: str) -> tuple[float, str | None]:
    """(support score, why the claim is unsupported or None) under the gates of `strict`: a number or
    identifier not in the passage, a code span not as written, a negation reversed, or a content word the
    passage lacks (below STRICT_MIN_SUPPORT). The score is `support_score`, 0 when a gate fails."""
    name = code_not_as_written(sentence, passage)
    if name is not None:
        return 0.0, f"`{name}` is not in the passage as written"
    terms = claim_terms(sentence)
    if not terms:
        return 1.0, None
    present = _present(passage)
    missing = exact_terms(sentence) - present
    lowered = plain(passage).lower()
    missing = {t for t in missing if not (_written_in(t, lowered) or _compound_in(t, present))}
    if missing:
        return 0.0, f"{sorted(missing)[0]} is not in the passage"
    if _reversed(sentence, terms, passage):
        return 0.0, "the sentence negates what the passage says, or the other way round"
    score = support_score(sentence, passage)
    if score < STRICT_MIN_SUPPORT:
        return score, f"only {score:.0%} of the sentence's content words are in the passage"
    return score, None


@dataclass(frozen=True)
class Check:
    chunk_id: str
    score: float
    supported: bool
    reason: str


def check_citations(sentence: str, cited: Iterable[tuple[str, str]], min_support: float) -> list[Check]:
    """One check per (chunk_id, passage text) the sentence cites."""
    out = []
    for chunk_id, passage in cited:
        score = support_score(sentence, passage)
        ok = score >= min_support
        reason = "supported" if ok else f"only {score:.0%} of the sentence's content words are in the passage"
        out.append(Check(chunk_id, round(score, 4), ok, reason))
    return out


def check_strict(sentence: str, cited: Iterable[tuple[str, str]]) -> list[Check]:
    """The `strict` variant's check of each (chunk_id, passage text) the sentence cites."""
    out = []
    for chunk_id, passage in cited:
        score, why = strict_check(sentence, passage)
        out.append(Check(chunk_id, round(score, 4), why is None, why or "supported"))
    return out


JUDGE_PROMPT = """Passage:
{passage}

Sentence: {sentence}

Does the passage state what the sentence says (not merely a related topic)? Answer with one word: yes or no."""


SCORE_SYSTEM = (
    "You check citations. Answer yes only when the passage itself states everything the sentence claims: "
    "every number, version, name and negation as the passage has them. A sentence on the passage's topic that "
    "claims something else, or adds a claim the passage does not make, gets no."
)


def judge_score(harness: LLMHarness, sentence: str, passage: str) -> float:
    """The `llm_score` check: the model's probability of "yes" against "no" as its first token (0..1), read
    from the provider's log-probabilities, to be compared with a threshold calibrated on labelled pairs
    (a yes/no answer as written says yes to nearly everything). The passage comes first so that a server
    with a prompt cache reads it once for every sentence that cites it. A provider without log-probabilities,
    or a judge that cannot be reached, raises `GenerationUnavailable`: callers fail closed."""
    messages = [
        {"role": "system", "content": SCORE_SYSTEM},
        {"role": "user", "content": JUDGE_PROMPT.format(passage=passage, sentence=strip_markers(sentence))},
    ]
    top = first_token_logprobs(harness, messages)
    yes = sum(math.exp(lp) for token, lp in top.items() if token.strip().lower() == "yes")
    no = sum(math.exp(lp) for token, lp in top.items() if token.strip().lower() == "no")
    return yes / (yes + no) if yes + no > 0 else 0.0


def first_token_logprobs(harness: LLMHarness, messages: list[dict[str, str]], top: int = 10) -> dict[str, float]:
    """The log-probabilities of the likeliest first tokens of the reply, from the first provider that answers
    (each provider's circuit breaker is honoured; one attempt each, within the harness's deadline)."""
    litellm = _litellm()
    errors = []
    for provider in harness.providers:
        breaker = harness.breakers[provider.name]
        if not breaker.allow():
            errors.append(f"{provider.name}: circuit open")
            continue
        try:
            response = litellm.completion(
                model=provider.model,
                messages=messages,
                api_base=provider.api_base,
                api_key=request_key(provider.api_key, provider.api_base),
                timeout=harness.deadline_seconds,
                max_tokens=1,
                temperature=0.0,
                logprobs=True,
                top_logprobs=top,
                num_retries=0,
            )
            content = response.choices[0].logprobs["content"] if response.choices[0].logprobs else None
            if not content:
                raise RuntimeError("the provider returned no log-probabilities")
            first = content[0]
            listed = first.get("top_logprobs") if isinstance(first, dict) else first.top_logprobs
            out: dict[str, float] = {}
            for entry in listed or []:
                token, logprob = (
                    (entry["token"], entry["logprob"]) if isinstance(entry, dict) else (entry.token, entry.logprob)
                )
                out[token] = max(out.get(token, -math.inf), float(logprob))
            breaker.success()
            return out
        except Exception as exc:
            breaker.failure()
            errors.append(f"{provider.name}: {type(exc).__name__}: {str(exc)[:200]}")
    raise GenerationUnavailable("no log-probabilities from any provider: " + "; ".join(errors))


def judge_support(harness: LLMHarness, sentence: str, passage: str) -> tuple[bool, str]:
    """The `llm` check: a language model's yes or no, and its verdict as written. A judge that cannot be
    reached raises `GenerationUnavailable`: callers fail closed."""
    prompt = JUDGE_PROMPT.format(passage=passage, sentence=strip_markers(sentence))
    verdict = harness.complete([{"role": "user", "content": prompt}], max_tokens=3).text.strip()
    return verdict.lower().startswith("yes"), verdict
