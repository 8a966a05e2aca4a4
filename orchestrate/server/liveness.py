"""Is the server still there while the load runs? Its process, and ``/health`` for every launcher.

Stage: server, beside the load. A background thread looks every ``POLL_S``: a launched process
that exited is ``server_died`` (the launcher says how), and a server that has not answered
``/health`` at all (refused, reset, timed out) for ``window_s`` is ``server_lost`` — the only way
to know it for a server tokenswarm did not start (``--url``). Any HTTP answer, even an error
status, counts as alive. The Locust side judges refusals the same way (``locustfiles.serverwatch``)
and stops sending; this watch names the outcome and the time it began.
"""

from __future__ import annotations

import threading
import time
from types import TracebackType

import requests

from orchestrate.server.background import lower_this_thread
from orchestrate.server.launchers.base import Launcher

POLL_S = 0.5
PROBE_TIMEOUT_S = 2.0
DIED = "server_died"
LOST = "server_lost"


class ServerWatch:
    """Polls the launcher and ``/health`` from a thread; ``down()`` is cheap to call from the load loop.

    :param window_s: how long ``/health`` must go unanswered before the server counts as lost.
    """

    def __init__(self, url: str, launcher: Launcher, window_s: float) -> None:
        self.url = url
        self.launcher = launcher
        self.window_s = window_s
        self.failing_since: float | None = None
        """Wall-clock time (``time.time()``) of the first unanswered probe of the current outage."""
        self.down_at: float | None = None
        """Wall-clock time the outage began (the process exit noticed, or the first unanswered probe)."""
        self.state: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="server-watch", daemon=True)

    def down(self) -> str | None:
        """``server_died``, ``server_lost``, or None while the server is there."""
        return self.state

    def settle(self) -> str | None:
        """The verdict once the load has ended: a server failing its probes now is given the rest of
        the window to answer (the load may have stopped on its own, a moment before this watch)."""
        while self.state is None and self.failing_since is not None and self._thread.is_alive():
            time.sleep(POLL_S / 5)
        return self.state

    def _probe(self, session: requests.Session) -> bool:
        try:
            session.get(f"{self.url}/health", timeout=min(PROBE_TIMEOUT_S, self.window_s))
            return True
        except requests.RequestException:
            return False

    def _loop(self) -> None:
        lower_this_thread()
        with requests.Session() as session:
            while not self._stop.is_set() and self.state is None:
                if self.launcher.exit_status() is not None:
                    self.state, self.down_at = DIED, time.time()
                    return
                sent = time.time()
                if self._probe(session):
                    self.failing_since = None
                else:
                    self.failing_since = self.failing_since or sent
                    if time.time() - self.failing_since >= self.window_s:
                        if self.launcher.exit_status() is not None:
                            self.state, self.down_at = DIED, time.time()
                        else:
                            self.state, self.down_at = LOST, self.failing_since
                        return
                self._stop.wait(POLL_S)

    def __enter__(self) -> "ServerWatch":
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join(PROBE_TIMEOUT_S + 1)
