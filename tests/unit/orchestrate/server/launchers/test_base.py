"""orchestrate/server/launchers/base.py: the launcher contract every kind shares — the readiness wait
(against a real tiny HTTP server), an early exit told apart from a slow start (a real short process),
the log tail, memory of a process tree, and ``stop()`` on every way out."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from orchestrate.errors import ServerExitedError, ServerNotReadyError
from orchestrate.server.launchers.base import Launcher, free_port, process_tree_rss
from tests.fixtures.health_server import HealthServer


class ProcessAt(Launcher):
    """A launcher whose "server" is ``python -c code`` (or none) and whose URL is given."""

    kind = "test"

    def __init__(self, log_path: Path, url: str, code: str | None = None) -> None:
        super().__init__(log_path)
        self._url, self.code = url, code
        self.process: subprocess.Popen[bytes] | None = None
        self.stops = 0

    def _start(self) -> str:
        if self.code is not None:
            with open(self.log_path, "ab") as log:
                self.process = subprocess.Popen([sys.executable, "-c", self.code], stdout=log, stderr=subprocess.STDOUT)
        return self._url

    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def exit_status(self) -> int | None:
        return self.process.poll() if self.process else None

    def stop(self) -> None:
        self.stops += 1
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def test_ready_once_health_answers_200(tmp_path: Path) -> None:
    """503 while loading is waited through; ``ready_s`` counts from ``start()``."""
    with HealthServer(503) as server, ProcessAt(tmp_path / "server.log", server.url) as launcher:
        assert launcher.start() == server.url == launcher.url
        threading.Timer(0.5, lambda: setattr(server, "status", 200)).start()
        ready = launcher.wait_ready(10)
        assert 0.4 < ready < 5 and launcher.ready_s == ready and server.requests >= 3


def test_never_ready_is_a_timeout_naming_the_url_and_log(tmp_path: Path) -> None:
    with HealthServer(503) as server, ProcessAt(tmp_path / "server.log", server.url) as launcher:
        launcher.start()
        started = time.monotonic()
        with pytest.raises(ServerNotReadyError) as info:
            launcher.wait_ready(0.5)
        assert time.monotonic() - started < 3
        assert str(info.value) == (f"server at {server.url} not ready after 0.5 s (GET /health never answered 200); "
                                   f"raise server.ready_timeout_s or see {tmp_path / 'server.log'}")
        assert launcher.ready_s is None


def test_a_server_that_exits_while_loading_fails_at_once_with_its_cause(tmp_path: Path) -> None:
    """Not a wait for the timeout: the exit code and the log's cause and hint are in the error."""
    port = free_port()  # nothing listens: /health is refused
    code = "import sys; print('0.00.000.001 E cudaMalloc failed: out of memory', flush=True); sys.exit(3)"
    with ProcessAt(tmp_path / "server.log", f"http://127.0.0.1:{port}", code) as launcher:
        launcher.start()
        started = time.monotonic()
        with pytest.raises(ServerExitedError) as info:
            launcher.wait_ready(60)
        assert time.monotonic() - started < 10
    exc = info.value
    assert exc.returncode == 3 and exc.cause is not None and "out of memory" in exc.cause
    assert exc.hint is not None and "ctx-size" in exc.hint
    assert str(exc).startswith("server exited with code 3 while loading: ") and str(tmp_path / "server.log") in str(exc)


def test_stop_runs_on_every_way_out_of_the_with_block(tmp_path: Path) -> None:
    launcher = ProcessAt(tmp_path / "server.log", "http://127.0.0.1:1", "import time; time.sleep(60)")
    with pytest.raises(RuntimeError):
        with launcher:
            launcher.start()
            raise RuntimeError("boom")
    assert launcher.stops == 1 and launcher.exit_status() is not None


def test_the_log_tail_is_the_last_lines_or_nothing(tmp_path: Path) -> None:
    launcher = ProcessAt(tmp_path / "server.log", "http://127.0.0.1:1")
    assert launcher.log_tail() == []
    launcher.log_path.write_bytes(b"".join(b"line %d\n" % i for i in range(50)) + b"bad \xff byte\n")
    assert launcher.log_tail(3) == ["line 48", "line 49", "bad \ufffd byte"]
    assert len(launcher.log_tail()) == 40
    assert launcher.describe() == {"kind": "test"}


def test_memory_is_the_whole_process_trees(tmp_path: Path) -> None:
    """A server that forks workers holds their memory too; a launcher without a process knows none."""
    code = ("import subprocess, sys, time; "
            "c = subprocess.Popen([sys.executable, '-c', 'x = bytearray(64 << 20); import time; time.sleep(60)']); "
            "print(c.pid, flush=True); time.sleep(60)")
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        time.sleep(0.3)
        tree, alone = process_tree_rss(parent.pid), process_tree_rss(child)
        assert tree is not None and alone is not None and alone > 64 << 20 and tree > alone
    finally:
        os.kill(child, signal.SIGKILL)
        parent.kill()
        parent.wait()
    assert process_tree_rss(parent.pid) is None, "a process that is gone has no memory, and no error"
    assert ProcessAt(tmp_path / "l", "http://x").memory_bytes() is None


def test_free_port_is_free_now() -> None:
    port = free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))
    assert 0 < free_port("0.0.0.0") < 65536


def test_a_server_started_here_is_charged_the_gpus_its_environment_shows(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    launcher = ProcessAt(tmp_path / "server.log", "http://127.0.0.1:1")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert launcher.gpus() is None
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1, 3")
    assert launcher.gpus() == ("1", "3")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert launcher.gpus() == ()
