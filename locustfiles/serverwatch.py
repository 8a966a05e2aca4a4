"""Has the server gone? One judge per load process, so a dead server does not burn the prompts.

Stage: load. A request whose connection is refused is not a measurement of the server (it never reached
it): the user keeps its prompt and tries again after a short back-off. When every connection has been
refused for ``--server-lost-after`` seconds, with no answer of any kind in between, the server is lost:
the users stop, the prompts they hold are never sent, and the run ends (the orchestrator then reports
``server_lost``, or ``crashed`` when it saw the process die). Any answer (even an HTTP error) resets the
clock: a server that restarts within the window is waited for, not given up on.
"""

from __future__ import annotations

import time
from collections.abc import Callable

DEFAULT_LOST_AFTER_S = 5.0
BACKOFF_S = (0.05, 0.1, 0.25, 0.5, 1.0)
"""Pause before the n-th retry of a refused connection (the last one repeats)."""


class ServerLost(Exception):
    """Raised in a user whose connection was refused after the server was judged lost."""


class RefusalWatch:
    """Refusals and answers of one process's users; ``on_lost`` runs once, when the window passes.

    :param window_s: how long every connection must be refused before the server counts as lost.
    :param on_lost: called once with the seconds the refusals lasted (e.g. quit the runner).
    """

    def __init__(self, window_s: float = DEFAULT_LOST_AFTER_S, on_lost: Callable[[float], None] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.window_s = window_s
        self.refused_since: float | None = None
        self.refusals = 0
        """Connections refused over the whole run (each retried, none a record of its own)."""
        self.lost = False
        self._on_lost = on_lost
        self._clock = clock

    def answered(self) -> None:
        """A connection was accepted (whatever came back over it): the server is there."""
        self.refused_since = None

    def refused(self) -> bool:
        """A connection was refused; returns True once the server is lost."""
        self.refusals += 1
        now = self._clock()
        if self.refused_since is None:
            self.refused_since = now
        elif not self.lost and now - self.refused_since >= self.window_s:
            self.lost = True
            if self._on_lost is not None:
                self._on_lost(now - self.refused_since)
        return self.lost


def backoff_s(attempt: int) -> float:
    """The pause before retry ``attempt`` (0-based) of a refused connection."""
    return BACKOFF_S[min(attempt, len(BACKOFF_S) - 1)]
