"""The process launcher: a native ``llama-server`` binary (a path or a name on PATH).

Stage: server.
The server runs in its own process group, so ``stop()`` ends it and anything it spawned; its output goes
to ``server.log``.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from orchestrate.errors import ServerError
from orchestrate.processes import stop_process
from orchestrate.scenario.flags import llama_server_argv
from orchestrate.scenario.spec import ServerSpec
from orchestrate.server.launchers.base import LOCAL_HOSTS, SERVER_STOP_GRACE_S, Launcher, free_port
from orchestrate.server.llama_recipe import cached_binary


def find_binary(binary: str) -> str:
    """``binary`` as a path, or found on PATH; plain ``llama-server`` not on PATH is the build of
    ``make llama-server`` when there is one (its path is in ``server.json``); one-line error otherwise."""
    if "/" in binary:
        if Path(binary).is_file():
            return binary
        raise ServerError(f"server.binary: {binary} does not exist")
    found = shutil.which(binary) or (str(cached_binary() or "") if binary == "llama-server" else "") or None
    if found is None:
        raise ServerError(f"server.binary: {binary!r} is not on PATH; give the path to llama-server, or build "
                          f"one with `make llama-server` (or use launcher: embedded, which needs no binary)")
    return found


class ProcessLauncher(Launcher):
    """``llama-server --model M --host H --port P --metrics <flags>`` as a child process group.

    :param model, draft_model: resolved paths (``tiny`` already generated).
    """

    kind = "process"

    def __init__(self, spec: ServerSpec, model: str, draft_model: str | None, log_path: Path) -> None:
        super().__init__(log_path)
        self.host = spec.host
        self.port = spec.port or free_port(spec.host)
        self.argv = [find_binary(spec.binary), *llama_server_argv(spec, model, draft_model, spec.host, self.port)]
        self.process: subprocess.Popen[bytes] | None = None

    def _start(self) -> str:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=log,
                                            stderr=subprocess.STDOUT, start_new_session=True)
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::") or self.host in LOCAL_HOSTS else self.host
        return f"http://{host}:{self.port}"

    def pid(self) -> int | None:
        return None if self.process is None else self.process.pid

    def exit_status(self) -> int | None:
        return None if self.process is None else self.process.poll()

    def stop(self) -> None:
        stop_process(self.process, SERVER_STOP_GRACE_S)

    def describe(self) -> dict[str, object]:
        return {"kind": self.kind, "argv": self.argv, "pid": self.pid()}
