"""TTFT fidelity as users run it: `tokenswarm run --url` (sampler, liveness watch, progress and all)
against the reference server, each request matched to the server's own log by its X-Request-Id.

    .venv/bin/python benchmarks/fidelity_run.py            # writes docs/benchmarks.md and a JSON

Not part of the test suite. The reference server (`tokenswarm serve-synthetic`) runs on one core and
logs when each request arrived and when it sent each chunk; `tokenswarm run` (the orchestrator and
its Locust process) runs on the other. The workload is the fidelity point: 32 users, TTFT 200 ms,
20 ms between tokens, 50 tokens, 300 prompts. Per request, the TTFT error is what tokenswarm
recorded minus the server's truth (first content chunk sent − request arrived): everything the
client adds, the loopback both ways included. The same workload then runs through the bare Locust
harness that `client_fidelity.py` uses (`calibrate.run_step`), in the same run, for comparison.
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
import yaml  # noqa: E402
from docsection import write_section  # noqa: E402

from orchestrate.report.aggregates.stats import weighted_stats  # noqa: E402
from orchestrate.tools.calibrate import cores, pin, run_step, start_server, stop_server  # noqa: E402

WORKLOAD = {"users": 32, "ttft_ms": 200.0, "itl_ms": 20.0, "output_tokens": 50, "prompts": 300}
TARGET = {"p50": 0.5, "p99": 2.0}


def truth(path: Path) -> tuple[dict[str, tuple[float, float]], list[float]]:
    """request id → (arrived, first content chunk sent), wall-clock seconds; and the server's own
    lateness (content chunk sent − due, ms): how late its loop runs, which a request's arrival meets too."""
    arrive: dict[str, float] = {}
    first: dict[str, float] = {}
    late: list[float] = []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            rid = row["request_id"]
            if row["kind"] == "arrive":
                arrive[rid] = float(row["ts"])
            elif row["kind"] == "content":
                late.append((float(row["ts"]) - float(row["scheduled_ts"])) * 1000.0)
                first.setdefault(rid, float(row["ts"]))
    return {rid: (arrive[rid], first[rid]) for rid in first if rid in arrive}, late


def stats(values: list[float]) -> dict[str, float] | None:
    found = weighted_stats(np.asarray(values))
    return None if found is None else {k: round(v, 3) for k, v in found.items()}


