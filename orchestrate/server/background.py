"""The orchestrator's threads that run beside the load yield the CPU to it.

Stage: server, beside the load (the liveness watch and the load's sampler use it). On a host where the orchestrator and Locust share a core (the usual case
on a small load host), a sample or a health probe that runs just as a chunk arrives makes Locust
read it late: that delay lands in TTFT and ITL. Linux sets niceness per thread, so the sampler
and the liveness watch lower only their own priority; Locust and the orchestrator's main thread
keep theirs. Elsewhere this does nothing.
"""

from __future__ import annotations

import os
import threading

BACKGROUND_NICE = 19


def lower_this_thread() -> None:
    """Give the calling thread the lowest CPU priority (Linux: per thread; silently nothing elsewhere)."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), BACKGROUND_NICE)
    except (AttributeError, OSError):
        pass
