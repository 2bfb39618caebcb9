"""Extractive answers: sentences (and table rows) taken verbatim from the best passages, each cited.

No language model is involved. A sentence is a candidate when it covers enough of the question's
content words (weighted by how rare each word is among the candidate sentences); the answer takes
the best few, in passage order, each followed by the marker of the chunk it came from.

Own sentences first. A chunk may carry a `context_text` (its neighbours on the page, or a
sentence window's surroundings, or CRAG's strips of either): the retriever matched the chunk by its
own `text`, and the neighbours are there to be read around it, not because they matched. So the
answer is taken in two tiers, with no factor to tune:

1. The *own* sentences: those of the text the generator sees that come from the chunk's own `text`
   (for `sentence_window`, the few sentences it indexes). They are scored among themselves, exactly
   as if there were no context, so a chunk with a context answers as it would without one whenever
   its own text answers.
2. Only when no own sentence of any passage reaches the minimum score are the neighbours' sentences
   scored as well (every sentence the generator sees, weighted among all of them): the context can
   then answer what the hits' own texts could not. A sentence that is one hit's own and another's
   neighbour (two hits from one page) is taken once, at its best score.

Two asks. A question that asks two things ("What is X, and who did Y?", pipelines/text/asks.py) gets the best
sentence of each ask first, each ask scored on its own; the question's best fill the rest. Scored as one,
the sentences sharing most words with the whole question often answer one ask twice. Chosen on XQuAD
English questions paired into two-ask questions (`ragline eval sentences --pairs`); the sentence ranker's order
(below) does not do this.

Units. What an answer can quote is in pipelines/answering/passage_units.py: the sentences of a passage's prose and of
its list items, and its tables' data rows. Below, "sentence" means any of them. A quoted sentence ending in a
colon brings the code block or the list that follows it (`introduced`); with `blocks` (`answer_blocks=read`, the
graph's default) it is also scored with that block's text (`passage_units.block_readings`), since alone it rarely
shares the question's words.

Words. Question and sentences become terms through an analyzer (`answer_analyzer`): by default the BM25
`snowball` one, each word stemmed in its text's language and Chinese/Japanese read as character bigrams
("kept" meets "keeps"; a Chinese question shares words with a Chinese sentence at all), `plain` for words as
written. Chosen on XQuAD in 12 languages (`ragline eval sentences --analyzers snowball`).

Sentence order. By default the qualifying sentences are ordered by that coverage (`lexical`). With a
sentence ranker (`cross_encoder`: the packaged reranker, English questions only) the coverage still
decides which sentences qualify at all (so "nothing covers the question" is unchanged), but the best
`RANKED_POOL` of them are ordered by the ranker, and the answer keeps the best `max_sentences` that score
within `RANKED_MARGIN` logits of the first. Word overlap cannot tell the sentence that answers from one
that repeats the question's words; a cross-encoder reads both. Chosen on XQuAD English (questions on
Wikipedia paragraphs, not our golden sets): `ragline eval sentences --xquad ... --language en`.

The rule is lexicographic rather than a discount: a discount factor would be one more number fitted
to the golden sets, and any factor lets a neighbour that shares enough question words outrank the
sentence retrieval actually matched, which is how context lowered "facts present" before.

Either way a sentence cites the chunk whose generation text holds it (a neighbour's sentence cites the
hit it was read with), so every quote is found in the cited chunk's `generation_text`, which is what
citation checks and verification compare against. A chunk without a context has only own sentences:
its answers are unchanged.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from pipelines.answering.citations import join_sentences, split_sentences
from pipelines.answering.passage_units import (
    COLONS,
    block_parts,
    block_readings,
    introduced,
    paragraph_units,
    prose_units,
)
from pipelines.documents import Chunk
from pipelines.text.analysis import Analyzer, analyzer
from pipelines.text.asks import split_asks

# Words that say what kind of question it is, not what it is about.
QUESTION_WORDS = frozenset(
    [
        "which",
        "whats",
        "what's",
        "does",
        "did",
        "should",
        "would",
        "could",
        "there",
        "any",
        "way",
        "tell",
        "explain",
        "use",
        "using",
        "used",
        "set",
        "get",
    ]
)


# Scores sentences for one question (higher answers it better), in the sentences' order.
SentenceRanker = Callable[[str, Sequence[str]], Sequence[float]]
# Picks the sentence that answers the question among the ranker's best few (a language model, `llm_answer=choose`):
# the index of its choice in the texts it is given, or None when it made none.
Chooser = Callable[[str, Sequence[str]], int | None]
CHOICES = 6  # `chooser`: how many of the ranker's best sentences it chooses from
RANKED_POOL = 12  # the qualifying sentences a ranker reads: the best by coverage
RANKED_MARGIN = 5.0  # a kept sentence scores within this many logits of the ranker's best
# What an answer quotes of its best sentence (`answer_span`): the sentence, or the rest of its paragraph too.
SPANS = ("sentence", "paragraph", "continued", "extended")
ASKS = ("whole", "each")  # how a ranker reads a question of two asks (`extract_answer`)
CONTINUED = 2  # `continued`: most sentences of the best one's paragraph added to the chosen ones
# A sentence that opens by pointing back at the one before it ("If this limit is exceeded ...", "In that case ...",
# "They are not deprecated ..."): a closed list of English pronouns, demonstratives and connectives, optionally after
# a preposition or "if". Quoted alone, such a sentence names nothing (`with_antecedents`).
BACK_REFERENCE = re.compile(
    r"^(?:(?:if|when|unless|because of|for|with|in|on|at|by|after|before|to)\s+)?"
    r"(?:this|that|these|those|such|they|their|its|it|them|the former|the latter|otherwise|instead|however|also|"
    r"additionally|therefore|thus|then|if so|if not|in this case|in that case|here)\b",
    re.IGNORECASE,
)
# What a ranker reads (`answer_pool`): the best this many by coverage, among those covering at least this share of
# the question (`None`: the answer's own minimum). `wide` reads further once some sentence reaches the minimum, so
# "nothing covers the question" is unchanged.
POOLS: dict[str, tuple[int, float | None]] = {
    "narrow": (RANKED_POOL, None),
    "wide": (20, 0.05),
    "nearest": (RANKED_POOL, None),
    "blended": (RANKED_POOL, None),
}
# `nearest`: the `narrow` pool and, once one sentence reaches the minimum, this many more of the passages' sentences,
# those the embedding model puts closest to the question whatever their coverage (a sentence that answers in other
# words than the question's shares too few of them to be among the best by coverage).
NEAREST = 4
# `blended`: once one sentence reaches the minimum, the pool is the best `RANKED_POOL` of all the passages' sentences
# by the sum of two z-scores, their coverage and the embedding model's closeness to the question (`blended`).
# A definition's term as the readers write it before its description's first paragraph, in code ("`term` - ...",
# pipelines/ingestion/definitions.py `shown_term`), read as a quotable unit shows it ("term - ..."): the subject of
# every sentence of that paragraph (`subject_of`).
TERM_SUBJECT = re.compile(r"^([^\s`][^`\n]{0,79}?) - ")
_TERM_NAME = re.compile(r"[\w.:\-]+")

# How sentences and questions become terms by default (the `answer_analyzer` variants are in query_graph):
# plain words as written, as before the variant existed.
PLAIN: Analyzer = analyzer("plain")


@dataclass(frozen=True)
class ScoredSentence:
    text: str
    chunk_id: str
    rank: int  # rank of its chunk among the candidates, from 1
    position: int
    score: float
    own: bool = True  # in the chunk's own text, not only in its context


def question_terms(question: str, words: Analyzer = PLAIN, language: str | None = None) -> list[str]:
    """The question's content words: its terms less those that only say what kind of question it is."""
    # The question words as `words` spells them ("using" is "use" to a stemmer); plain words stay themselves.
    kind = QUESTION_WORDS | {t for w in QUESTION_WORDS if w.isalpha() for t in words(w, language)[:1]}
    return [t for t in dict.fromkeys(words(question, language)) if t not in kind]


