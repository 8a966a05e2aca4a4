"""orchestrate/server/launchers/external.py: a server tokenswarm did not start (``--url``) — probed once
with a one-line error, waited for while it loads, never stopped (a real tiny HTTP server plays it)."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest

from orchestrate.errors import ServerError, ServerNotReadyError
from orchestrate.server.launchers import external
from orchestrate.server.launchers.base import free_port
from orchestrate.server.launchers.external import ExternalLauncher, probe
from tests.fixtures.health_server import HealthServer


def test_a_running_server_is_used_as_it_is(tmp_path: Path) -> None:
    """The URL without its trailing slash; nothing started, nothing stopped, no memory of its own."""
    with HealthServer() as server:
        launcher = ExternalLauncher(server.url + "/", tmp_path / "server.log")
        with launcher:
            assert launcher.start() == server.url
            assert launcher.wait_ready(5) >= 0 and server.requests >= 2  # the probe, then the readiness poll
            assert launcher.exit_status() is None and launcher.memory_bytes() is None and launcher.pid() is None
        assert launcher.describe() == {"kind": "external", "url": server.url}
        probe(server.url)  # still there after stop(): left alone


def test_a_server_still_loading_is_waited_for(tmp_path: Path) -> None:
    with HealthServer(503) as server:
        launcher = ExternalLauncher(server.url, tmp_path / "server.log")
        launcher.start()
        threading.Timer(0.4, lambda: setattr(server, "status", 200)).start()
        assert launcher.wait_ready(10) >= 0.3
        server.status = 503
        with pytest.raises(ServerNotReadyError):
            launcher.wait_ready(0.3)


def test_a_refused_connection_is_one_line_at_once(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    launcher = ExternalLauncher(url, tmp_path / "server.log")
    launcher.start()
    started = time.monotonic()
    with pytest.raises(ServerError) as info:
        launcher.wait_ready(60)
    assert time.monotonic() - started < 5, "not a wait for the readiness timeout"
    message = str(info.value)
    assert message.startswith(f"--url {url}: cannot connect (") and "is the server running" in message
    assert "(Connection refused);" in message and "\n" not in message and "HTTPConnectionPool" not in message


def test_tls_on_a_plain_port_and_silence_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """``https://`` to an HTTP server fails the handshake; a port that accepts and says nothing times out."""
    with HealthServer() as server:
        https = server.url.replace("http://", "https://")
        with pytest.raises(ServerError, match=r"TLS handshake failed \(.*\); is it an http:// server\?"):
            probe(https)
    monkeypatch.setattr(external, "PROBE_TIMEOUT_S", 0.3)
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        with pytest.raises(ServerError) as info:
            probe(url + "/")
    assert str(info.value) == f"--url {url}: no answer to GET /health within 0.3 s"


def test_any_http_answer_passes_the_probe() -> None:
    """A 503 (loading) or 404 (not llama.cpp) is a server that answers: readiness and pre-flight judge it."""
    with HealthServer(404) as server:
        probe(server.url)
