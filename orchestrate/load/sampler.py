"""Memory and llama.cpp ``/metrics`` over time: one JSON line per second into ``metrics.jsonl``.

Stage: load, beside it (``runloop`` wraps ``run_load`` in a ``MetricsSampler``). A background *thread*
takes the samples: the orchestrator never imports gevent or locust. One sample costs one GET of
``/metrics``, at most three ``nvidia-smi`` calls (memory, power, other GPU processes, the GPUs' state), the launcher's
``memory_bytes()``, a power reading (``orchestrate.load.power``) and a reading of the host's own load
(``orchestrate.load.host_probe``). Only raw values are written, each line flushed at once
(a killed orchestrator loses nothing); deltas, peaks, rates and joules are the report's job
(``report.aggregates.servermetrics``, ``report.aggregates.energy``).
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import IO, TypedDict

import requests

from orchestrate.load.gputelemetry import GpuState, GpuTelemetryProbe
from orchestrate.load.host_probe import HostProbe
from orchestrate.load.power import PowerProbe
from orchestrate.load.prometheus import ServerReading, read_server, samples
from orchestrate.processes import run_command
from orchestrate.results import SERVER_COUNTERS, SERVER_GAUGES
from orchestrate.server.background import lower_this_thread
from orchestrate.server.launchers.base import Launcher

METRIC_PREFIX = "llamacpp:"
SCRAPE_TIMEOUT_S = 5.0
"""A busy llama.cpp answers ``/metrics`` from its main loop, between decode steps: allow a slow one."""
METRICS_UNAVAILABLE = (401, 403, 404, 405, 501)
"""Answers that will not change during a run (llama.cpp without ``--metrics`` says 501): stop asking."""
NVIDIA_SMI = ("nvidia-smi", "--query-gpu=memory.used,memory.total", "--format=csv,noheader,nounits")
NVIDIA_SMI_TIMEOUT_S = 5.0
NVIDIA_SMI_MAX_FAILURES = 3
"""Consecutive failed ``nvidia-smi`` calls after which it is not called again this run."""
MEMINFO = Path("/proc/meminfo")
MIB = 1024 * 1024



class MetricsSample(TypedDict):
    """One line of ``metrics.jsonl``. Bytes are bytes; ``metrics`` is None when the scrape failed."""

    t: float
    """Wall clock (``time.time()``), to line samples up with ``requests.jsonl``'s ``send_ts``."""
    elapsed_s: float
    server_memory_bytes: int | None
    server_memory_source: str | None
    """``process_tree`` (RSS of the server's processes) or ``container``; None when unknown."""
    gpu_memory_used_bytes: int | None
    gpu_memory_total_bytes: int | None
    gpu_memory_source: str | None
    """``nvidia-smi`` (summed over GPUs), ``system`` (unified memory: MemTotal − MemAvailable) or None."""
    metrics: dict[str, float | None] | None
    metrics_error: str | None
    host: dict[str, object] | None
    """The host's own load since the last sample (``host_probe.HostProbe.read``)."""
    power_watts: float | None
    """The serving machine's power now: its GPUs' (summed), else its CPU packages' (``power.PowerProbe``)."""
    energy_joules: float | None
    """A cumulative energy counter since the first sample (NVML, RAPL); None for ``nvidia-smi``'s power."""
    power_source: str | None
    """``nvml``, ``nvidia-smi``, ``rapl`` or None."""
    power_error: str | None
    """Why there is no power reading (none on this machine, or its source stopped answering)."""
    power_devices: str | None
    """What the power is of: ``every GPU``, ``GPUs 0,1`` (the server's), ``CPU packages``."""
    server: ServerReading | None
    """The scrape in the report's names, for any server (``prometheus.read_server``); None without one."""
    gpus: list[GpuState] | None
    """Each charged GPU's utilization, memory, temperature, SM clock, throttle reasons (``gputelemetry``); None
    without a GPU source."""


def parse_prometheus(text: str, prefix: str = METRIC_PREFIX) -> dict[str, float | None]:
    """Values of the metrics named ``prefix...`` in Prometheus text, keyed by name without the prefix.

    Samples of one name with different labels are summed (e.g. one per model); NaN and ±Inf become None (JSON
    has no NaN).
    """
    values: dict[str, float | None] = {}
    for name, _, number in samples(text):
        if not name.startswith(prefix):
            continue
        value = number if math.isfinite(number) else None
        key = name[len(prefix):]
        if key in values:
            previous = values[key]
            values[key] = None if previous is None or value is None else previous + value
        else:
            values[key] = value
    return values


def parse_nvidia_smi(out: str) -> tuple[int, int] | None:
    """(used, total) bytes summed over GPUs from ``memory.used,memory.total`` in MiB; None when any
    GPU reports no number (``[N/A]``, ``Not Supported``: unified memory such as GB10)."""
    used = total = 0
    lines = [line for line in out.splitlines() if line.strip()]
    for line in lines:
        fields = [f.strip() for f in line.split(",")]
        try:
            used += int(float(fields[0]) * MIB)
            total += int(float(fields[1]) * MIB)
        except (ValueError, IndexError):
            return None
    return (used, total) if lines else None