def marked_units(chunk: Chunk) -> list[tuple[str, bool]]:
    """The prose units of what the generator sees, each with whether it is the chunk's own.

    Neighbour context holds the chunk's text verbatim: the units inside it are own, those before and
    after are the neighbours' (even when a neighbour repeats one of the chunk's sentences). Otherwise
    (CRAG's strips, which join the sentences they keep) a unit is own while the chunk's text still has
    an unused copy of it, or when it is made only of own units (two strips can merge into one unit)."""
    units = prose_units(chunk.generation_text)
    context, text = chunk.context_text, chunk.text
    if context is None:
        return [(unit, True) for unit in units]
    own_units = prose_units(text)
    at = context.find(text) if text else -1
    if at >= 0:
        before, after = prose_units(context[:at]), prose_units(context[at + len(text) :])
        if before + own_units + after == units:
            return [(u, False) for u in before] + [(u, True) for u in own_units] + [(u, False) for u in after]
    unused = Counter(own_units)
    pieces = sorted(unused, key=len, reverse=True)
    own_prose = " ".join(own_units)

    def made_of_own(unit: str) -> bool:
        if unit in own_prose:
            return True
        for piece in pieces:
            unit = unit.replace(piece, " ")
        return not unit.strip()

    marked = []
    for unit in units:
        if unused[unit] > 0:
            unused[unit] -= 1
            marked.append((unit, True))
        else:
            marked.append((unit, unit not in unused and made_of_own(unit)))
    return marked


