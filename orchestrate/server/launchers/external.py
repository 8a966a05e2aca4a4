"""The external launcher: a server that is already running (``--url``); nothing to start or stop.

Stage: server.
Only the health check and pre-flight touch it.
"""

from __future__ import annotations

from pathlib import Path

import requests

from orchestrate.errors import ServerError
from orchestrate.server.launchers.base import Launcher

PROBE_TIMEOUT_S = 10.0


def _reason(exc: BaseException) -> str:
    """The innermost cause's words (``Connection refused``, ``Name or service not known``)."""
    while exc.__context__ is not None or exc.__cause__ is not None:
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    text = str(exc)
    return text.rsplit("] ", 1)[-1] if "] " in text else text


def probe(url: str) -> None:
    """A refused connection, an unknown host or TLS on a plain-HTTP port is one line now (exit 2),
    not a wait for the readiness timeout, nor a results folder of failed variants."""
    url = url.rstrip("/")
    try:
        requests.get(f"{url}/health", timeout=PROBE_TIMEOUT_S)
    except requests.exceptions.SSLError as exc:
        raise ServerError(f"--url {url}: TLS handshake failed ({_reason(exc)}); is it an http:// server?") from None
    except requests.ConnectionError as exc:
        raise ServerError(f"--url {url}: cannot connect ({_reason(exc)}); is the server running "
                          f"and the address right?") from None
    except requests.Timeout:
        raise ServerError(f"--url {url}: no answer to GET /health within {PROBE_TIMEOUT_S:g} s") from None


class ExternalLauncher(Launcher):
    """Points at ``url``; ``stop()`` leaves the server alone."""

    kind = "external"
    owns_server = False

    def __init__(self, url: str, log_path: Path) -> None:
        super().__init__(log_path)
        self._url = url.rstrip("/")

    def _start(self) -> str:
        return self._url

    def exit_status(self) -> int | None:
        return None

    def stop(self) -> None:
        pass

    def wait_ready(self, timeout_s: float) -> float:
        """A server that is already running answers at once (``probe``); a 503 while it loads is
        waited for as usual."""
        probe(self._url)
        return super().wait_ready(timeout_s)

    def gpus(self) -> tuple[str, ...] | None:
        """Unknown for a server started elsewhere: every GPU of this machine is charged (if it runs here)."""
        return None

    def describe(self) -> dict[str, object]:
        return {"kind": self.kind, "url": self._url}
