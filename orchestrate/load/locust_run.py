"""Run the ``locust`` command for one variant, show progress, and stop it if the server dies.

Stage: load. Locust runs as its own process (headless, or with its web UI for ``--ui``), exactly as a
user would run it; its CSV/JSON stats and our ``requests.jsonl`` are the outputs. Locust exits 1 when
any request failed: that is a result, not an error here.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO

import requests

from locustfiles.command import LOCUSTFILE, headless_command
from orchestrate.errors import LoadRunError
from orchestrate.load import jointoken
from orchestrate.processes import stop_process
from orchestrate.results import VariantPaths
from orchestrate.scenario import pacing, replay, request
from orchestrate.scenario.spec import LoadSpec
from orchestrate.server.launchers.base import free_port
from orchestrate.server.liveness import DIED

PROGRESS_INTERVAL_S = 5.0
LOCUST_STOP_GRACE_S = 30.0
"""How long Locust gets after SIGTERM to stop its users and write its final stats."""
CUT_GRACE_S = 1.0
"""After the server's process exited, Locust runs this long more before it is stopped: the streams the
exit cut end at once, and their users classify them (``stream_cut``) instead of being cancelled."""
DEFAULT_MASTER_PORT = 5557
"""Locust's own default, for workers on other hosts; local workers get a free port."""
EXPECT_WORKERS_WAIT_S = 60
REMOTE_WORKERS_WAIT_S = 300.0
"""How long a master waits for workers from other hosts by default (Locust's own waits forever)."""
GAVE_UP_ON_WORKERS = "Gave up waiting for workers to connect"
"""Locust's log line when ``--expect-workers-max-wait`` passed without enough workers."""
WEB_UI_WAIT_S = 30.0
"""How long ``--ui`` waits for Locust's web UI to answer before printing its address anyway."""


@dataclass(frozen=True)
class Swarm:
    """Where the load comes from: one local process, local workers, or workers on other hosts."""

    workers: int = 0
    """``--workers N``: a master and N local worker processes (each one core's worth of load)."""
    remote_workers: int = 0
    """``--master --expect-workers N``: a master only; N workers join from other hosts."""
    master_bind_host: str = "127.0.0.1"
    master_bind_port: int = 0
    """0 picks a free port (local workers) or Locust's 5557 (remote workers)."""
    workers_wait_s: float = REMOTE_WORKERS_WAIT_S
    """``--expect-workers-max-wait``: how long the master waits for remote workers before giving up."""
    join_token_file: Path | None = None
    """Where the master and local workers read the join token (``jointoken.py``); None: they inherit
    ``TOKENSWARM_JOIN_TOKEN``, or local workers get one made for the run."""

    @property
    def distributed(self) -> bool:
        return bool(self.workers or self.remote_workers)


@dataclass(frozen=True)
class WebUi:
    """``tokenswarm run --ui``: Locust's web UI instead of headless; a person starts and ramps users."""

    host: str = "127.0.0.1"
    port: int = 0
    """The CLI picks a free port once per run, so every variant has the same address."""
    quit_on_stop: bool = False
    """``--ui-quit-on-stop``: Locust quits when the test stops; else its UI stays up for a look, and
    Ctrl-C in the terminal writes the results and goes on."""

    @property
    def url(self) -> str:
        return f"http://{'[' + self.host + ']' if ':' in self.host else self.host}:{self.port}"


@dataclass(frozen=True)
class LoadPlan:
    """Everything the Locust process needs for one load: the scenario's load section, where it goes, and the
    prompts file's count."""

    url: str
    load: LoadSpec
    """The load section as run (users, spawn rate, time cap, request shape, rate or stages, replay mode)."""
    num_prompts: int
    """The requests the prompts file plans (every turn of a multi-turn conversation)."""
    model: str | None
    swarm: Swarm = Swarm()
    ui: WebUi | None = None
    """Locust's web UI (``-u``/``-r`` then only prefill its form), and ``--quit-on-stop``."""
    request_id_prefix: str = ""
    """Before every request id: a step's label, so the steps of one server start never share an id."""


