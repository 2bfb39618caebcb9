"""Cross-encoder reranking with the packaged ms-marco-MiniLM-L-12-v2 int8 ONNX model.

The model reads (question, passage) pairs and returns one relevance logit each (output [:, 0]).
Its file is checked by sha256 before loading (pipelines/adapters/model_catalogue.py); a missing or altered
file raises `RerankUnavailable`, and so does a failed run: rerank fails closed (DESIGN.md).
"""

from __future__ import annotations

import bisect
import math
import queue
import re
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from tokenizers import Tokenizer

from pipelines.adapters.model_catalogue import CATALOGUE, ModelIntegrityError, resolve, verify_folder
from pipelines.text.analysis import analyze


class RerankUnavailable(RuntimeError):
    """The reranker cannot be loaded or run: callers answer 503 `rerank_unavailable`."""


def probability(logit: float) -> float:
    return 1.0 / (1.0 + math.exp(-logit))


_UNIT_BREAK = re.compile(r"(?<=[.!?:])\s+|\n+")


def best_window(question: str, passage: str, budget: int, token_starts: Callable[[str], Sequence[int]]) -> str:
    """The passage itself when it fits `budget` tokens, else its run of sentences within the budget
    that covers most of the question's content words (ties: the earliest).

    `token_starts` gives the character offset at which each of the passage's tokens starts: the passage
    is tokenised once and a sentence's cost is the number of tokens starting inside it (sentences end
    at white space, where the tokenizer splits anyway), instead of tokenising every sentence again."""
    starts = token_starts(passage)
    if len(starts) <= budget:
        return passage
    terms = set(analyze(question))
    spans, begin = [], 0
    for gap in [*_UNIT_BREAK.finditer(passage), None]:
        end = gap.start() if gap else len(passage)
        if passage[begin:end].strip():
            spans.append((begin, end))
        begin = gap.end() if gap else end
    units = [passage[a:b] for a, b in spans]
    costs = [bisect.bisect_left(starts, b) - bisect.bisect_left(starts, a) for a, b in spans]
    vocab = [set(analyze(u)) & terms for u in units]
    best, best_score, start, used = (0, 1), -1, 0, 0
    for end in range(len(units)):
        used += costs[end]
        while used > budget and start < end:
            used -= costs[start]
            start += 1
        score = len(set().union(*vocab[start : end + 1]))
        if score > best_score:
            best, best_score = (start, end + 1), score
    # The tokenizer's truncation still cuts a single unit longer than the budget.
    return " ".join(units[best[0] : best[1]])


# How the rerank step orders the fused candidates it scored: by the cross-encoder alone (`cross_encoder`), or by
# the mean of the fused rank and the cross-encoder's rank (`cross_encoder_mean_rank`), so that neither a
# confident cross-encoder nor the fusion alone moves a candidate to the top.
RERANK_ORDERS = ("cross_encoder", "cross_encoder_mean_rank")


def reranked_order(logits: Sequence[float], order: str = "cross_encoder") -> list[int]:
    """The positions of the scored candidates (given in fused order) in the order the rerank step returns
    them. Ties keep the fused order."""
    if order not in RERANK_ORDERS:
        raise ValueError(f"unknown rerank order {order!r}; known: {', '.join(RERANK_ORDERS)}")
    by_logit = sorted(range(len(logits)), key=lambda i: -logits[i])  # stable: ties keep the fused order
    if order == "cross_encoder":
        return by_logit
    rank = {position: r for r, position in enumerate(by_logit)}
    return sorted(range(len(logits)), key=lambda i: (i + rank[i], i))


