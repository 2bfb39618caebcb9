"""Follow-up questions: does the standalone question a conversation's follow-up is rewritten into retrieve the
evidence as well as the question a person would have asked alone?

A follow-up set (evals/golden/followups_*.jsonl) holds two-turn conversations, each with its follow-up, the
standalone question a person wrote for it, and the evidence quoted from the pages. For each conversation the
hybrid retrieval (as the query graph runs it) is scored at evidence@5 on: the hand-written standalone question;
the follow-up as asked (`none`); the follow-up made standalone by each rewrite variant run. The figure of merit
is a variant's evidence@5 over the standalone questions' (issue 28 asks at least 0.90).

    ragline eval followups --source evals/corpora/coverage/docs --set evals/golden/followups_coverage.jsonl \\
        --out followups.json [--llm]

`--llm` adds the `llm` variant, asking the model of `RAGLINE_LLM_*` (the query graph's node function itself).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evals.golden import evidence_at
from evals.retrieval import DEPTH
from evals.studies.search_modes import SearchSetup, run_mode
from pipelines.adapters.llm_harness import LLMHarness
from pipelines.ports import Embedder
from pipelines.text.followups import Turn, is_follow_up, standalone_by_rules
from query_graph.nodes.conversation import standalone_question__llm

Rewrite = Callable[[str, Sequence[Turn]], str]


@dataclass(frozen=True)
class Conversation:
    id: str
    turns: tuple[str, ...]
    followup: str
    standalone: str
    pages: tuple[str, ...]
    evidence: tuple[str, ...]


def load_conversations(path: Path) -> list[Conversation]:
    out = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            out.append(
                Conversation(
                    row["id"],
                    tuple(row["turns"]),
                    row["followup"],
                    row["standalone"],
                    tuple(row["pages"]),
                    tuple(row["evidence"]),
                )
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{path}:{number}: not a follow-up conversation: {exc}") from exc
    return out


def rewrites(harness: LLMHarness | None = None) -> dict[str, Rewrite]:
    """`none` and `rules`, and `llm` (the query graph's node function with this harness) when one is given."""
    chosen: dict[str, Rewrite] = {"none": lambda question, history: question, "rules": standalone_by_rules}
    if harness is not None:
        chosen["llm"] = lambda question, history: standalone_question__llm(question, harness, list(history))
    return chosen


def evaluate_followups(
    conversations: Sequence[Conversation], embedder: Embedder, setup: SearchSetup, variants: dict[str, Rewrite]
) -> dict[str, Any]:
    def found(question: str, evidence: Sequence[str]) -> bool:
        result = run_mode("hybrid", question, embedder.embed_query(question), setup, DEPTH)
        return evidence_at(evidence, [c.generation_text for c in result.chunks], 5)

    rows = []
    for conversation in conversations:
        history = [Turn(q, q) for q in conversation.turns]  # earlier turns stand alone in these sets
        row: dict[str, Any] = {
            "id": conversation.id,
            "detected_as_follow_up": is_follow_up(conversation.followup),
            "standalone": found(conversation.standalone, conversation.evidence),
        }
        for name, rewrite in variants.items():
            text = rewrite(conversation.followup, history)
            row[name] = found(text, conversation.evidence)
            row[f"{name}_question"] = text
        rows.append(row)
    base = sum(r["standalone"] for r in rows)
    summary: dict[str, Any] = {
        "conversations": len(rows),
        "detected_as_follow_up": sum(r["detected_as_follow_up"] for r in rows),
        "standalone_evidence_at_5": round(base / len(rows), 3),
    }
    for name in variants:
        hits = sum(r[name] for r in rows)
        summary[f"{name}_evidence_at_5"] = round(hits / len(rows), 3)
        summary[f"{name}_over_standalone"] = round(hits / base, 3) if base else None
    return {"summary": summary, "conversations": rows}
