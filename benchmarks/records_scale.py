"""CPU and peak memory of `tokenswarm report` on a run of a million records (issue 14).

    .venv/bin/python benchmarks/records_scale.py                     # 1,000,200 records, ~1.4 GB
    .venv/bin/python benchmarks/records_scale.py --records 100000    # a quick check
    .venv/bin/python benchmarks/records_scale.py --before HEAD~3 --before-records 100000

Not part of the test suite. A child process writes, in a temporary folder, the run folder an hour
at 256 users against a fast server leaves: `requests.jsonl` (records as `RequestRecord.to_json`
writes them: ~64 chunk offsets each, 2 % errors of four classes, the users' last requests cancelled
by the stop, 2 % EOS-only replies, usage and timings fields), `metrics.jsonl` (one sample a second,
counters that agree with the records), Locust's `locust_stats.json`/`.csv` (agreeing too),
`server.json`, `client.json`, the `summary.json` a run leaves and `scenario.yaml`. Then it runs
`tokenswarm report DIR` as a user would: once (it parses `requests.jsonl` and keeps its columns beside it),
then three times more (reading those, as every later report does; the median is quoted), and reads each
child's CPU (user + sys) and peak RSS from `wait4`. This process stays small on purpose: a child's
`ru_maxrss` starts at its parent's size.

`--before REV` also reports, on a smaller folder (`--before-records`), with the code of git
revision REV (`git archive` into a temporary folder, first on PYTHONPATH) and with this tree, one
after the other, and compares the two `summary.json` (every value equal, means to 1e-12). Prints a
table, writes `benchmarks/records_scale-<date>.json` and the `records_scale` block of
`docs/benchmarks.md`.
"""

from __future__ import annotations

import argparse
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

from docsection import write_section

ROOT = Path(__file__).resolve().parents[1]
USERS = 256
HOUR_S = 3600.0
MAX_TOKENS = 104
BLOCK = 20_000
T0 = 1_800_000_000.0
ERROR_CLASSES = (("http_400:exceed_context_size_error", 0.5), ("stream_cut", 0.3), ("timeout", 0.1),
                 ("connection_reset", 0.1))