def score_sentences(
    question: str,
    chunks: Sequence[Chunk],
    own_only: bool = False,
    words: Analyzer = PLAIN,
    language: str | None = None,
    readings: Mapping[str, str] | None = None,
) -> list[ScoredSentence]:
    """Every sentence the generator sees (or, with `own_only`, those of the chunks' own texts), scored
    by its coverage of the question's terms, each term weighted by its rarity among those sentences.
    `words` turns text into terms: each sentence is read in its chunk's language, the question in
    `language` (the first chunk's when unknown), so a stemming analyzer stems both sides alike.
    `readings`: a unit's words are those of its reading when it has one (a unit with the block it introduces,
    `passage_units.block_readings`)."""
    readings = readings or {}
    terms = question_terms(question, words, language or (chunks[0].language if chunks else None))
    # Each sentence's own words and its heading's, read once (each ask of a question scores them again).
    headings = [set(words(" ".join(chunk.heading_path), chunk.language)) for chunk in chunks]
    sentences = [
        (chunk, rank, position, unit, own, set(words(readings.get(unit, unit), chunk.language)), headings[rank - 1])
        for rank, chunk in enumerate(chunks, start=1)
        for position, (unit, own) in enumerate(marked_units(chunk))
        if own or not own_only
    ]
    if not terms or not sentences:
        return []
    total = len(sentences)
    weight = {t: math.log(1 + total / (1 + sum(t in s[5] or t in s[6] for s in sentences))) for t in terms}
    norm = sum(weight.values()) or 1.0
    scored = []
    for chunk, rank, position, unit, own, own_words, heading in sentences:
        # Words in the sentence count fully; words only in its heading count half.
        coverage = sum(weight[t] * (1.0 if t in own_words else 0.5 if t in heading else 0.0) for t in terms) / norm
        scored.append(ScoredSentence(unit, chunk.chunk_id, rank, position, coverage + 0.05 / rank, own))
    return scored


def once(scored: list[ScoredSentence]) -> list[ScoredSentence]:
    """Each sentence text once, at its best score: a page can write a sentence twice, two hits can hold the same
    sentence, and with context a page's sentence can be one hit's own and another hit's neighbour."""
    best: dict[str, ScoredSentence] = {}
    for s in scored:
        if s.text not in best or s.score > best[s.text].score:
            best[s.text] = s
    return list(best.values())