def system_memory_bytes(meminfo: Path = MEMINFO) -> tuple[int, int] | None:
    """(in use, total) bytes of the whole machine: MemTotal − MemAvailable, from ``/proc/meminfo``."""
    fields: dict[str, int] = {}
    try:
        for line in meminfo.read_text().splitlines():
            key, _, rest = line.partition(":")
            if key in ("MemTotal", "MemAvailable"):
                fields[key] = int(rest.split()[0]) * 1024  # kB
    except (OSError, ValueError, IndexError):
        return None
    if len(fields) < 2:
        return None
    return fields["MemTotal"] - fields["MemAvailable"], fields["MemTotal"]


class GpuMemoryProbe:
    """GPU memory in use, and where the number came from.

    ``nvidia-smi`` when it exists; on unified-memory machines (GB10 / DGX Spark) it reports memory
    as ``[N/A]``, and the probe switches for good to system memory (``/proc/meminfo``), which is
    where the model and KV cache live there. Without ``nvidia-smi`` (no NVIDIA GPU) it reports None
    and costs nothing: it is never looked for again.

    :param nvidia_smi: path of ``nvidia-smi`` (``shutil.which``), or None.
    """

    def __init__(self, nvidia_smi: str | None, meminfo: Path = MEMINFO) -> None:
        self.mode: str | None = "nvidia-smi" if nvidia_smi else None
        """``nvidia-smi``, ``system`` or None: what the next ``read()`` will use."""
        self.argv = (nvidia_smi or NVIDIA_SMI[0], *NVIDIA_SMI[1:])
        self.meminfo = meminfo
        self._failures = 0

    def read(self) -> tuple[int | None, int | None, str | None]:
        """(used bytes, total bytes, source); (None, None, None) when unknown."""
        if self.mode == "nvidia-smi":
            try:
                out = run_command(self.argv, NVIDIA_SMI_TIMEOUT_S)
            except (OSError, subprocess.SubprocessError):
                self._failures += 1
                if self._failures >= NVIDIA_SMI_MAX_FAILURES:
                    self.mode = None
                return None, None, None
            self._failures = 0
            parsed = parse_nvidia_smi(out)
            if parsed is not None:
                return parsed[0], parsed[1], "nvidia-smi"
            self.mode = "system"
        if self.mode == "system":
            system = system_memory_bytes(self.meminfo)
            if system is not None:
                return system[0], system[1], "system"
        return None, None, None


