"""The litellm generator: its prompt, the JSON schema that constrains the model's reply, and reading that
reply sentence by sentence as it streams.

The model writes each sentence together with the numbers of the passages that support it, and nothing
else: the reply is constrained by a JSON schema (`answer_schema`), sent as the request's `response_format`
(litellm passes it through; llama.cpp and llama-cpp-python's server turn it into a grammar, OpenAI-compatible
hosts into structured output). The passage numbers are an `enum` of the passages supplied, so a model
cannot cite one it was not given, and ragline attaches no citation after generation: a sentence whose
cited passages do not support it is withheld, never cited to another one.

`llm_answer=quote` asks the model to choose rather than write: the passages' sentences are numbered, and the
reply, constrained the same way, is the numbers of those that answer (`quote_schema`); ragline quotes them as
written, each with its passage's marker and the code block or list it introduces. A model that paraphrases
badly, or whose faithful paraphrases a word-level check refuses, can still pick the sentence that says what
was asked, and its reply is a dozen tokens instead of a few sentences.

The passages are the CRAG refine step's knowledge strips (pipelines/answering/crag.py), the sentences of
each retrieved passage that bear on the question, cut to a character budget (`fit_passages`): a small
local model reads a prompt at about a hundred tokens a second on 2 cores, so what it reads is what it costs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pipelines.answering.citations import MARKER
from pipelines.answering.extractive import with_marker
from pipelines.answering.passage_units import introduced, prose_units

# Part of the cache namespace: raised when the prompt or the reading of a model's answer changes (v3: a JSON
# reply of sentences with their passage numbers, constrained by a schema, from the knowledge strips; v4: the
# `quote` form's prompt beside it).
PROMPT_VERSION = "litellm-v4"
KINDS = ("answer", "no_answer", "clarify")
MAX_SENTENCES = 4
MAX_SOURCES = 3

SYSTEM_PROMPT = """You answer questions about a body of documentation using ONLY the numbered passages.
Reply in JSON: {"kind": "answer", "sentences": [{"text": "<one sentence>", "sources": [<numbers of the passages that state it>]}]}
Rules:
- Each sentence states what its passages say, in their words where you can, and lists only those passages.
- Answer the question itself first (the value, name, command or code asked for), in at most three short
  sentences, in the language of the question. Copy code, names and numbers exactly.
