"""``tokenswarm calibrate``: how accurately, and how fast, one Locust worker on this host measures.

Stage: tools (calibration). Steps up a short ladder of concurrency × inter-token gap; for each step it starts
the reference server (``orchestrate.tools.refserver``, pinned to core 0 when the host lets it) with a
truth file, runs ONE ``locust -f locustfiles/locustfile.py --headless`` process (pinned to core 1) over
a prompts file whose every prompt carries a ``[req:pN]`` marker, and compares the client's records with
the server's true send times (both ``time.time()`` on this host):

- TTFT error = client ``ttft_ms`` − (true send time of the first content chunk − client ``send_ts``);
- chunk error = client arrival (``send_ts`` + ``chunk_offsets_ms``) − true send time, every chunk;
- TPOT error = client ``tpot_ms`` − the true (last − first content chunk) / (n − 1).

All errors include the loopback's own delivery time (tens of µs). The capacity is the highest
chunks/s per worker at which the p99 of both TTFT and chunk errors stays under 1 ms (and 5 ms), and
the CPU µs per chunk is the Locust process's CPU time (psutil, sampled every 50 ms) over the window
from its first send to its last chunk, divided by the chunks it read. Paced steps deliver about one
chunk per network read, which is what costs; a last ingest step sends replies without gaps and
measures the most one worker takes in (many chunks per read).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import math
import os
import subprocess
import sys
import threading
import time
from collections import defaultdict
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import psutil

from locustfiles.command import LOCUSTFILE, headless_command
from locustfiles.dataset import Prompt
from locustfiles.resultfiles import RECORDS_FILE
from orchestrate.errors import ScenarioError
from orchestrate.processes import stop_process
from orchestrate.report.aggregates.stats import weighted_stats

TTFT_MS = 50.0
DEFAULT_LADDER = ((8, 20.0), (32, 20.0), (128, 20.0), (256, 20.0), (8, 5.0), (32, 5.0), (128, 5.0), (256, 5.0))
QUICK_LADDER = ((8, 10.0), (64, 5.0))
INGEST = (32, 4000)
"""The ingest step: this many streams of this many tokens sent without gaps (the server writes each
reply at once), so every network read brings many chunks: the most one worker can take in."""
THRESHOLDS_MS = (1.0, 5.0)
STEP_TIMEOUT_S = 90.0


@dataclass
class Step:
    users: int
    itl_ms: float
    output_tokens: int
    prompts: int
    completed: int = 0
    errors: int = 0
    chunks: int = 0
    duration_s: float = 0.0
    chunks_per_s: float = 0.0
    cpu_us_per_chunk: float | None = None
    cpu_pct: float | None = None
    ttft_err_ms: dict[str, float] | None = None
    chunk_err_ms: dict[str, float] | None = None
    tpot_err_ms: dict[str, float] | None = None
    server_send_err_ms: dict[str, float] | None = None
    """The server's own lateness versus its schedule (not part of the client's error)."""

    @property
    def p99_ms(self) -> float:
        worst = [d["p99"] for d in (self.ttft_err_ms, self.chunk_err_ms) if d]
        return max(worst) if worst else math.inf


def _pct(values: list[float]) -> dict[str, float] | None:
    """Nearest-rank p50/p90/p99, mean, min, max (``aggregates.stats.weighted_stats``) and the count."""
    stats = weighted_stats(np.asarray(values))
    return None if stats is None else {**{k: round(v, 4) for k, v in stats.items()}, "n": len(values)}


def pin(core: int | None) -> Any:
    if core is None:
        return None
    return lambda: os.sched_setaffinity(0, {core})


def cores() -> tuple[int | None, int | None]:
    """(server core, client core): 0 and 1 when the host allows pinning and has two, else no pinning."""
    try:
        allowed = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None, None
    return (allowed[0], allowed[1]) if len(allowed) >= 2 else (None, None)


def start_server(truth: Path, itl_ms: float, output_tokens: int, core: int | None, log: Path,
                 ttft_ms: float = TTFT_MS) -> tuple[subprocess.Popen[str], str]:
    cmd = [sys.executable, "-m", "orchestrate.tools.refserver_cli", "--port", "0", "--ttft-ms", str(ttft_ms),
           "--itl-ms", str(itl_ms), "--output-tokens", str(output_tokens), "--truth-file", str(truth)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=open(log, "w"), text=True,
                            preexec_fn=pin(core))
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if "listening on" not in line:
        proc.kill()
        raise ScenarioError(f"the reference server did not start: {line or log.read_text()[-500:]}")
    return proc, line.split()[-1]


REFSERVER_STOP_GRACE_S = 10.0
"""How long the reference server gets after SIGTERM (it flushes its truth log) before SIGKILL."""


def stop_server(proc: subprocess.Popen[str]) -> None:
    """Stop the reference server ``start_server`` started (it is not a group leader: signal it alone)."""
    stop_process(proc, REFSERVER_STOP_GRACE_S, term_group=False, kill_group=False)


class CpuSampler(threading.Thread):
    """(time.time(), user+system CPU seconds) of a process every 50 ms until it exits.

    ``tree``: add its descendants' (a client that runs worker processes, as GuideLLM does)."""

    def __init__(self, pid: int, tree: bool = False) -> None:
        super().__init__(daemon=True)
        self.proc = psutil.Process(pid)
        self.tree = tree
        self.samples: list[tuple[float, float]] = []

    def run(self) -> None:
        while True:
            try:
                procs = [self.proc, *(self.proc.children(recursive=True) if self.tree else ())]
                total = 0.0
                for proc in procs:
                    with contextlib.suppress(psutil.NoSuchProcess, psutil.ZombieProcess):
                        t = proc.cpu_times()
                        total += t.user + t.system
                if not self.proc.is_running():
                    return
            except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
                return
            self.samples.append((time.time(), total))
            time.sleep(0.05)

    def cpu_between(self, t0: float, t1: float) -> float | None:
        def at(t: float) -> float | None:
            s = self.samples
            for (ta, ca), (tb, cb) in zip(s, s[1:]):
                if ta <= t <= tb:
                    return ca + (cb - ca) * (t - ta) / (tb - ta) if tb > ta else ca
            return None
        a, b = at(t0), at(t1)
        return None if a is None or b is None else b - a


