"""Answers kept for the objects they were computed from, while those live: a million records' pass is made once.

Stage: records → report. The plot and the page bin the same frame's chunks, the headline and ``vllm_bench.json``
walk the same 68 million gaps; each asks here first. An answer is keyed by the object itself (compared by
identity through a weak reference, so a freed frame's answer is never handed to a new one at its address) and a
key of the caller's; only the last few are kept.
"""

from __future__ import annotations

import weakref
from collections.abc import Hashable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class KeptAnswers(Generic[T]):
    """The last ``size`` answers, newest first."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.entries: list[tuple[weakref.ref[Any], Hashable, T]] = []

    def get(self, source: Any, key: Hashable) -> T | None:
        """The answer kept for ``source`` (the same object, still alive) and ``key``; None when there is none."""
        return next((answer for ref, kept, answer in self.entries if ref() is source and kept == key), None)

    def keep(self, source: Any, key: Hashable, answer: T) -> T:
        """Keep ``answer`` for ``source`` and ``key`` (the oldest goes past ``size``); returns it."""
        self.entries[:] = [(weakref.ref(source), key, answer), *self.entries[:self.size - 1]]
        return answer

    def clear(self) -> None:
        self.entries.clear()
