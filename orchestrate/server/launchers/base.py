"""The launcher interface: start a llama.cpp server variant, wait until it serves, stop it.

Stage: server.
A launcher is a context manager (like vLLM's ``ServerProcess``): ``start()`` returns the base URL,
``wait_ready()`` polls ``/health`` while watching the process for an early exit, ``exit_status()`` says
whether it died, and ``stop()`` always runs. ``memory_bytes()`` is what the sampler reads once a second
while the load runs.
"""

from __future__ import annotations

import os
import socket
import time
from abc import ABC, abstractmethod
from pathlib import Path
from types import TracebackType

import psutil
import requests

from orchestrate.errors import ServerExitedError, ServerNotReadyError
from orchestrate.server.diagnose import diagnose

HEALTH_POLL_INTERVAL_S = 0.1
"""How often ``/health`` is polled while a server loads."""
SERVER_STOP_GRACE_S = 5.0
"""How long a stopped server gets between SIGTERM and SIGKILL."""
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


def free_port(host: str = "127.0.0.1") -> int:
    """A port that is free now (the OS picks it); the server binds it a moment later."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as sock:
        sock.bind((host if host not in ("0.0.0.0", "::") else "127.0.0.1", 0))
        return int(sock.getsockname()[1])


def process_tree_rss(pid: int) -> int | None:
    """Resident memory of a process and all its descendants, in bytes; None once it is gone.

    Pages shared between the processes count once per process (RSS, not PSS), and device memory
    (CUDA allocations) is not in RSS: the sampler reports GPU memory separately.
    """
    try:
        root = psutil.Process(pid)
        tree = [root, *root.children(recursive=True)]
    except psutil.Error:
        return None
    total = 0
    for process in tree:
        try:
            total += process.memory_info().rss
        except psutil.Error:  # a child that exited meanwhile
            continue
    return total


class Launcher(ABC):
    """Starts one server variant and guarantees it is stopped.

    Memory contract (read by ``orchestrate.load.sampler`` from a background thread, once a second):
    ``memory_bytes()`` returns the server's own memory in bytes now, or None when unknown; it must
    be cheap and must never raise, also after the server exited. The default is the RSS of the
    process tree rooted at ``pid()`` (``memory_source = "process_tree"``). A launcher whose server
    is not a local child process (a container) overrides ``memory_bytes()`` with its own numbers
    (e.g. the container's memory stats) and sets ``memory_source = "container"``; one that knows
    nothing (an external server) keeps ``pid()`` returning None, so memory is None.

    :param log_path: where the server's stdout/stderr go (``server.log`` of the variant).
    """

    kind: str = "abstract"
    owns_server: bool = True
    """tokenswarm started this server (and stops it), with the scenario's settings; False for one already
    running (``--url``), which is described by what it reports."""
    memory_source: str = "process_tree"
    """What ``memory_bytes()`` measures: ``process_tree`` or ``container``; written per sample."""

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

    def pid(self) -> int | None:
        """The server's root process id while a local process of ours runs it, else None."""
        return None

    def gpus(self) -> tuple[str, ...] | None:
        """The GPUs the server was given (indices or UUIDs), whose power it is charged; None for every GPU the
        machine has. A server started here inherits tokenswarm's environment: its ``CUDA_VISIBLE_DEVICES``."""
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        return None if visible is None else tuple(g.strip() for g in visible.split(",") if g.strip())

    def memory_bytes(self) -> int | None:
        """The server's memory in use now, in bytes, or None; see the class docstring's contract."""
        pid = self.pid()
        return None if pid is None else process_tree_rss(pid)

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
                    cause, hint = diagnose(self.log_tail(200), code)
                    raise ServerExitedError(
                        f"server exited with code {code} while loading: {cause or 'no log output'}; "
                        f"see {self.log_path}", returncode=code, cause=cause, hint=hint)
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