def read_truth(path: Path) -> tuple[dict[str, list[float]], list[float]]:
    """Content-chunk send times by request id, and the server's send errors (ms) versus schedule."""
    chunks: dict[str, list[float]] = defaultdict(list)
    late: list[float] = []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if row["kind"] == "content":
                ts = float(row["ts"])
                chunks[row["request_id"]].append(ts)
                late.append((ts - float(row["scheduled_ts"])) * 1000.0)
    return chunks, late


def run_step(out: Path, users: int, itl_ms: float, rounds: int, server_core: int | None,
             client_core: int | None, locustfile: Path = LOCUSTFILE, ttft_ms: float = TTFT_MS,
             output_tokens: int | None = None) -> Step:
    """One load level: the reference server on one core, ``locustfile`` on the other, then the client's
    records compared with the server's truth. ``benchmarks/`` runs other clients through it."""
    output_tokens = output_tokens or max(10, int(round(1000.0 / itl_ms)))  # each request streams ~1 s
    step = Step(users, itl_ms, output_tokens, users * rounds)
    name = f"u{users}-gap{itl_ms:g}"
    d = out / name
    d.mkdir(parents=True, exist_ok=True)
    prompts = d / "prompts.jsonl"
    prompts.write_text("".join(
        Prompt(i, f"cal-{i}", ({"role": "user", "content": f"[req:p{i}] calibration prompt number {i}"},),
               6, output_tokens).to_json() + "\n" for i in range(step.prompts)))
    truth, records = d / "truth.csv", d / RECORDS_FILE
    server, url = start_server(truth, itl_ms, output_tokens, server_core, d / "server.log", ttft_ms)
    try:
        cmd = headless_command(users, max(users, 100), url, prompts, step.prompts, records, locustfile)
        cmd += ["--run-time", f"{int(STEP_TIMEOUT_S)}s", "--loglevel", "WARNING",
               "--only-summary"]
        with open(d / "locust.log", "w") as log:
            client = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, preexec_fn=pin(client_core))
            sampler = CpuSampler(client.pid)
            sampler.start()
            try:
                client.wait(STEP_TIMEOUT_S + 30)
            except subprocess.TimeoutExpired:
                client.kill()
                client.wait()
            sampler.join(2)
    finally:
        stop_server(server)
    truth_chunks, late = read_truth(truth)
    recs = [json.loads(line) for line in records.read_text().splitlines() if line.strip()] if records.exists() else []
    ttft_err: list[float] = []
    chunk_err: list[float] = []
    tpot_err: list[float] = []
    first_send, last_chunk = math.inf, 0.0
    for rec in recs:
        true = truth_chunks.get(rec["request_id"]) or truth_chunks.get(f"p{rec['prompt_index']}")  # X-Request-Id, else the marker
        if rec["status"] != "ok" or not true:
            step.errors += rec["status"] != "ok"
            continue
        step.completed += 1
        send = rec["send_ts"]
        first_send, last_chunk = min(first_send, send), max(last_chunk, true[-1])
        if rec.get("ttft_ms") is not None:
            ttft_err.append(rec["ttft_ms"] - (true[0] - send) * 1000.0)
        offsets = rec["chunk_offsets_ms"]
        step.chunks += len(offsets)
        chunk_err.extend(send * 1000.0 + off - ts * 1000.0 for off, ts in zip(offsets, true))
        if rec.get("tpot_ms") is not None and len(true) > 1:
            tpot_err.append(rec["tpot_ms"] - (true[-1] - true[0]) * 1000.0 / (len(true) - 1))
    if step.chunks and last_chunk > first_send:
        step.duration_s = round(last_chunk - first_send, 3)
        step.chunks_per_s = round(step.chunks / step.duration_s, 1)
        cpu = sampler.cpu_between(first_send, last_chunk)
        if cpu is not None:
            step.cpu_us_per_chunk = round(cpu * 1e6 / step.chunks, 2)
            step.cpu_pct = round(100.0 * cpu / step.duration_s, 1)
    step.ttft_err_ms, step.chunk_err_ms, step.tpot_err_ms = _pct(ttft_err), _pct(chunk_err), _pct(tpot_err)
    step.server_send_err_ms = _pct(late)
    return step