def through_run(work: Path, server_core: int | None, client_core: int | None) -> dict[str, Any]:
    """One `tokenswarm run --url` of the workload; its records matched to the truth by request id."""
    w = WORKLOAD
    work.mkdir(parents=True, exist_ok=True)
    scenario = work / "fidelity.yaml"
    scenario.write_text(yaml.safe_dump({
        "name": "fidelity",
        "load": {"dataset": f"synthetic:{w['prompts'] * 2}", "users": w["users"], "num_prompts": w["prompts"],
                 "max_tokens": w["output_tokens"], "sampling": {"fixed_output_tokens": w["output_tokens"]}},
        "variants": [{"name": "v"}]}))
    server, url = start_server(work / "truth.csv", w["itl_ms"], w["output_tokens"], server_core,
                               work / "server.log", w["ttft_ms"])
    started = time.monotonic()
    try:
        proc = subprocess.run([sys.executable, "-m", "orchestrate.cli", "run", str(scenario), "--url", url,
                               "--results-dir", str(work / "results"), "--foreign-cpu-limit", "100"],
                              capture_output=True, text=True, preexec_fn=pin(client_core), timeout=600)
    finally:
        stop_server(server)
    wall = time.monotonic() - started
    if proc.returncode != 0:
        raise SystemExit(f"tokenswarm run failed ({proc.returncode}):\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    variant = next((work / "results").glob("*/v"))
    summary = json.loads((variant / "summary.json").read_text())
    return {"set_up": "tokenswarm run --url (orchestrator, sampler, liveness watch, progress; one Locust process)",
            "wall_s": round(wall, 1), **matched(variant / "requests.jsonl", work / "truth.csv"),
            "connections": summary.get("connections"), "client": summary.get("client")}


def matched(records_path: Path, truth_path: Path) -> dict[str, Any]:
    """Per-request TTFT error against the server's truth, all requests and split by connection, and
    split in two: up (request handed to the kernel → the server's arrival stamp: the loopback and the
    server's own loop) and down (the server's send of the first chunk → the client's stamp of it)."""
    records = [json.loads(line) for line in records_path.read_text().splitlines() if line.strip()]
    known, server_late = truth(truth_path)
    first, reused, up, down, unmatched = [], [], [], [], 0
    for rec in records:
        if rec["status"] != "ok" or rec.get("ttft_ms") is None or rec["request_id"] not in known:
            unmatched += 1
            continue
        arrived, sent = known[rec["request_id"]]
        error = rec["ttft_ms"] - (sent - arrived) * 1000.0
        (first if rec.get("connect_ms") is not None and not rec.get("reconnect") else reused).append(error)
        up.append((arrived - rec["send_ts"]) * 1000.0)  # the same host's clock: wall times compare
        down.append((rec["send_ts"] + rec["ttft_ms"] / 1000.0 - sent) * 1000.0)
    return {"requests": len(records), "unmatched": unmatched,
            "ttft_err_ms": {"all": stats(first + reused), "reused_connection": stats(reused),
                            "first_request_of_a_user": stats(first), "up": stats(up), "down": stats(down)},
            "n": {"reused_connection": len(reused), "first_request_of_a_user": len(first)},
            "server_lateness_ms": stats(server_late)}


def bare_harness(work: Path, server_core: int | None, client_core: int | None) -> dict[str, Any]:
    """The same workload through the bare Locust harness (`calibrate.run_step`: locust alone, no orchestrator)."""
    w = WORKLOAD
    run_step(work, w["users"], w["itl_ms"], w["prompts"] // w["users"], server_core, client_core,
             ttft_ms=w["ttft_ms"], output_tokens=w["output_tokens"])
    step = next(work.glob("u*"))
    return {"set_up": "bare harness: locust -f locustfiles/locustfile.py alone (calibrate.run_step)",
            **matched(step / "requests.jsonl", step / "truth.csv")}


def fmt(stats_: dict[str, float] | None, key: str) -> str:
    return "–" if not stats_ else f"{stats_[key]:+.2f} ms"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks.md")
    parser.add_argument("--repeats", type=int, default=3, help="runs of `tokenswarm run` (the spread is the noise)")
    args = parser.parse_args()
    server_core, client_core = cores()
    work = Path(tempfile.mkdtemp(prefix="tokenswarm-fidelity-"))
    runs = [through_run(work / f"run-{i}", server_core, client_core) for i in range(args.repeats)]
    bare = bare_harness(work / "bare", server_core, client_core)
    stamp = datetime.now(timezone.utc)
    data = {"date": stamp.isoformat(timespec="seconds"), "machine": f"{platform.node()} {platform.machine()}, "
            f"{os.cpu_count()} cores, Python {platform.python_version()}", "workload": WORKLOAD,
            "cores": [server_core, client_core], "target_ms": TARGET, "through_run": runs, "bare": bare}
    json_path = ROOT / "benchmarks" / f"fidelity_run-{stamp:%Y%m%d}.json"
    json_path.write_text(json.dumps(data, indent=2) + "\n")
    lines = [f"Measured {stamp:%Y-%m-%d %H:%M} UTC on {data['machine']}; the reference server on core {server_core}, "
             f"the client on core {client_core} (`tokenswarm run --url`: the orchestrator and its Locust process "
             f"together). Command: `.venv/bin/python benchmarks/fidelity_run.py` (raw figures: `{json_path.name}`).", "",
             f"Workload: {WORKLOAD['users']} users, TTFT {WORKLOAD['ttft_ms']:g} ms, {WORKLOAD['itl_ms']:g} ms between "
             f"tokens, {WORKLOAD['output_tokens']} tokens, {WORKLOAD['prompts']} prompts. Error = the TTFT the client "
             "recorded − the server's truth for that request (first content chunk sent − request arrived), matched "
             "by X-Request-Id: everything the client adds, loopback both ways included. Target: "
             f"≤ {TARGET['p50']} ms p50, ≤ {TARGET['p99']} ms p99 over all requests.", "",
             "| set-up | requests | TTFT err p50 | p99 | max | up p50 / p99 | down p50 / p99 | server late p99 |",
             "|---|---|---|---|---|---|---|---|"]
    labelled = [(f"`tokenswarm run --url` #{i + 1}", r) for i, r in enumerate(runs)]
    for label, result in (*labelled, ("bare Locust harness (`calibrate.run_step`)", bare)):
        err, n = result["ttft_err_ms"], result["n"]
        for part, name in (("all", "all requests"), ("reused_connection", "reused connection"),
                           ("first_request_of_a_user", "a user's first request")):
            count = n["reused_connection"] + n["first_request_of_a_user"] if part == "all" else n[part]
            split = (f"{fmt(err['up'], 'p50')} / {fmt(err['up'], 'p99')} | {fmt(err['down'], 'p50')} / "
                     f"{fmt(err['down'], 'p99')} | {fmt(result['server_lateness_ms'], 'p99')}") if part == "all" \
                else "| |"
            lines.append(f"| {label}, {name} | {count} | {fmt(err[part], 'p50')} | {fmt(err[part], 'p99')} | "
                         f"{fmt(err[part], 'max')} | {split} |")
    write_section(args.out, "fidelity_run", lines)
    print("\n".join(lines))
    print(f"\nwritten: {json_path} and {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
