"""The embedded launcher: llama.cpp's own server from the ``xllamacpp`` wheel, no setup needed.

Stage: server.
The server runs in a child Python process (``orchestrate.server.launchers.embedded_child``) in its own
session, because ``xllamacpp.Server`` cannot be stopped in-process. ``Server(params)`` returns only
after the model is loaded, so ``start()`` blocks for the load and returns the bound URL (port 0 picks a
free one); ``/health`` answers 200 from the first moment it is reachable. If the child dies first,
``ServerExitedError`` carries the log line that says why (e.g. ``failed to open GGUF file ...``).
"""

from __future__ import annotations

import dataclasses
import json
import os
import select
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from orchestrate.errors import ServerExitedError, ServerNotReadyError
from orchestrate.processes import stop_process
from orchestrate.server.diagnose import diagnose
from orchestrate.server.launchers.base import SERVER_STOP_GRACE_S, Launcher

FLASH_ATTN_CHOICES = ("on", "off", "auto")
OPTIONAL_KEYS = ("swa_full", "batch_size", "ubatch_size", "embeddings", "pooling", "reranking", "mmproj_path")


@dataclass(frozen=True)
class EmbeddedConfig:
    """What the embedded server is started with (mirrors llama-server flags).

    :param ctx_size: total context across slots (``-c``); 0 means ``parallel × 2048``.
    :param verbosity: llama.cpp log level: 3 logs startup plus ~8 lines per request,
        2 only warnings and errors (load errors are shown at any level >= 1).
    """

    model_path: str
    parallel: int = 4
    ctx_size: int = 0
    flash_attn: str = "auto"
    draft_model_path: str | None = None
    draft_n_max: int = 4
    threads: int = 1
    host: str = "127.0.0.1"
    port: int = 0
    metrics: bool = True
    alias: str | None = None
    api_keys: tuple[str, ...] = ()
    verbosity: int = 3
    swa_full: bool = False
    """``--swa-full``: keep the whole cache of sliding-window layers (Gemma 3), so a shared prefix can be reused."""
    batch_size: int = 0
    """``-b``; 0: llama.cpp's default (2,048)."""
    ubatch_size: int = 0
    """``-ub``; 0: llama.cpp's default (512). An embeddings input must fit in one."""
    embeddings: bool = False
    """``--embeddings``: serve ``/v1/embeddings``."""
    pooling: str | None = None
    """``--pooling``: none, mean, cls, last or rank; None: the model's."""
    reranking: bool = False
    """``--reranking``: serve ``/v1/rerank`` (rank pooling)."""
    mmproj_path: str | None = None
    """``--mmproj``: the multimodal projector, so the server takes images."""

    def __post_init__(self) -> None:
        if self.flash_attn not in FLASH_ATTN_CHOICES:
            raise ValueError(f"flash_attn must be one of {FLASH_ATTN_CHOICES}, not {self.flash_attn!r}")
        if self.parallel < 1 or self.threads < 1 or self.ctx_size < 0 or self.draft_n_max < 1:
            raise ValueError(f"parallel, threads and draft_n_max must be >= 1 and ctx_size >= 0: {self}")

    def __repr__(self) -> str:
        """As ``tokenswarm plan`` prints it: the ``OPTIONAL_KEYS`` only when set."""
        shown = [f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self)
                 if f.name not in OPTIONAL_KEYS or getattr(self, f.name)]
        return f"EmbeddedConfig({', '.join(shown)})"

    def to_dict(self) -> dict[str, object]:
        """As ``server.json`` and the child take it; the ``OPTIONAL_KEYS`` only when set (the summary omits them off)."""
        data = dataclasses.asdict(self)
        data["api_keys"] = list(self.api_keys)
        for key in OPTIONAL_KEYS:  # written only when set, so a plain server's server.json is as it was
            if not data[key]:
                del data[key]
        return data


class EmbeddedLauncher(Launcher):
    """Runs ``xllamacpp.Server`` in a child process; see the module docstring.

    :param start_timeout_s: how long ``start()`` waits for the model to load and the port to bind.
    """

    kind = "embedded"

    def __init__(self, config: EmbeddedConfig, log_path: Path, start_timeout_s: float = 600.0) -> None:
        super().__init__(log_path)
        self.config = config
        self.start_timeout_s = start_timeout_s
        self.argv: list[str] = [sys.executable, "-m", "orchestrate.server.launchers.embedded_child",
                                "--config", json.dumps(config.to_dict())]
        self.process: subprocess.Popen[bytes] | None = None
        self._log_offset = 0

    def _start(self) -> str:
        assert self.process is None, "start() called twice"
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        try:  # the log is appended to: only what this start writes explains its failure
            self._log_offset = self.log_path.stat().st_size
        except FileNotFoundError:
            self._log_offset = 0
        read_fd, write_fd = os.pipe()
        env = dict(os.environ)
        root = str(Path(__file__).resolve().parents[3])  # so the child finds ``orchestrate``
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        try:
            with open(self.log_path, "ab") as log:
                self.process = subprocess.Popen(
                    [*self.argv, "--ready-fd", str(write_fd)], stdin=subprocess.DEVNULL,
                    stdout=log, stderr=subprocess.STDOUT, pass_fds=(write_fd,),
                    start_new_session=True, env=env)
        finally:
            os.close(write_fd)
        try:
            url = self._read_url(read_fd)
        finally:
            os.close(read_fd)
        if url is None:
            self._raise_exited()
        return url

    def _read_url(self, read_fd: int) -> str | None:
        """The URL line the child writes, or None once the pipe closes without one."""
        deadline = time.monotonic() + self.start_timeout_s
        data = b""
        while time.monotonic() < deadline:
            readable, _, _ = select.select([read_fd], [], [], 0.2)
            if readable:
                chunk = os.read(read_fd, 4096)
                if not chunk:
                    return None
                data += chunk
                if data.endswith(b"\n"):
                    return data.decode().strip()
        self.stop()
        raise ServerNotReadyError(
            f"embedded server did not load {self.config.model_path} within {self.start_timeout_s:g} s; "
            f"see {self.log_path}")

    def _raise_exited(self) -> NoReturn:
        assert self.process is not None
        try:
            code: int | None = self.process.wait(timeout=SERVER_STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            code = None
            self.stop()
        cause, hint = diagnose(self._new_log_lines()[-200:], code)
        if not Path(self.config.model_path).is_file():
            hint = f"model file {self.config.model_path} does not exist"
        elif self.config.draft_model_path and not Path(self.config.draft_model_path).is_file():
            hint = f"draft model file {self.config.draft_model_path} does not exist"
        raise ServerExitedError(
            f"embedded server exited with code {code} while starting: {cause or 'no log output'}; "
            f"see {self.log_path}", returncode=code, cause=cause, hint=hint)

    def _new_log_lines(self) -> list[str]:
        try:
            with open(self.log_path, "rb") as log:
                log.seek(self._log_offset)
                return log.read().decode(errors="replace").splitlines()
        except FileNotFoundError:
            return []

    def exit_status(self) -> int | None:
        return None if self.process is None else self.process.poll()

    def pid(self) -> int | None:
        """The child process that hosts the server (None before start and once it has exited)."""
        process = self.process
        return None if process is None or process.returncode is not None else process.pid

    def stop(self) -> None:
        stop_process(self.process, SERVER_STOP_GRACE_S)

    def describe(self) -> dict[str, object]:
        return {"kind": self.kind, "config": self.config.to_dict(), "argv": list(self.argv),
                "pid": None if self.process is None else self.process.pid}