def with_marker(unit: str, chunk_id: str) -> str:
    """The unit with the chunk's marker on each of its sentences: a table row can hold several, and a
    sentence without a marker of its own would not be released (pipelines/answering/citations.py)."""
    return " ".join(_marked(sentence, chunk_id) for sentence in split_sentences(unit))


def _marked(sentence: str, chunk_id: str) -> str:
    marker = f" [C:{chunk_id}]"
    stripped = sentence.rstrip()
    if stripped.endswith(("```", "~~~")):  # a code block's closing fence stands alone on its line
        return stripped + "\n" + marker.strip() + "."
    if stripped and stripped[-1] in ".!?。！？।॥":
        return stripped[:-1] + marker + stripped[-1]
    return stripped + marker + "."


def extract_answer(
    question: str,
    chunks: Sequence[Chunk],
    max_sentences: int = 3,
    min_score: float = 0.15,
    passages: int = 5,
    ranker: SentenceRanker | None = None,
    each_ask: bool = True,
    words: Analyzer = PLAIN,
    language: str | None = None,
    scope: str = "passages",
    span: str = "sentence",
    pool: str = "narrow",
    antecedent: bool = False,
    blocks: bool = False,
    asks: str = "whole",
    subject: bool = False,
    chooser: Chooser | None = None,
    closeness: SentenceRanker | None = None,
) -> tuple[str, list[ScoredSentence]]:
    """The cited answer and the sentences it used; an empty answer when nothing covers the question.
    The chunks' own sentences come first; their neighbours' only when no own sentence qualifies.
    `ranker`: orders the qualifying sentences instead of their coverage (see the module's docstring).
    `each_ask` False: a question of two asks is scored as one (the evaluation's comparison).
    `words`, `language`: how sentences and question become terms (`score_sentences`).
    `scope`: `passages` takes sentences from any of the passages; `page` only from the page of the best one
    (`one_page`), except the best sentence of each ask of a two-ask question.
    `span`: `sentence` quotes the chosen sentences alone; `paragraph` quotes the best one with the sentences that
    follow it in its paragraph or list item (`continued`), within the same `max_sentences`; `continued` keeps every
    chosen sentence and adds at most `CONTINUED` of those that follow the best one; `extended` keeps every chosen
    sentence and adds those that follow the best one while the ranker scores the longer span higher (`extended`;
    without a ranker, as `sentence`).
    `pool`: which qualifying sentences a ranker reads (`POOLS`): `narrow`, the best `RANKED_POOL` by coverage among
    those reaching `min_score`; `wide`, once one reaches it, the best 20 among those covering at least 0.05.
    `antecedent`: a chosen sentence that opens by pointing back brings the sentence before it (`with_antecedents`).
    `blocks`: a unit that introduces a code block or a list is read with it, for its coverage and by the ranker
    (`passage_units.block_readings`); it is quoted, with its block, as always.
    `asks`: with a ranker, `whole` orders every sentence by the whole question; `each` gives each ask of a question
    of two asks or more its own best first, each ask's qualifying sentences ordered by the ranker reading that ask
    (`each_ask_answered`), then the whole question's best. Without a ranker each ask always gets its own best.
    `subject`: a quoted sentence of a definition's description that does not name the defined term is written after
    it, as the description's first sentence is ("term - sentence", `answer_text`).
    `chooser`: with a ranker, is given the ranker's best `CHOICES` sentences (as the ranker read them, whatever their
    margin) and picks the one that answers; the answer says it first, then the sentences chosen as always (one more
    than those when the choice is not among them).
    `closeness`: with `pool` `nearest` and a ranker, scores how close the embedding model puts each text to the
    question; the `NEAREST` closest sentences outside the pool join it (`nearest`); with `blended`, the pool is
    chosen by coverage and closeness together (`blended`)."""
    if pool not in POOLS:
        raise ValueError(f"unknown answer pool {pool!r}; known: {', '.join(POOLS)}")
    if asks not in ASKS:
        raise ValueError(f"unknown answer asks {asks!r}; known: {', '.join(ASKS)}")
    pool_size, pool_floor = POOLS[pool] if ranker else (RANKED_POOL, None)
    if chooser is not None and ranker is not None:
        ranker = _remembered(ranker)  # the chooser's options are the same pool the answer's sentences are ranked in
    chunks = chunks[:passages]
    own_only = True
    readings = {u: r for c in chunks for u, r in block_readings(c.generation_text).items()} if blocks else {}

    every: list[ScoredSentence] = []  # the question's scores of every sentence read, whatever their coverage

    def score(text: str, own: bool, floor: float | None = None, keep: bool = False) -> list[ScoredSentence]:
        found = score_sentences(text, chunks, own_only=own, words=words, language=language, readings=readings)
        if keep:
            every[:] = found
        if floor is not None and any(s.score >= min_score for s in found):
            return [s for s in found if s.score >= floor]
        return [s for s in found if s.score >= min_score]

    scored = once(score(question, True, pool_floor, keep=True))  # a sentence a page writes twice is said once
    if not scored and any(c.context_text is not None for c in chunks):
        own_only = False
        scored = once(score(question, False, pool_floor, keep=True))
    extra: list[ScoredSentence] = []
    if pool == "nearest" and ranker is not None and closeness is not None and scored:
        extra = nearest(question, scored, once(every), closeness, pool_size, readings)
    if pool == "blended" and ranker is not None and closeness is not None and scored:
        scored = blended(question, once(every), closeness, pool_size, readings)
    if scope == "page":
        scored = one_page(
            scored, chunks, ranked(question, scored, ranker, 1, pool_size, readings, extra=extra) if ranker else scored
        )
    best = (
        ranked(question, scored, ranker, max_sentences, pool_size, readings, extra=extra)
        if ranker
        else covering(scored, max_sentences)
    )
    if not best:
        return "", []
    pick = None
    if chooser is not None and ranker is not None:
        options = ranked(question, scored, ranker, CHOICES, pool_size, readings, margin=math.inf, extra=extra)
        at = chooser(question, [readings.get(s.text, s.text) for s in options]) if len(options) > 1 else None
        pick = options[at] if at is not None and 0 <= at < len(options) else None
    if ranker is None and each_ask:
        best = each_ask_answered(question, best, max_sentences, lambda ask: _top_covering(score(ask, own_only)))
    elif ranker is not None and each_ask and asks == "each":

        def top_ranked(ask: str) -> ScoredSentence | None:
            first = ranked(ask, score(ask, own_only, pool_floor), ranker, 1, pool_size, readings)
            return first[0] if first else None

        best = each_ask_answered(question, best, max_sentences, top_ranked)
    if span == "paragraph":
        best = continued(best, chunks, max_sentences)
    elif span == "continued":
        best = continued(best, chunks, len(best) + CONTINUED, follow=CONTINUED)
    elif span == "extended":
        best = extended(question, best, chunks, ranker) if ranker else best
    elif span != "sentence":
        raise ValueError(f"unknown answer span {span!r}; known: {', '.join(SPANS)}")
    if antecedent:
        best = with_antecedents(best, chunks)
    ordered = sorted(best, key=lambda s: (s.rank, s.position))
    if pick is not None:  # the chosen sentence first, then the others in the pages' order
        ordered = [pick, *[s for s in ordered if s.text != pick.text]]
    return answer_text(ordered, chunks, subject=subject), ordered