class MetricsSampler:
    """Samples ``/metrics`` and memory into ``out`` every ``interval_s`` while the ``with`` block runs.

    The first sample is taken on entry, before the load, and the last on exit, after it: counter
    deltas between them cover exactly the load. Sampling never breaks the run: a failed scrape is a
    line without ``metrics``; a server without ``/metrics`` (404/501, or not llama.cpp) is said so
    once and only memory is sampled from then on.

    :param url: the server's base URL.
    :param launcher: gives the server's own memory (``Launcher.memory_bytes()``).
    :param out: ``metrics.jsonl`` (overwritten).
    :param session_factory: makes the HTTP session (tests pass a fake).
    :param extra: more ``/metrics`` names to keep in every sample (``server.extra``).
    """

    def __init__(self, url: str, launcher: Launcher, out: Path, interval_s: float = 1.0,
                 session_factory: Callable[[], requests.Session] = requests.Session,
                 server_gone: Callable[[], bool] = lambda: False, extra: tuple[str, ...] = ()) -> None:
        self.url = url.rstrip("/")
        self.extra = extra
        """More metric names to keep as they read (``ServerSpec.metrics_extra``)."""
        self.server_gone = server_gone
        """True once the server died or was lost (``liveness``): stop without waiting on a scrape it won't answer."""
        self.launcher = launcher
        self.out = out
        self.interval_s = interval_s
        self.session_factory = session_factory
        self.samples = 0
        """Lines written so far."""
        self.metrics_unavailable: str | None = None
        """Why the server gives no counters (``http_501``, ``not_llamacpp``), once that is known."""
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._sampling = threading.Lock()
        """One sample at a time: the thread's, or one asked for now (``sample_now``)."""
        self._thread: threading.Thread | None = None
        self._file: IO[str] | None = None
        self._session: requests.Session | None = None
        self._gpu = GpuMemoryProbe(None)
        self._host: HostProbe | None = None
        self._power: PowerProbe | None = None
        self._telemetry: GpuTelemetryProbe | None = None
        self._t0 = time.monotonic()

    def __enter__(self) -> "MetricsSampler":
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def start(self) -> None:
        """Take the first sample now, then one per interval in a background thread."""
        assert self._thread is None, "start() called twice"
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self._file = self.out.open("w", encoding="utf-8")
        self._session = self.session_factory()
        self._gpu = GpuMemoryProbe(shutil.which(NVIDIA_SMI[0]))
        self._host = HostProbe(self.launcher.pid(), self.url, gpu=shutil.which(NVIDIA_SMI[0]) is not None)
        self._power = PowerProbe(self.launcher.gpus())
        self._telemetry = GpuTelemetryProbe(self.launcher.gpus())
        self._stop.clear()
        self._t0 = time.monotonic()
        self._sample_and_write()
        self._thread = threading.Thread(target=self._loop, name="tokenswarm-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread (within one sample's time), take the last sample, close the file."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        self._stop.set()
        gone = self.server_gone()
        thread.join(timeout=1.0 if gone else SCRAPE_TIMEOUT_S + NVIDIA_SMI_TIMEOUT_S + 1.0)
        if not thread.is_alive() and not gone:  # else a stuck scrape still holds the session: skip the last sample
            self._sample_and_write()
        with self._lock:
            if self._file is not None:
                try:
                    self._file.close()
                except OSError as exc:  # a full disk: the samples written so far are kept
                    print(f"tokenswarm: metrics.jsonl incomplete: {exc.strerror or exc}", file=sys.stderr)
                self._file = None
        if self._session is not None:
            self._session.close()

    def _loop(self) -> None:
        lower_this_thread()
        next_at = self._t0 + self.interval_s
        while not self._stop.wait(max(0.0, next_at - time.monotonic())):
            self._sample_and_write()
            next_at = max(next_at + self.interval_s, time.monotonic())  # late: sample next, no burst

    def sample_now(self) -> float:
        """Take and write a sample at once (before and after a sweep step or a search probe: its counter
        deltas then cover exactly that step); returns its wall-clock time."""
        return self._sample_and_write()

    def _sample_and_write(self) -> float:
        """Write one sample; returns its time (the time of the try, when it failed)."""
        t = time.time()
        with self._sampling:
            return self._write_sample(t)

    def _write_sample(self, t: float) -> float:
        try:
            sample = self.sample()
            t = sample["t"]
            line = json.dumps(sample, separators=(",", ":"))
            with self._lock:
                if self._file is not None:
                    self._file.write(line + "\n")
                    self._file.flush()
                    self.samples += 1
        except Exception as exc:  # noqa: BLE001 - a sampling bug must never end the load
            print(f"tokenswarm: metrics sample failed: {type(exc).__name__}: {exc}", flush=True)
        return t

    def sample(self) -> MetricsSample:
        """One sample now (does not write it)."""
        t, elapsed = time.time(), time.monotonic() - self._t0
        metrics, error, server = self._scrape()
        try:
            memory = self.launcher.memory_bytes()
        except Exception:  # noqa: BLE001 - the contract says it never raises; don't trust it
            memory = None
        gpu_used, gpu_total, gpu_source = self._gpu.read()
        host = self._host.read() if self._host is not None else None
        power = self._power.read(time.time()) if self._power is not None else None
        return {"t": t, "elapsed_s": round(elapsed, 4), "server_memory_bytes": memory,
                "server_memory_source": self.launcher.memory_source if memory is not None else None,
                "gpu_memory_used_bytes": gpu_used, "gpu_memory_total_bytes": gpu_total,
                "gpu_memory_source": gpu_source, "metrics": metrics, "metrics_error": error, "server": server,
                "host": host,
                "power_watts": power.watts if power else None, "energy_joules": power.joules if power else None,
                "power_source": power.source if power else None, "power_error": power.error if power else None,
                "power_devices": self._power.devices if self._power is not None else None,
                "gpus": self._telemetry.read() if self._telemetry is not None else None}

    def _scrape(self) -> tuple[dict[str, float | None] | None, str | None, ServerReading | None]:
        """llama.cpp's counters (the token accounting reads them) and any server's reading (``read_server``)."""
        if self.metrics_unavailable is not None or self._session is None:
            return None, self.metrics_unavailable, None
        try:
            response = self._session.get(f"{self.url}/metrics", timeout=SCRAPE_TIMEOUT_S)
        except requests.RequestException as exc:
            return None, f"scrape_failed:{type(exc).__name__}", None
        if response.status_code in METRICS_UNAVAILABLE:
            return None, self._unavailable(f"http_{response.status_code}"), None
        if response.status_code != 200:
            return None, f"http_{response.status_code}", None
        values = parse_prometheus(response.text)
        metrics = {name: values[name] for name in (*SERVER_COUNTERS.values(), *SERVER_GAUGES) if name in values}
        server = read_server(response.text, self.extra)
        if not metrics and server is None:
            return None, self._unavailable("not_llamacpp"), None
        return metrics or None, None if metrics else "not_llamacpp", server

    def _unavailable(self, why: str) -> str:
        self.metrics_unavailable = why
        print(f"tokenswarm: {self.url}/metrics gives no llama.cpp counters ({why}); sampling memory only "
              "(start llama-server with --metrics for server-side token counts)", flush=True)
        return why
