"""Replace the answer texts in `ragline eval answers` outputs by their length before committing them.

The answers are sentences copied from the evaluated corpus (FastAPI, GitLab docs): the project
references those corpora by path and keeps none of their text. Scores, statuses, citations (ids and
titles) and verification reports stay as they are.

    python -m evals.redact evals/results/fastapi_en.answers.json [...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

MARK = "not kept in the repo: corpus text"


def redact(data: dict[str, Any]) -> int:
    """Redact in place; returns how many answers were replaced."""
    count = 0
    for question in data.get("questions", []):
        text = question.get("answer")
        if isinstance(text, str) and text and MARK not in text:
            question["answer"] = f"<{len(text)} characters, {MARK}>"
            count += 1
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
