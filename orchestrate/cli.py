"""``tokenswarm run|validate|plan|report|compare|...``: the command line, as ``(name, add_arguments, main)`` triples.

Stage: entry point. Every ``TokenswarmError`` becomes one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import errno
import signal
import subprocess
import sys
from pathlib import Path
from typing import NoReturn

from orchestrate import version
from orchestrate.errors import ResultsError, ScenarioError, TokenswarmError
from orchestrate.results import VariantPaths, variant_dirs
from orchestrate.run_options import (
    add_join_token_file,
    add_load_arguments,
    add_run_arguments,
    load_overrides,
    positive,
    scenario_of,
    search_range,
    slo_limits,
    swarm_of,
    web_ui_of,
    with_load,
    with_search,
)
from orchestrate.scenario import pacing
from orchestrate.scenario.settings import retry_description
from orchestrate.scenario.spec import RANDOM_DATASET, Variant


def run_main(args: argparse.Namespace) -> int:
    from orchestrate.runloop import run_scenario
    return exit_code(run_scenario(scenario_of(args), args.results_dir, swarm_of(args), ui=web_ui_of(args),
                                  resume=args.resume))


def exit_code(run: Path) -> int:
    """0 when every variant of the run completed, else 1 (a variant without a readable summary did not)."""
    from orchestrate.report.summary import read_summary
    summaries = [read_summary(p) for p in variant_dirs(run)]
    return 0 if summaries and all(s is not None and s.status == "completed" for s in summaries) else 1


def add_capacity_arguments(p: argparse.ArgumentParser) -> None:
    add_run_arguments(p)
    search = p.add_argument_group("capacity search", "the highest load that meets the SLO, per variant, against "
                                  "one server start (a scenario's search: section, from flags)")
    search.add_argument("--slo", type=slo_limits, metavar="KEY=MS,...",
                        help="the limits each request is judged by: ttft_ms, tpot_ms, e2e_ms (e.g. "
                        "ttft_ms=2000,tpot_ms=100; overrides the scenario's slo)")
    search.add_argument("--over", choices=("users", "rate"), help="search concurrent users (default) or an "
                        "open-loop request rate (--users then caps the requests in flight)")
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
    return exit_code(run_scenario(with_search(scenario_of(args), args), args.results_dir, swarm_of(args),
                                  resume=args.resume))


def add_noise_floor_arguments(p: argparse.ArgumentParser) -> None:
    add_run_arguments(p)
    p.add_argument("--variant", help="the variant run again and again (default: the scenario's first)")
    p.set_defaults(repeats=2)


def noise_floor_main(args: argparse.Namespace) -> int:
    """One variant, ``--repeats`` identical runs (2 by default): the ratios between them are this host's noise."""
    from orchestrate.tools.noisefloor import describe, measure
    if args.ui or args.resume:
        raise ScenarioError("noise-floor runs headless, from the start: --ui and --resume do not apply")
    for line in describe(measure(scenario_of(args), args.variant, args.results_dir, swarm_of(args))):
        print(f"tokenswarm: {line}")
    return 0


def add_validate_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("scenario", type=Path)
    add_load_arguments(p)


def validate_main(args: argparse.Namespace) -> int:
    """The scenario with ``run``'s load flags applied, and every dataset file it names, read in full as
    ``run`` would; starts nothing."""
    from orchestrate.load.prompts import check_datasets
    from orchestrate.scenario.parse import load_scenario
    load = load_overrides(args)
    scenario = with_load(load_scenario(args.scenario).with_overrides(load=load), load)
    check_datasets(load for v in scenario.variants for load in (v.load, *v.steps))
    print(f"{args.scenario}: ok, {len(scenario.variants)} variant(s): "
          + ", ".join(v.name for v in scenario.variants))
    return 0


def add_plan_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("scenario", type=Path)


def plan_lines(variant: Variant) -> list[str]:
    """What ``tokenswarm run`` would start and send for one variant."""
    load = variant.load
    sizes = (f"{variant.search.prompts_per_user} prompts per user in each probe" if variant.search and
             variant.search.over == "users" else f"rate x {variant.search.probe_s:g} s of prompts in each probe"
             if variant.search else f"{load.users} users (spawn {load.spawn_rate:g}/s), {load.num_prompts} prompts")
    from orchestrate.server.launchers import server_command
    lines = [f"server ({variant.server.launcher}): {server_command(variant.server)}",
             f"load: {sizes} from {load.dataset}"
             + (f" ({load.input_tokens} tokens in, {load.output_tokens or load.max_tokens} out)"
                if load.dataset == RANDOM_DATASET else f", max_tokens {load.max_tokens}")
             + (", ignore_eos" if load.ignores_eos else "") + ", "
             + (f"cap {load.max_seconds:g} s" if load.max_seconds else "no time cap")
             + ("" if load.cache_prompt else ", cache_prompt false")]
    if load.warmup_prompts:
        lines.append(f"warm-up: {load.warmup_prompts} prompts after the server starts, counted nowhere")
    if load.rate is not None or load.stages:
        lines.append(f"load mode: {pacing.describe(load)}")
    if variant.sweep is not None:
        sweep = variant.sweep
        lines.append(f"sweep over {sweep.key}: {', '.join(map(str, sweep.values))} (one server start; "
                     f"{sweep.warmup_prompts} warm-up prompts first, {sweep.settle_s:g} s between steps; "
                     f"the load line above is the first step)")
    if variant.search is not None:
        search, slo = variant.search, variant.slo.as_dict() if variant.slo else {}
        lines.append(f"capacity search over {search.over} from {search.low:g} to {search.high:g}: the highest load "
                     f"whose steady state has {100 * search.attainment:g} % of requests within "
                     + ", ".join(f"{k} <= {v:g}" for k, v in slo.items())
                     + f" (after a warm-up of {search.warmup_prompts} prompts, bisected in log space to "
                     f"{100 * search.precision:g} %"
                     + (", probe the boundary again" if search.confirm else "") + f"; at most {search.max_probes} "
                     "probes, each a step)")
    if variant.retry_with:
        lines += [f"on load failure: retry once with {retry_description(variant)} (recorded as retried):",
                  f"  {server_command(variant.with_retry().server)}"]
    return lines


