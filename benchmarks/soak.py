"""Soak run: `tokenswarm run` for a long time at many users; memory, descriptors, lost records.

    .venv/bin/python benchmarks/soak.py --minutes 10 --users 64
    .venv/bin/python benchmarks/soak.py --real --minutes 10 --users 32 --max-tokens 128 --num-prompts 360

Not part of the test suite. By default the embedded server with the tiny model; ``--real`` runs the
real ``llama-server`` (``make llama-server``) with Gemma 3 270M and real ShareGPT V3 instead.
Samples the Locust process (and the server process, when it is one of ours) every 10 s (RSS, open
file descriptors), then checks that nothing was lost: records == Locust's request count == the
server's own count of tokens (``/metrics`` deltas) against the records', exactly. Prints a table and
writes `benchmarks/soak-<date>.json` (`soak-real-<date>.json` with ``--real``).

A real run is sized by ``--num-prompts`` (about ``--minutes`` of work), not stopped by a time cap:
requests cut off at a cap are counted by the server but not completed by the client, so the token
counts could not agree exactly. Its time cap (twice ``--minutes``) is only a safety net.
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
from typing import Any

import psutil
import yaml

ROOT = Path(__file__).resolve().parents[1]
SAMPLE_S = 10
STEADY_S = 60
"""Seconds after Locust started (the dataset, the server's start and the pre-flight come before) that
are still start-up (imports, first connections, the server's first allocations), not growth."""


def scenario(args: argparse.Namespace) -> dict[str, Any]:
    """The soak's scenario: the embedded tiny model, or the real server and data (``--real``)."""
    seconds = int(args.minutes * 60)
    if not args.real:
        return {"name": "soak",
                "server": {"launcher": "embedded", "model": "tiny",
                           "flags": {"parallel": args.users, "ctx-size": args.users * 1024, "threads": 1,
                                     "verbosity": 2}},
                "load": {"dataset": "synthetic:20000", "users": args.users, "num_prompts": 1_000_000,
                         "max_tokens": args.max_tokens, "max_seconds": seconds,
                         "sampling": {"max_prompt_tokens": 512, "max_total_tokens": 1024}},
                "variants": [{"name": "soak"}]}
    from orchestrate.server.llama_recipe import cached_binary
    binary = cached_binary()
    if binary is None:
        sys.exit("soak --real: no llama-server built; run `make llama-server` first")
    return {"name": "soak",
            "server": {"launcher": "process", "binary": str(binary), "model": "gemma-3-270m",
                       "flags": {"parallel": args.users, "ctx-size": args.users * 2048, "threads": 1},
                       "ready_timeout_s": 120},
            "load": {"dataset": "sharegpt-v3", "allow_truncated": True, "users": args.users,
                     "num_prompts": args.num_prompts, "max_tokens": args.max_tokens, "max_seconds": 2 * seconds,
                     "seed": 1},
            "variants": [{"name": "soak"}]}


def sample(root: psutil.Process, started: float) -> dict[str, Any]:
    """RSS (MB) and open descriptors of the Locust process and of a server process started by the run."""
    out: dict[str, Any] = {"t_s": round(time.monotonic() - started)}
    for p in root.children(recursive=True):
        try:
            line = " ".join(p.cmdline())
            role = ("locust" if "-m locust" in line else
                    "server" if "llama-server" in line or "embedded_child" in line else None)
            if role and f"{role}_rss_mb" not in out:
                out[f"{role}_rss_mb"], out[f"{role}_fds"] = p.memory_info().rss / 2**20, p.num_fds()
        except psutil.Error:
            pass
    return out


def first_last_max(samples: list[dict[str, Any]], key: str) -> list[float] | None:
    """First steady value (``STEADY_S`` after Locust started), the last, and the maximum of one figure."""
    start = next((s["t_s"] for s in samples if "locust_rss_mb" in s), None)
    if start is None:
        return None
    during = [s for s in samples if key in s and s["t_s"] >= start]
    steady = [s for s in during if s["t_s"] >= start + STEADY_S] or during
    return [steady[0][key], steady[-1][key], max(s[key] for s in steady)] if steady else None


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--users", type=int, default=64)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--real", action="store_true",
                        help="the real llama-server with Gemma 3 270M and ShareGPT V3 (one slot a user)")
    parser.add_argument("--num-prompts", type=int, default=360,
                        help="--real: requests to send (360 took 9.8 min at 32 users, max_tokens 128, "
                             "on a shared 2-core host)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tokenswarm-soak-"))
    (work / "soak.yaml").write_text(yaml.safe_dump(scenario(args)))
    cmd = [sys.executable, "-m", "orchestrate.cli", "run", str(work / "soak.yaml"), "--results-dir", str(work / "results")]
    if not args.real:
        cmd += ["--num-prompts", "20000"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    root, started = psutil.Process(proc.pid), time.monotonic()
    samples = []
    while proc.poll() is None:
        time.sleep(SAMPLE_S)
        samples.append(sample(root, started))
    variant = next((work / "results").glob("*/soak"))
    summary = json.loads((variant / "summary.json").read_text())
    records = sum(1 for _ in (variant / "requests.jsonl").open())
    server = summary["server_metrics"].get("vs_records") or {}
    result = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "real": args.real,
        "minutes": args.minutes, "users": args.users, "max_tokens": args.max_tokens,
        "status": summary["status"], "stopped_by": summary.get("stopped_by"),
        "duration_s": summary["duration_s"],
        "records": records, "locust_requests": summary["locust_crosscheck"]["requests"],
        "completed": summary["requests"]["completed"], "errors": summary["requests"]["errors"],
        "cancelled": summary["requests"]["cancelled"], "server_vs_records": server,
        "exact": bool(server) and records == summary["locust_crosscheck"]["requests"]
        and all(c["diff"] == 0 for c in server.values()),
        "decode_tok_s": summary["throughput"]["decode_tok_s"],
        "prefill_tok_s": summary["throughput"]["prefill_tok_s"],
        **{f"{key}_first_last_max": first_last_max(samples, key)
           for key in ("locust_rss_mb", "locust_fds", "server_rss_mb", "server_fds")},
        "samples": samples, "results": str(variant),
    }
    rss = result["locust_rss_mb_first_last_max"]
    result["locust_rss_growth_pct"] = 100 * (rss[1] - rss[0]) / rss[0] if rss else None
    out = ROOT / "benchmarks" / f"soak{'-real' if args.real else ''}-{datetime.now(timezone.utc):%Y%m%d}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    for key, value in result.items():
        if key not in ("samples", "server_vs_records"):
            print(f"{key:32} {value}")
    for name, c in server.items():
        print(f"server vs records: {name:15} {c['server']} vs {c['records']} (diff {c['diff']})")
    print(f"written to {out}")
    return 0 if result["exact"] else 1


if __name__ == "__main__":
    sys.exit(main())
