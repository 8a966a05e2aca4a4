"""tokenswarm's orchestrator: scenario → server → load (Locust) → records → report.

May import ``locustfiles`` (dataset, record schema); the reverse never happens.
"""

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _installed


def version() -> str:
    """tokenswarm's installed version (``--version``, ``report.html``), ``unknown`` when it is not installed."""
    try:
        return _installed("tokenswarm")
    except PackageNotFoundError:
        return "unknown"
