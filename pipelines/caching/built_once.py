"""A small table of values built on first use per key, the least recently used dropped past a bound.

Used for what is read from an index version's payloads once and then kept while the version serves
(the in-memory BM25 engines, the translation table): concurrent first requests build a value once.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class BuiltOnce(Generic[K, V]):
    def __init__(self, keep: int = 4) -> None:
        self._values: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()
        self._keep = keep

    def __len__(self) -> int:
        return len(self._values)

    def get(self, key: K, build: Callable[[], V]) -> V:
        with self._lock:
            if key not in self._values:
                self._values[key] = build()
                while len(self._values) > self._keep:
                    self._values.popitem(last=False)
            self._values.move_to_end(key)
            return self._values[key]
