"""What a full-size trace costs before the load: reading and fitting an hour of requests, and building its prompts.

    .venv/bin/python benchmarks/trace_scale.py            # writes docs/benchmarks.md's section and a JSON

Not part of the test suite. A Mooncake-shaped trace the size of the whole public one (12,031 requests over an
hour, input lengths log-normal around 7k tokens, 30 % of requests opening with an earlier request's blocks) is
written, then: read and fitted (no server; time and peak Python memory), and its first ``--prompts`` requests
built at full length against the embedded llama.cpp server with Gemma 3 270M (the server's counts: the calls
made and the time per prompt).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
import tracemalloc
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from docsection import write_section  # noqa: E402

from orchestrate.load.fixedprompts import Counters  # noqa: E402
from orchestrate.load.prompts import server_counters  # noqa: E402
from orchestrate.load.traces.build import trace_prompts  # noqa: E402
from orchestrate.load.traces.files import read_trace  # noqa: E402
from orchestrate.load.traces.window import fit_trace  # noqa: E402
from orchestrate.scenario.spec import ServerSpec, TraceSpec  # noqa: E402
from orchestrate.server.launchers import make_launcher  # noqa: E402
from orchestrate.server.preflight import fetch_facts, session  # noqa: E402

REQUESTS = 12031
HOUR_MS = 3_600_000


def write_trace(path: Path) -> None:
    rng = random.Random(0)
    rows, recent, next_id = [], [[0]], 1
    for k in range(REQUESTS):
        n = max(1, int(rng.lognormvariate(8.8, 0.6)))
        blocks = -(-n // 512)
        base = rng.choice(recent) if rng.random() < 0.3 else [0]
        ids = list(base[:rng.randint(1, len(base))])[:blocks]
        while len(ids) < blocks:
            ids, next_id = ids + [next_id], next_id + 1
        recent = (recent + [ids])[-200:]
        rows.append({"timestamp": k * HOUR_MS // REQUESTS, "input_length": n, "output_length": rng.randint(10, 800),
                     "hash_ids": ids})
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=60, help="requests built against the server")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" /
                        f"trace_scale-{datetime.now(timezone.utc):%Y%m%d}.json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace.jsonl"
        write_trace(path)
        tracemalloc.start()
        t0 = time.perf_counter()
        trace = read_trace(str(path))
        t1 = time.perf_counter()
        requests, conditions = fit_trace(trace, TraceSpec(str(path)))
        t2 = time.perf_counter()
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        result: dict[str, Any] = {
            "requests": len(requests), "input_median": sorted(r.input_tokens or 0 for r in requests)[len(requests) // 2],
            "blocks": conditions.blocks, "distinct_blocks": conditions.blocks - conditions.blocks_seen_before,
            "read_s": t1 - t0, "fit_s": t2 - t1, "peak_mib": peak / 2**20, "file_mib": path.stat().st_size / 2**20}
        print(f"read {result['read_s']:.2f} s + fit {result['fit_s']:.2f} s for {len(requests):,} requests "
              f"(median {result['input_median']:,} tokens, {result['distinct_blocks']:,} distinct blocks), "
              f"peak {result['peak_mib']:.0f} MiB", flush=True)
        spec = ServerSpec(launcher="embedded", model="gemma-3-270m", flags={"parallel": 1, "ctx-size": 65536,
                                                                            "threads": 2})
        with make_launcher(spec, Path(tmp) / "server.log") as launcher:
            launcher.start()
            launcher.wait_ready(120)
            url = launcher.url or ""
            http = session()
            name, chats, counters = server_counters(url, http, fetch_facts(url, http))
            assert counters is not None, "the embedded server has /tokenize"
            calls = {"text": 0, "prompt": 0, "pieces": 0}

            def counted(kind: str, fn: Any) -> Any:
                def call(text: str) -> Any:
                    calls[kind] += 1
                    return fn(text)
                return call
            counting = Counters(counted("text", counters.text), counted("prompt", counters.prompt),
                                counted("pieces", counters.pieces) if counters.pieces else None)
            first, fitted = fit_trace(trace, TraceSpec(str(path), max_requests=args.prompts))
            t3 = time.perf_counter()
            built = trace_prompts(first, fitted, counting, chats, name, None, 0)
            build_s = time.perf_counter() - t3
    result.update(built_prompts=len(first), build_s=build_s, per_prompt_s=build_s / len(first), calls=calls,
                  inexact=built.inexact, cpus=os.cpu_count(),
                  cpu_flags=sorted({f for f in open("/proc/cpuinfo").read().split() if f in ("avx512f", "amx_tile")}),
                  date=datetime.now(timezone.utc).isoformat(timespec="seconds"))
    print(f"built {len(first)} prompts at full length in {build_s:.1f} s ({result['per_prompt_s']:.2f} s each), "
          f"server calls {calls}, inexact {built.inexact}")
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    write_section(ROOT / "docs" / "benchmarks.md", "trace_scale", [
        f"An hour-long Mooncake-shaped trace of {result['requests']:,} requests (median {result['input_median']:,} "
        f"tokens, {result['distinct_blocks']:,} distinct 512-token blocks): read in {result['read_s']:.2f} s and fitted "
        f"in {result['fit_s']:.2f} s, peak {result['peak_mib']:.0f} MiB of Python memory, no server. Its first "
        f"{len(first)} prompts built at full length against the embedded Gemma 3 270M: {build_s:.1f} s "
        f"({result['per_prompt_s']:.2f} s a prompt), {sum(calls.values())} server calls ({calls['pieces']} /tokenize "
        f"with pieces for the blocks, {calls['prompt']} counts of whole prompts, {calls['text']} of text), "
        f"{built.inexact} not exact; {os.cpu_count()} CPUs, {result['date'][:10]}, `{args.out.name}`."])
    return 0


if __name__ == "__main__":
    sys.exit(main())