def _remembered(ranker: SentenceRanker) -> SentenceRanker:
    """`ranker`, scoring a question and its texts once however often it is asked about them."""
    known: dict[tuple[str, tuple[str, ...]], Sequence[float]] = {}

    def scores(question: str, texts: Sequence[str]) -> Sequence[float]:
        key = (question, tuple(texts))
        if key not in known:
            known[key] = list(ranker(question, texts))
        return known[key]

    return scores


def answer_text(sentences: Sequence[ScoredSentence], chunks: Sequence[Chunk], subject: bool = False) -> str:
    """The cited sentences in order, each followed by the code block or list it introduces, if any
    (`passage_units.introduced`), cited like the sentence: "... you can use the dev command:" is no answer
    without the command, nor "The minimum specs are:" without the specs. A quoted item of a list already shown
    is not said twice. `subject`: a sentence of a definition's description that does not name the term it
    describes is written after the term (`subject_of`), "term - sentence", unless the answer shows the term
    already."""
    parts: list[str] = []
    shown: set[str] = set()
    for s in sentences:
        if s.text in shown:
            continue
        term = subject_of(s, chunks) if subject else None
        said = f"{term} - {s.text}" if term and not any(f"{term} - " in part for part in parts) else s.text
        parts.append(with_marker(said, s.chunk_id))
        block = introduced(chunks[s.rank - 1].generation_text).get(s.text) if s.text.endswith(COLONS) else None
        if block:
            parts.extend(with_marker(part, s.chunk_id) for part in block_parts(block))
            shown.update(prose_units(block))
    return join_sentences(parts)