class CrossEncoderReranker:
    """The cross-encoder as `threads` single-threaded onnxruntime sessions, each scoring its own batches
    at the same time. One session with `threads` intra-op threads splits every operator between the
    cores and waits for both at each of the graph's ~400 operators; most of them (layer norms, GELU,
    adds) are too small to split well. Two sessions side by side, batches of 4, took 0.78-0.83 of the
    time of one two-thread session with batches of 8 on 30 real FastAPI candidates (docs/operations.md)."""

    def __init__(self, name: str, folder: Path | None = None, max_tokens: int = 128, threads: int = 2) -> None:
        import onnxruntime as ort

        entry = CATALOGUE.get(name)
        if entry is None or entry.dimension != 1:
            rerankers = [n for n, e in CATALOGUE.items() if e.dimension == 1]
            raise RerankUnavailable(f"unknown reranker {name!r}; catalogue rerankers: {', '.join(rerankers)}")
        try:
            # Another folder holds the same files: still checked against the catalogue's sha256.
            folder = resolve(entry) if folder is None else verify_folder(entry, folder)
            options = ort.SessionOptions()
            options.intra_op_num_threads = 1
            options.inter_op_num_threads = 1
            sessions = [
                ort.InferenceSession(
                    str(folder / entry.artifact), sess_options=options, providers=["CPUExecutionProvider"]
                )
                for _ in range(max(1, threads))
            ]
            self._tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        except ModelIntegrityError as exc:
            raise RerankUnavailable(str(exc)) from exc
        except Exception as exc:  # onnxruntime and tokenizers raise their own types
            raise RerankUnavailable(f"{name}: cannot load from {folder}: {exc}") from exc
        self.max_tokens = max_tokens
        self._counter = Tokenizer.from_file(str(folder / "tokenizer.json"))  # no truncation: it measures
        self._counter.no_truncation()
        self._counter.no_padding()
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(max_length=max_tokens, strategy="only_second")
        self._inputs = {i.name for i in sessions[0].get_inputs()}
        # A batch takes whichever session is free: concurrent requests share the sessions, never one at once.
        self._sessions: queue.SimpleQueue[Any] = queue.SimpleQueue()
        for session in sessions:
            self._sessions.put(session)
        self._pool = ThreadPoolExecutor(max_workers=len(sessions), thread_name_prefix="rerank")
        self.name, self.model_id, self.sha256 = name, entry.model_id, entry.sha256

    def count_tokens(self, text: str) -> int:
        return len(self._counter.encode(text, add_special_tokens=False).ids)

    def token_starts(self, text: str) -> list[int]:
        """The character offset at which each token of `text` starts (no special tokens)."""
        return [start for start, _ in self._counter.encode(text, add_special_tokens=False).offsets]

    def scores(self, question: str, passages: Sequence[str], batch_size: int = 4) -> list[float]:
        """One logit per passage (higher is more relevant).

        A passage longer than the model's budget is represented by its window that shares most words
        with the question, not by its first tokens: evidence in the second half of a chunk is then
        still seen. Small batches stay in the CPU cache (30 pairs in one batch ran 2-4x slower) and
        keep both sessions busy to the end."""
        if not passages:
            return []
        budget = max(16, self.max_tokens - self.count_tokens(question) - 3)  # [CLS] q [SEP] p [SEP]
        passages = [best_window(question, p, budget, self.token_starts) for p in passages]
        order = sorted(range(len(passages)), key=lambda i: len(passages[i]))  # similar lengths pad less
        out = np.zeros(len(passages), dtype=np.float32)
        batches = [order[start : start + batch_size] for start in range(0, len(order), batch_size)]
        runs = self._pool.map(lambda index: self._run(question, [passages[i] for i in index]), batches)
        for index, logits in zip(batches, runs, strict=True):
            out[index] = logits
        return [float(x) for x in out]

    def _run(self, question: str, passages: list[str]) -> np.ndarray:
        encodings = self._tokenizer.encode_batch([(question, p) for p in passages])
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(passages), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        types = np.zeros_like(ids)
        for row, enc in enumerate(encodings):
            n = len(enc.ids)
            ids[row, :n], mask[row, :n], types[row, :n] = enc.ids, 1, enc.type_ids
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        feeds = {k: v for k, v in feeds.items() if k in self._inputs}
        session = self._sessions.get()
        try:
            logits = session.run(None, feeds)[0]
        except Exception as exc:
            raise RerankUnavailable(f"{self.name}: inference failed: {exc}") from exc
        finally:
            self._sessions.put(session)
        return np.asarray(logits)[:, 0]
