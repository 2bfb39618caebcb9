"""The standalone question a conversation's follow-up asks: the first node of a request that has earlier turns.

`QueryService.answer` runs it alone, before the rest of the graph, and only when the request carries history; the
rest of the graph (guardrails, caches, retrieval, generation) then reads the standalone question as `question`,
so the caches key on it and a follow-up never gets another conversation's answer.
"""

from __future__ import annotations

import structlog
from hamilton.function_modifiers import config

from pipelines.adapters.llm_harness import GenerationUnavailable, LLMHarness
from pipelines.text.analysis import analyze
from pipelines.text.followups import Turn, standalone_by_rules

log = structlog.get_logger(__name__)

REWRITE_PROMPT = (
    "Rewrite the user's last question so that it can be understood without the conversation: name what its "
    "pronouns and omissions refer to, keep its meaning and its language, add nothing else. If it already stands "
    "alone, repeat it unchanged. Reply with the question only."
)
MAX_REWRITE_CHARS = 400


@config.when(follow_up_rewrite="none")
def standalone_question__none(question: str) -> str:
    """Every question searched as it was asked."""
    return question


@config.when(follow_up_rewrite="rules")
def standalone_question__rules(question: str, conversation_history: list[Turn] | None = None) -> str:
    """A follow-up searched with the previous turn's standalone question (pipelines/text/followups.py)."""
    return standalone_by_rules(question, conversation_history or [])


@config.when(follow_up_rewrite="llm")
def standalone_question__llm(
    question: str, llm_harness: LLMHarness, conversation_history: list[Turn] | None = None
) -> str:
    """The language model's standalone rewrite; the rules' when the model fails or writes no usable question (one
    that shares no content word with the conversation, or is too long)."""
    if not conversation_history:
        return question
    lines = [f"Q: {turn.question}\nA: {turn.answer[:600] or '-'}" for turn in conversation_history[-3:]]
    prompt = "Conversation so far:\n" + "\n".join(lines) + f"\n\nLast question: {question}\n\nStandalone question:"
    messages = [{"role": "system", "content": REWRITE_PROMPT}, {"role": "user", "content": prompt}]
    try:
        text = llm_harness.complete(messages, max_tokens=96).text.strip().strip('"').strip()
    except GenerationUnavailable as exc:
        log.warning("standalone_question_fallback", reason=str(exc)[:200])
        return standalone_by_rules(question, conversation_history)
    said = set(analyze(question + " " + " ".join(t.standalone_question for t in conversation_history)))
    if not text or len(text) > MAX_REWRITE_CHARS or "\n" in text or not set(analyze(text)) & said:
        log.info("standalone_question_fallback", reason="no usable question", text=text[:200])
        return standalone_by_rules(question, conversation_history)
    return text
