"""How many probes, and how long, `tokenswarm capacity` takes to find a capacity that is known.

    .venv/bin/python benchmarks/capacity_search.py            # writes docs/benchmarks.md and a JSON

Not part of the test suite. The reference server (`tokenswarm serve-synthetic --slots N --queue`) serves
at most N streams at once and queues the rest; a stream holds its slot for TTFT + 15 gaps (16 tokens),
so N users see a TTFT of `--ttft-ms` and N + 1 keep one request waiting a whole stream more. Under a
TTFT limit between the two, the capacity is exactly N users. For each N the script runs the command a
user runs, over AIPerf's range [1, 1000] at 5 % precision, and records the answer, the probes and the
wall time to the answer (the search's own clock, warm-up and Locust starts included). It also counts,
without a server, the probes the search's rule takes for every capacity from 1 to 1000, beside the
rule the issue first proposed (grow ×2 from the low end until a probe fails, then bisect).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from docsection import write_results  # noqa: E402
from refrun import reference_server, tokenswarm  # noqa: E402

from orchestrate.scenario.search import boundary, converged, next_probe  # noqa: E402
from orchestrate.scenario.spec import Search  # noqa: E402

CAPACITIES = (3, 20, 90, 400)
TIMING = {"ttft_ms": 200, "itl_ms": 50, "max_tokens": 16}
"""A stream holds its slot 200 + 15 × 50 = 950 ms: a queued request's TTFT is at least 1,150 ms."""
TTFT_LIMIT_MS = 600
RANGE = (1, 1000)


def grow_then_bisect(search: Search, history: list[tuple[float, bool]]) -> float | None:
    """The first proposal: ×2 from the low end until a probe fails, then bisect; the boundary confirmed."""
    if not history:
        return search.low
    top, bottom = boundary(history)
    if bottom is None:
        return None if top is None or top >= search.high else min(math.ceil(top * 2), search.high)
    if top is None:
        return None
    if not converged(search, top, bottom):
        return float(math.floor((top + bottom) / 2))
    probed = [v for v, _ in history]
    return next((v for v in (top, bottom) if probed.count(v) < 2), None)


def probes_for(rule: Callable[[Search, list[tuple[float, bool]]], float | None], capacity: int) -> int:
    search, history = Search("users", *RANGE), []
    while (value := rule(search, history)) is not None:
        history.append((value, value <= capacity))
    return len(history)


def simulated() -> dict[str, Any]:
    """Probes per capacity 1..999 for both rules: a server that passes exactly up to its capacity."""
    out = {}
    for name, rule in (("log_bisection", next_probe), ("grow_then_bisect", grow_then_bisect)):
        counts = [probes_for(rule, c) for c in range(1, RANGE[1])]
        out[name] = {"mean": statistics.mean(counts), "min": min(counts), "max": max(counts)}
    return out


def measure(capacity: int, work: Path) -> dict[str, Any]:
    """One `tokenswarm capacity` run against a reference server with ``capacity`` slots."""
    started = time.monotonic()
    with reference_server("--slots", str(capacity), "--queue", "--ttft-ms", str(TIMING["ttft_ms"]), "--itl-ms",
                          str(TIMING["itl_ms"])) as url:
        run = tokenswarm(work / f"n{capacity}", url, None, "--slo", f"ttft_ms={TTFT_LIMIT_MS}", "--range",
                         f"{RANGE[0]},{RANGE[1]}", "--dataset", "synthetic:20000", "--max-tokens",
                         str(TIMING["max_tokens"]), command="capacity")
    wall = time.monotonic() - started
    summary = json.loads((run / "default" / "summary.json").read_text())
    found = summary["capacity"]
    return {"capacity": capacity, "max_passing": found["max_passing"], "min_failing": found["min_failing"],
            "probes": len(found["probes"]), "stopped_early": sum(p["stopped_early"] for p in found["probes"]),
            "values": [p["value"] for p in found["probes"]], "search_wall_s": found["wall_s"],
            "command_wall_s": wall, "sentence": found["sentence"]}


def doc_lines(data: dict[str, Any]) -> list[str]:
    sim = data["simulated"]
    lines = [f"Measured {data['measured_at']} on {data['host']}; command: `.venv/bin/python benchmarks/capacity_search.py` "
             f"(raw figures: `{data['json']}`).", "",
             f"Each row is one `tokenswarm capacity --url URL --slo ttft_ms={TTFT_LIMIT_MS} --range 1,1000` against "
             f"`serve-synthetic --slots N --queue` (TTFT {TIMING['ttft_ms']} ms, {TIMING['itl_ms']} ms between "
             f"{TIMING['max_tokens']} tokens: capacity exactly N users), precision 5 %, attainment 99 %, the boundary "
             "probed twice. Wall time is the search's own, from its warm-up to its last probe.", "",
             "| capacity N | found | lowest failing | probes | stopped early | wall time to the answer | probes run |",
             "|---|---|---|---|---|---|---|"]
    for row in data["runs"]:
        lines.append(f"| {row['capacity']} | {row['max_passing']:g} | {row['min_failing']:g} | {row['probes']} | "
                     f"{row['stopped_early']} | {row['search_wall_s']:.0f} s | "
                     + ", ".join(f"{v:g}" for v in row["values"]) + " |")
    lines += ["", "Probes per search, counted without a server for every capacity from 1 to 999 over [1, 1000] "
              "(5 %, the boundary's two loads probed twice):", "",
              "| rule | mean | min | max |", "|---|---|---|---|"]
    for name, label in (("log_bisection", "tokenswarm: bisection in log space"),
                        ("grow_then_bisect", "grow ×2 from the low end, then bisect")):
        lines.append(f"| {label} | {sim[name]['mean']:.1f} | {sim[name]['min']} | {sim[name]['max']} |")
    lines.append("| NVIDIA AIPerf `max-concurrency-under-sla` (published) | | 13 | 25 |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks.md")
    parser.add_argument("--capacities", type=int, nargs="+", default=list(CAPACITIES))
    args = parser.parse_args()
    now = datetime.now(timezone.utc)
    data: dict[str, Any] = {"measured_at": now.strftime("%Y-%m-%d %H:%M UTC"),
                            "host": f"{platform.node()} {platform.machine()}, {len(os.sched_getaffinity(0))} cores",
                            "simulated": simulated(), "runs": []}
    print("simulated:", json.dumps(data["simulated"]), flush=True)
    with tempfile.TemporaryDirectory(prefix="capacity-bench-") as tmp:
        for capacity in args.capacities:
            row = measure(capacity, Path(tmp))
            print(f"N={capacity}: found {row['max_passing']} (failing {row['min_failing']}) in {row['probes']} probes, "
                  f"{row['search_wall_s']:.0f} s: {row['values']}", flush=True)
            data["runs"].append(row)
    write_results("capacity_search", data, args.out, doc_lines)


if __name__ == "__main__":
    main()
