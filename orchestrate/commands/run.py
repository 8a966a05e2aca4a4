"""``tokenswarm run``, ``capacity`` and ``noise-floor``: the commands that run a load, their arguments and mains,
and the exit code of a run.

Stage: entry point. Each main builds everything from the flags first (the scenario, the API key, the load
generators: ``scenario_options``, ``generator_options``), so a mistake is one line before anything starts; then
hands the key over (``export_api_key``, the one place it reaches the environment) and runs. The run stage
(``runloop``, ``tools.noisefloor``) is imported inside the mains.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrate.commands.flags import add_run_arguments, positive, search_range, slo_limits
from orchestrate.commands.generator_options import api_key_of, swarm_of, web_ui_of
from orchestrate.commands.scenario_options import refuse_until, scenario_of, with_search
from orchestrate.errors import ScenarioError
from orchestrate.results import variant_dirs
from orchestrate.scenario.gates import Gate
from orchestrate.scenario.spec import LAUNCHER_KINDS, Scenario

if TYPE_CHECKING:
    from orchestrate.report.schema import Summary


def export_api_key(key: str | None) -> None:
    """The one place ``--api-key-file``'s key reaches the environment (``TOKENSWARM_API_KEY``,
    ``server/preflight.py``'s ``API_KEY_ENV``): pre-flight reads it there and Locust's users inherit it. It is never
    written to the results. Without the flag the environment is left as it is (the variable may be set already)."""
    if key is not None:
        from orchestrate.server.preflight import API_KEY_ENV
        os.environ[API_KEY_ENV] = key


def run_main(args: argparse.Namespace) -> int:
    from orchestrate.runloop import run_scenario
    scenario, api_key = scenario_of(args), api_key_of(args)
    if scenario.tune is not None:
        return tune_scenario(args, scenario)
    swarm, ui = swarm_of(args), web_ui_of(args)
    refuse_until(scenario, ui is not None)
    baseline = baseline_of(args, scenario.gates)
    export_api_key(api_key)
    return exit_code(run_scenario(scenario, args.results_dir, swarm, ui=ui, resume=args.resume,
                                   detailed=args.save_detailed), scenario.gates,
                     baseline)


def summaries_of(run: Path) -> dict[str, Summary | None]:
    """Each variant folder of a run (``repeat-1/name`` with repeats) → its summary, None where it has none."""
    from orchestrate.report.summary import read_summary
    return {str(p.dir.relative_to(run)): read_summary(p) for p in variant_dirs(run)}


def baseline_of(args: argparse.Namespace, gates: tuple[Gate, ...]) -> dict[str, Summary | None] | None:
    """``--baseline RUN``'s summaries, read before anything starts; a gate against a baseline without one, or a
    folder without summaries, is one line."""
    path = getattr(args, "baseline", None)
    relative = [str(g) for g in gates if g.relative]
    if path is None:
        if relative:
            raise ScenarioError(f"fail_if: {relative[0]!r} compares with a baseline run: give --baseline RUN")
        return None
    found = summaries_of(path) if path.is_dir() else {}
    if not any(found.values()):
        raise ScenarioError(f"--baseline: {path} is not a run folder with a summary.json (a run's folder under "
                            "results/)")
    if not relative:
        raise ScenarioError("--baseline: no gate compares with it; add one, e.g. --fail-if 'decode_tok_s < 0.95 x "
                            "baseline'")
    return found


def exit_code(run: Path, gates: tuple[Gate, ...] = (), baseline: dict[str, Summary | None] | None = None) -> int:
    """1 when a variant did not complete (one without a readable summary did not); else 3 when a gate failed
    (each verdict printed, one line, and kept in ``gates.json``); else 0. ``baseline``: the summaries a relative
    gate compares with."""
    from orchestrate.report.gates import GATE_FAILED, judge, write_gates
    summaries = summaries_of(run)
    completed = bool(summaries) and all(s is not None and s.status == "completed" for s in summaries.values())
    if not gates:
        return 0 if completed else 1
    verdicts = judge(gates, summaries, baseline)
    for verdict in verdicts:
        print(f"tokenswarm: {verdict.line()}", flush=True)
    print(f"gates: {write_gates(run, verdicts)}", flush=True)
    if not completed:
        return 1
    return GATE_FAILED if any(v.failed for v in verdicts) else 0


def tune_main(args: argparse.Namespace) -> int:
    """``tokenswarm tune``: a scenario's ``tune:`` (``run`` on such a scenario does the same)."""
    scenario = scenario_of(args)
    if scenario.tune is None:
        raise ScenarioError(f"{args.scenario or 'the scenario'}: has no tune: section (the settings to search, e.g. "
                            "tune: {space: {parallel: [4, 8, 16]}}); see docs/tuning.md")
    return tune_scenario(args, scenario)