def _top_covering(scored: list[ScoredSentence]) -> ScoredSentence | None:
    return max(scored, key=lambda s: s.score, default=None)


def each_ask_answered(
    question: str,
    best: list[ScoredSentence],
    count: int,
    best_for: Callable[[str], ScoredSentence | None],
) -> list[ScoredSentence]:
    """For a question that asks two things (pipelines/text/asks.py), the best sentence for each ask first (each
    ask scored on its own, with the same minimum), then the question's best as before, `count` in all.
    Scored as one, "What is X, and who did Y?" takes the sentences that share most words with the whole
    question, and those often answer one ask twice. A question of one ask keeps `best`. `best_for` gives an
    ask's best sentence among those that reach the minimum (by coverage, or by the ranker reading the ask)."""
    asks = split_asks(question)
    if len(asks) < 2:
        return best
    picks: list[ScoredSentence] = []
    for ask in asks:
        top = best_for(ask)
        if top is not None and all(p.text != top.text for p in picks):
            picks.append(top)
    for sentence in best:
        if all(p.text != sentence.text for p in picks):
            picks.append(sentence)
    return picks[:count]


def continued(
    best: list[ScoredSentence], chunks: Sequence[Chunk], count: int, follow: int | None = None
) -> list[ScoredSentence]:
    """The first of `best` followed by the sentences after it in its paragraph or list item (at most `follow` of
    them), then the rest of `best`, `count` sentences in all. A page often names the subject in one sentence and
    gives its value, its condition or its default in the next ("`X` - stops parsing when ... . The default is
    ..."): the next sentence shares no word with the question, so no score picks it, and the answer quoting the
    first alone names the setting without what was asked of it."""
    if not best:
        return best
    top = best[0]
    following = _following(top, chunks)[:follow]
    picks = [top]
    for offset, text in enumerate(following, start=1):
        if len(picks) >= count:
            break
        if all(p.text != text for p in picks):
            picks.append(ScoredSentence(text, top.chunk_id, top.rank, top.position + offset, top.score, top.own))
    for sentence in best[1:]:
        if len(picks) < count and all(p.text != sentence.text for p in picks):
            picks.append(sentence)
    return picks


