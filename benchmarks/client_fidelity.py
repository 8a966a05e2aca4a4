"""Client fidelity and capacity, side by side on the same reference server and workload.

    .venv/bin/python benchmarks/client_fidelity.py            # writes docs/benchmarks.md and a JSON

Not part of the test suite. The reference server (`tokenswarm serve-synthetic`) runs on one core
and logs the true send time of every chunk; each client runs on the other core:

- tokenswarm's Locust user (`locustfiles/locustfile.py`, FastHttpUser, line-by-line reads);
- a plain Locust `HttpUser` streaming with `requests` (`benchmarks/plain_httpuser.py`);
- GuideLLM (`guidellm run`), when installed in `benchmarks/.peers` (`--install-peers` makes it).

Workloads: the issue's fidelity point (32 streams, TTFT 200 ms, 20 ms gaps, 50 tokens each); a
paced capacity point (256 streams, 5 ms gaps: nearly every chunk arrives in its own network read,
so the cost per read dominates); and an ingest point (32 streams, no gaps, 4,000 tokens each: the
server writes each reply at once, the client reads as fast as it can, as when it falls behind a
fast server). Timing error = the client's figure minus the truth: per request for the Locust
clients (exact), per distribution (p50 vs p50, p99 vs p99) for GuideLLM. CPU per chunk is the
client's CPU time (its whole process tree) from its first send to its last chunk over the chunks.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from docsection import write_section  # noqa: E402

from orchestrate.report.aggregates.stats import weighted_stats  # noqa: E402
from orchestrate.tools.calibrate import CpuSampler, cores, pin, read_truth, run_step, start_server, stop_server  # noqa: E402

PEERS = ROOT / "benchmarks" / ".peers"
CLIENTS = {"tokenswarm (FastHttpUser)": ROOT / "locustfiles" / "locustfile.py",
           "plain Locust HttpUser + requests": ROOT / "benchmarks" / "plain_httpuser.py"}
FIDELITY = {"users": 32, "itl_ms": 20.0, "ttft_ms": 200.0, "output_tokens": 50, "rounds": 4}
CAPACITY = {"users": 256, "itl_ms": 5.0, "ttft_ms": 50.0, "output_tokens": 200, "rounds": 2}
INGEST = {"users": 32, "itl_ms": 0.0, "ttft_ms": 10.0, "output_tokens": 4000, "rounds": 2}
WORKLOADS = {"fidelity": FIDELITY, "capacity": CAPACITY, "ingest": INGEST}


def pct(values: list[float], p: int) -> float | None:
    """Nearest rank, as every tokenswarm figure (``aggregates.stats.weighted_stats``)."""
    stats = weighted_stats(np.asarray(values))
    return None if stats is None else stats[f"p{p}"]


def locust_client(name: str, locustfile: Path, out: Path, server_core: int | None, client_core: int | None
                  ) -> dict[str, Any]:
    rows: dict[str, Any] = {"client": name}
    for label, w in WORKLOADS.items():
        step = run_step(out / f"{label}-{locustfile.stem}", w["users"], w["itl_ms"], w["rounds"], server_core,
                        client_core, locustfile=locustfile, ttft_ms=w["ttft_ms"], output_tokens=w["output_tokens"])
        rows[label] = {"completed": step.completed, "errors": step.errors, "chunks_per_s": step.chunks_per_s,
                       "cpu_pct": step.cpu_pct, "cpu_us_per_chunk": step.cpu_us_per_chunk,
                       "ttft_err_ms": step.ttft_err_ms, "tpot_err_ms": step.tpot_err_ms,
                       "chunk_err_ms": step.chunk_err_ms}
    return rows


def guidellm_step(d: Path, w: dict[str, Any], server_core: int | None, client_core: int | None
                  ) -> tuple[dict[str, Any], dict[str, list[float]], dict[str, float], float | None]:
    """One GuideLLM run of workload ``w``: its metrics, the truth, arrivals, and its CPU seconds."""
    exe = PEERS / "bin" / "guidellm"
    d.mkdir(parents=True, exist_ok=True)
    n = w["users"] * w["rounds"]
    (d / "data.json").write_text(json.dumps([{"prompt": f"[req:g{i}] benchmark prompt {i}",
                                             "output_tokens_count": w["output_tokens"]} for i in range(n)]))
    server, url = start_server(d / "truth.csv", w["itl_ms"], w["output_tokens"], server_core, d / "server.log",
                               w["ttft_ms"])
    try:
        with open(d / "guidellm.log", "w") as log:
            client = subprocess.Popen(
                [str(exe), "run", "--backend", f"kind=openai_http,target={url}",
                 "--profile", f"kind=concurrent,streams={w['users']}",
                 "--data", f"kind=json_file,path={d / 'data.json'}",
                 "--constraint", f"kind=max_requests,count={n}",
                 "--output", f"kind=json,path={d / 'out.json'}", "--disable-console-interactive"],
                env={**os.environ, "HF_HUB_OFFLINE": "1"}, stdout=log, stderr=subprocess.STDOUT,
                preexec_fn=pin(client_core))
            sampler = CpuSampler(client.pid, tree=True)
            sampler.start()
            client.wait(600)
            sampler.join(2)
    finally:
        stop_server(server)
    metrics = json.loads((d / "out.json").read_text())["benchmarks"][0]["metrics"]
    arrive: dict[str, float] = {}
    with open(d / "truth.csv", newline="") as f:
        for row in csv.DictReader(f):
            if row["kind"] == "arrive":
                arrive[row["request_id"]] = float(row["ts"])
    chunks, _ = read_truth(d / "truth.csv")
    first = min(arrive.values(), default=0.0)
    last = max((ts[-1] for ts in chunks.values()), default=0.0)
    return metrics, chunks, arrive, sampler.cpu_between(first, last)


def guidellm_client(out: Path, server_core: int | None, client_core: int | None) -> dict[str, Any] | None:
    if not (PEERS / "bin" / "guidellm").exists():
        return None
    result, chunks, arrive, _ = guidellm_step(out / "guidellm-fidelity", FIDELITY, server_core, client_core)
    true_ttft = [(ts[0] - arrive[r]) * 1000 for r, ts in chunks.items() if r in arrive]
    true_tpot = [(ts[-1] - ts[0]) * 1000 / (len(ts) - 1) for ts in chunks.values() if len(ts) > 1]

    def reported(metric: str, p: str) -> float | None:
        try:
            return float(result[metric]["successful"]["percentiles"][p])
        except (KeyError, TypeError):
            return None

    def err(metric: str, p: str, truth: list[float], q: int) -> float | None:
        got, want = reported(metric, p), pct(truth, q)
        return None if got is None or want is None else round(got - want, 2)

    tpot_key = "inter_token_latency_ms" if "inter_token_latency_ms" in result else "time_per_output_token_ms"
    row: dict[str, Any] = {"client": "GuideLLM (guidellm run)", "fidelity": {
        "completed": len(chunks), "ttft_err_ms": {"p50": err("time_to_first_token_ms", "p50", true_ttft, 50),
                                                  "p99": err("time_to_first_token_ms", "p99", true_ttft, 99)},
        "tpot_err_ms": {"p50": err(tpot_key, "p50", true_tpot, 50), "p99": err(tpot_key, "p99", true_tpot, 99)},
        "note": "distribution-level error (its p50 vs the truth's p50); GuideLLM's ITL is vLLM's TPOT"}}
    for label in ("capacity", "ingest"):
        _, chunks, arrive, cpu = guidellm_step(out / f"guidellm-{label}", WORKLOADS[label], server_core, client_core)
        n = sum(len(ts) for ts in chunks.values())
        span = max((ts[-1] for ts in chunks.values()), default=0.0) - min(arrive.values(), default=0.0)
        row[label] = {"completed": len(chunks), "chunks_per_s": round(n / span, 1) if span > 0 else None,
                      "cpu_us_per_chunk": round(cpu * 1e6 / n, 2) if cpu and n else None,
                      "note": "chunks the server sent (GuideLLM writes no per-chunk record)"}
    return row


def fmt(value: Any, signed: bool = False) -> str:
    if value is None:
        return "–"
    return f"{value:+.2f}" if signed else f"{value:,.0f}" if abs(value) >= 100 else f"{value:.1f}"


def table(rows: list[dict[str, Any]]) -> list[str]:
    lines = ["| client | TTFT err p50 | TTFT err p99 | TPOT err p50 | TPOT err p99 | chunk err p99 | "
             "paced: TTFT err p50 / p99 | paced: chunks/s | paced: CPU µs/chunk | ingest: chunks/s | "
             "ingest: CPU µs/chunk | ingest: chunks/s per core |", "|---" * 12 + "|"]
    for r in rows:
        f, c, g = r.get("fidelity") or {}, r.get("capacity") or {}, r.get("ingest") or {}
        ttft, tpot, chunk = f.get("ttft_err_ms") or {}, f.get("tpot_err_ms") or {}, f.get("chunk_err_ms") or {}
        us, paced = g.get("cpu_us_per_chunk"), c.get("ttft_err_ms") or {}
        e = lambda v: fmt(v, signed=True)  # noqa: E731
        lines.append(f"| {r['client']} | {e(ttft.get('p50'))} ms | {e(ttft.get('p99'))} ms | "
                     f"{e(tpot.get('p50'))} ms | {e(tpot.get('p99'))} ms | {e(chunk.get('p99'))} ms | "
                     f"{e(paced.get('p50'))} / {e(paced.get('p99'))} ms | "
                     f"{fmt(c.get('chunks_per_s'))} | {fmt(c.get('cpu_us_per_chunk'))} | "
                     f"{fmt(g.get('chunks_per_s'))} | {fmt(us)} | {fmt(round(1e6 / us) if us else None)} |")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--install-peers", action="store_true", help="pip install guidellm into benchmarks/.peers")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks.md")
    args = parser.parse_args()
    if args.install_peers and not (PEERS / "bin" / "guidellm").exists():
        subprocess.run([sys.executable, "-m", "venv", str(PEERS)], check=True)
        subprocess.run([str(PEERS / "bin" / "pip"), "install", "-q", "guidellm"], check=True)
    server_core, client_core = cores()
    work = Path(tempfile.mkdtemp(prefix="tokenswarm-bench-"))
    started = time.time()
    rows = [locust_client(name, lf, work, server_core, client_core) for name, lf in CLIENTS.items()]
    peer = guidellm_client(work, server_core, client_core)
    if peer:
        rows.append(peer)
    stamp = datetime.now(timezone.utc)
    data = {"date": stamp.isoformat(timespec="seconds"), "machine": f"{platform.node()} {platform.machine()}, "
            f"{os.cpu_count()} cores, Python {platform.python_version()}", "fidelity_workload": FIDELITY,
            "capacity_workload": CAPACITY, "ingest_workload": INGEST, "cores": [server_core, client_core], "rows": rows,
            "wall_s": round(time.time() - started)}
    json_path = ROOT / "benchmarks" / f"client_fidelity-{stamp:%Y%m%d}.json"
    json_path.write_text(json.dumps(data, indent=2) + "\n")
    lines = table(rows)
    print("\n".join(lines))
    md = [f"Measured {stamp:%Y-%m-%d %H:%M} UTC on {data['machine']}; the reference server on core "
          f"{server_core}, each client on core {client_core}, one after another in one run. Command: "
          f"`.venv/bin/python benchmarks/client_fidelity.py --install-peers` (raw figures: `{json_path.name}`).", "",
          f"Fidelity workload: {FIDELITY['users']} streams, TTFT {FIDELITY['ttft_ms']:g} ms, "
          f"{FIDELITY['itl_ms']:g} ms between tokens, {FIDELITY['output_tokens']} tokens. Paced capacity: "
          f"{CAPACITY['users']} streams, {CAPACITY['itl_ms']:g} ms gaps, {CAPACITY['output_tokens']} tokens "
          f"(about one chunk per network read). Ingest: {INGEST['users']} streams of {INGEST['output_tokens']:,} "
          f"tokens sent without gaps (many chunks per read). Error = what the client reported minus the "
          f"server's logged truth (positive: late).", "", *lines, "",
          "CPU µs/chunk is the client's CPU time (process tree) per content chunk from its first send to its "
          "last chunk; chunks/s per core is its inverse, the most one process could ingest on this machine."]
    if not peer:
        md += ["", "GuideLLM was not installed for this run (`--install-peers`)."]
    write_section(args.out, "client_fidelity", md)
    print(f"written: {args.out}, {json_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
