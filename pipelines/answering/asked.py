"""The extractive answer that answers: sentences chosen by what the question asks (`sentence_ranker=asked`).

Word overlap alone picks the sentence that repeats the question: the one that names a setting, not the one
that gives its default; a sentence of an unrelated page that shares three words. This selection reads what
kind of value the question asks for and scores every candidate sentence with a small logistic model.

Kinds (`asked_kinds`). English patterns over the question: "what is the default" asks a default, "which
port" a port, "how many / how long / maximum" a number, "which version" a version, "which status code" a
status, "which command / how do I run" a command, "which setting / variable / flag" an identifier, "where"
a path or address, "when did / what year" a date, "who" a name, and a question opening with an auxiliary
("Can ...", "Is ...", "Do I have to ...") a yes or no. A sentence *holds* a kind (`holds_kind`) when it
contains a value of that kind that the question does not already name: "The admin console is served on
port 8443 unless another is set." holds a port for a question about the admin console's port.

Candidates. Every unit (pipelines/answering/passage_units.py) of the passages whose coverage of the
question (pipelines/answering/extractive.py `score_sentences`) reaches the minimum, and the units right
before and after such a unit in the same passage: the value is often in the sentence after the one that
names the setting, which shares few of the question's words.

Features (`features`): the coverage, relative to the best candidate's and absolute; whether the question
asks a kind and the sentence holds it (or does not); how much the sentence adds beyond the question's
words; the passage's rank; whether the sentence is its passage's own (not a neighbour's) or only next to a
qualifying one; whether it is a question itself; its length; whether it introduces a block; a negation in
the answer to a yes/no question; with a sentence ranker, its score and its gap to the best candidate's. The
weights (`RANKED_WEIGHTS` with the cross-encoder, `WEIGHTS` without) were fitted by
`evals/studies/answer_sentences.py` on the *tuning* half of XQuAD English (`pipelines.golden_sets.half_of` of
each question's id; positives: the sentences holding the answer span). Adding the golden sets' tuning rows
(positives: the sentences holding an evidence string) was tried and not kept: it changed one tuning answer
for the worse. Judged on the held-out halves (docs/benchmarks.md, "Extractive answers"). XQuAD's passages
are an article's paragraphs in order, not a ranking, so the passage's rank weighs nothing yet.

Selection (`select`). The best sentence by the model; `no_answer` when even that one is unlikely to answer
(`MIN_RANKER`: the cross-encoder's best score among the sentences the answer would say, chosen on the tuning
halves with questions whose answering paragraph was taken away: sentences that share the question's words but do
not answer it).
A question of two asks gets the best sentence of each ask next, from any page. When the question asks for a
kind of value and no sentence chosen so far holds one, the likeliest sentence of the same page that does
comes next (the model weighs the kind as one feature among many, and a sentence naming the setting often
covers more of the question than the one giving its default). Then, from the same page only, the next best
that are likely enough themselves (`KEEP_SHARE` of the best's probability), `max_sentences` in all. No sentence twice (the same
text in two passages is one sentence). The code block or list a chosen sentence introduces comes with it,
and a table row with its table's header. When the question asks yes or no and a chosen sentence says no
("... is always required", "... will only be executed for the main application, not for ..."), that
sentence comes first: the premise is corrected before anything else is said.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from pipelines.answering.citations import join_sentences
from pipelines.answering.extractive import (
    PLAIN,
    ScoredSentence,
    SentenceRanker,
    question_terms,
    score_sentences,
    with_marker,
)
from pipelines.answering.passage_units import (
    CODE_SPAN,
    COLONS,
    block_parts,
    introduced,
    plain,
    prose_units,
    table_rows,
)
from pipelines.documents import Chunk
from pipelines.text.analysis import Analyzer
from pipelines.text.asks import split_asks


def normalise(text: str) -> str:
    """Lowercase, without ` and *, white space collapsed: how the golden sets compare text."""
    return re.sub(r"\s+", " ", re.sub(r"[`*]", "", text.lower())).strip()


# ---------------------------------------------------------------------------------------------- kinds

