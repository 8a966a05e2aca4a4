"""How a load ended: the one rule for a variant, a sweep step and a capacity-search probe.

Stage: load. The server's end outranks the records: a server that exited (or that the liveness watch saw
die) made the load ``crashed``, one that stopped answering ``server_lost``; otherwise a load that sent at
least one request is ``completed``, and one that sent none an ``error`` naming Locust's log.
"""

from __future__ import annotations

from pathlib import Path

from orchestrate.server.liveness import DIED, LOST


def load_status(exited: bool, down: str | None, records: Path, locust_log: Path) -> tuple[str, str | None]:
    """``(status, error)``.

    :param exited: the server process has exited (its launcher has an exit status).
    :param down: ``DIED`` or ``LOST`` when the server went down during the load (the watch's verdict, or the
        load's ``stopped_by``); anything else when it did not.
    """
    if exited or down == DIED:
        return "crashed", None
    if down == LOST:
        return "server_lost", None
    if not records.exists() or not records.stat().st_size:
        return "error", f"locust sent no request; see {locust_log}"
    return "completed", None