@dataclass(frozen=True)
class LoadOutcome:
    exit_code: int
    wall_s: float
    stopped_by: str
    """``num_prompts`` (all sent), ``time_cap``, ``server_died`` (its process exited), ``server_lost`` (it
    stopped answering for ``server_lost_after_s``), ``interrupted``, ``ui_stop`` (stopped in the web
    UI before every prompt was sent: the Stop button or the form's run time), or ``cannot_pass`` (a
    capacity probe stopped once it could no longer reach its attainment)."""


def locust_command(plan: LoadPlan, paths: VariantPaths) -> list[str]:
    """The exact ``locust`` command line (also shown in ``server.json``/docs)."""
    load = plan.load
    cmd = headless_command(load.users, load.spawn_rate, plan.url, paths.prompts, plan.num_prompts, paths.records)
    cmd += ["--read-timeout", f"{load.read_timeout_s:g}", "--server-lost-after", f"{load.server_lost_after_s:g}",
            "--csv", str(paths.locust_prefix), "--csv-full-history", "--json-file", str(paths.locust_json_stem),
            "--only-summary", "--loglevel", "INFO", "--exit-with-parent", str(os.getpid())]
    if load.max_seconds:
        cmd += ["--run-time", f"{int(load.max_seconds)}s"]
    if not load.cache_prompt:
        cmd.append("--no-cache-prompt")
    if load.ignores_eos:
        cmd.append("--ignore-eos")
    if plan.request_id_prefix:
        cmd += ["--request-id-prefix", plan.request_id_prefix]
    cmd += pacing.locust_args(load)  # --rate ... or --stages ...
    cmd += replay.locust_args(load)  # --mode multi_turn --history ... --think-time ...
    cmd += request.locust_args(load)  # --endpoint ... --request-extra ... --check ...
    if plan.model:
        cmd += ["--model", plan.model]
    swarm = plan.swarm
    if swarm.distributed:
        cmd += ["--master", "--expect-workers", str(swarm.workers or swarm.remote_workers),
                "--expect-workers-max-wait", f"{EXPECT_WORKERS_WAIT_S if swarm.workers else swarm.workers_wait_s:g}",
                "--master-bind-host", swarm.master_bind_host, "--master-bind-port", str(master_port(swarm)),
                "--enable-rebalancing"]
        cmd += _token_file_args(swarm.join_token_file)
    if plan.ui is not None:  # the web UI instead of headless; Stop (or the last prompt) ends Locust
        cmd.remove("--headless")
        cmd += ["--web-host", plan.ui.host, "--web-port", str(plan.ui.port)]
        cmd += ["--quit-on-stop"] * plan.ui.quit_on_stop
    return cmd


def master_port(swarm: Swarm) -> int:
    return swarm.master_bind_port or DEFAULT_MASTER_PORT


def worker_command(master_host: str, master_port: int, join_token_file: Path | None = None) -> list[str]:
    """A worker: needs only the project installed (no dataset, no orchestrator, no Docker)."""
    return [sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--worker", "--master-host", master_host,
            "--master-port", str(master_port), "--loglevel", "INFO",
            *_token_file_args(join_token_file)]  # a worker quits when its master does


def _token_file_args(join_token_file: Path | None) -> list[str]:
    """The token's file by path: the token itself never goes on a command line."""
    return ["--join-token-file", str(join_token_file)] if join_token_file else []


def complete_lines(records: Path, offset: int) -> tuple[bytes, int]:
    """The whole lines appended to ``records`` since ``offset`` (a line still being written waits for the
    next read), and the offset after them; nothing while the file does not exist yet."""
    try:
        with records.open("rb") as f:
            f.seek(offset)
            chunk = f.read()
    except FileNotFoundError:
        return b"", offset
    complete = chunk[: chunk.rfind(b"\n") + 1]
    return complete, offset + len(complete)


