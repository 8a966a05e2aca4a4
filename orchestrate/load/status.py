"""How a load ended: the one rule for a variant, a sweep step and a capacity-search probe.

Stage: load. The server's end outranks the records: a server that exited (or that the liveness watch saw
die) made the load ``crashed``, one that stopped answering ``server_lost``; otherwise a load whose every request
failed is ``failed`` (its error: how many, of which class, and the first thing the server said), one that
sent at least one request that did not is ``completed``, and one that sent none an ``error`` naming Locust's log.
"""

from __future__ import annotations

import json
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
    failed = every_request_failed(records)
    if failed is not None:
        return "failed", failed
    return "completed", None


def every_request_failed(records: Path) -> str | None:
    """``"every request failed: 300 × http_500:server_error (the server said: ...)"`` when no record is ``ok`` (those
    cut by the stop aside); None as soon as one is. Reads until the first completed request."""
    first: dict[str, str] = {}
    counts: dict[str, int] = {}
    with open(records, "rb") as f:
        for line in f:
            if b'"status":"ok"' in line:
                return None
            try:
                record = json.loads(line)
            except ValueError:
                continue  # a line cut by a crash: the report says so
            if record.get("status") != "error":
                continue
            kind = str(record.get("error_class"))
            counts[kind] = counts.get(kind, 0) + 1
            first.setdefault(kind, str(record.get("error_detail") or ""))
    if not counts:
        return None
    top = max(counts, key=lambda k: counts[k])
    said = f" (the server said: {first[top][:160]})" if first[top] else ""
    others = f", and {sum(counts.values()) - counts[top]:,} of other classes" if len(counts) > 1 else ""
    return f"every request failed: {counts[top]:,} × {top}{said}{others}"