_ASKS = [
    ("default", re.compile(r"\bdefaults?\b|\bby default\b|\bout of the box\b", re.I)),
    ("port", re.compile(r"\bports?\b", re.I)),
    (
        "number",
        re.compile(
            r"\bhow (?:many|much|long|large|big|often|old|far|fast|frequently)\b|\b(?:maximum|minimum|max|min|"
            r"limit|size|timeout|number of|at most|at least|percentage|percent|amount|how high|how low)\b",
            re.I,
        ),
    ),
    ("version", re.compile(r"\bversions?\b|\bsince when\b|\bwhich release\b", re.I)),
    ("status", re.compile(r"\bstatus(?: code)?\b|\b(?:http|error|exit) code\b|\bwhich code\b", re.I)),
    (
        "command",
        re.compile(
            r"\b(?:which|what) (?:command|cli|subcommand)\b|\bcommand\b|^(?:\W*\w+\W+){0,6}?how (?:do|can|should|would)"
            r" (?:i|you|we|one)\b|\bhow to\b",
            re.I,
        ),
    ),
    (
        "setting",
        re.compile(
            r"\b(?:which|what) (?:\w+ )?(?:settings?|variables?|options?|parameters?|keys?|flags?|fields?|"
            r"arguments?|headers?|config\w*|properties|property|attributes?|environment)\b|\bsetting\b|"
            r"\bconfigur\w+\b|^(?:\W*\w+\W+){0,6}?how (?:do|can|should|would) (?:i|you|we|one)\b",
            re.I,
        ),
    ),
    (
        "path",
        re.compile(
            r"^\W*where\b|\bwhere (?:do|can|is|are|does|should)\b|\b(?:which|what) (?:\w+ )?(?:url|path|address|directory|folder|file)\b",
            re.I,
        ),
    ),
    (
        "date",
        re.compile(
            r"^\W*when\b(?! \w+ (?:fails?|is|are)\b)|\b(?:what|which|in what) (?:year|century|decade|date|month)\b",
            re.I,
        ),
    ),
    ("name", re.compile(r"^\W*(?:who|whom|whose)\b|\bname of\b|\bcalled\b|\bwho (?:is|was|were|did)\b", re.I)),
    (
        "yesno",
        re.compile(
            r"^(?:[^?]*[.,]\s+)?(?:can|is|are|does|do|did|will|should|could|would|may|must|has|have|am|was|were)\b",
            re.I,
        ),
    ),
]
KINDS = tuple(kind for kind, _ in _ASKS)

_NUMBER = re.compile(
    r"(?<![\w.])\d+(?:[.,]\d+)*(?:\s?(?:%|[kKmMgGtT]i?[bB]|ms|s|seconds?|minutes?|hours?|days?))?(?![\w.]*\w)"
)
_PORT = re.compile(r"(?<![\w.])(?::)?\d{2,5}(?![\w.]*\w)")
_VERSION = re.compile(r"(?<![\w.])v?\d+\.\d+(?:\.\d+)*(?![\w]*\w)")
_STATUS = re.compile(r"(?<![\w.])[1-5]\d\d(?![\w.]*\w)")
_YEAR = re.compile(r"(?<![\w.])(?:1[0-9]{3}|20\d\d)s?(?![\w.]*\w)")
_MONTH = re.compile(r"\b(?:January|February|March|April|May|June|July|August|September|October|November|December)\b")
_IDENT = re.compile(
    r"(?<![\w])(?:--?[a-z][\w-]*|[A-Za-z]\w*_\w+|[a-z]+[A-Z]\w*|[A-Z]{2,}[A-Z0-9_]*|\w+\.\w+(?:\.\w+)*|\w+\(\S*\))"
)
_PATH = re.compile(r"(?<![\w])(?:/[\w.{}<>:-]+)+/?|https?://\S+|\b\w+\.(?:toml|ya?ml|json|py|md|conf|ini|rb)\b")
_CAPITALISED = re.compile(r"(?<!^)(?<![.!?]\s)\b[A-Z][a-z]+(?:\s[A-Z][a-z]+)*")
_DEFAULT_WORD = re.compile(r"\bdefaults?\b|\bdefaulted\b|\bby default\b|\bunless\b|\bif (?:not|unset|omitted)\b", re.I)
_LITERAL = re.compile(r"\b(?:true|false|none|null|nil|empty|disabled|enabled|off|on|unlimited)\b", re.I)
NEGATION = re.compile(
    r"\b(?:not|never|cannot|no longer|neither|nor|only|always|instead|no|without|must)\b|n['’]t\b", re.I
)


