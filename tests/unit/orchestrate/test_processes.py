"""orchestrate/processes.py: the one way to stop a child process, with real processes."""

from __future__ import annotations

import subprocess
import sys
import time

from orchestrate.processes import stop_process

IGNORES_TERM = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); time.sleep(60)"
CHILD_OF_ITS_OWN = ("import subprocess, sys, time; c = subprocess.Popen([sys.executable, '-c', 'import time; "
                    "time.sleep(60)']); print(c.pid, flush=True); time.sleep(60)")


def started(code: str, new_session: bool = True) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                            start_new_session=new_session)
    assert proc.stdout is not None
    proc.first_line = proc.stdout.readline().strip()  # type: ignore[attr-defined]
    return proc


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def test_a_process_that_ignores_sigterm_is_killed_after_the_grace() -> None:
    proc = started(IGNORES_TERM)
    began = time.monotonic()
    stop_process(proc, 0.3)
    assert proc.returncode == -9 and 0.3 <= time.monotonic() - began < 5


def test_the_group_goes_with_its_leader() -> None:
    proc = started(CHILD_OF_ITS_OWN)
    grandchild = int(proc.first_line)  # type: ignore[attr-defined]
    stop_process(proc, 2.0)
    deadline = time.monotonic() + 5
    while alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.returncode is not None and not alive(grandchild)


def test_sigterm_to_the_leader_alone_spares_its_group_until_sigkill() -> None:
    proc = started(CHILD_OF_ITS_OWN)
    grandchild = int(proc.first_line)  # type: ignore[attr-defined]
    stop_process(proc, 2.0, term_group=False)  # the leader exits on SIGTERM: no SIGKILL is sent
    assert proc.returncode == -15 and alive(grandchild)
    subprocess.run(["kill", "-9", str(grandchild)], check=False)


def test_an_exited_process_or_none_is_left_alone() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    proc.wait()
    stop_process(proc, 0.1)  # reaped: its pid may belong to another process now, nothing is sent
    assert proc.returncode == 0
    stop_process(None, 0.1)
