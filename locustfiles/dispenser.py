"""Exactly N prompts across however many users: the one place that hands them out.

Stage: load. Locust's ``-i`` counts per worker and hangs in multi-user runs; this dispenser counts
globally, and ends the run (``runner.quit()``) when the last prompt's request has finished — not when
the last prompt was handed out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import gevent

from locustfiles.dataset import Prompt


class PromptDispenser:
    """Hands out ``prompts[0..limit)`` once each, in order, and calls ``on_drained`` once at the end.

    :param prompts: the sampled prompts of the run.
    :param limit: how many to send in total (``--num-prompts``); 0 or more than there are = all.
    :param on_drained: called (in its own greenlet) when every handed-out request has finished.
    """

    def __init__(self, prompts: Sequence[Prompt], limit: int, on_drained: Callable[[], None]) -> None:
        self.prompts = prompts
        self.limit = len(prompts) if limit <= 0 else min(limit, len(prompts))
        self.handed_out = 0
        self.requests_out = 0
        """Requests the handed-out prompts make: a multi-turn conversation makes one per turn."""
        self.finished = 0
        self._on_drained = on_drained
        self._drained = False
        if self.limit == 0:
            self._drain()

    @property
    def planned(self) -> int:
        """The requests the run will send: each handed-out prompt's (a conversation's every turn)."""
        return sum(prompt.requests for prompt in self.prompts[:self.limit])

    @property
    def in_flight(self) -> int:
        """Requests handed out and not ended yet (a conversation's later turns included)."""
        return self.requests_out - self.finished

    def take(self) -> Prompt | None:
        """The next prompt, or None once ``limit`` have been handed out."""
        if self.handed_out >= self.limit:
            return None
        prompt = self.prompts[self.handed_out]
        self.handed_out += 1
        self.requests_out += prompt.requests
        return prompt

    def take_would_be_empty(self) -> bool:
        """True once every prompt has been handed out."""
        return self.handed_out >= self.limit

    def done(self) -> None:
        """One handed-out request has ended (completed, failed or cancelled)."""
        self.finished += 1
        if self.handed_out >= self.limit and self.in_flight <= 0:
            self._drain()

    def _drain(self) -> None:
        if not self._drained:
            self._drained = True
            gevent.spawn(self._on_drained)