@dataclass
class Progress:
    """The requests that ended so far, by how, counted from the records as they are appended."""

    answered: int = 0
    errors: int = 0
    cancelled: int = 0
    offset: int = 0
    """How far ``requests.jsonl`` has been read."""

    @property
    def ended(self) -> int:
        return self.answered + self.errors + self.cancelled

    def read(self, records: Path) -> None:
        """Count the records appended since the last read."""
        complete, self.offset = complete_lines(records, self.offset)
        errors, cancelled = complete.count(b'"status":"error"'), complete.count(b'"status":"cancelled"')
        self.errors += errors
        self.cancelled += cancelled
        self.answered += complete.count(b"\n") - errors - cancelled

    def line(self, planned: int) -> str:
        """``11/48 answered, 0 errors, 16 cancelled, 21 left``: answered are complete replies; left, the
        prompts not yet ended (sent and in flight, or not sent)."""
        return (f"{self.answered}/{planned} answered, {self.errors} errors"
                + (f", {self.cancelled} cancelled" if self.cancelled else "") + f", {max(planned - self.ended, 0)} left")


def run_load(plan: LoadPlan, paths: VariantPaths, label: str,
             stop_when: Callable[[], str | None] = lambda: None) -> LoadOutcome:
    """Run Locust to the end; print ``[label] n/N requests`` every few seconds.

    ``stop_when`` names why the load must end now: a server that died or was lost
    (``liveness.ServerWatch.down``), or a capacity probe that can no longer pass (``probewatch``).
    Locust is stopped then, and that is how the load ended.

    With ``plan.swarm.workers`` the master and that many local worker processes run; with
    ``remote_workers`` the master waits for workers started elsewhere (``tokenswarm worker``).
    """
    if plan.swarm.workers and not plan.swarm.master_bind_port:
        plan = replace(plan, swarm=replace(plan.swarm, master_bind_port=free_port()))
    cmd = locust_command(plan, paths)
    started = time.monotonic()
    progress, last_print, last_line = Progress(), started, ""
    stopped_by = "num_prompts"
    waiting_said = stopped_said = False
    workers: list[subprocess.Popen[bytes]] = []
    swarm = plan.swarm
    env = jointoken.locust_env(bool(swarm.workers), swarm.join_token_file)
    with paths.locust_log.open("ab") as log:
        proc = _spawn(cmd, log, env)
        if swarm.remote_workers:
            print(f"[{label}] master waiting up to {swarm.workers_wait_s:g} s for {swarm.remote_workers} "
                  f"worker(s) (--expect-workers-max-wait): on each worker host run "
                  f"{jointoken.how_to_join(master_port(swarm), swarm.join_token_file)}", flush=True)
        for i in range(swarm.workers):
            with paths.worker_log(i).open("ab") as worker_log:
                workers.append(_spawn(worker_command("127.0.0.1", master_port(swarm), swarm.join_token_file),
                                      worker_log, env))
        try:
            if plan.ui is not None:  # inside the try: Ctrl-C while waiting for the UI still stops Locust
                _announce_web_ui(plan.ui, proc, label)
            while proc.poll() is None:
                time.sleep(0.2)
                now = time.monotonic()
                down = stop_when()
                if down is not None:
                    stopped_by = down
                    if down == DIED:  # its streams were cut as it died: let the users read that first
                        _wait(proc, CUT_GRACE_S)
                    _stop(proc)
                    break
                if now - last_print >= PROGRESS_INTERVAL_S:
                    progress.read(paths.records)
                    if plan.ui is not None and not plan.ui.quit_on_stop and not stopped_said and \
                            progress.ended and ui_state(plan.ui) == "stopped":
                        print(f"[{label}] the test stopped; the web UI stays up to look at: press Ctrl-C here to "
                              "write the results and go on", flush=True)
                        stopped_said = True
                    line = progress.line(plan.num_prompts)
                    if plan.ui is not None and not progress.ended:  # nothing sent yet: the person has not pressed Start
                        if not waiting_said:
                            print(f"[{label}] waiting for START in the web UI ({plan.ui.url})", flush=True)
                            waiting_said = True
                    elif plan.ui is None or line != last_line:  # a person's UI run: only what changed
                        print(f"[{label}] {line}, {now - started:.0f} s", flush=True)
                    last_print, last_line = now, line
        except KeyboardInterrupt:
            _stop(proc)
            if not (stopped_said or (plan.ui is not None and ui_state(plan.ui) == "stopped" and progress.ended)):
                stopped_by = "interrupted"
                raise
            stopped_by = "ui_stop"  # the person looked at a stopped test and quit: a finished run
        finally:
            for p in (proc, *workers):
                if p.poll() is None:
                    _stop(p)
    wall = time.monotonic() - started
    if stopped_by == "num_prompts" and plan.load.max_seconds and wall >= plan.load.max_seconds:
        stopped_by = "time_cap"
    if plan.ui is not None and stopped_by in ("num_prompts", "time_cap"):  # the wall clock includes idle UI time
        stopped_by = "num_prompts" if _count_lines(paths.records) >= plan.num_prompts else "ui_stop"
    stopped_by = pacing.stopped_by(plan.load, stopped_by, lambda: _count_lines(paths.records) >= plan.num_prompts)
    if proc.returncode not in (0, 1) and not paths.locust_json.exists():
        raise LoadRunError(f"locust exited with code {proc.returncode} and wrote no stats; "
                           f"see {paths.locust_log}")
    return LoadOutcome(exit_code=proc.returncode, wall_s=wall, stopped_by=stopped_by)