def plan_main(args: argparse.Namespace) -> int:
    """Print every variant and the exact server it starts; starts nothing."""
    from orchestrate.scenario.parse import load_scenario
    scenario = load_scenario(args.scenario)
    print(f"{args.scenario}: {scenario.name}, {len(scenario.variants)} variant(s)"
          + (f" x {scenario.repeats} repeats, interleaved: {len(scenario.variants) * scenario.repeats} server "
             f"starts" if scenario.repeats > 1 else ""))
    for variant in scenario.variants:
        print(f"\n== {variant.name}")
        for line in plan_lines(variant):
            print(f"   {line}")
    return 0


def add_report_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", type=Path, help="a results/<run>/ directory")


def report_main(args: argparse.Namespace) -> int:
    """Rebuild every summary of a run from its files alone (no server needed)."""
    from orchestrate.report.compare_report import comparable, write_comparison
    from orchestrate.report.console import console_lines
    from orchestrate.report.htmlreport import write_html_report
    from orchestrate.report.summary import rebuild_summary
    if not args.run_dir.is_dir():
        raise ScenarioError(f"{args.run_dir}: no such run directory")
    found = variant_dirs(args.run_dir)
    if not found and VariantPaths(args.run_dir).records.is_file():  # a plain Locust run's folder: its records
        found = [VariantPaths(args.run_dir)]
    if not found:
        raise ResultsError(f"{args.run_dir}: no results to report: neither variant folders (tokenswarm run) nor a "
                           "requests.jsonl (plain Locust: run it with --records-file DIR/requests.jsonl, and "
                           "--csv DIR/locust --json-file DIR/locust_stats for its cross-check)")
    for paths in found:
        summary = rebuild_summary(paths, args.run_dir.name)
        print(f"== {paths.dir.relative_to(args.run_dir) if paths.dir != args.run_dir else paths.dir.name}")
        for line in console_lines(summary):
            print(f"   {line}")
    if comparable([args.run_dir]):
        print(f"\ncomparison: {write_comparison([args.run_dir])}")
    print(f"report: {write_html_report(args.run_dir, found)}")
    return 0


def add_compare_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dirs", type=Path, nargs="+", metavar="RUN_DIR",
                   help="results/<run>/ directories; with several, compare.* is written into the first")
    p.add_argument("--baseline", help="variant the deltas are against (default: the first that completed)")


def compare_main(args: argparse.Namespace) -> int:
    """Rebuild ``compare.md``/``.json``/``.png`` from the runs' summaries (no server needed)."""
    from orchestrate.report.compare_report import comparable, write_comparison
    if args.run_dirs and all(p.is_dir() for p in args.run_dirs) and not comparable(args.run_dirs):
        raise ScenarioError(f"compare: {', '.join(map(str, args.run_dirs))} hold(s) one variant result: nothing to "
                            "compare with (give another run, or run the scenario with --repeats 2)")
    path = write_comparison(args.run_dirs, args.baseline)
    print(path.read_text(), end="")
    print(f"\nwritten: {path}" + (f" (the comparison of all {len(args.run_dirs)} runs, in the first)"
                                  if len(args.run_dirs) > 1 else ""))
    return 0


def add_worker_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--master-host", required=True, help="the host running `tokenswarm run ... --master`")
    p.add_argument("--master-port", type=positive(int), default=5557)
    p.add_argument("--once", action="store_true",
                   help="serve one master and exit (default: serve each variant's and each step's master in turn)")
    add_join_token_file(p, "the file holding the master's join token (a copy of the file `tokenswarm run --master` "
                        "names); default: TOKENSWARM_JOIN_TOKEN. Never pass the token itself on a command line")


