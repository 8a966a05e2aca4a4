"""What exact prompt lengths cost before a ``dataset: random`` run starts, and how exact they are.

    .venv/bin/python benchmarks/fixed_lengths.py --prompts 200 --lengths 128,512,1024

Not part of the test suite. Starts the real ``llama-server`` (the cached ``make llama-server`` build) with
Gemma 3 270M, then for each input length cuts ``--prompts`` prompts the way ``tokenswarm run`` does
(``orchestrate.load.prompts.prepare_prompts``: the server's ``/tokenize`` and ``/apply-template``),
counting the HTTP calls. Then it sends ``--check`` of them as chat completions with ``max_tokens`` 1 and
compares ``usage.prompt_tokens`` with the length asked for. Prints a table, writes
``benchmarks/fixed_lengths-<date>.json`` and the generated block of ``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.docsection import write_section  # noqa: E402
from orchestrate.load.prompts import prepare_prompts  # noqa: E402
from orchestrate.scenario.spec import LoadSpec, ServerSpec, TokenLength  # noqa: E402
from orchestrate.server.launchers import make_launcher  # noqa: E402
from orchestrate.server.llama_recipe import cached_binary  # noqa: E402
from orchestrate.server.preflight import fetch_facts, session  # noqa: E402


class CountingSession:
    """The pre-flight session, counting the requests it makes."""

    def __init__(self) -> None:
        self.inner, self.calls = session(), 0

    def post(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return self.inner.post(*args, **kwargs)

    def get(self, *args: Any, **kwargs: Any) -> Any:
        return self.inner.get(*args, **kwargs)


def measure(url: str, length: int, prompts: int, check: int, folder: Path) -> dict[str, Any]:
    counting = CountingSession()
    facts = fetch_facts(url, counting.inner)
    load = LoadSpec(dataset="random", num_prompts=prompts, input_tokens=TokenLength.fixed(length),
                    output_tokens=TokenLength.fixed(16), seed=0)
    t0 = time.perf_counter()
    prepared = prepare_prompts(load, facts, url, folder / f"prompts-{length}.jsonl", counting)  # type: ignore[arg-type]
    seconds = time.perf_counter() - t0
    exact = sum(p.prompt_tokens == length for p in prepared.sample.prompts)
    usage = []
    for prompt in prepared.sample.prompts[:check]:
        reply = counting.inner.post(f"{url}/v1/chat/completions", timeout=120,
                                    json={"messages": list(prompt.messages), "max_tokens": 1}).json()
        usage.append(reply["usage"]["prompt_tokens"])
    return {"input_tokens": length, "prompts": prompts, "seconds": round(seconds, 2),
            "ms_per_prompt": round(1000 * seconds / prompts, 1), "calls_per_prompt": round(counting.calls / prompts, 2),
            "exact": exact, "inexact": prepared.inexact, "text": str(prepared.dataset),
            "checked": len(usage), "usage_equals_length": sum(u == length for u in usage),
            "usage_equals_prompt_tokens": sum(u == p.prompt_tokens for u, p in zip(usage, prepared.sample.prompts))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=200)
    parser.add_argument("--lengths", default="128,512,1024")
    parser.add_argument("--check", type=int, default=20, help="prompts sent to compare usage.prompt_tokens")
    args = parser.parse_args()
    binary = cached_binary()
    if binary is None:
        print("no cached llama-server: run `make llama-server` first", file=sys.stderr)
        return 2
    spec = ServerSpec(launcher="process", binary=str(binary), model="gemma-3-270m",
                      flags={"parallel": 2, "ctx-size": 4096, "threads": 2})
    rows = []
    with TemporaryDirectory() as tmp, make_launcher(spec, Path(tmp) / "server.log") as launcher:
        launcher.start()
        launcher.wait_ready(120)
        for length in (int(x) for x in args.lengths.split(",")):
            row = measure(launcher.url or "", length, args.prompts, args.check, Path(tmp))
            rows.append(row)
            print(f"{length:>6} tokens: {row['prompts']} prompts in {row['seconds']} s ({row['ms_per_prompt']} ms, "
                  f"{row['calls_per_prompt']} calls each), {row['exact']} exact; usage = length for "
                  f"{row['usage_equals_length']}/{row['checked']} sent", flush=True)
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    result = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "cpu": cpu,
              "cpus": __import__("os").cpu_count(), "server": "llama-server build 11434, Gemma 3 270M Q4_K_M",
              "rows": rows}
    out = ROOT / "benchmarks" / f"fixed_lengths-{datetime.now(timezone.utc):%Y%m%d}.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    lines = [f"Measured {result['date']} on {cpu} ({result['cpus']} CPUs), {result['server']}, "
             f"`benchmarks/fixed_lengths.py --prompts {args.prompts} --lengths {args.lengths}`:", "",
             "| input tokens | prompts | prepared in | per prompt | HTTP calls per prompt | exact | usage = asked (sent) |",
             "|---|---|---|---|---|---|---|"]
    lines += [f"| {r['input_tokens']:,} | {r['prompts']} | {r['seconds']} s | {r['ms_per_prompt']} ms | "
              f"{r['calls_per_prompt']} | {r['exact']}/{r['prompts']} | {r['usage_equals_length']}/{r['checked']} |"
              for r in rows]
    write_section(ROOT / "docs" / "benchmarks.md", "fixed-lengths", lines)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