def ui_state(ui: WebUi) -> str | None:
    """Locust's test state as its web UI reports it (``running``, ``stopped``, ...); None without an answer."""
    try:
        return requests.get(f"{ui.url}/stats/requests", timeout=2).json().get("state")
    except (requests.RequestException, ValueError, AttributeError):
        return None


def _announce_web_ui(ui: WebUi, proc: subprocess.Popen[bytes], label: str) -> None:
    """Print the web UI's address once it answers (or at once, if it does not within the wait)."""
    deadline = time.monotonic() + WEB_UI_WAIT_S
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            socket.create_connection((ui.host if ui.host not in ("0.0.0.0", "::") else "127.0.0.1", ui.port),
                                     timeout=1).close()
            break
        except OSError:
            time.sleep(0.2)
    after = ("STOP (or the last prompt answered) ends the test and tokenswarm writes the results" if ui.quit_on_stop
             else "after STOP the UI stays up to look at; Ctrl-C here then writes the results (the last prompt "
             "answered ends it too)")
    print(f"[{label}] web UI: {ui.url}\n[{label}]   open it, set the users and press START; {after}", flush=True)


def _count_lines(path: Path) -> int:
    try:
        with path.open("rb") as f:
            return sum(1 for line in f if line.strip())
    except FileNotFoundError:
        return 0


def _spawn(cmd: list[str], log: IO[bytes], env: dict[str, str]) -> subprocess.Popen[bytes]:
    try:
        return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                env={**os.environ, "PYTHONUNBUFFERED": "1", **env})
    except OSError as exc:
        raise LoadRunError(f"cannot start locust ({exc}); is the project installed?") from None


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to Locust alone lets it quit cleanly and write its final stats; SIGKILL its group after a grace period."""
    stop_process(proc, LOCUST_STOP_GRACE_S, term_group=False)


def _wait(proc: subprocess.Popen[bytes], seconds: float) -> None:
    """Let Locust run up to ``seconds`` more (it may end on its own)."""
    try:
        proc.wait(seconds)
    except subprocess.TimeoutExpired:
        pass
