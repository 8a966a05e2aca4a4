"""orchestrate/server/liveness.py: the watch beside the load — a real process that exits is ``server_died``,
a ``/health`` (a real tiny HTTP server) that stops answering for the window is ``server_lost``, and any
HTTP answer, even an error, keeps the server alive."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from orchestrate.server import liveness
from orchestrate.server.launchers.base import Launcher
from orchestrate.server.liveness import DIED, LOST, ServerWatch
from tests.fixtures.health_server import HealthServer


class RealProcess(Launcher):
    """A "server" that is a real ``python -c 'sleep'`` process, or no process at all (``--url``)."""

    kind = "test"

    def __init__(self, log_path: Path, url: str, with_process: bool = True) -> None:
        super().__init__(log_path)
        self.url = url
        self.process = (subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
                        if with_process else None)

    def __enter__(self) -> "RealProcess":
        return self

    def _start(self) -> str:
        return self.url or ""

    def exit_status(self) -> int | None:
        return self.process.poll() if self.process else None

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@pytest.fixture(autouse=True)
def fast_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(liveness, "POLL_S", 0.05)


@pytest.fixture
def server() -> Iterator[HealthServer]:
    with HealthServer() as health:
        yield health


def wait_for(condition: Callable[[], object], within_s: float) -> float:
    """Seconds until ``condition()`` held; fails after ``within_s``."""
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > within_s:
            pytest.fail(f"not within {within_s} s")
        time.sleep(0.02)
    return time.monotonic() - started


def test_a_healthy_server_is_not_down(tmp_path: Path, server: HealthServer) -> None:
    with RealProcess(tmp_path / "log", server.url) as launcher, ServerWatch(server.url, launcher, 0.5) as watch:
        wait_for(lambda: server.requests >= 5, 3)
        assert watch.down() is None and watch.settle() is None and watch.down_at is None


def test_a_process_that_exits_is_server_died_at_once(tmp_path: Path, server: HealthServer) -> None:
    """Its /health still answers (a proxy, a port kept open): the exit alone decides."""
    with RealProcess(tmp_path / "log", server.url) as launcher, ServerWatch(server.url, launcher, 30) as watch:
        wait_for(lambda: server.requests >= 1, 3)
        assert launcher.process is not None
        launcher.process.kill()
        killed = time.time()
        assert wait_for(lambda: watch.down() is not None, 2) < 1
        assert watch.down() == DIED and watch.settle() == DIED
        assert watch.down_at is not None and killed <= watch.down_at < killed + 1


def test_health_unanswered_for_the_window_is_server_lost(tmp_path: Path, server: HealthServer) -> None:
    """Lost only once the window has passed; the outage began at the first unanswered probe."""
    with RealProcess(tmp_path / "log", server.url) as launcher, ServerWatch(server.url, launcher, 1.0) as watch:
        wait_for(lambda: server.requests >= 1, 3)
        server.close()
        closed = time.time()
        took = wait_for(lambda: watch.down() is not None, 4)
        assert watch.down() == LOST and 0.9 <= took < 2.5
        assert watch.down_at is not None and closed - 0.1 <= watch.down_at < closed + 0.5


def test_a_server_without_a_process_is_lost_not_died(tmp_path: Path, server: HealthServer) -> None:
    """``--url``: nothing to watch but /health."""
    with RealProcess(tmp_path / "log", server.url, with_process=False) as launcher, \
            ServerWatch(server.url, launcher, 0.5) as watch:
        wait_for(lambda: server.requests >= 1, 3)
        server.close()
        wait_for(lambda: watch.down() is not None, 3)
        assert watch.down() == LOST


def test_a_process_dead_by_the_end_of_the_window_is_died(tmp_path: Path, server: HealthServer) -> None:
    """/health went first and the process exited within the window: the exit names it."""
    with RealProcess(tmp_path / "log", server.url) as launcher, ServerWatch(server.url, launcher, 30) as watch:
        wait_for(lambda: server.requests >= 1, 3)
        server.close()
        wait_for(lambda: watch.failing_since is not None, 3)
        assert launcher.process is not None
        launcher.process.kill()
        wait_for(lambda: watch.down() is not None, 2)
        assert watch.down() == DIED


@pytest.mark.parametrize("status", [503, 500, 404])
def test_any_http_answer_is_alive(tmp_path: Path, status: int) -> None:
    with HealthServer(status) as server, RealProcess(tmp_path / "log", server.url) as launcher, \
            ServerWatch(server.url, launcher, 0.3) as watch:
        wait_for(lambda: server.requests >= 12, 5)  # well past the window
        assert watch.down() is None and watch.failing_since is None


def test_an_outage_shorter_than_the_window_is_forgotten(tmp_path: Path, server: HealthServer) -> None:
    port = int(server.url.rsplit(":", 1)[1])
    with RealProcess(tmp_path / "log", server.url) as launcher, ServerWatch(server.url, launcher, 1.5) as watch:
        wait_for(lambda: server.requests >= 1, 3)
        server.close()
        wait_for(lambda: watch.failing_since is not None, 3)
        with HealthServer(port=port) as back:
            wait_for(lambda: back.requests >= 1 and watch.failing_since is None, 3)
            time.sleep(1.6)  # the first outage's window has passed: a new one would start its own
            assert watch.down() is None


def test_settle_waits_out_the_window_of_a_failing_server(tmp_path: Path, server: HealthServer) -> None:
    """The load stopped on its own a moment before the watch saw the server go: the verdict still comes."""
    with RealProcess(tmp_path / "log", server.url) as launcher, ServerWatch(server.url, launcher, 0.8) as watch:
        wait_for(lambda: server.requests >= 1, 3)
        server.close()
        wait_for(lambda: watch.failing_since is not None, 3)
        assert watch.down() is None
        assert watch.settle() == LOST


def test_leaving_the_block_stops_the_thread(tmp_path: Path, server: HealthServer) -> None:
    with RealProcess(tmp_path / "log", server.url) as launcher:
        watch = ServerWatch(server.url, launcher, 0.5)
        with watch:
            wait_for(lambda: server.requests >= 1, 3)
        assert not watch._thread.is_alive()
        seen = server.requests
        time.sleep(0.3)
        assert server.requests == seen