def asked_kinds(question: str) -> frozenset[str]:
    """The kinds of value the question asks for (none for "what is X?" and other open questions)."""
    kinds = {kind for kind, pattern in _ASKS if pattern.search(question.strip())}
    if "port" in kinds or "version" in kinds or "status" in kinds:
        kinds.discard("number")  # a port, a version or a status code is the number asked for
    if "default" in kinds and "port" in kinds:
        kinds.discard("default")  # "the default port" asks the port
    return frozenset(kinds)


def _new(values: Sequence[str], question: str) -> bool:
    """Some value is not already in the question (a question naming `listen_address` asks something else)."""
    asked = normalise(question)
    return any(normalise(v).strip(" .,:;") not in asked for v in values if v.strip(" .,:;"))


def holds_kind(kind: str, unit: str, question: str, codes: Sequence[str] = (), block: bool = False) -> bool:
    """The unit holds a value of `kind` the question does not name. `codes`: the unit's code spans as its
    passage writes them; `block`: the unit introduces a code block or list."""
    if kind == "default":
        values = _NUMBER.findall(unit) + _LITERAL.findall(unit) + list(codes) + _IDENT.findall(unit)
        return bool(_DEFAULT_WORD.search(unit)) and _new(values, question)
    if kind == "port":
        return _new(_PORT.findall(unit), question)
    if kind == "number":
        return _new(_NUMBER.findall(unit), question)
    if kind == "version":
        return _new(_VERSION.findall(unit), question)
    if kind == "status":
        return _new(_STATUS.findall(unit), question)
    if kind == "command":
        commands = [c for c in codes if " " in c.strip() or c.startswith("-")]
        return block or _new(commands, question)
    if kind == "setting":
        return _new(list(codes) + _IDENT.findall(unit), question)
    if kind == "path":
        return _new(_PATH.findall(unit), question)
    if kind == "date":
        return _new(_YEAR.findall(unit) + _MONTH.findall(unit), question)
    if kind == "name":
        return _new(_CAPITALISED.findall(unit), question)
    if kind == "yesno":
        return bool(NEGATION.search(unit))
    return False


# -------------------------------------------------------------------------------------------- features

FEATURES = (
    "bias",
    "coverage",
    "coverage_share",  # coverage relative to the best candidate's
    "best_coverage",  # the candidate is the best-covering one
    "kind_held",  # the question asks a kind and the unit holds it
    "kind_missing",  # the question asks a kind and the unit holds none
    "novelty",  # share of the unit's terms the question does not have
    "inverse_rank",
    "own",
    "adjacent_only",  # below the coverage minimum, next to a unit that reaches it
    "first_in_passage",
    "is_question",
    "log_words",
    "introduces_block",
    "table_row",
    "ranker",  # the sentence ranker's score (the cross-encoder's logit), 0 without one
    "ranker_gap",  # that score less the best candidate's
)
_RANKER = FEATURES.index("ranker")
# Fitted by `python -m evals.studies.answer_sentences fit` (the module's docstring says on what).
WEIGHTS = (
    -3.756,  # bias
    2.052,  # coverage
    2.639,  # coverage_share
    1.473,  # best_coverage
    0.17,  # kind_held
    -0.62,  # kind_missing
    -1.718,  # novelty
    0.0,  # inverse_rank
    0.0,  # own
    0.936,  # adjacent_only
    0.051,  # first_in_passage
    0.0,  # is_question
    0.273,  # log_words
    0.0,  # introduces_block
    0.0,  # table_row
    0.0,  # ranker
    0.0,  # ranker_gap
)
# Fitted the same way with a sentence ranker's scores (`RANKED_WEIGHTS`), for English questions.
RANKED_WEIGHTS = (
    -2.238,  # bias
    1.1,  # coverage
    0.85,  # coverage_share
    1.336,  # best_coverage
    0.031,  # kind_held
    -0.458,  # kind_missing
    -0.054,  # novelty
    0.0,  # inverse_rank
    0.0,  # own
    0.962,  # adjacent_only
    -0.091,  # first_in_passage
    0.0,  # is_question
    0.167,  # log_words
    0.0,  # introduces_block
    0.0,  # table_row
    0.069,  # ranker
    0.148,  # ranker_gap
)
MIN_PROBABILITY = 0.0  # the model's probability separated nothing on XQuAD (MIN_RANKER does): no floor
# With a sentence ranker: below this logit of the cross-encoder, even the best sentence only shares the question's
# words. On XQuAD's tuning half, the highest threshold that keeps 99.5% of the questions answered (-5: 99.7%
# answered, 66% of the questions whose answering paragraph was taken away get no answer).
MIN_RANKER: float | None = -5.0
KEEP_SHARE = 0.5  # a sentence besides the best is kept at this share of the best's probability


