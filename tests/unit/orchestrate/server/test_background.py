"""Background threads lower only their own priority (Linux sets niceness per thread)."""

from __future__ import annotations

import os
import sys
import threading

import pytest

from orchestrate.server.background import BACKGROUND_NICE, lower_this_thread


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread niceness is Linux's")
def test_only_the_calling_thread_is_lowered() -> None:
    seen: dict[str, int] = {}

    def body() -> None:
        lower_this_thread()
        seen["thread"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    before = os.getpriority(os.PRIO_PROCESS, 0)
    thread = threading.Thread(target=body)
    thread.start()
    thread.join()
    assert seen["thread"] == BACKGROUND_NICE
    assert os.getpriority(os.PRIO_PROCESS, 0) == before, "the main thread keeps its priority"