def generate(folder: Path, n: int, seed: int) -> dict[str, Any]:
    """Write the run folder (``folder/scenario.yaml``, ``folder/v/…``); returns what it holds."""
    import numpy as np

    sys.path.insert(0, str(ROOT))
    from locustfiles.records import CANCELLED, ERROR, OK, RequestRecord

    started = time.perf_counter()
    rng = np.random.default_rng(seed)
    variant = folder / "v"
    variant.mkdir(parents=True)
    sums = {"ok": 0, "errors": 0, "cancelled": 0, "no_content": 0, "ok_prompt": 0, "no_content_prompt": 0,
            "ok_output": 0, "all_output": 0, "all_prefill": 0, "all_cached": 0, "offsets": 0}
    with (variant / "requests.jsonl").open("w", encoding="utf-8") as f:
        for first in range(0, n, BLOCK):
            size = min(BLOCK, n - first)
            index = np.arange(first, first + size)
            end = T0 + HOUR_S * (index + rng.random(size)) / n  # written as they end
            kind = rng.random(size)
            error_class = rng.choice([c for c, _ in ERROR_CLASSES], size, p=[p for _, p in ERROR_CLASSES])
            output = rng.integers(40, MAX_TOKENS + 1, size)
            two_per_chunk = rng.random(size) < 0.05  # speculative decoding's 2 tokens a chunk
            prompt = rng.integers(20, 1025, size)
            cached = np.where(rng.random(size) < 0.1, rng.integers(0, 20, size), 0)
            ttft = (20.0 + rng.gamma(2.0, 60.0, size)).tolist()
            end, kind, error_class = end.tolist(), kind.tolist(), error_class.tolist()
            output, prompt, cached = output.tolist(), prompt.tolist(), cached.tolist()
            lines = []
            for k in range(size):
                i = int(index[k])
                cancelled, eos_only = i >= n - USERS, kind[k] > 0.98
                status = CANCELLED if cancelled else ERROR if kind[k] < 0.02 else OK
                cls = "cancelled" if cancelled else error_class[k] if status == ERROR else None
                out = 1 if eos_only else output[k]
                chunks = 0 if eos_only or cls == "http_400:exceed_context_size_error" else \
                    -(-out // 2) if two_per_chunk[k] else out
                if status != OK and chunks:  # cut part way
                    chunks = int(rng.integers(1, chunks + 1))
                gaps = rng.gamma(4.0, 3.5, chunks) * (rng.random(chunks) > 0.1)  # 1 in 10 shares a read
                gaps[:1] = ttft[k]
                offsets = np.round(np.cumsum(gaps), 4).tolist()
                e2e = (offsets[-1] if offsets else 30.0 + ttft[k]) + 0.5
                rec = RequestRecord(request_id=f"w{i % 4}-{i}", prompt_index=i, worker=f"w{i % 4}",
                                    send_ts=end[k] - e2e / 1000, status=status, error_class=cls,
                                    chunk_offsets_ms=offsets, n_chunks=chunks, max_tokens=MAX_TOKENS,
                                    expected_prompt_tokens=prompt[k])
                if cls == "http_400:exceed_context_size_error":
                    rec.http_status, rec.e2e_ms = 400, 2.0
                    rec.error_detail = f"request ({prompt[k]} tokens) exceeds the context (2048)"
                elif not cancelled:
                    rec.http_status, rec.e2e_ms = 200, e2e
                if offsets:
                    rec.ttft_ms = ttft[k]
                    rec.tokens_per_chunk = (out if status == OK else chunks) / chunks
                if status == OK or (chunks and status == ERROR):
                    pre = int(prompt[k] - cached[k])
                    rec.prompt_tokens, rec.cached_tokens, rec.prefill_tokens = prompt[k], cached[k], pre
                    rec.output_tokens = out if status == OK else chunks
                    rec.output_tokens_source = "usage" if status == OK else "chunks"
                    rec.prompt_ms, rec.predicted_ms = pre * 0.05, rec.output_tokens * 12.0
                if status == OK:
                    rec.finish_reason = "length" if out == MAX_TOKENS else "stop"
                    rec.tpot_ms = (e2e - ttft[k]) / (out - 1) if offsets and out > 1 else None
                    sums["ok"] += 1
                    sums["no_content"] += not offsets
                    sums["ok_prompt" if offsets else "no_content_prompt"] += prompt[k]
                    sums["ok_output"] += out
                elif status == ERROR:
                    rec.error_detail = rec.error_detail or f"{cls} after {chunks} chunks"
                    sums["errors"] += 1
                else:
                    sums["cancelled"] += 1
                sums["all_output"] += rec.output_tokens or 0
                sums["all_prefill"] += rec.prefill_tokens or 0
                sums["all_cached"] += rec.cached_tokens or 0
                sums["offsets"] += len(offsets)
                lines.append(rec.to_json())
            f.write("\n".join(lines) + "\n")
    write_side_files(folder, n, sums)
    return {"records": n, "bytes": (variant / "requests.jsonl").stat().st_size, "chunk_offsets": sums["offsets"],
            "ok": sums["ok"], "errors": sums["errors"], "cancelled": sums["cancelled"],
            "no_content": sums["no_content"], "write_s": round(time.perf_counter() - started, 1)}


def write_side_files(folder: Path, n: int, sums: dict[str, int]) -> None:
    """The other files of a run folder, with counts that agree with the records (a clean run)."""
    variant = folder / "v"
    (folder / "scenario.yaml").write_text("name: records-scale\nvariants:\n- name: v\n")
    end = T0 + HOUR_S
    row = {"num_none_requests": 0, "total_response_time": 0.0, "max_response_time": 0.0, "min_response_time": 0.0,
           "response_times": {}, "num_reqs_per_sec": {}, "num_fail_per_sec": {}, "start_time": T0,
           "last_request_timestamp": end}
    sent = n - sums["cancelled"]
    (variant / "locust_stats.json").write_text(json.dumps([
        {**row, "name": "/v1/chat/completions", "method": "POST", "num_requests": sent,
         "num_failures": sums["errors"], "total_content_length": sums["ok_output"]},
        {**row, "name": "TTFT", "method": "METRIC", "num_requests": sums["ok"] - sums["no_content"],
         "num_failures": 0, "total_content_length": sums["ok_prompt"]},
        {**row, "name": "NO_CONTENT", "method": "METRIC", "num_requests": sums["no_content"], "num_failures": 0,
         "total_content_length": sums["no_content_prompt"]}]))
    (variant / "locust_stats.csv").write_text("Type,Name,Request Count,Failure Count\n"
                                              f"POST,/v1/chat/completions,{sent},{sums['errors']}\n")
    totals = {"prompt_tokens_total": sums["all_prefill"], "prompt_tokens_cached_total": sums["all_cached"],
              "tokens_predicted_total": sums["all_output"]}
    seconds = int(HOUR_S)
    with (variant / "metrics.jsonl").open("w") as f:
        for s in range(seconds + 1):
            counters = {k: float(v * s // seconds) for k, v in totals.items()}
            counters.update(prompt_seconds_total=s * 0.9, tokens_predicted_seconds_total=s * 0.95,
                            requests_processing=float(USERS if s < seconds else 0), requests_deferred=0.0)
            f.write(json.dumps({"t": T0 + s, "elapsed_s": float(s), "server_memory_bytes": 6 << 30,
                                "server_memory_source": "process_tree", "metrics": counters, "metrics_error": None,
                                "host": {"foreign_cpu_pct": 1.0, "steal_pct": 0.0, "server_cpu_pct": 50.0,
                                         "own_cpu_pct": 40.0, "server_processes": "launcher"}}) + "\n")
    (variant / "server.json").write_text(json.dumps({
        "status": "completed", "ready_s": 12.5, "exit_code": None, "cause": None, "hint": None,
        "facts": {"total_slots": USERS, "per_slot_ctx": 2048, "model_id": "model.gguf", "build": "b11434"},
        "launcher": {"kind": "external"}}))
    (variant / "client.json").write_text(json.dumps([
        {"worker": f"w{i}", "duration_s": HOUR_S, "cpu_pct": 60.0,
         "loop_lag_ms": {"p50": 0.2, "p99": 1.5, "max": 9.0, "samples": 3600, "own_p99": 0.8}} for i in range(4)]))
    (variant / "summary.json").write_text(json.dumps({
        "scenario": "records-scale", "variant": "v", "status": "completed", "stopped_by": "time_cap",
        "planned_prompts": n, "settings": {"load.users": USERS, "load.max_tokens": MAX_TOKENS},
        "machine": {"hostname": "bench", "cpu_count": os.cpu_count()}}))


def report(folder: Path, pythonpath: str) -> dict[str, Any]:
    """``tokenswarm report FOLDER``: its CPU seconds, peak RSS and wall time (``wait4`` of the child)."""
    script = Path(sys.executable).with_name("tokenswarm")
    argv = [str(script)] if script.exists() else [sys.executable, "-m", "orchestrate.cli"]
    env = {**os.environ, "PYTHONPATH": pythonpath, "MPLBACKEND": "Agg"}
    started = time.perf_counter()
    proc = subprocess.Popen([*argv, "report", str(folder)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    output = proc.stdout.read().decode() if proc.stdout else ""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - started
    if proc.returncode:
        raise SystemExit(f"tokenswarm report failed ({proc.returncode}):\n{output[-3000:]}")
    return {"cpu_s": round(usage.ru_utime + usage.ru_stime, 1), "user_s": round(usage.ru_utime, 1),
            "sys_s": round(usage.ru_stime, 1), "peak_rss_mib": round(usage.ru_maxrss / 1024),
            "wall_s": round(wall, 1)}


def differences(a: Any, b: Any, path: str = "") -> list[str]:
    """Where two summaries differ: every value equal, floats to a relative 1e-12 (sums in another order)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b)) for d in differences(a.get(k), b.get(k), f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{path}[{i}]")]
    if isinstance(a, float) and isinstance(b, float):
        return [] if a == b or abs(a - b) <= 1e-12 * max(abs(a), abs(b)) else [path]
    return [] if a == b else [path]


OUTPUTS = ("summary.json", "vllm_bench.json")
AGAIN = 3
"""Later reports measured (the median is quoted: this VM's CPU time varies by a second from run to run)."""


def compare(folder: Path) -> dict[str, list[str]]:
    """Each output of the run before (``NAME.before``) against now; in a child, as the files are large."""
    proc = subprocess.run([sys.executable, __file__, "--compare-only", str(folder)], capture_output=True,
                          text=True, check=True)
    return json.loads(proc.stdout)


def compare_files(folder: Path) -> dict[str, list[str]]:
    """Before vs now, file by file; ``vllm_bench.json``'s per-request lists only where both wrote them (vLLM's
    ``--save-detailed`` lists, written since only when asked for)."""
    sys.path.insert(0, str(ROOT))
    from orchestrate.report.vllm_format import DETAILED

    variant, found = folder / "v", {}
    for name in OUTPUTS:
        before, after = (json.loads((variant / f"{name}.before").read_text()),
                         json.loads((variant / name).read_text()))
        if name == "vllm_bench.json":
            before = {k: v for k, v in before.items() if k not in DETAILED or k in after}
        found[name] = differences(before, after)
    return found


def measure(work: Path, n: int, seed: int, before: Path | None) -> dict[str, Any]:
    """Generate a folder of ``n`` records (in a child), report it with this tree (and ``before``)."""
    folder = work / f"run-{n}"
    proc = subprocess.run([sys.executable, __file__, "--generate-only", str(folder), "--records", str(n),
                           "--seed", str(seed)], capture_output=True, text=True, check=True)
    out: dict[str, Any] = {"file": json.loads(proc.stdout)}
    print(f"wrote {out['file']['records']:,} records, {out['file']['bytes'] / 1e9:.2f} GB, "
          f"{out['file']['chunk_offsets']:,} chunk offsets in {out['file']['write_s']:.0f} s", flush=True)
    if before is not None:
        out["before"] = report(folder, str(before))
        for name in OUTPUTS:  # a copy: the summary.json left in place is the one a rerun keeps keys from
            shutil.copy(folder / "v" / name, folder / "v" / f"{name}.before")
    out["after"] = report(folder, str(ROOT))  # parses requests.jsonl, keeps its columns
    if before is not None:
        out["differences"] = compare(folder)
    agains = sorted((report(folder, str(ROOT)) for _ in range(AGAIN)), key=lambda r: r["cpu_s"])
    out["again"] = {**agains[AGAIN // 2], "cpu_s_each": [r["cpu_s"] for r in agains]}  # the median of three
    out["kept_bytes"] = sum((folder / "v" / name).stat().st_size
                            for name in ("requests.columns.parquet", "requests.offsets.f64"))
    new = json.loads((folder / "v" / "summary.json").read_text())
    out["summary"] = {"requests": new["requests"], "latency_ms": new["latency_ms"],
                      "crosscheck_agrees": new["crosscheck_agrees"],
                      "server_metrics_agree": new["server_metrics"]["agrees_with_records"],
                      "vllm_bench_bytes": (folder / "v" / "vllm_bench.json").stat().st_size}
    shutil.rmtree(folder)
    return out


def extract(rev: str, into: Path) -> Path:
    """The ``orchestrate`` and ``locustfiles`` packages of git revision ``rev``."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "orchestrate", "locustfiles"],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def doc_lines(data: dict[str, Any]) -> list[str]:
    rows = [(label, m["file"]["records"], m[key]) for m in data["runs"]
            for key, label in (("before", f"before ({data['before_rev']})"),
                               ("after", "this tree, first report (parses, keeps the columns)"),
                               ("again", "this tree, a later report (reads the kept columns; median of 3)"))
            if key in m]
    lines = [f"Measured {data['date']} on {data['machine']}. Command: `{data['command']}` (raw figures: "
             f"`{data['json']}`).", "",
             "`tokenswarm report` on a generated run folder (an hour at 256 users: ~64 chunk offsets a record, "
             "2 % errors, cancelled requests at the stop, EOS-only replies); CPU is user + system of the "
             "process, peak RSS its `ru_maxrss`.", "",
             "| code | records | requests.jsonl | CPU s | peak RSS | wall s |", "|---|---|---|---|---|---|"]
    for label, records, r in rows:
        size = next(m["file"]["bytes"] for m in data["runs"] if m["file"]["records"] == records)
        lines.append(f"| {label} | {records:,} | {size / 1e9:.2f} GB | {r['cpu_s']:.1f} | "
                     f"{r['peak_rss_mib']:,} MiB | {r['wall_s']:.1f} |")
    for m in data["runs"]:
        for name, diff in (m.get("differences") or {}).items():
            lines += ["", f"At {m['file']['records']:,} records, before vs this tree, `{name}`: "
                      + ("every value equal (floats to a relative 1e-12)." if not diff else
                         f"{len(diff)} value(s) differ: " + ", ".join(f"`{d}`" for d in diff[:8])
                         + (" …" if len(diff) > 8 else ""))]
    return lines


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=1_000_200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--before", metavar="REV", help="also measure git revision REV (at --before-records)")
    parser.add_argument("--before-records", type=int, default=100_000)
    parser.add_argument("--doc", type=Path, default=ROOT / "docs" / "benchmarks.md")
    parser.add_argument("--generate-only", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--compare-only", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.generate_only:  # in a child, so that this process stays small
        print(json.dumps(generate(args.generate_only, args.records, args.seed)))
        return 0
    if args.compare_only:
        print(json.dumps(compare_files(args.compare_only)))
        return 0
    work = Path(tempfile.mkdtemp(prefix="tokenswarm-records-scale-"))
    try:
        before = extract(args.before, work / "before") if args.before else None
        runs = []
        if before is not None:
            runs.append(measure(work, args.before_records, args.seed, before))
        if before is None or args.records != args.before_records:
            runs.append(measure(work, args.records, args.seed, None))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    stamp = datetime.now(timezone.utc)
    json_path = ROOT / "benchmarks" / f"records_scale-{stamp:%Y%m%d}.json"
    data = {"date": stamp.strftime("%Y-%m-%d %H:%M UTC"),
            "machine": f"{platform.node()} {platform.machine()}, {os.cpu_count()} cores, "
                       f"Python {platform.python_version()}",
            "command": "python benchmarks/records_scale.py " + " ".join(sys.argv[1:]),
            "json": json_path.name, "before_rev": args.before, "runs": runs}
    json_path.write_text(json.dumps(data, indent=2) + "\n")
    write_section(args.doc, "records_scale", doc_lines(data))
    print(f"{'code':12} {'records':>10} {'CPU s':>7} {'peak MiB':>9} {'wall s':>7}")
    for m in runs:
        for label in ("before", "after", "again"):
            if label in m:
                r = m[label]
                print(f"{label:12} {m['file']['records']:>10,} {r['cpu_s']:7.1f} {r['peak_rss_mib']:9,} "
                      f"{r['wall_s']:7.1f}")
        for name, diff in (m.get("differences") or {}).items():
            print(f"{name} before/after: {len(diff)} value(s) differ {diff[:8]}")
    print(f"written to {json_path} and {args.doc}")
    return 0 if all(not m.get("differences", {}).get("summary.json") for m in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