@dataclass(frozen=True)
class Candidate:
    sentence: ScoredSentence
    features: tuple[float, ...]
    probability: float = 0.0
    document_id: str = ""
    block: str | None = None  # the code block or list it introduces
    header: str | None = None  # its table's header row, for a table row


def table_headers(text: str) -> dict[str, str]:
    """Each data row of the text's tables (as `table_rows` gives it) with its table's header row, cells joined
    by " | " (the header names the columns: "4096" says nothing without "Default")."""
    headers: dict[str, str] = {}
    lines = text.split("\n")
    at = 0
    while at < len(lines):
        if not lines[at].lstrip().startswith("|"):
            at += 1
            continue
        end = at
        while end < len(lines) and lines[end].lstrip().startswith("|"):
            end += 1
        run = lines[at:end]
        rows = table_rows(run)
        if len(run) >= 2 and rows and re.match(r"^\s*\|?\s*:?-+", run[1]):
            head = table_rows([*run[:1], "|---|"])  # the header line read as a row of a table of its own
            header = head[0] if head else " | ".join(c.strip() for c in run[0].strip().strip("|").split("|"))
            for row in rows:
                headers.setdefault(row, header)
        at = end
    return headers


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x > -60 else 0.0


def probability(features: Sequence[float], weights: Sequence[float] = WEIGHTS) -> float:
    return _sigmoid(sum(w * f for w, f in zip(weights, features, strict=True)))


def candidates(
    question: str,
    chunks: Sequence[Chunk],
    min_score: float = 0.15,
    words: Analyzer = PLAIN,
    language: str | None = None,
    weights: Sequence[float] | None = None,
    ranker: SentenceRanker | None = None,
) -> list[Candidate]:
    """Every candidate sentence of the passages with its features and probability (see the module's docstring),
    each text once, at its most probable."""
    scored = score_sentences(question, chunks, own_only=False, words=words, language=language)
    if not scored:
        return []
    lang = language or (chunks[0].language if chunks else None)
    q_terms = set(question_terms(question, words, lang))
    kinds = asked_kinds(question)
    qualifying = {(s.rank, s.position) for s in scored if s.score >= min_score}
    if not qualifying:
        return []
    near = {(r, p + d) for r, p in qualifying for d in (-1, 1)}
    pool = [s for s in scored if (s.rank, s.position) in qualifying or (s.rank, s.position) in near]
    best = max(s.score for s in scored if (s.rank, s.position) in qualifying)
    extras = {}
    for rank, chunk in enumerate(chunks, start=1):
        text = chunk.generation_text
        extras[rank] = (introduced(text), table_headers(text), [m.group(2) for m in CODE_SPAN.finditer(text)])
    if weights is None:
        weights = WEIGHTS if ranker is None else RANKED_WEIGHTS
    ranked = list(ranker(question, [s.text for s in pool])) if ranker is not None and pool else [0.0] * len(pool)
    top_ranked = max(ranked, default=0.0)
    out: dict[str, Candidate] = {}
    for s, ranker_score in zip(pool, ranked, strict=True):
        follows, headers, spans = extras[s.rank]
        block = follows.get(s.text) if s.text.endswith(COLONS) else None
        codes = [c for c in spans if plain(c) in s.text or c in s.text]
        held = bool(kinds) and any(holds_kind(k, s.text, question, codes, block is not None) for k in kinds)
        unit_terms = set(words(s.text, chunks[s.rank - 1].language))
        novelty = len(unit_terms - q_terms) / len(unit_terms) if unit_terms else 0.0
        n_words = len(s.text.split())
        x = (
            1.0,
            s.score,
            s.score / best if best > 0 else 0.0,
            float(s.score >= best),
            float(held),
            float(bool(kinds) and not held),
            novelty,
            1.0 / s.rank,
            float(s.own),
            float((s.rank, s.position) not in qualifying),
            float(s.position == 0),
            float(s.text.rstrip().endswith("?")),
            math.log(1 + n_words),
            float(block is not None),
            float(s.text in headers),
            float(ranker_score),
            float(ranker_score - top_ranked),
        )
        candidate = Candidate(s, x, probability(x, weights), chunks[s.rank - 1].document_id, block, headers.get(s.text))
        key = normalise(s.text)
        if key not in out or candidate.probability > out[key].probability:
            out[key] = candidate
    return list(out.values())