def worker_main(args: argparse.Namespace) -> int:
    """A load generator for a master elsewhere: the Locust side only (no dataset, no server, no Docker).

    The master of ``tokenswarm run --master`` quits after each variant (and each sweep step), and a
    Locust worker quits with it; so this joins the next one, until Ctrl-C, a failure, or ``--once``.
    A worker waits up to five minutes for a master to appear (Locust's connect retries). A master that
    rejects its join token ends it (exit 2).
    """
    from orchestrate.load.jointoken import check_token_file
    from orchestrate.load.locust_run import worker_command
    if args.join_token_file:
        check_token_file(args.join_token_file)
    cmd = worker_command(args.master_host, args.master_port, args.join_token_file)
    served = 0
    while True:
        print("tokenswarm: " + " ".join(cmd[2:]) + (f"  (master {served + 1})" if not args.once else ""), flush=True)
        code = subprocess.call(cmd)
        served += 1
        if code != 0 or args.once:
            return code
        print(f"tokenswarm: master {served} finished; waiting for the next one (Ctrl-C to stop)", flush=True)


def add_serve_synthetic_arguments(p: argparse.ArgumentParser) -> None:
    from orchestrate.tools.refserver_cli import add_arguments
    add_arguments(p)


def serve_synthetic_main(args: argparse.Namespace) -> int:
    from orchestrate.tools.refserver_cli import serve_main
    return serve_main(args)


def add_calibrate_arguments(p: argparse.ArgumentParser) -> None:
    from orchestrate.tools.calibrate import add_arguments
    add_arguments(p)


def calibrate_main(args: argparse.Namespace) -> int:
    from orchestrate.tools.calibrate import run_calibration
    return run_calibration(args)


COMMANDS = (
    ("run", "run a scenario: start each server variant, load it, report", add_run_arguments, run_main),
    ("validate", "check a scenario file without running anything", add_validate_arguments, validate_main),
    ("plan", "print each variant and the exact server command it starts, without running anything",
     add_plan_arguments, plan_main),
    ("worker", "be a load generator for a master on another host", add_worker_arguments, worker_main),
    ("report", "rebuild a finished run's summaries, comparison and report.html from its files", add_report_arguments,
     report_main),
    ("compare", "compare the variants of one or more runs side by side (compare.md)", add_compare_arguments,
     compare_main),
    ("serve-synthetic", "a scripted llama.cpp-compatible streaming server with exact timing (calibration, tests)",
     add_serve_synthetic_arguments, serve_synthetic_main),
    ("calibrate", "measure this host's load-generator timing error and capacity against serve-synthetic",
     add_calibrate_arguments, calibrate_main),
    ("capacity", "find the most users (or requests/s) each variant serves within an SLO: a search of probes "
     "against one server start", add_capacity_arguments, capacity_main),
    ("noise-floor", "run one variant several times: the spread between identical runs, the smallest effect this "
     "host can show (compare.md quotes it)", add_noise_floor_arguments, noise_floor_main),
)


DISK_ERRORS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES)
"""Write failures under the results folder: one line, not a traceback."""


def _interrupt(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


DESCRIPTION = """\
Load-test llama.cpp's server (llama-server) the way it is used: replay ShareGPT conversations
with streaming at N concurrent users, time every token (TTFT, TPOT, inter-chunk gaps), and report
prefill and decode throughput, latency percentiles, errors by cause and memory, per server variant
and side by side, naming everything that differed between two variants (settings, host load,
prompts)."""

EPILOG = """\
examples:
  tokenswarm run scenarios/demo.yaml                     the demo on the embedded server
  tokenswarm run --url http://127.0.0.1:8080 -u 8 -t 5m  a server already running, no scenario file
  tokenswarm run scenarios/demo-matrix.yaml --repeats 3  every variant three times, interleaved
  tokenswarm run scenarios/demo.yaml --ui                Locust's web UI: ramp the users by hand
  tokenswarm capacity --url http://127.0.0.1:8080 --slo ttft_ms=2000,tpot_ms=100
                                                         how many users it serves within those limits
  tokenswarm compare results/RUN_A results/RUN_B         two runs side by side
Each command has its own --help."""


class _Parser(argparse.ArgumentParser):
    """Usage mistakes are one line, like every other error (``tokenswarm run --users 0``)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"tokenswarm: error: {message} (see {self.prog} --help)\n")


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog="tokenswarm", description=DESCRIPTION, epilog=EPILOG,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"tokenswarm {version()}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name, help_text, add_args, fn in COMMANDS:
        p = sub.add_parser(name, help=help_text, description=help_text)
        add_args(p)
        p.set_defaults(fn=fn)
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _interrupt)  # a `kill` cleans up like Ctrl-C
    try:
        return args.fn(args)
    except TokenswarmError as exc:
        print(f"tokenswarm: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("tokenswarm: worker interrupted; it left its master (which counts the requests it had in flight "
              "as lost)" if args.command == "worker" else "tokenswarm: interrupted; servers stopped, results so "
              "far kept", file=sys.stderr)
        return 130
    except OSError as exc:
        if exc.errno not in DISK_ERRORS:
            raise
        print(f"tokenswarm: error: cannot write {exc.filename or 'the results'}: {exc.strerror}; "
              f"what was written before is kept", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