def extended(
    question: str,
    best: list[ScoredSentence],
    chunks: Sequence[Chunk],
    ranker: SentenceRanker,
    follow: int = CONTINUED,
) -> list[ScoredSentence]:
    """Every chosen sentence, the first (the ranker's best) followed by as many of the next sentences of its
    paragraph or list item (none, one, ... `follow`) as make the span the ranker scores highest. What `continued`
    adds whether it helps or not, the ranker reads first: "`X` - stops parsing when ... . The default is ..." reads
    as a better answer to "what is X's default?" with the sentence that gives the value, even past a sentence between
    them; a span that goes on to the next feature does not. One call of the ranker scores every span."""
    if not best:
        return best
    top = best[0]
    following = _following(top, chunks)[:follow]
    if not following:
        return best
    spans = [" ".join([top.text, *following[:n]]) for n in range(len(following) + 1)]
    scores = list(ranker(question, spans))
    taken = max(range(len(spans)), key=lambda n: (scores[n], -n))  # a tie keeps the shorter span
    picks = [top] + [
        ScoredSentence(text, top.chunk_id, top.rank, top.position + offset, top.score, top.own)
        for offset, text in enumerate(following[:taken], start=1)
    ]
    return picks + [s for s in best[1:] if all(p.text != s.text for p in picks)]


def with_antecedents(best: list[ScoredSentence], chunks: Sequence[Chunk]) -> list[ScoredSentence]:
    """`best`, each sentence that opens by pointing back (`BACK_REFERENCE`: "If this limit is exceeded ...", "In that
    case ...") preceded by the sentence before it in its paragraph or list item, unless that one is quoted already.
    One sentence back, never a chain; a sentence that opens its paragraph stays as it is (what came before is another
    paragraph, or a heading). English words: a sentence in another language never matches."""
    quoted = {s.text for s in best}
    picks: list[ScoredSentence] = []
    for sentence in best:
        before = _preceding(sentence, chunks) if BACK_REFERENCE.match(sentence.text) else None
        if before is not None and before not in quoted:
            quoted.add(before)
            picks.append(replace(sentence, text=before, position=sentence.position - 1))
        picks.append(sentence)
    return picks


def _paragraph_at(sentence: ScoredSentence, chunks: Sequence[Chunk]) -> tuple[list[str], int]:
    """The paragraph or list item holding `sentence` (a table row is a paragraph of its own) and the sentence's
    place in it; an empty paragraph when its position is past the passage's units."""
    start = 0
    for paragraph in paragraph_units(chunks[sentence.rank - 1].generation_text):
        if start <= sentence.position < start + len(paragraph):
            return paragraph, sentence.position - start
        start += len(paragraph)
    return [], 0


def subject_of(sentence: ScoredSentence, chunks: Sequence[Chunk]) -> str | None:
    """The definition term (written in code) that opens the paragraph of `sentence`, when the sentence is a later one of that
    paragraph and does not name the term itself: "How many recovery codes to generate." quoted from the second
    sentence of a setting's description says what it describes only with the setting's name before it."""
    paragraph, at = _paragraph_at(sentence, chunks)
    if not 0 < at < len(paragraph) or paragraph[at] != sentence.text:
        return None
    found = TERM_SUBJECT.match(paragraph[0])
    if found is None or f"`{found.group(1)}` - " not in chunks[sentence.rank - 1].generation_text:
        return None  # a paragraph that opens with a dash, not with a term the readers wrote in code
    name = _TERM_NAME.match(found.group(1))
    last = name.group(0).rsplit(".", 1)[-1] if name else ""
    return None if last and last.lower() in sentence.text.lower() else found.group(1)


def _preceding(sentence: ScoredSentence, chunks: Sequence[Chunk]) -> str | None:
    """The sentence before `sentence` in its paragraph or list item; None when it opens it."""
    paragraph, at = _paragraph_at(sentence, chunks)
    return paragraph[at - 1] if 0 < at < len(paragraph) and paragraph[at] == sentence.text else None


def _following(top: ScoredSentence, chunks: Sequence[Chunk]) -> list[str]:
    """The sentences after `top` in its paragraph or list item (a table row is a paragraph of its own)."""
    paragraph, at = _paragraph_at(top, chunks)
    return paragraph[at + 1 :]


