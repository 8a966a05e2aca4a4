"""How many requests a second one Locust process sends within 5 ms p99 of their time: a trace's clock beside `rate`.

    .venv/bin/python benchmarks/trace_clock.py            # writes docs/benchmarks.md's section and a JSON

Not part of the test suite. For each rate, `tokenswarm run --url` (the set-up users run, one Locust process, 64
in flight at most) sends 5 s of requests to the reference server (`tokenswarm serve-synthetic`, first token
after 5 ms, 4 tokens 2 ms apart): once as a trace (a Mooncake file, requests evenly spaced) and once as
`rate` with `arrival: constant`. The server logs when each request arrived (its truth file); a request's
lateness is that time against its scheduled time. Both paths in one run of this script, alternating.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from docsection import write_section  # noqa: E402
from refrun import machine, measured_on, reference_server, tokenswarm  # noqa: E402

RATES = (50, 100, 200, 400, 800, 1600)
SECONDS = 5
LIMIT_MS = 5.0


def one_run(folder: Path, rate: float, path: str) -> dict[str, Any]:
    """One `tokenswarm run` of ``path`` ("trace" or "rate") at ``rate``: the server's view of its lateness."""
    folder.mkdir(parents=True)
    n = int(rate * SECONDS)
    if path == "trace":
        trace = folder / "trace.jsonl"
        trace.write_text("".join(json.dumps({"timestamp": round(1000 * k / rate, 3), "input_length": 24,
                                             "output_length": 4, "hash_ids": [k]}) + "\n" for k in range(n)))
        load: dict[str, Any] = {"dataset": "trace", "trace": {"path": str(trace)}}
    else:
        load = {"dataset": "synthetic:20000", "rate": rate, "arrival": "constant", "num_prompts": n, "max_tokens": 4,
                "sampling": {"fixed_output_tokens": 4}}
    with reference_server("--ttft-ms", "5", "--itl-ms", "2", "--truth-file", str(folder / "truth.csv")) as url:
        run = tokenswarm(folder, url, {"users": 64, **load}, timeout_s=300) / "default"
    with open(folder / "truth.csv", newline="") as f:
        arrived = {row["request_id"]: float(row["ts"]) for row in csv.DictReader(f) if row["kind"] == "arrive"}
    records = [json.loads(line) for line in (run / "requests.jsonl").read_text().splitlines()]
    late = np.array([1000 * (arrived[r["request_id"]] - r["scheduled_ts"]) for r in records
                     if r["request_id"] in arrived])
    return {"path": path, "rate": rate, "requests": n, "sent": len(records), "p50_ms": float(np.median(late)),
            "p99_ms": float(np.percentile(late, 99)), "max_ms": float(late.max())}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" /
                        f"trace_clock-{datetime.now(timezone.utc):%Y%m%d}.json")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for rate in RATES:
            for path in ("trace", "rate"):
                row = one_run(Path(tmp) / f"{path}-{rate}", rate, path)
                rows.append(row)
                print(f"{path:>5} {rate:>4} req/s: {row['sent']}/{row['requests']} sent, arrival − schedule "
                      f"p50 {row['p50_ms']:.2f} ms, p99 {row['p99_ms']:.2f} ms, max {row['max_ms']:.2f} ms", flush=True)
    best = {path: max((r["rate"] for r in rows if r["path"] == path and r["p99_ms"] <= LIMIT_MS), default=None)
            for path in ("trace", "rate")}
    result = {"rows": rows, "within_5ms_p99": best, **machine()}
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"one process keeps p99 within {LIMIT_MS:g} ms up to: trace {best['trace']} req/s, rate {best['rate']} req/s")
    lines = ["| path | req/s | sent | p50 | p99 | max |", "|---|---|---|---|---|---|"]
    lines += [f"| {r['path']} | {r['rate']} | {r['sent']}/{r['requests']} | {r['p50_ms']:.2f} ms | {r['p99_ms']:.2f} ms "
              f"| {r['max_ms']:.2f} ms |" for r in rows]
    lines += ["", f"Within {LIMIT_MS:g} ms p99 (of those tried): a trace's clock up to {best['trace']} req/s, `rate` up "
                  f"to {best['rate']} req/s; {measured_on(result, args.out)}."]
    write_section(ROOT / "docs" / "benchmarks.md", "trace_clock", lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