def capacity(steps: list[Step]) -> dict[str, Any]:
    """Highest chunks/s per worker with p99 error under each threshold, and CPU µs per chunk."""
    result: dict[str, Any] = {}
    for limit in THRESHOLDS_MS:
        ok = [s.chunks_per_s for s in steps if s.completed and not s.errors and s.p99_ms < limit]
        result[f"chunks_per_s_p99_under_{limit:g}ms"] = max(ok) if ok else 0.0
    measured = [(s.cpu_us_per_chunk, s.chunks) for s in steps if s.cpu_us_per_chunk is not None]
    total_chunks = sum(n for _, n in measured)
    result["cpu_us_per_chunk"] = (round(sum(us * n for us, n in measured) / total_chunks, 2)
                                  if total_chunks else None)
    result["max_chunks_per_s_seen"] = max((s.chunks_per_s for s in steps), default=0.0)
    if result["cpu_us_per_chunk"]:
        result["chunks_per_s_at_full_core_estimate"] = round(1e6 / result["cpu_us_per_chunk"])
    return result


def plot(steps: list[Step], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2))
    for gap in sorted({s.itl_ms for s in steps}):
        ss = sorted((s for s in steps if s.itl_ms == gap), key=lambda s: s.chunks_per_s)
        x = [s.chunks_per_s for s in ss]
        a.plot(x, [s.ttft_err_ms["p99"] if s.ttft_err_ms else math.nan for s in ss], "o-", label=f"TTFT p99, gap {gap:g} ms")
        a.plot(x, [s.chunk_err_ms["p99"] if s.chunk_err_ms else math.nan for s in ss], "s--", label=f"chunk p99, gap {gap:g} ms")
        for s in ss:
            a.annotate(f"{s.users}u", (s.chunks_per_s, s.p99_ms), fontsize=7)
        b.plot(x, [s.cpu_us_per_chunk or math.nan for s in ss], "o-", label=f"gap {gap:g} ms")
    for limit in THRESHOLDS_MS:
        a.axhline(limit, color="grey", lw=0.8, ls=":")
    a.set_yscale("log")
    a.set_xlabel("chunks/s (one worker)")
    a.set_ylabel("timing error p99, ms (client − server truth)")
    a.legend(fontsize=7)
    b.set_xlabel("chunks/s (one worker)")
    b.set_ylabel("client CPU µs per chunk")
    b.legend(fontsize=7)
    fig.suptitle("tokenswarm calibrate: one Locust worker vs the reference server")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, help="output folder (default results/calibration-<UTC timestamp>)")
    p.add_argument("--quick", action="store_true", help="two short steps (under 30 s) instead of the ladder")
    p.add_argument("--rounds", type=int, help="requests per user per step (default 3; 2 with --quick)")


