"""The launcher interface: start a llama.cpp server variant, wait until it serves, stop it.

A launcher is a context manager (like vLLM's ``ServerProcess``): ``start()`` returns the base URL,
``wait_ready()`` polls ``/health`` while watching the process for an early exit, ``exit_status()``
says whether it died, and ``stop()`` always runs. Imports: stdlib, ``requests``, ``orchestrate.errors``.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from pathlib import Path
from types import TracebackType

import requests

from orchestrate.errors import ServerExitedError, ServerNotReadyError

HEALTH_POLL_INTERVAL_S = 0.1
"""How often ``/health`` is polled while a server loads."""


class Launcher(ABC):
    """Starts one server variant and guarantees it is stopped.

    :param log_path: where the server's stdout/stderr go (``server.log`` of the variant).
    """

    kind: str = "abstract"

    def __init__(self, log_path: Path) -> None:
        self.log_path = log_path
        self.url: str | None = None
        self.ready_s: float | None = None
        """Seconds from ``start()`` to the first ``/health`` 200."""
        self._started_at: float | None = None

    @abstractmethod
    def _start(self) -> str:
        """Start the server; return its base URL (``http://127.0.0.1:PORT``)."""

    @abstractmethod
    def exit_status(self) -> int | None:
        """The exit code if the server has exited, else None."""

    @abstractmethod
    def stop(self) -> None:
        """Stop the server; safe to call twice and after a crash."""

    def describe(self) -> dict[str, object]:
        """What was started (command, image, flags) for ``server.json``."""
        return {"kind": self.kind}

    def start(self) -> str:
        self._started_at = time.monotonic()
        self.url = self._start()
        return self.url

    def log_tail(self, lines: int = 40) -> list[str]:
        """The last lines of the server log (empty when there is none yet)."""
        try:
            text = self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return []
        return text.splitlines()[-lines:]

    def wait_ready(self, timeout_s: float) -> float:
        """Poll ``/health`` until 200; raise at once if the server exits meanwhile.

        :returns: seconds from start to ready.
        """
        assert self.url is not None, "start() first"
        started = self._started_at if self._started_at is not None else time.monotonic()
        deadline = time.monotonic() + timeout_s
        with requests.Session() as session:
            while True:
                code = self.exit_status()
                if code is not None:
                    raise ServerExitedError(
                        f"server exited with code {code} while loading; see {self.log_path}",
                        returncode=code)
                try:
                    if session.get(f"{self.url}/health", timeout=2).status_code == 200:
                        self.ready_s = time.monotonic() - started
                        return self.ready_s
                except requests.RequestException:
                    pass
                if time.monotonic() > deadline:
                    raise ServerNotReadyError(
                        f"server at {self.url} not ready after {timeout_s:g} s "
                        f"(GET /health never answered 200); raise server.ready_timeout_s or see {self.log_path}")
                time.sleep(HEALTH_POLL_INTERVAL_S)

    def __enter__(self) -> "Launcher":
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
