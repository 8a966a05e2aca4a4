"""Peak memory of a ~1 GB ShareGPT file: the streamed index (`load_sharegpt`) vs one `json.load`.

    .venv/bin/python benchmarks/dataset_memory.py --gb 1

Not part of the test suite. Writes a ~1 GB ShareGPT-format file in a temporary folder from
`orchestrate.standins.sharegpt_synth` (20,000 generated conversations, repeated with fresh ids: generating
1 GB outright takes minutes), then runs each way in its own interpreter and reads that
interpreter's peak RSS (`ru_maxrss`; `VmHWM` as a cross-check). The file is written by a child
process too: on Linux a child's `ru_maxrss` starts at its parent's size. `baseline` imports
`locustfiles.dataset` only; `new` is `load_sharegpt` + `sample_prompts` of 1000 prompts with
`estimate_tokens`; `old` is what `load_sharegpt` did before (one `json.load`, the same per-entry
validation) + the same sampling, skipped when the machine lacks the memory for it. The two samples
must be identical. Prints a table, writes `benchmarks/dataset_memory-<date>.json` and deletes the
file.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

# Run in a fresh interpreter: argv = [path, way, num_prompts]; prints one JSON line.
CHILD = r"""
import hashlib, json, resource, sys, time
from locustfiles.dataset import SamplingConfig, estimate_tokens, load_sharegpt, sample_prompts
from locustfiles.sharegpt_file import _entry_problem
path, way, num_prompts = sys.argv[1], sys.argv[2], int(sys.argv[3])
out = {"way": way}
t0 = time.perf_counter()
if way != "baseline":
    if way == "new":
        data = load_sharegpt(path)
    else:  # the loader before the streamed index: one json.load, then validate every entry
        with open(path, encoding="utf-8-sig") as f:
            data = json.load(f)
        assert isinstance(data, list) and not any(map(_entry_problem, data))
    t1 = time.perf_counter()
    res = sample_prompts(data, SamplingConfig(num_prompts=num_prompts, seed=0), estimate_tokens)
    t2 = time.perf_counter()
    out.update(entries=len(data), load_s=t1 - t0, sample_s=t2 - t1, prompts=len(res.prompts),
               examined=res.examined, sample_sha256=hashlib.sha256(
                   "\n".join(p.to_json() for p in res.prompts).encode()).hexdigest())
out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
with open("/proc/self/status") as f:  # VmHWM: the same peak, counted from exec only
    out["vm_hwm_mib"] = next(int(l.split()[1]) for l in f if l.startswith("VmHWM:")) / 1024
print(json.dumps(out))
"""


def write_file(path: Path, target_bytes: int, base_conversations: int, seeds: int
               ) -> dict[str, Any]:
    """Write generated conversations, repeated with fresh ids, laid out like ``write_sharegpt``."""
    sys.path.insert(0, str(ROOT))
    from orchestrate.standins.sharegpt_synth import generate_sharegpt

    started = time.perf_counter()
    base = [c for seed in range(seeds) for c in generate_sharegpt(base_conversations, seed=seed)]
    # The same layout as json.dumps(list, indent=2): serialise each conversation once.
    bodies = [json.dumps(c["conversations"], ensure_ascii=False, indent=2).replace("\n", "\n    ")
              for c in base]
    written = copies = entries = 0
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("[\n")
        while written < target_bytes:
            for c, body in zip(base, bodies):
                f.write((",\n" if entries else "") + '  {\n    "id": '
                        + json.dumps(f"{c['id']}-{copies}") + ',\n    "conversations": ' + body
                        + "\n  }")
                entries += 1
            copies += 1
            written = f.tell()
        f.write("\n]\n")
    return {"bytes": path.stat().st_size, "entries": entries, "distinct_conversations": len(base),
            "copies": copies, "write_s": time.perf_counter() - started}


def mem_available() -> int:
    """Bytes the kernel says it can give without swapping (MemAvailable)."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return 0


def run_child(path: Path, way: str, num_prompts: int) -> dict[str, Any]:
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", CHILD, str(path), way, str(num_prompts)],
                          cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{way} failed:\n{proc.stderr}")
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    out["process_wall_s"] = time.perf_counter() - started
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gb", type=float, default=1.0, help="file size in GB (10^9 bytes)")
    parser.add_argument("--num-prompts", type=int, default=1000)
    parser.add_argument("--base-conversations", type=int, default=2500, help="generated per seed")
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--write-only", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.write_only:  # in a child, so this process never grows: a forked child's ru_maxrss
        info = write_file(args.write_only, int(args.gb * 1e9), args.base_conversations, args.seeds)
        print(json.dumps(info))  # starts at its parent's size on Linux
        return 0
    work = Path(tempfile.mkdtemp(prefix="tokenswarm-dataset-memory-"))
    try:
        path = work / "sharegpt.json"
        proc = subprocess.run([sys.executable, __file__, "--gb", str(args.gb),
                               "--base-conversations", str(args.base_conversations),
                               "--seeds", str(args.seeds), "--write-only", str(path)],
                              capture_output=True, text=True, check=True)
        file = json.loads(proc.stdout)
        print(f"wrote {file['bytes'] / 1e9:.2f} GB, {file['entries']:,} conversations "
              f"in {file['write_s']:.0f} s")
        runs = [run_child(path, way, args.num_prompts) for way in ("baseline", "new")]
        need = 6 * file["bytes"]  # json.load took 2.3x the file (2026-11-30); keep a margin
        skipped = None
        if mem_available() >= need:
            runs.append(run_child(path, "old", args.num_prompts))
        else:
            skipped = (f"old way skipped: {mem_available() / 2**30:.1f} GiB available, "
                       f"{need / 2**30:.1f} GiB wanted")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    by_way = {r["way"]: r for r in runs}
    same = (by_way["old"]["sample_sha256"] == by_way["new"]["sample_sha256"]
            if "old" in by_way else None)
    result = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "python": sys.version.split()[0], "cpus": os.cpu_count(),
              "file": file, "num_prompts": args.num_prompts, "runs": runs,
              "identical_samples": same, "note": skipped}
    out = ROOT / "benchmarks" / f"dataset_memory-{datetime.now(timezone.utc):%Y%m%d}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"{'way':10} {'peak RSS MiB':>13} {'VmHWM MiB':>10} {'load s':>8} {'sample s':>9} "
          f"{'process s':>10}")
    for r in runs:
        print(f"{r['way']:10} {r['peak_rss_mib']:13.1f} {r['vm_hwm_mib']:10.1f} "
              f"{r.get('load_s', 0):8.2f} "
              f"{r.get('sample_s', 0):9.2f} {r['process_wall_s']:10.2f}")
    print(f"identical samples: {same}" + (f" ({skipped})" if skipped else ""))
    print(f"written to {out}")
    return 0 if same is not False else 1


if __name__ == "__main__":
    sys.exit(main())
