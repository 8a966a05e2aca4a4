"""``tokenswarm tune``: candidate after candidate, each a server start with its capacity search, chosen by the
strategy from the standings so far, until it is done or the budget is spent; then the answer.

Stage: the pipeline of a tune. Each candidate runs as any variant does (``runloop.run_variant``: launch, its
capacity search, stop always, its summary); its standing is read back from that summary (report stage), so the
choice of the next one depends on result files only, and ``--resume`` replays the same choices: a candidate
whose folder is finished is read, not run. ``tune.json`` is written after each.
"""

from __future__ import annotations

import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from orchestrate.load.locust_run import Swarm
from orchestrate.report.aggregates.tune import incumbent, standing
from orchestrate.report.htmlreport import write_html_report
from orchestrate.report.schema.tune import Standing
from orchestrate.report.summary import read_summary
from orchestrate.report.tunereport import write_tune_report
from orchestrate.results import VariantPaths, read_json, tune_json, write_json
from orchestrate.resume import finished, set_aside
from orchestrate.runloop import open_run, run_variant
from orchestrate.scenario.spec import Scenario, Search, Tune, Variant
from orchestrate.tune.strategy import budget_spent, floor, next_candidate, pruned
from orchestrate.variantrun import Context


class Ledger:
    """``tune.json``: the tune and its search as asked, and each candidate started, in order, with its floor and
    time; written whole after each."""

    def __init__(self, run: Path, tune: Tune, search: Search, slo: dict[str, float]) -> None:
        self.path = tune_json(run)
        self.tried: list[dict[str, Any]] = []
        self.pruned: dict[str, str] = {}
        """Each candidate a memory failure rules out → the failure (``strategy.pruned``), as the tune stands."""
        earlier = read_json(self.path) or {}
        self.before = {e["name"]: e for e in earlier.get("tried", [])}
        """The run resumed: its entries, for the time of the candidates kept."""
        self.head = {"tune": asdict(tune), "search": asdict(search), "slo": slo, "started_ts": time.time()}

    def add(self, name: str, low: float | None, wall_s: float | None, kept: bool) -> None:
        wall_s = self.before.get(name, {}).get("wall_s") if kept else wall_s
        self.tried.append({"name": name, "floor": low, "wall_s": None if wall_s is None else round(wall_s, 2),
                           "kept": kept})
        self.write()

    def write(self, ended: str | None = None) -> None:
        write_json(self.path, {**self.head, "tried": self.tried, "pruned": self.pruned, "ended": ended,
                               "ended_ts": time.time() if ended else None})

    @property
    def wall_s(self) -> float:
        return sum(e["wall_s"] or 0.0 for e in self.tried)


def run_tune(scenario: Scenario, results_root: Path, swarm: Swarm = Swarm(), resume: Path | None = None,
             detailed: bool = False) -> Path:
    """Tune the scenario's server settings (``scenario.tune``); returns the run folder, whose ``summary.md`` and
    ``report.html`` lead with the best command line."""
    tune, first = scenario.tune, scenario.variants[0]
    assert tune is not None and first.search is not None and first.slo is not None  # the parser holds them
    run, truncated = open_run(scenario, results_root, resume)
    search, variants = first.search, {v.name: v for v in scenario.variants}
    print(f"tokenswarm: {scenario.name}: tuning {len(tune.points)} candidates ({tune.strategy}, objective "
          f"{tune.objective}) -> {run}", flush=True)
    for line in truncated:
        print(f"tokenswarm: {line}", flush=True)
    context = Context(scenario.name, None, scenario.host_limits, cost=scenario.cost, detailed=detailed)
    ledger, tried = Ledger(run, tune, search, first.slo.as_dict()), dict[str, Standing]()
    ended = "interrupted"
    try:
        while True:
            name = next_candidate(tune, tried)
            spent = budget_spent(tune, len(ledger.tried), ledger.wall_s)
            if name is None or spent is not None:
                ended = spent or ("every candidate ran or was pruned" if tune.strategy == "grid" else
                                  "the climb found no neighbour of the best that beats it")
                break
            if tried:  # the page of the candidates so far, while this one runs (the last one's: below)
                write_tune_report(run)
                write_html_report(run)
            low = floor(search, tune, tried)
            variant = variants[name]
            if low is not None:
                variant = replace(variant, search=replace(search, low=low, start=low))
            tried[name] = try_candidate(run, context, variant, tune, ledger, low, swarm, resume is not None, tried)
            ledger.pruned = pruned(tune, tried)
    finally:
        ledger.write(ended)
        result = write_tune_report(run)
        write_html_report(run)
    print(f"\n== {scenario.name}: tune ended: {ended}; {len(ledger.tried)} of {len(tune.points)} candidates started",
          flush=True)
    if result is not None and result.best is not None:
        print(f"   best: {result.sentence}\n   {result.command}", flush=True)
        if result.runner_up:
            print(f"   runner-up: {result.runner_up}" + (" (within the noise of the best)"
                                                        if result.runner_up_within_noise else ""), flush=True)
    else:
        print("   no candidate met the SLO", flush=True)
    print(f"summary: {run / 'summary.md'}\nreport: {run / 'report.html'}", flush=True)
    return run


def try_candidate(run: Path, context: Context, variant: Variant, tune: Tune, ledger: Ledger, low: float | None,
                  swarm: Swarm, resuming: bool, tried: dict[str, Standing]) -> Standing:
    """Run one candidate (or keep it from the run resumed) and read its standing; the ledger gains its entry."""
    folder, n = run / variant.name, len(ledger.tried) + 1
    if resuming and folder.exists() and (status := finished(folder)) is not None:
        print(f"[tune] candidate {n}: {variant.name}: {status} before: kept", flush=True)
        ledger.add(variant.name, low, None, kept=True)
    else:
        if resuming and folder.exists():
            print(f"[tune] candidate {n}: {variant.name}: cut short before: set aside in {set_aside(run, folder)}",
                  flush=True)
        best = incumbent(tune, tried)
        print(f"[tune] candidate {n}: {variant.name}" + (
            f": first probe at {low:g}, the best so far ({best}: {tried[best].capacity:g}) less the noise"
            if low is not None and best else ": a full capacity search"), flush=True)
        started = time.monotonic()
        try:
            run_variant(context, variant, VariantPaths.create(run, variant.name), swarm=swarm)
        finally:
            ledger.add(variant.name, low, time.monotonic() - started, kept=False)
    paths = VariantPaths(folder)
    found = standing(read_summary(paths), paths, tune)
    print(f"[tune] {variant.name}: " + (f"{tune.objective} {found.value:g}" if found.value is not None
                                       else str(found.why)), flush=True)
    return found
