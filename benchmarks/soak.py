"""Soak run: `tokenswarm run` for a long time at many users; worker memory, descriptors, lost records.

    .venv/bin/python benchmarks/soak.py --minutes 10 --users 64

Not part of the test suite. Samples the Locust process every 10 s (RSS, open file descriptors),
then checks that nothing was lost: records == Locust's request count == the server's own count of
generated tokens against the records'. Prints a table and writes `benchmarks/soak-<date>.json`.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import psutil
import yaml

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--users", type=int, default=64)
    parser.add_argument("--max-tokens", type=int, default=64)
    args = parser.parse_args()
    seconds = int(args.minutes * 60)
    work = Path(tempfile.mkdtemp(prefix="tokenswarm-soak-"))
    scenario = work / "soak.yaml"
    scenario.write_text(yaml.safe_dump({
        "name": "soak",
        "server": {"launcher": "embedded", "model": "tiny",
                   "flags": {"parallel": args.users, "ctx-size": args.users * 1024, "threads": 1,
                             "verbosity": 2}},
        "load": {"dataset": "synthetic:20000", "users": args.users, "num_prompts": 1_000_000,
                 "max_tokens": args.max_tokens, "max_seconds": seconds,
                 "sampling": {"max_prompt_tokens": 512, "max_total_tokens": 1024}},
        "variants": [{"name": "soak"}]}))
    proc = subprocess.Popen([sys.executable, "-m", "orchestrate.cli", "run", str(scenario),
                             "--num-prompts", "20000", "--results-dir", str(work / "results")],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    samples = []
    started = time.monotonic()
    while proc.poll() is None:
        time.sleep(10)
        locust = [p for p in psutil.Process(proc.pid).children(recursive=True)
                  if "locust" in " ".join(p.cmdline()) and "embedded_child" not in " ".join(p.cmdline())]
        for p in locust[:1]:
            try:
                samples.append({"t_s": round(time.monotonic() - started), "rss_mb": p.memory_info().rss / 2**20,
                                "fds": p.num_fds()})
            except psutil.Error:
                pass
    variant = next((work / "results").glob("*/soak"))
    summary = json.loads((variant / "summary.json").read_text())
    records = sum(1 for _ in (variant / "requests.jsonl").open())
    steady = [s for s in samples if s["t_s"] >= 60] or samples
    rss = [s["rss_mb"] for s in steady]
    fds = [s["fds"] for s in steady]
    result = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "minutes": args.minutes,
        "users": args.users, "records": records, "locust_requests": summary["locust_crosscheck"]["requests"],
        "completed": summary["requests"]["completed"], "errors": summary["requests"]["errors"],
        "cancelled": summary["requests"]["cancelled"],
        "server_vs_records": summary["server_metrics"].get("vs_records"),
        "rss_mb_first_last_max": [rss[0], rss[-1], max(rss)] if rss else None,
        "rss_growth_pct": 100 * (rss[-1] - rss[0]) / rss[0] if rss else None,
        "fds_first_last_max": [fds[0], fds[-1], max(fds)] if fds else None,
        "decode_tok_s": summary["throughput"]["decode_tok_s"], "samples": samples,
    }
    out = ROOT / "benchmarks" / f"soak-{datetime.now(timezone.utc):%Y%m%d}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    for key in ("minutes", "users", "records", "locust_requests", "completed", "errors", "cancelled",
                "rss_mb_first_last_max", "rss_growth_pct", "fds_first_last_max", "decode_tok_s"):
        print(f"{key:24} {result[key]}")
    print(f"server vs records        {result['server_vs_records']}")
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
