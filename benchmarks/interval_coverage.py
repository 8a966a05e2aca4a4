"""Do tokenswarm's 95 % intervals of a percentile contain the truth 95 % of the time?

    .venv/bin/python benchmarks/interval_coverage.py      # writes docs/benchmarks.md's section and a JSON

Not part of the test suite. Two truths:

1. **A known distribution**: TTFT drawn from a log-normal (median 200 ms, σ 0.5), whose p50 and p99 are known
   exactly. ``RESAMPLES`` samples of n requests each get ``orchestrate.report.aggregates.intervals``' interval; the
   share that contains the true value is the coverage.
2. **The reference server**: one ``tokenswarm run --url`` (the set-up users run) of ``POOL`` requests against
   ``serve-synthetic --ttft-ms 40 --jitter-ms 20`` (first tokens uniform over 20–60 ms plus the client's own time).
   The run's own TTFTs are the population, its percentiles the truth; ``RESAMPLES`` draws of n (with replacement)
   from it get their intervals, and the share containing the truth is the coverage.

A side the interval cannot bound (a p99 of too few requests) counts as containing the truth on that side; the
share of intervals bounded on both sides is reported beside the coverage.
"""

from __future__ import annotations

import argparse
import json
import math
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

from orchestrate.report.aggregates.intervals import percentile_interval  # noqa: E402

RESAMPLES = 400
SIZES = (200, 1000)
POOL = 3000
QUANTILES = (0.5, 0.99)
Z99 = 2.3263478740408408
"""The standard normal's 99 % quantile."""


def coverage(draw: Any, truth: dict[float, float], n: int, rng: np.random.Generator) -> dict[str, Any]:
    """Coverage of each quantile's interval over ``RESAMPLES`` samples of ``n`` from ``draw``."""
    hits = {q: 0 for q in QUANTILES}
    bounded = {q: 0 for q in QUANTILES}
    for _ in range(RESAMPLES):
        sample = draw(rng, n)
        for q in QUANTILES:
            found = percentile_interval(sample, q)
            assert found is not None
            low = -math.inf if found.low is None else found.low
            high = math.inf if found.high is None else found.high
            hits[q] += low <= truth[q] <= high
            bounded[q] += found.low is not None and found.high is not None
    return {"n": n, **{f"p{round(100 * q)}_coverage": hits[q] / RESAMPLES for q in QUANTILES},
            **{f"p{round(100 * q)}_bounded": bounded[q] / RESAMPLES for q in QUANTILES}}


def server_ttfts(folder: Path) -> np.ndarray:
    """The TTFTs of one ``tokenswarm run`` of ``POOL`` short requests against the reference server."""
    with reference_server("--ttft-ms", "40", "--jitter-ms", "20", "--itl-ms", "1") as url:
        run = tokenswarm(folder, url, {"dataset": "synthetic:20000", "users": 32, "num_prompts": POOL,
                                       "max_tokens": 2, "sampling": {"fixed_output_tokens": 2}}) / "default"
    records = [json.loads(line) for line in (run / "requests.jsonl").read_text().splitlines()]
    return np.array([r["ttft_ms"] for r in records if r["status"] == "ok" and r["ttft_ms"] is not None])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" /
                        f"interval_coverage-{datetime.now(timezone.utc):%Y%m%d}.json")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    median, sigma = 200.0, 0.5
    truth = {0.5: median, 0.99: median * math.exp(sigma * Z99)}
    rows = [{"truth": "log-normal", **coverage(lambda g, n: g.lognormal(math.log(median), sigma, n), truth, n, rng)}
            for n in SIZES]
    with tempfile.TemporaryDirectory() as tmp:
        pool = server_ttfts(Path(tmp))
    ordered = np.sort(pool)
    server_truth = {q: float(ordered[max(math.ceil(q * ordered.size) - 1, 0)]) for q in QUANTILES}  # nearest rank
    rows += [{"truth": f"reference server ({pool.size} TTFTs)",
              **coverage(lambda g, n: g.choice(pool, n, replace=True), server_truth, n, rng)} for n in SIZES]
    for row in rows:
        print(f"{row['truth']:>36} n={row['n']:>5}: p50 {row['p50_coverage']:.1%} (bounded {row['p50_bounded']:.0%}), "
              f"p99 {row['p99_coverage']:.1%} (bounded {row['p99_bounded']:.0%})", flush=True)
    result = {"rows": rows, "resamples": RESAMPLES, "server_truth_ms": {str(q): v for q, v in server_truth.items()},
              **machine()}
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    lines = ["| truth | n | p50 coverage | p99 coverage | p99 bounded both sides |", "|---|---|---|---|---|"]
    lines += [f"| {r['truth']} | {r['n']:,} | {r['p50_coverage']:.1%} | {r['p99_coverage']:.1%} | "
              f"{r['p99_bounded']:.0%} |" for r in rows]
    lines += ["", f"{RESAMPLES} samples each; 95 % asked. {measured_on(result, args.out)}."]
    write_section(ROOT / "docs" / "benchmarks.md", "interval_coverage", lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