def tune_scenario(args: argparse.Namespace, scenario: Scenario) -> int:
    """Run the tune; exit 0 when a candidate met the SLO (``summary.md`` names it), 1 when none did."""
    from orchestrate.results import read_json, tune_summary_json
    from orchestrate.tune.loop import run_tune
    if args.ui or args.fail_if or scenario.gates:
        raise ScenarioError("a tune runs headless and names the best candidate: --ui and gates (fail_if) do not "
                            "apply; gate a run of its winner instead")
    refuse_until(scenario, False)  # each candidate is a capacity search
    if not LAUNCHER_KINDS[scenario.variants[0].server.launcher].starts_server:
        raise ScenarioError("--url: a tune starts the server with each candidate's flags; it cannot tune one that "
                            "is already running")
    swarm = swarm_of(args)
    export_api_key(api_key_of(args))
    run = run_tune(scenario, args.results_dir, swarm, resume=args.resume, detailed=args.save_detailed)
    found = read_json(tune_summary_json(run))
    return 0 if isinstance(found, dict) and found.get("best") else 1


def add_capacity_arguments(p: argparse.ArgumentParser) -> None:
    add_run_arguments(p)
    search = p.add_argument_group("capacity search", "the highest load that meets the SLO, per variant, against "
                                  "one server start (a scenario's search: section, from flags)")
    search.add_argument("--slo", type=slo_limits, metavar="KEY=MS,...",
                        help="the limits each request is judged by: ttft_ms, tpot_ms, e2e_ms (e.g. "
                        "ttft_ms=2000,tpot_ms=100; overrides the scenario's slo)")
    search.add_argument("--over", choices=("users", "rate", "time_scale"), help="search concurrent users (default), "
                        "an open-loop request rate (--users then caps the requests in flight), or how fast a trace "
                        "is replayed (--trace)")
    search.add_argument("--range", type=search_range, metavar="LOW,HIGH", help="the loads to search between "
                        "(default 1,256)")
    search.add_argument("--precision", type=positive(float), help="stop when the boundary loads differ by this "
                        "share or less (default 0.05)")
    search.add_argument("--attainment", type=positive(float), help="share of steady-state requests that must meet "
                        "every limit for a probe to pass (default 0.99)")


def capacity_main(args: argparse.Namespace) -> int:
    """``tokenswarm capacity``: ``run`` with a capacity search on every variant, from the flags."""
    from orchestrate.runloop import run_scenario
    if args.ui:
        raise ScenarioError("capacity runs headless, probe by probe: --ui does not apply")
    scenario, api_key = scenario_of(args), api_key_of(args)
    scenario, swarm = with_search(scenario, args), swarm_of(args)
    if scenario.tune is not None:  # each candidate is a capacity search: the flags set them all
        return tune_scenario(args, scenario)
    refuse_until(scenario, False)
    baseline = baseline_of(args, scenario.gates)
    export_api_key(api_key)
    return exit_code(run_scenario(scenario, args.results_dir, swarm, resume=args.resume,
                                   detailed=args.save_detailed), scenario.gates, baseline)


def add_noise_floor_arguments(p: argparse.ArgumentParser) -> None:
    add_run_arguments(p)
    p.add_argument("--variant", help="the variant run again and again (default: the scenario's first)")
    p.set_defaults(repeats=2)


def noise_floor_main(args: argparse.Namespace) -> int:
    """One variant, ``--repeats`` identical runs (2 by default): the ratios between them are this host's noise."""
    from orchestrate.tools.noisefloor import describe, measure
    if args.ui or args.resume:
        raise ScenarioError("noise-floor runs headless, from the start: --ui and --resume do not apply")
    scenario, api_key = scenario_of(args), api_key_of(args)
    swarm = swarm_of(args)
    export_api_key(api_key)
    for line in describe(measure(scenario, args.variant, args.results_dir, swarm)):
        print(f"tokenswarm: {line}")
    return 0

