"""Does a run with ``load.until`` stop with its figures within the asked precision of the truth?

    .venv/bin/python benchmarks/until_precision.py      # writes docs/benchmarks.md's section and a JSON

Not part of the test suite. The reference server (``serve-synthetic --ttft-ms 40 --jitter-ms 20``: first tokens
uniform over 20–60 ms, plus the client's own time) is measured once at length (``TRUTH_PROMPTS`` requests, no
``until``): its steady-state TTFT p50, p99 and decode tok/s are the truth. Then ``RUNS`` runs, each with another
sampling seed, ask ``until: TARGETS`` with the same cap; each must stop by ``until`` (long before its cap) with
every figure within its asked relative half width of the truth. Both in the set-up users run (``tokenswarm run
--url``).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from docsection import write_section  # noqa: E402
from refrun import machine, measured_on, reference_server, tokenswarm  # noqa: E402

TARGETS = {"ttft_ms.p99": 0.05, "ttft_ms.p50": 0.02, "decode_tok_s": 0.02}
TRUTH_PROMPTS = 8000
RUNS = 5
LOAD = {"dataset": "synthetic:20000", "users": 16, "max_tokens": 8, "sampling": {"fixed_output_tokens": 8}}


def steady(run: Path) -> dict[str, Any]:
    """A run's steady-state figures (the targets'), its stop and its request count."""
    summary = json.loads((run / "default" / "summary.json").read_text())
    window = summary["steady_state"]
    return {"ttft_ms.p99": window["ttft_ms"]["p99"], "ttft_ms.p50": window["ttft_ms"]["p50"],
            "decode_tok_s": window["decode_tok_s"], "requests": summary["requests"]["sent"],
            "stopped_by": summary.get("stopped_by"), "until": summary.get("until")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" /
                        f"until_precision-{datetime.now(timezone.utc):%Y%m%d}.json")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp, reference_server("--ttft-ms", "40", "--jitter-ms", "20", "--itl-ms",
                                                                "2") as url:
        truth = steady(tokenswarm(Path(tmp) / "truth", url, {**LOAD, "num_prompts": TRUTH_PROMPTS}))
        print(f"truth ({truth['requests']:,} requests): " + ", ".join(f"{k} {truth[k]:.2f}" for k in TARGETS),
              flush=True)
        for seed in range(1, RUNS + 1):
            found = steady(tokenswarm(Path(tmp) / f"until-{seed}", url, {**LOAD, "num_prompts": TRUTH_PROMPTS,
                                                                        "seed": seed, "until": TARGETS}))
            errors = {k: abs(found[k] - truth[k]) / truth[k] for k in TARGETS}
            row = {"seed": seed, "requests": found["requests"], "stopped_by": found["stopped_by"],
                   **{k: found[k] for k in TARGETS}, **{f"{k}_error": errors[k] for k in TARGETS},
                   "within": all(errors[k] <= TARGETS[k] for k in TARGETS)}
            rows.append(row)
            print(f"seed {seed}: {row['requests']:,} requests, stopped by {row['stopped_by']}; "
                  + ", ".join(f"{k} {found[k]:.2f} ({100 * errors[k]:.1f} % off)" for k in TARGETS), flush=True)
    result = {"targets": TARGETS, "truth": truth, "runs": rows, "cap": TRUTH_PROMPTS, **machine()}
    args.out.write_text(json.dumps(result, indent=1, default=str) + "\n")
    names = list(TARGETS)
    lines = ["| run | requests (cap 8,000) | stopped by | " + " | ".join(f"{k} (±{100 * TARGETS[k]:g} % asked)"
                                                                    for k in names) + " |",
             "|---" * (3 + len(names)) + "|",
             f"| truth | {truth['requests']:,} | {truth['stopped_by']} | "
             + " | ".join(f"{truth[k]:.2f}" for k in names) + " |"]
    lines += [f"| seed {r['seed']} | {r['requests']:,} | {r['stopped_by']} | "
              + " | ".join(f"{r[k]:.2f} ({100 * r[f'{k}_error']:.1f} % off)" for k in names) + " |" for r in rows]
    within = sum(r["within"] for r in rows)
    lines += ["", f"{within} of {len(rows)} runs stopped with every figure within its asked precision of the truth "
                  f"(the errors in brackets are |run − truth| ÷ truth). `tokenswarm run --url` against "
                  f"`serve-synthetic --ttft-ms 40 --jitter-ms 20 --itl-ms 2`, 16 users, 8 output tokens; "
                  f"{measured_on(result, args.out)}."]
    write_section(ROOT / "docs" / "benchmarks.md", "until_precision", lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
