"""The one error tree of the orchestrator.

Stage: shared, at the top (every stage raises these).
Every error a user can cause or meet is a ``TokenswarmError``; its message is one line that names
the file, key, flag or server and says how to fix it. Leaf classes also subclass the builtin that
fits, so callers can catch either (the pattern of ``requests.exceptions``).
"""

from __future__ import annotations

OUT_OF_MEMORY = r"out of memory|cudaMalloc failed|failed to allocate|unable to allocate"
"""What a server's log says when memory ran out (llama.cpp, CUDA, the kernel's killer): ``server.diagnose`` names
the failure by it, and a tune reads a failed candidate's cause with it (``report.aggregates.tune``)."""


class TokenswarmError(Exception):
    """Root of every error the CLI reports as one line (exit code 2)."""

    exit_code: int = 2


class ScenarioError(TokenswarmError, ValueError):
    """A scenario file is unreadable or invalid (names file, line and key path)."""


class DatasetError(TokenswarmError, ValueError):
    """A dataset file is missing, of the wrong shape, or has no usable conversation."""


class ServerError(TokenswarmError, RuntimeError):
    """A server could not be started, did not become ready, or died."""


class ServerExitedError(ServerError):
    """The server process or container exited; ``cause`` is the log line that says why."""

    def __init__(self, message: str, returncode: int | None = None, cause: str | None = None,
                 hint: str | None = None) -> None:
        super().__init__(message)
        self.returncode = returncode
        """The server's own exit code (``exit_code`` is the CLI's)."""
        self.cause = cause
        self.hint = hint


class ServerNotReadyError(ServerError, TimeoutError):
    """The server did not answer ``/health`` with 200 within the readiness timeout."""


class LoadRunError(TokenswarmError, RuntimeError):
    """The Locust process failed in a way that left no usable results."""


class ResultsError(TokenswarmError, ValueError):
    """A results directory is missing, or lacks what a report or comparison needs."""