- If the question rests on a false premise, say what the passages say instead.
- If the passages do not answer the question, reply {"kind": "no_answer", "sentences": []}.
- If the question is too vague to answer, reply {"kind": "clarify", "sentences": [{"text": "<a question
  asking what is meant>", "sources": [1]}]}."""


QUOTE_PROMPT = """You choose sentences that answer a question about a body of documentation.
Below are numbered sentences from documentation pages (a page's title before its sentences).
Reply in JSON: {"kind": "answer", "sentences": [<numbers>]}, the numbers of the one to three sentences that
answer the question, the one that states what was asked (the value, name, command or code) first.
Choose a sentence for what it says, not for sharing words with the question.
If no sentence answers the question, reply {"kind": "no_answer", "sentences": []}."""
QUOTE_KINDS = ("answer", "no_answer")
# `choose`: the study prompt of docs/decisions/llm-answer.md, word for word (a change is a new measurement).
CHOOSE_SYSTEM = "You pick the sentence from documentation that answers a user's question. Reply with JSON only."
CHOOSE_ASK = 'Which sentence states the answer to the question? Reply as {"sentence": <number>}.'
# `choose_or_decline`: the same, with a way to say that no sentence answers (docs/decisions/llm-answer.md).
DECLINE_ASK = (
    'Which sentence states the answer to the question? Reply as {"sentence": <number>}, or {"sentence": 0} if no '
    "sentence answers it."
)


@dataclass(frozen=True)
class Passage:
    chunk_id: str
    title: str
    text: str


def fit_passages(passages: Sequence[Passage], budget_chars: int, least_chars: int = 200) -> list[Passage]:
    """The passages in order until `budget_chars` of text; the one that would cross it is cut at the end of
    the last strip (else sentence) that fits, and kept only when at least `least_chars` of it fit. The first
    passage is always kept, cut if it must be: a model given nothing cannot answer."""
    kept: list[Passage] = []
    left = budget_chars
    for passage in passages:
        if len(passage.text) <= left:
            kept.append(passage)
            left -= len(passage.text)
            continue
        if left >= least_chars or not kept:
            cut = passage.text[: max(left, least_chars)]
            boundary = cut.rfind("\n\n")  # a strip's end, else a sentence's, else where the budget ends
            boundary = boundary if boundary > 0 else cut.rfind(". ") + 1
            text = cut[:boundary] if boundary > 0 else cut
            kept.append(Passage(passage.chunk_id, passage.title, text.rstrip()))
        break
    return kept


def build_messages(question: str, passages: Sequence[Passage]) -> list[dict[str, str]]:
    """System prompt, then the passages numbered from 1 and the question."""
    context = "\n\n".join(f"[{i}] {p.title}\n{p.text}" for i, p in enumerate(passages, 1))
    user = f"Passages:\n\n{context}\n\nQuestion: {question}"
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def answer_schema(passages: int) -> dict[str, Any]:
    """The reply's JSON schema: its kind, then sentences, each with 1..3 passage numbers out of those given.
    The properties are in the order the model writes them (llama.cpp's grammar keeps the schema's order):
    the kind first, so a refusal costs a few tokens."""
    sentence = {
        "type": "object",
        "properties": {
            "text": {"type": "string"},
            "sources": {
                "type": "array",
                "items": {"type": "integer", "enum": list(range(1, passages + 1))},
                "minItems": 1,
                "maxItems": min(MAX_SOURCES, max(passages, 1)),
            },
        },
        "required": ["text", "sources"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {
            "kind": {"type": "string", "enum": list(KINDS)},
            "sentences": {"type": "array", "items": sentence, "maxItems": MAX_SENTENCES},
        },
        "required": ["kind", "sentences"],
        "additionalProperties": False,
    }


@dataclass(frozen=True)
class Quotable:
    """A sentence the `quote` form numbers: the passage it is in (from 0), and the block it introduces."""

    passage: int
    text: str
    block: str | None


def quotables(passages: Sequence[Passage]) -> list[Quotable]:
    """The prose units of the passages, in order, each once (a sentence two passages share is the first's)."""
    found: list[Quotable] = []
    seen: set[str] = set()
    for n, passage in enumerate(passages):
        blocks = introduced(passage.text)
        inside: set[str] = set()
        for unit in prose_units(passage.text):
            if unit in seen or unit in inside:
                continue
            seen.add(unit)
            block = blocks.get(unit)
            if block:
                inside.update(prose_units(block))  # a list's items come with the sentence that announces it
            found.append(Quotable(n, unit, block))
    return found


def build_quote_messages(question: str, passages: Sequence[Passage], units: Sequence[Quotable]) -> list[dict[str, str]]:
    """The `quote` form's prompt: each passage's title, then its sentences numbered from 1 across passages,
    each followed by the block it introduces (the model sees the code a sentence would bring)."""
    lines: list[str] = []
    for number, unit in enumerate(units, 1):
        if number == 1 or units[number - 2].passage != unit.passage:
            lines.append(f"\n# {passages[unit.passage].title}")
        lines.append(f"[{number}] {unit.text}")
        if unit.block:
            lines.append(unit.block)
    user = "Sentences:\n" + "\n".join(lines) + f"\n\nQuestion: {question}"
    return [{"role": "system", "content": QUOTE_PROMPT}, {"role": "user", "content": user}]


def quote_schema(units: int, most: int) -> dict[str, Any]:
    """The `quote` reply's schema: its kind, then at most `most` sentence numbers out of those given."""
    return {
        "type": "object",
        "properties": {
            "kind": {"type": "string", "enum": list(QUOTE_KINDS)},
            "sentences": {
                "type": "array",
                "items": {"type": "integer", "enum": list(range(1, units + 1))},
                "maxItems": max(most, 1),
            },
        },
        "required": ["kind", "sentences"],
        "additionalProperties": False,
    }


def read_quote_reply(text: str, units: int) -> tuple[str, list[int]]:
    """The kind and the chosen numbers (each once, in the model's order) of a `quote` reply; raises
    `MalformedReply` when it is not the object asked for or names a sentence that was not given."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MalformedReply(f"the reply is not JSON ({exc.msg} at {exc.pos} of {len(text)} chars)") from exc
    if not isinstance(value, dict) or value.get("kind") not in QUOTE_KINDS:
        raise MalformedReply("the reply's `kind` is not one of " + ", ".join(QUOTE_KINDS))
    numbers = value.get("sentences", [])
    if not isinstance(numbers, list) or not all(isinstance(n, int) and not isinstance(n, bool) for n in numbers):
        raise MalformedReply("the reply's `sentences` is not a list of numbers")
    if any(not 1 <= n <= units for n in numbers):
        raise MalformedReply(f"the reply names a sentence outside 1..{units}")
    return value["kind"], list(dict.fromkeys(numbers))


def build_choose_messages(question: str, sentences: Sequence[str], decline: bool = False) -> list[dict[str, str]]:
    """The `choose` form's prompt: the question, then the sentence ranker's best sentences numbered from 1 in its
    order (a sentence with the block it introduces, as the ranker read it); with `decline`, 0 says none answers."""
    listing = "\n".join(f"[{number}] {text}" for number, text in enumerate(sentences, 1))
    user = f"Question: {question}\n\nSentences:\n{listing}\n\n{DECLINE_ASK if decline else CHOOSE_ASK}"
    return [{"role": "system", "content": CHOOSE_SYSTEM}, {"role": "user", "content": user}]


def choose_schema(sentences: int, decline: bool = False) -> dict[str, Any]:
    """The `choose` reply's schema: one sentence number out of those given (or 0, with `decline`)."""
    return {
        "type": "object",
        "properties": {"sentence": {"type": "integer", "enum": list(range(0 if decline else 1, sentences + 1))}},
        "required": ["sentence"],
        "additionalProperties": False,
    }


def read_choose_reply(text: str, sentences: int, decline: bool = False) -> int:
    """The chosen sentence's index (from 0) of a `choose` reply, -1 for a declining 0 (with `decline`); raises
    `MalformedReply` when the reply is not the object asked for or names a sentence that was not given."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MalformedReply(f"the reply is not JSON ({exc.msg} at {exc.pos} of {len(text)} chars)") from exc
    number = value.get("sentence") if isinstance(value, dict) else None
    least = 0 if decline else 1
    if not isinstance(number, int) or isinstance(number, bool) or not least <= number <= sentences:
        raise MalformedReply(f"the reply's `sentence` is not a number in {least}..{sentences}")
    return number - 1


@dataclass(frozen=True)
class ModelSentence:
    """One sentence of the model's reply, as it wrote it: its text and its passage numbers."""

    text: str
    sources: tuple[int, ...]


class MalformedReply(ValueError):
    """The reply is not the JSON the schema asks for (a server that ignored `response_format`, a reply cut
    off by the token limit)."""


@dataclass
class ReplyReader:
    """Reads the model's JSON reply as its tokens arrive: the `kind` once written, and each sentence object
    the moment it is closed. A string-aware bracket scanner finds where each object of `sentences` starts
    and ends, and `json.loads` reads it whole; nothing is guessed from a half-written object."""

    text: str = ""
    kind: str | None = None
    _pos: int = 0
    _depth: int = 0
    _in_string: bool = False
    _escaped: bool = False
    _start: int = -1
    _closed: bool = False  # the root object ended

    def feed(self, token: str) -> list[ModelSentence]:
        self.text += token
        found: list[ModelSentence | None] = []
        while self._pos < len(self.text):
            char = self.text[self._pos]
            if self._in_string:
                if self._escaped:
                    self._escaped = False
                elif char == "\\":
                    self._escaped = True
                elif char == '"':
                    self._in_string = False
            elif char == '"':
                self._in_string = True
            elif char in "{[":
                self._depth += 1
                if self._depth == 3 and char == "{":
                    self._start = self._pos
            elif char in "}]":
                if self._depth == 3 and char == "}" and self._start >= 0:
                    found.append(_sentence(self.text[self._start : self._pos + 1]))
                    self._start = -1
                self._depth -= 1
                if self._depth == 0:
                    self._closed = True
            self._pos += 1
        if self.kind is None:
            match = re.search(r'"kind"\s*:\s*"([a-z_]+)"', self.text)
            if match:
                self.kind = match.group(1)
        return [s for s in found if s is not None]

    def finish(self) -> dict[str, Any]:
        """The whole reply read as JSON; raises `MalformedReply` when it is not the object asked for."""
        try:
            value = json.loads(self.text)
        except json.JSONDecodeError as exc:
            raise MalformedReply(f"the reply is not JSON ({exc.msg} at {exc.pos} of {len(self.text)} chars)") from exc
        if not isinstance(value, dict) or value.get("kind") not in KINDS:
            raise MalformedReply("the reply's `kind` is not one of " + ", ".join(KINDS))
        if not isinstance(value.get("sentences", []), list):
            raise MalformedReply("the reply's `sentences` is not a list")
        return value


def _sentence(raw: str) -> ModelSentence | None:
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        return None
    return as_sentence(value)


def as_sentence(value: Any) -> ModelSentence | None:
    """A sentence object read into a `ModelSentence`; None when it is not one (no text, sources not numbers)."""
    if not isinstance(value, dict) or not isinstance(value.get("text"), str):
        return None
    sources = value.get("sources")
    if not isinstance(sources, list) or not all(isinstance(s, int) and not isinstance(s, bool) for s in sources):
        return None
    text = clean_text(value["text"])
    return ModelSentence(text, tuple(dict.fromkeys(sources))) if text else None


# What a model may still write in its text though the sources carry the citations: "[1]", "[C:...]", "(2)".
_INLINE_CITATION = re.compile(r"\s*(?:\[(?:\d+(?:\s*,\s*\d+)*)\]|\((?:passage\s*)?\d+\))")


def clean_text(text: str) -> str:
    """The sentence's text without citations of its own (the sources carry them) and outer white space."""
    return _INLINE_CITATION.sub("", MARKER.sub("", text)).strip()


def cited_text(sentence: ModelSentence, passages: Sequence[Passage]) -> tuple[str, list[str]] | None:
    """The sentence with the `[C:<chunk_id>]` marker of each passage it names (on each of its sentences,
    should the model have written two in one) and those chunk ids; None when it names no passage that was
    given (a server that ignored the schema)."""
    ids = list(dict.fromkeys(passages[n - 1].chunk_id for n in sentence.sources if 1 <= n <= len(passages)))
    if not ids:
        return None
    text = sentence.text
    for chunk_id in ids:
        text = with_marker(text, chunk_id)
    return text, ids


def sentences_of(reader_tokens: Iterable[str], reader: ReplyReader) -> Iterator[ModelSentence]:
    """Each sentence of a token stream once its object is closed."""
    for token in reader_tokens:
        yield from reader.feed(token)