def select(
    question: str,
    chunks: Sequence[Chunk],
    max_sentences: int = 3,
    min_score: float = 0.15,
    words: Analyzer = PLAIN,
    language: str | None = None,
    min_probability: float = MIN_PROBABILITY,
    keep_share: float = KEEP_SHARE,
    weights: Sequence[float] | None = None,
    ranker: SentenceRanker | None = None,
    min_ranker: float | None = MIN_RANKER,
) -> list[Candidate]:
    """The sentences the answer says, in the order it says them (see the module's docstring); [] for no answer."""
    found = candidates(question, chunks, min_score, words, language, weights, ranker)
    if not found:
        return []
    found.sort(key=lambda c: -c.probability)
    top = found[0]
    if top.probability < min_probability:
        return []
    picks = [top]

    def fresh(c: Candidate) -> bool:
        return all(normalise(p.sentence.text) != normalise(c.sentence.text) for p in picks)

    if len(split_asks(question)) >= 2:
        for ask in split_asks(question):
            best = max(candidates(ask, chunks, min_score, words, language, weights, ranker), key=_likely, default=None)
            if best is not None and best.probability >= min_probability and fresh(best):
                picks.append(best)
    held = FEATURES.index("kind_held")
    if asked_kinds(question) - {"yesno"} and not any(p.features[held] for p in picks):
        # The value asked for is not said yet: the likeliest sentence of the same page that holds one.
        value = next((c for c in found if c.features[held] and c.document_id == top.document_id and fresh(c)), None)
        if value is not None and value.probability >= min_probability:
            picks.append(value)
    floor = max(min_probability, keep_share * top.probability)
    for c in found[1:]:
        if len(picks) >= max_sentences:
            break
        if c.document_id == top.document_id and c.probability >= floor and fresh(c):
            picks.append(c)
    picks = picks[:max_sentences]
    # The answer's own sentences decide, as `evals.studies.answer_sentences judge` measured the threshold: the best
    # of every candidate (a neighbour the answer does not say) would keep answers that say nothing to the question.
    if ranker is not None and min_ranker is not None and max(c.features[_RANKER] for c in picks) < min_ranker:
        return []
    first = {id(c) for c in picks if "yesno" in asked_kinds(question) and NEGATION.search(c.sentence.text)}
    return sorted(picks, key=lambda c: (id(c) not in first, c.sentence.rank, c.sentence.position))


def _likely(candidate: Candidate) -> float:
    return candidate.probability


def render(picks: Sequence[Candidate]) -> str:
    """The chosen sentences with their markers, each with its table's header (a row) or the block it introduces."""
    parts: list[str] = []
    shown: set[str] = set()
    headers: set[tuple[str, str]] = set()
    for c in picks:
        s = c.sentence
        if s.text in shown:
            continue
        if c.header and (c.header, s.chunk_id) not in headers:
            headers.add((c.header, s.chunk_id))
            parts.append(with_marker(c.header, s.chunk_id))
        parts.append(with_marker(s.text, s.chunk_id))
        shown.add(s.text)
        if c.block:
            parts.extend(with_marker(part, s.chunk_id) for part in block_parts(c.block))
            shown.update(prose_units(c.block))
    return join_sentences(parts)


def answer(
    question: str,
    chunks: Sequence[Chunk],
    max_sentences: int = 3,
    min_score: float = 0.15,
    passages: int = 5,
    words: Analyzer = PLAIN,
    language: str | None = None,
    ranker: SentenceRanker | None = None,
) -> tuple[str, list[ScoredSentence]]:
    """The cited answer and its sentences, as `extract_answer` returns them; ("", []) for no answer.
    `ranker`: a sentence ranker whose scores are two more features (`RANKED_WEIGHTS`)."""
    picks = select(question, chunks[:passages], max_sentences, min_score, words, language, ranker=ranker)
    return (render(picks), [c.sentence for c in picks]) if picks else ("", [])
