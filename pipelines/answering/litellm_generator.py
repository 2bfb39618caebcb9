"""The litellm generator: its prompt, and turning a token stream into cited sentences.

The prompt asks for context-only answers with `[C:<chunk_id>]` markers, a false premise corrected
(with a citation) rather than refused, a clarifying question for a vague request, and a fixed reply
when the context does not answer. Small local models often leave markers out, so a sentence without
one gets the marker of the passage that supports it best (`pipelines.answering.verification.supporting_passage`), or is
not released at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from pipelines.answering.citations import markers, split_sentences, strip_markers
from pipelines.answering.extractive import with_marker
from pipelines.answering.verification import supporting_passage

# Part of the cache namespace: raised when the prompt or the reading of a model's answer changes (v2: a list
# item is one sentence to the end of its line, pipelines/answering/citations.py), so no answer cached by the old rules is served.
PROMPT_VERSION = "litellm-v2"
NO_ANSWER = "NO_ANSWER"
CLARIFY = "CLARIFY:"

SYSTEM_PROMPT = f"""You answer questions about a body of documentation using ONLY the numbered context passages.
Rules:
- Every sentence of your answer ends with the marker of the passage that supports it, like [C:abc123-4].
  Use only the chunk ids given in the context. Never cite anything else.
- Answer in at most four short sentences, in the language of the question.
- If the question rests on a false premise, say what the documentation says instead, with its marker.
- If the question is too vague to answer, reply with one line: {CLARIFY} <a question asking what is meant>.
- If the context does not contain the answer, reply with exactly: {NO_ANSWER}"""


@dataclass(frozen=True)
class Passage:
    chunk_id: str
    title: str
    text: str


def build_messages(question: str, passages: Sequence[Passage]) -> list[dict[str, str]]:
    context = "\n\n".join(f"[C:{p.chunk_id}] {p.title}\n{p.text}" for p in passages)
    user = f"Context passages:\n\n{context}\n\nQuestion: {question}"
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def sentences_as_they_complete(tokens: Iterable[str]) -> Iterator[str]:
    """Yield each sentence of a token stream once it is complete (the rest at the end).

    A sentence is complete when another has begun after it. A piece that starts with `[` might be a
    marker still arriving for the previous sentence, so it waits until the marker is whole."""
    text = ""
    emitted = 0
    for token in tokens:
        text += token
        pieces = split_sentences(text)
        ready = len(pieces) - 1
        if ready > emitted and pieces[-1].startswith("["):
            ready -= 1
        while emitted < ready:
            yield pieces[emitted]
            emitted += 1
    yield from split_sentences(text)[emitted:]


def attach_citation(sentence: str, passages: Sequence[Passage], min_support: float) -> str | None:
    """The sentence with a marker: its own, else the best-supporting passage's; None when none supports it."""
    if markers(sentence):
        return sentence
    chunk_id = supporting_passage(sentence, [(p.chunk_id, p.text) for p in passages], min_support)
    return with_marker(strip_markers(sentence), chunk_id) if chunk_id else None


def classify(text: str) -> str:
    """What kind of reply the model gave: `no_answer`, `clarify` or `answer`."""
    stripped = text.strip()
    if not stripped or stripped.upper().startswith(NO_ANSWER) or stripped.upper().rstrip(".") == "I DON'T KNOW":
        return "no_answer"
    if stripped.upper().startswith(CLARIFY):
        return "clarify"
    return "answer"
