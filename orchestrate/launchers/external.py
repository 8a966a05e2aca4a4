"""The external launcher: a server that is already running (``--url``); nothing to start or stop.

Imports: ``orchestrate.launchers.base``. Only the health check and pre-flight touch it.
"""

from __future__ import annotations

from pathlib import Path

from orchestrate.launchers.base import Launcher


class ExternalLauncher(Launcher):
    """Points at ``url``; ``stop()`` leaves the server alone."""

    kind = "external"

    def __init__(self, url: str, log_path: Path) -> None:
        super().__init__(log_path)
        self._url = url.rstrip("/")

    def _start(self) -> str:
        return self._url

    def exit_status(self) -> int | None:
        return None

    def stop(self) -> None:
        pass

    def describe(self) -> dict[str, object]:
        return {"kind": self.kind, "url": self._url}
