"""Content gaps: the questions the docs fail (not answered, asked back, rated down, answered on weak retrieval),
grouped by meaning, so the docs' owner sees what to write next (`GET /v1/admin/gaps`, the console's gaps table).

Questions are grouped greedily, oldest first: each joins the group whose centroid (the normalised mean of its
members' query embeddings) is nearest, if at least `threshold` cosine away, else starts one. A group reports its
count, the member nearest its centroid as its representative, its reasons, a few other wordings, and the pages
ragline retrieved for its members most often (where the missing answer probably belongs).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from pipelines.ports import Embedder


def group_by_meaning(vectors: np.ndarray, threshold: float) -> list[list[int]]:
    """Indices of `vectors` (unit rows) in groups, each row in the group whose centroid it is nearest when that
    similarity is at least `threshold`."""
    groups: list[list[int]] = []
    sums: list[np.ndarray] = []
    for i, vector in enumerate(vectors):
        if sums:
            centroids = np.stack([s / (np.linalg.norm(s) or 1.0) for s in sums])
            similarity = centroids @ vector
            best = int(np.argmax(similarity))
            if similarity[best] >= threshold:
                groups[best].append(i)
                sums[best] = sums[best] + vector
                continue
        groups.append([i])
        sums.append(vector.astype(np.float64))
    return groups


def gap_report(rows: Sequence[dict[str, Any]], embedder: Embedder, threshold: float, limit: int) -> dict[str, Any]:
    """The groups of `rows` (ReplyLog.gap_replies), largest first, at most `limit`."""
    if not rows:
        return {"questions": 0, "groups": []}
    ordered = sorted(rows, key=lambda row: row["created_at"])
    texts = [str(row["standalone_question"] or row["question"]) for row in ordered]
    vectors = np.stack([np.asarray(embedder.embed_query(text), dtype=np.float64) for text in texts])
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True).clip(min=1e-12)
    groups = []
    for members in group_by_meaning(vectors, threshold):
        centroid = vectors[members].mean(axis=0)
        representative = members[int(np.argmax(vectors[members] @ centroid))]
        reasons: Counter[str] = Counter(reason for i in members for reason in ordered[i]["reasons"])
        pages: Counter[str] = Counter(page for i in members for page in list(ordered[i]["pages"])[:3])
        wordings = list(dict.fromkeys(texts[i] for i in members if i != representative))
        groups.append(
            {
                "count": len(members),
                "question": texts[representative],
                "other_wordings": wordings[:5],
                "reasons": dict(reasons.most_common()),
                "pages": [page for page, _ in pages.most_common(3)],
                "first_asked": min(ordered[i]["created_at"] for i in members).isoformat(),
                "last_asked": max(ordered[i]["created_at"] for i in members).isoformat(),
            }
        )
    groups.sort(key=lambda group: group["last_asked"], reverse=True)
    groups.sort(key=lambda group: group["count"], reverse=True)  # largest first; among equals, the latest
    return {"questions": len(rows), "groups": groups[:limit]}
