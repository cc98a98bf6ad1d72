"""A least-recently-used cache bounded by the bytes its entries hold, not by their number."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class SizedCache(Generic[K, V]):
    """Thread-safe LRU that evicts the oldest entries once their weights exceed ``budget``."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.used = 0
        self._items: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            item = self._items.get(key)
            if item is None:
                return None
            self._items.move_to_end(key)
            return item[0]

    def put(self, key: K, value: V, weight: int) -> None:
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self.used -= old[1]
            self._items[key] = (value, weight)
            self.used += weight
            # The newest entry always stays, even when it alone is over budget.
            while self.used > self.budget and len(self._items) > 1:
                _, (_, dropped) = self._items.popitem(last=False)
                self.used -= dropped

    def __len__(self) -> int:
        return len(self._items)