def one_page(
    scored: list[ScoredSentence], chunks: Sequence[Chunk], leaders: list[ScoredSentence]
) -> list[ScoredSentence]:
    """The sentences of the page that holds the best of `leaders` (by coverage; a ranker's first is its only
    leader): an answer made of the best sentence of each of several pages reads as a list of unrelated quotes,
    and the sentences around the one that answers are more often the rest of the answer than another page's."""
    if not leaders:
        return scored
    top = max(leaders, key=lambda s: s.score)
    page = chunks[top.rank - 1].document_id
    return [s for s in scored if chunks[s.rank - 1].document_id == page]


def covering(scored: list[ScoredSentence], count: int) -> list[ScoredSentence]:
    """The best `count` by coverage, those close to the best one, so a weak tail does not dilute the answer."""
    best = sorted(scored, key=lambda s: -s.score)[:count]
    return [s for s in best if s.score >= best[0].score * 0.6]


def ranked(
    question: str,
    scored: list[ScoredSentence],
    ranker: SentenceRanker,
    count: int,
    size: int = RANKED_POOL,
    readings: Mapping[str, str] | None = None,
    margin: float = RANKED_MARGIN,
    extra: Sequence[ScoredSentence] = (),
) -> list[ScoredSentence]:
    """The best `count` of the pool (the best `size` by coverage, and the `extra` sentences not among them) by the
    ranker's score, within `margin` of its best. The ranker reads a sentence's reading in `readings` when it has
    one."""
    pool = sorted(scored, key=lambda s: -s.score)[:size]
    if not pool:
        return []
    held = {s.text for s in pool}
    pool += [s for s in extra if s.text not in held]
    scores = list(ranker(question, [(readings or {}).get(s.text, s.text) for s in pool]))
    order = sorted(range(len(pool)), key=lambda i: -scores[i])[:count]  # stable: ties keep coverage order
    return [pool[i] for i in order if scores[i] >= scores[order[0]] - margin]


def z_scores(values: Sequence[float]) -> list[float]:
    """Each value's distance from their mean in units of their spread (all 0 when they are equal)."""
    if not values:
        return []
    mean = sum(values) / len(values)
    spread = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values)) or 1.0
    return [(v - mean) / spread for v in values]


def blended(
    question: str,
    every: list[ScoredSentence],
    closeness: SentenceRanker,
    size: int = RANKED_POOL,
    readings: Mapping[str, str] | None = None,
) -> list[ScoredSentence]:
    """The best `size` of `every` (the passages' sentences, whatever their coverage) by the sum of two z-scores over
    them: the sentence's coverage of the question and how close `closeness` puts it (read as the ranker reads it).
    A sentence that answers in other words than the question's covers too few of them to be among the best by
    coverage alone; one that only repeats the question's words is not the closest by meaning."""
    if not every:
        return []
    near = list(closeness(question, [(readings or {}).get(s.text, s.text) for s in every]))
    summed = [c + n for c, n in zip(z_scores([s.score for s in every]), z_scores(near), strict=True)]
    order = sorted(range(len(every)), key=lambda i: -summed[i])[:size]
    return [every[i] for i in order]


def nearest(
    question: str,
    scored: list[ScoredSentence],
    every: list[ScoredSentence],
    closeness: SentenceRanker,
    size: int = RANKED_POOL,
    readings: Mapping[str, str] | None = None,
    count: int = NEAREST,
) -> list[ScoredSentence]:
    """The `count` sentences of `every` (the passages' sentences, whatever their coverage) outside the pool (the
    best `size` of `scored` by coverage) that `closeness` puts nearest the question, each read as the ranker reads
    it."""
    held = {s.text for s in sorted(scored, key=lambda s: -s.score)[:size]}
    outside = [s for s in every if s.text not in held]
    if not outside:
        return []
    near = list(closeness(question, [(readings or {}).get(s.text, s.text) for s in outside]))
    order = sorted(range(len(outside)), key=lambda i: -near[i])[:count]
    return [outside[i] for i in order]
