"""Child processes the orchestrator starts (a server, Locust, the reference server): the one way to stop them,
and the one way to run a short command for its output (``nvidia-smi``).

Stage: beside every stage, at the top; stdlib only.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Sequence
from typing import Any


def run_command(argv: Sequence[str], timeout_s: float) -> str:
    """A command's stdout; raises ``OSError`` or ``subprocess.SubprocessError`` when it fails."""
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout_s, check=True).stdout


def stop_process(process: subprocess.Popen[Any] | None, grace_s: float, term_group: bool = True,
                 kill_group: bool = True) -> None:
    """SIGTERM, up to ``grace_s`` to exit, then SIGKILL; never signals a reaped pid (it may be reused).

    :param term_group: send SIGTERM to the process group the process leads (started with
        ``start_new_session``), else to the process alone (Locust's master stops its own workers and
        writes the final stats).
    :param kill_group: the same for SIGKILL (whatever is left of the group goes).
    """
    if process is None:
        return
    for sig, group in ((signal.SIGTERM, term_group), (signal.SIGKILL, kill_group)):
        if process.poll() is not None:  # reaped now: its pid (and group id) may be reused
            return
        try:
            os.killpg(process.pid, sig) if group else process.send_signal(sig)
        except ProcessLookupError:
            pass
        try:
            process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            continue
