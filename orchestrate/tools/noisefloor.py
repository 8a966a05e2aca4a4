"""``tokenswarm noise-floor``: how far apart two identical runs land on this host, the smallest effect it can show.

Stage: tools, beside the pipeline (it runs the pipeline). One variant of a scenario runs ``--repeats``
times (2 by default) as any run does; every pair of its runs gives a ratio per metric, and the floor of
a metric is the largest deviation from 1.0 among them (``repeats.deviation``). It is saved for this host
(``repeats.host_floor_file``): every later run here copies it into its folder, and its ``compare.md``
judges effects against it.
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from orchestrate.errors import ScenarioError
from orchestrate.load.locust_run import Swarm
from orchestrate.report.compare import EFFECT_METRICS, compare, read_variants
from orchestrate.report.compare_report import write_comparison
from orchestrate.report.repeats import NOISE_FLOOR_JSON, deviation, host_floor_file
from orchestrate.runloop import run_scenario
from orchestrate.scenario.spec import Scenario


def floor_of(pairs: list[dict[str, Any]]) -> dict[str, float | None]:
    """Per metric, the largest deviation from 1.0 among the ratios of identical runs."""
    out: dict[str, float | None] = {}
    for key, _ in EFFECT_METRICS:
        found = [r["ratios"][key] for r in pairs if r["ratios"].get(key)]
        out[key] = max((deviation(r) for r in found), default=None)
    return out


def measure(scenario: Scenario, variant: str | None, results_root: Path, swarm: Swarm = Swarm()) -> dict[str, Any]:
    """Run one variant ``scenario.repeats`` times; returns (and saves) the noise floor record."""
    chosen = scenario.variants[0] if variant is None else next((v for v in scenario.variants if v.name == variant),
                                                              None)
    if chosen is None:
        raise ScenarioError(f"--variant {variant}: no such variant in {scenario.path}; available: "
                            + ", ".join(v.name for v in scenario.variants))
    run = run_scenario(replace(scenario, name=f"{scenario.name}-noise-floor", variants=(chosen,)), results_root, swarm)
    variants = read_variants([run])
    data = compare(variants)
    done = [v for v in variants if v.status == "completed"]
    if len(done) < 2:
        raise ScenarioError(f"noise-floor: only {len(done)} of {scenario.repeats} runs of {chosen.name} completed "
                            f"(see {run}); nothing to measure")
    record = {"host": socket.gethostname(), "cpu_count": os.cpu_count(),
              "measured_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
              "scenario": str(scenario.path), "variant": chosen.name, "runs": len(done), "run": str(run),
              "pairs": data["repeats"], "floor": floor_of(data["repeats"]),
              "busy_runs": [v.label for v in done if v.host and v.host.busy]}
    text = json.dumps(record, indent=2) + "\n"
    (run / NOISE_FLOOR_JSON).write_text(text)
    host_floor_file().parent.mkdir(parents=True, exist_ok=True)
    host_floor_file().write_text(text)
    write_comparison([run])  # now judged against the floor it measured
    return record


def describe(record: dict[str, Any]) -> list[str]:
    """What a person reads at the end of ``tokenswarm noise-floor``."""
    labels = dict(EFFECT_METRICS)
    figures = ", ".join(f"{labels[k]} ±{100 * v:.1f} %" for k, v in record["floor"].items() if v is not None)
    lines = [f"noise floor of {record['host']}: {figures} ({record['runs']} identical runs of {record['variant']})",
             f"saved to {host_floor_file()}: every later run on this host quotes it in compare.md and calls an "
             "effect inside it \"within noise\""]
    if record["busy_runs"]:
        lines.append(f"warning: the host was busy during {', '.join(record['busy_runs'])}: this floor is "
                     "higher than a quiet host's; measure again when it is quiet")
    return lines
