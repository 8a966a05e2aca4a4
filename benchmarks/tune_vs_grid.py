"""What `tokenswarm tune` spends and finds with the climb against the full grid, on the reference server and on the
real llama-server with Gemma 3 270M; then the winners run again to see whether they hold.

    .venv/bin/python benchmarks/tune_vs_grid.py                  # both targets; writes docs/benchmarks.md and a JSON
    .venv/bin/python benchmarks/tune_vs_grid.py --target ref     # the reference server only (about 4 min)

Not part of the test suite. Each tune is the command a user runs (`tokenswarm tune SCENARIO`), timed around the
process. The reference server (`tests.conftest.reference_binary`'s stand-in: `--queue`, a TPOT cost per busy slot
set by the `slot-cost-ms` flag, 8 MiB per slot within 200 MiB) has a capacity the script knows:
min(slots, 1 + (30 - 10) // cost), and 32 slots fail to load. Gemma's is whatever the machine gives: there the
climb (within a budget of server starts) and the grid are each run once, then the climb's winner and the grid's
best each run their capacity search again (a plain `tokenswarm run` of that candidate), and the script says
whether the reruns agree within the search's resolution.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from docsection import write_results  # noqa: E402
from refrun import machine  # noqa: E402

from orchestrate.report.aggregates.tune import within_noise  # noqa: E402
from orchestrate.scenario.spec import Search  # noqa: E402

REF_SPACE = {"parallel": [2, 4, 8, 16, 32], "slot-cost-ms": [1, 2, 5, 10]}


def ref_truth(parallel: int, cost: int) -> int | None:
    return None if parallel * 8 > 200 else min(parallel, 1 + (30 - 10) // cost)


def ref_scenario(folder: Path) -> dict[str, Any]:
    folder.mkdir(parents=True, exist_ok=True)
    binary = folder / "llama-server"
    binary.write_text("#!/bin/sh\nexec " + shlex.join([sys.executable, "-m", "orchestrate.tools.refserver_cli",
                                                       "--queue", "--ttft-ms", "20", "--itl-ms", "10",
                                                       "--slot-memory-mib", "8", "--memory-limit-mib", "200"])
                      + ' "$@"\n')
    binary.chmod(0o755)
    return {"name": "tune-ref", "server": {"launcher": "process", "binary": str(binary), "model": "tiny"},
            "load": {"dataset": "synthetic:3000", "max_tokens": 16}, "slo": {"ttft_ms": 150, "tpot_ms": 30},
            "search": {"range": [1, 32], "settle_s": 0.3, "warmup_prompts": 2}, "tune": {"space": REF_SPACE}}


def gemma_scenario(_: Path) -> dict[str, Any]:
    """``scenarios/gemma3-270m-tune.yaml`` as shipped (its budget: the climb's)."""
    return yaml.safe_load((ROOT / "scenarios" / "gemma3-270m-tune.yaml").read_text())


def tokenswarm(folder: Path, scenario: dict[str, Any], command: str = "tune") -> tuple[Path, float]:
    """Run ``tokenswarm COMMAND`` on the scenario; the run folder and the command's wall time."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "scenario.yaml"
    path.write_text(yaml.safe_dump(scenario, sort_keys=False))  # the space's order is the climb's
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "orchestrate.cli", command, str(path), "--results-dir",
                           str(folder / "results")], capture_output=True, text=True, timeout=3600, cwd=ROOT)
    wall = time.monotonic() - started
    if proc.returncode not in (0, 1):
        sys.exit(f"tokenswarm {command} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return next((folder / "results").iterdir()), wall


def tune(folder: Path, scenario: dict[str, Any], **tune_keys: Any) -> dict[str, Any]:
    run, wall = tokenswarm(folder, {**scenario, "tune": {**scenario["tune"], **tune_keys}})
    result = json.loads((run / "tune_summary.json").read_text())
    best = next((c for c in result["candidates"] if c["name"] == result["best"]), {})
    print(f"  {tune_keys}: best {result['best']} ({best.get('capacity')}), {result['server_starts']} of "
          f"{result['grid']} starts, {wall:.0f} s", flush=True)
    return {"run": run, "best": result["best"], "capacity": best.get("capacity"), "command": result["command"],
            "starts": result["server_starts"], "grid": result["grid"], "wall_s": round(wall, 1),
            "ended": result["ended"],
            "candidates": {c["name"]: {k: c[k] for k in ("state", "capacity", "floor", "wall_s")}
                           for c in result["candidates"]}}


def rerun(folder: Path, scenario: dict[str, Any], run: Path, name: str) -> int | float | None:
    """The candidate's capacity search run again on its own: ``tokenswarm run`` with the flags its tune ran."""
    settings = json.loads((run / name / "summary.json").read_text())["settings"]
    flags = {k.removeprefix("server.flags."): v for k, v in settings.items() if k.startswith("server.flags.")}
    plain = {k: v for k, v in scenario.items() if k != "tune"}
    plain["server"] = {**scenario["server"], "flags": flags}
    again, _ = tokenswarm(folder, plain, command="run")
    capacity = json.loads((again / "default" / "summary.json").read_text())["capacity"]["max_passing"]
    print(f"  rerun {name}: {capacity}", flush=True)
    return capacity


def measure(target: str, folder: Path) -> dict[str, Any]:
    scenario = (ref_scenario if target == "ref" else gemma_scenario)(folder)
    print(f"{target}:", flush=True)
    out: dict[str, Any] = {"space": scenario["tune"]["space"], "slo": scenario["slo"], "search": scenario["search"]}
    out["climb"] = tune(folder / "climb", scenario)
    out["grid"] = tune(folder / "grid", scenario, strategy="grid", budget={})
    if target == "ref":
        truth = {f"parallel-{p}_slot-cost-ms-{c}": ref_truth(p, c) for p in REF_SPACE["parallel"]
                 for c in REF_SPACE["slot-cost-ms"]}
        out["truth_best"] = max(truth.values(), key=lambda v: v or 0)
    else:
        bests = {out[s]["best"]: out[s]["run"] for s in ("climb", "grid") if out[s]["best"]}
        out["reruns"] = {name: rerun(folder / f"rerun-{i}", scenario, run, name)
                         for i, (name, run) in enumerate(bests.items())}
    for strategy in ("climb", "grid"):
        del out[strategy]["run"]  # a temporary folder
    return out


def doc_lines(data: dict[str, Any]) -> list[str]:
    lines = [f"Measured {data['date'][:10]} on {data['machine']} ({data['cpus']} CPUs, {', '.join(data['cpu_flags']) or 'no AVX-512'}"
             "), `tokenswarm tune` as users run it "
             f"(raw figures: `{data['json']}`).", "",
             "| server | strategy | server starts | grid | wall s | best | its capacity |", "|---|---|---|---|---|---|---|"]
    for target, found in data["targets"].items():
        for strategy in ("climb", "grid"):
            r = found[strategy]
            lines.append(f"| {target} | {strategy} | {r['starts']} | {r['grid']} | {r['wall_s']:.0f} | `{r['best']}` | "
                         f"{r['capacity']:g} |")
    for target, found in data["targets"].items():
        if "truth_best" in found:
            lines += ["", f"{target}: the best capacity the grid holds is {found['truth_best']} users by construction."]
        if found.get("reruns"):
            search = Search("users", 1, 2, precision=found["search"].get("precision", 0.05))
            tuned = {found[s]["best"]: found[s]["capacity"] for s in ("climb", "grid")}
            lines += ["", f"{target}: run again on their own, " + "; ".join(
                f"`{n}` served {c:g} users (its tune said {tuned[n]:g}: "
                + ("within" if c is not None and within_noise(search, tuned[n], c) else "outside")
                + " the capacity search's resolution)" for n, c in found["reruns"].items()) + "."]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", choices=("ref", "gemma", "both"), default="both")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks.md")
    args = parser.parse_args()
    data: dict[str, Any] = {**machine(), "targets": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for target in (("ref", "gemma") if args.target == "both" else (args.target,)):
            data["targets"][target] = measure(target, Path(tmp) / target)
    write_results("tune_vs_grid", data, args.out, doc_lines)


if __name__ == "__main__":
    main()
