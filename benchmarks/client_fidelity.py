"""Client fidelity and capacity, side by side on the same reference server and workload.

    .venv/bin/python benchmarks/client_fidelity.py            # writes docs/benchmarks.md and a JSON

Not part of the test suite. The reference server (`tokenswarm serve-synthetic`) runs on one core
and logs the true send time of every chunk; each client runs on the other core:

- tokenswarm's Locust user (`locustfiles/locustfile.py`, FastHttpUser, line-by-line reads);
- a plain Locust `HttpUser` streaming with `requests` (`benchmarks/plain_httpuser.py`);
- GuideLLM (`guidellm run`), when installed in `benchmarks/.peers` (`--install-peers` makes it).

Workloads: the issue's fidelity point (32 streams, TTFT 200 ms, 20 ms gaps, 50 tokens each) and a
capacity point (256 streams, 5 ms gaps). Timing error = the client's figure minus the truth: per
request for the Locust clients (exact), per distribution (p50 vs p50, p99 vs p99) for GuideLLM.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import shutil
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

from orchestrate.calibrate import cores, read_truth, run_step, start_server, stop  # noqa: E402
from orchestrate.summarize import weighted_stats  # noqa: E402

PEERS = ROOT / "benchmarks" / ".peers"
CLIENTS = {"tokenswarm (FastHttpUser)": ROOT / "locustfiles" / "locustfile.py",
           "plain Locust HttpUser + requests": ROOT / "benchmarks" / "plain_httpuser.py"}
FIDELITY = {"users": 32, "itl_ms": 20.0, "ttft_ms": 200.0, "output_tokens": 50, "rounds": 4}
CAPACITY = {"users": 256, "itl_ms": 5.0, "ttft_ms": 50.0, "output_tokens": 200, "rounds": 2}


def pct(values: list[float], p: int) -> float | None:
    """Nearest rank, as every tokenswarm figure (``summarize.weighted_stats``)."""
    stats = weighted_stats(np.asarray(values))
    return None if stats is None else stats[f"p{p}"]


def locust_client(name: str, locustfile: Path, out: Path, server_core: int | None, client_core: int | None
                  ) -> dict[str, Any]:
    rows: dict[str, Any] = {"client": name}
    for label, w in (("fidelity", FIDELITY), ("capacity", CAPACITY)):
        step = run_step(out / f"{label}-{locustfile.stem}", w["users"], w["itl_ms"], w["rounds"], server_core,
                        client_core, locustfile=locustfile, ttft_ms=w["ttft_ms"], output_tokens=w["output_tokens"])
        rows[label] = {"completed": step.completed, "errors": step.errors, "chunks_per_s": step.chunks_per_s,
                       "cpu_pct": step.cpu_pct, "cpu_us_per_chunk": step.cpu_us_per_chunk,
                       "ttft_err_ms": step.ttft_err_ms, "tpot_err_ms": step.tpot_err_ms,
                       "chunk_err_ms": step.chunk_err_ms}
    return rows


def guidellm_client(out: Path, server_core: int | None) -> dict[str, Any] | None:
    exe = PEERS / "bin" / "guidellm"
    if not exe.exists():
        return None
    w = FIDELITY
    d = out / "guidellm"
    d.mkdir(parents=True, exist_ok=True)
    n = w["users"] * w["rounds"]
    (d / "data.json").write_text(json.dumps([{"prompt": f"[req:g{i}] benchmark prompt {i}",
                                             "output_tokens_count": w["output_tokens"]} for i in range(n)]))
    server, url = start_server(d / "truth.csv", w["itl_ms"], w["output_tokens"], server_core, d / "server.log",
                               w["ttft_ms"])
    try:
        subprocess.run([str(exe), "run", "--backend", f"kind=openai_http,target={url}",
                        "--profile", f"kind=concurrent,streams={w['users']}",
                        "--data", f"kind=json_file,path={d / 'data.json'}",
                        "--constraint", f"kind=max_requests,count={n}",
                        "--output", f"kind=json,path={d / 'out.json'}", "--disable-console-interactive"],
                       env={**os.environ, "HF_HUB_OFFLINE": "1"}, capture_output=True, timeout=300)
    finally:
        stop(server)
    result = json.loads((d / "out.json").read_text())["benchmarks"][0]["metrics"]
    arrive: dict[str, float] = {}
    with open(d / "truth.csv", newline="") as f:
        for row in csv.DictReader(f):
            if row["kind"] == "arrive":
                arrive[row["request_id"]] = float(row["ts"])
    chunks, _ = read_truth(d / "truth.csv")
    true_ttft = [(ts[0] - arrive[r]) * 1000 for r, ts in chunks.items() if r in arrive]
    true_tpot = [(ts[-1] - ts[0]) * 1000 / (len(ts) - 1) for ts in chunks.values() if len(ts) > 1]

    def reported(metric: str, p: str) -> float | None:
        try:
            return float(result[metric]["successful"]["percentiles"][p])
        except (KeyError, TypeError):
            return None

    def err(metric: str, p: str, truth: list[float], q: float) -> float | None:
        got, want = reported(metric, p), pct(truth, q)
        return None if got is None or want is None else round(got - want, 2)

    tpot_key = "inter_token_latency_ms" if "inter_token_latency_ms" in result else "time_per_output_token_ms"
    return {"client": "GuideLLM (guidellm run)", "fidelity": {
        "completed": len(chunks), "ttft_err_ms": {"p50": err("time_to_first_token_ms", "p50", true_ttft, 50),
                                                  "p99": err("time_to_first_token_ms", "p99", true_ttft, 99)},
        "tpot_err_ms": {"p50": err(tpot_key, "p50", true_tpot, 50), "p99": err(tpot_key, "p99", true_tpot, 99)},
        "note": "distribution-level error (its p50 vs the truth's p50); GuideLLM's ITL is vLLM's TPOT"}}


def fmt(value: Any, signed: bool = False) -> str:
    if value is None:
        return "–"
    return f"{value:+.2f}" if signed else f"{value:,.0f}" if abs(value) >= 100 else f"{value:.1f}"


def table(rows: list[dict[str, Any]]) -> list[str]:
    lines = ["| client | TTFT err p50 | TTFT err p99 | TPOT err p50 | TPOT err p99 | chunk err p99 | "
             "chunks/s at 256×5 ms | CPU µs/chunk | chunks/s per core |", "|---" * 9 + "|"]
    for r in rows:
        f, c = r.get("fidelity") or {}, r.get("capacity") or {}
        ttft, tpot, chunk = f.get("ttft_err_ms") or {}, f.get("tpot_err_ms") or {}, f.get("chunk_err_ms") or {}
        us = c.get("cpu_us_per_chunk")
        e = lambda v: fmt(v, signed=True)  # noqa: E731
        lines.append(f"| {r['client']} | {e(ttft.get('p50'))} ms | {e(ttft.get('p99'))} ms | "
                     f"{e(tpot.get('p50'))} ms | {e(tpot.get('p99'))} ms | {e(chunk.get('p99'))} ms | "
                     f"{fmt(c.get('chunks_per_s'))} | {fmt(us)} | {fmt(round(1e6 / us) if us else None)} |")
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
    peer = guidellm_client(work, server_core)
    if peer:
        rows.append(peer)
    stamp = datetime.now(timezone.utc)
    data = {"date": stamp.isoformat(timespec="seconds"), "machine": f"{platform.node()} {platform.machine()}, "
            f"{os.cpu_count()} cores, Python {platform.python_version()}", "fidelity_workload": FIDELITY,
            "capacity_workload": CAPACITY, "cores": [server_core, client_core], "rows": rows,
            "wall_s": round(time.time() - started)}
    json_path = ROOT / "benchmarks" / f"client_fidelity-{stamp:%Y%m%d}.json"
    json_path.write_text(json.dumps(data, indent=2) + "\n")
    lines = table(rows)
    print("\n".join(lines))
    md = [f"# Benchmarks: client fidelity and capacity", "",
          f"Measured {stamp:%Y-%m-%d %H:%M} UTC on {data['machine']}; the reference server on core "
          f"{server_core}, each client on core {client_core}, one after another in one run. Command: "
          f"`.venv/bin/python benchmarks/client_fidelity.py --install-peers` (raw figures: `{json_path.name}`).", "",
          f"Fidelity workload: {FIDELITY['users']} streams, TTFT {FIDELITY['ttft_ms']:g} ms, "
          f"{FIDELITY['itl_ms']:g} ms between tokens, {FIDELITY['output_tokens']} tokens. Capacity workload: "
          f"{CAPACITY['users']} streams, {CAPACITY['itl_ms']:g} ms gaps. Error = what the client reported minus "
          f"the server's logged truth (positive: late).", "", *lines, "",
          "CPU µs/chunk is the client process's CPU time per content chunk at the capacity point; chunks/s per "
          "core is its inverse, the most one process could ingest on this machine."]
    if shutil.which("guidellm") is None and not peer:
        md += ["", "GuideLLM was not installed for this run (`--install-peers`)."]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(md) + "\n")
    print(f"written: {args.out}, {json_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