def run_calibration(args: argparse.Namespace) -> int:
    out = args.out or Path("results") / f"calibration-{datetime.now(timezone.utc).strftime('%Y%m%dT%H%M%SZ')}"
    out.mkdir(parents=True, exist_ok=True)
    ladder = QUICK_LADDER if args.quick else DEFAULT_LADDER
    rounds = args.rounds or (2 if args.quick else 3)
    server_core, client_core = cores()
    print(f"tokenswarm calibrate: {len(ladder)} steps, server on core {server_core}, client on core {client_core}"
          + ("" if server_core is not None else " (no pinning: fewer than 2 cores allowed)"), flush=True)
    steps = []
    for users, gap in ladder:
        step = run_step(out, users, gap, rounds, server_core, client_core)
        steps.append(step)

        def fmt(d: dict[str, float] | None) -> str:
            return f"{d['p50']:.2f}/{d['p99']:.2f}" if d else "-"
        print(f"  {users:4d} users, gap {gap:4g} ms: {step.chunks_per_s:9,.0f} chunks/s, "
              f"TTFT err p50/p99 {fmt(step.ttft_err_ms)} ms, chunk err {fmt(step.chunk_err_ms)} ms, "
              f"TPOT err {fmt(step.tpot_err_ms)} ms, CPU {step.cpu_us_per_chunk or float('nan'):.1f} µs/chunk"
              f" ({step.cpu_pct or float('nan'):.0f} %), {step.completed}/{step.prompts} ok"
              + (f", {step.errors} errors" if step.errors else ""), flush=True)
    users, tokens = INGEST
    ingest = run_step(out, users, 0.0, 1, server_core, client_core, ttft_ms=10.0,
                      output_tokens=tokens // 4 if args.quick else tokens)
    print(f"  ingest, {users} streams without gaps: {ingest.chunks_per_s:9,.0f} chunks/s, "
          f"CPU {ingest.cpu_us_per_chunk or float('nan'):.1f} µs/chunk, {ingest.completed}/{ingest.prompts} ok",
          flush=True)
    cap = capacity(steps)
    cap["ingest"] = {"chunks_per_s": ingest.chunks_per_s, "cpu_us_per_chunk": ingest.cpu_us_per_chunk,
                     "chunks_per_s_at_full_core_estimate":
                         round(1e6 / ingest.cpu_us_per_chunk) if ingest.cpu_us_per_chunk else None}
    result = {"host": os.uname().nodename, "cpus": os.cpu_count(), "python": sys.version.split()[0],
              "ttft_ms": TTFT_MS, "server_core": server_core, "client_core": client_core,
              "capacity": cap, "steps": [{**asdict(s), "p99_ms": s.p99_ms} for s in steps],
              "ingest_step": asdict(ingest),
              "written_at": datetime.now(timezone.utc).isoformat()}
    (out / "calibration.json").write_text(json.dumps(result, indent=2))
    plot(steps, out / "calibration.png")
    print(f"capacity of this host, one worker: {cap['chunks_per_s_p99_under_1ms']:,.0f} chunks/s with p99 timing "
          f"error < 1 ms, {cap['chunks_per_s_p99_under_5ms']:,.0f} chunks/s with < 5 ms; "
          f"client CPU {cap['cpu_us_per_chunk']} µs per chunk"
          + (f" (≈ {cap['chunks_per_s_at_full_core_estimate']:,} chunks/s at a full core)"
             if cap.get("chunks_per_s_at_full_core_estimate") else "")
          + f"; ingest {ingest.chunks_per_s:,.0f} chunks/s at {ingest.cpu_us_per_chunk} µs per chunk")
    print(f"written: {out / 'calibration.json'}, {out / 'calibration.png'}")
    return 0
