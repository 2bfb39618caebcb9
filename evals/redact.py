"""Replace the answer texts in `ragline eval answers` outputs by their length before committing them.

The answers are sentences copied from the evaluated corpus (FastAPI, GitLab docs): the project
references those corpora by path and keeps none of their text. Scores, statuses, citations (ids and
titles) and verification reports stay as they are.

    python -m evals.redact fastapi_en.answers.json [...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

MARK = "not kept in the repo: corpus text"


def _redacted(text: Any) -> Any:
    if isinstance(text, str) and text and MARK not in text:
        return f"<{len(text)} characters, {MARK}>"
    return text


def redact(data: dict[str, Any]) -> int:
    """Redact in place; returns how many answers were replaced. A judged answer's claims and quotes (and
    its facts' quotes) are corpus text too: they go the same way, their verdicts stay."""
    count = 0
    for question in data.get("questions", []):
        if _redacted(question.get("answer")) is not question.get("answer"):
            question["answer"] = _redacted(question["answer"])
            count += 1
        judged = question.get("judge") or {}
        for claim in judged.get("claims") or []:
            claim["claim"], claim["quote"] = _redacted(claim.get("claim")), _redacted(claim.get("quote"))
        for fact in judged.get("facts") or []:
            fact["quote"] = _redacted(fact.get("quote"))
    return count


def main(paths: list[str]) -> None:
    for name in paths:
        path = Path(name)
        data = json.loads(path.read_text(encoding="utf-8"))
        count = redact(data)
        path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"{path}: {count} answers redacted")


if __name__ == "__main__":
    main(sys.argv[1:])
