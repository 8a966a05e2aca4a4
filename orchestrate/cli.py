"""``tokenswarm run|validate|report``: the command line, as ``(name, add_arguments, main)`` triples.

Stage: entry point. Every ``TokenswarmError`` becomes one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

from orchestrate.errors import ScenarioError, TokenswarmError
from orchestrate.results import DEFAULT_ROOT, variant_dirs


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


def add_run_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("scenario", type=Path, help="scenario YAML (scenarios/demo.yaml)")
    p.add_argument("--url", help="run against a server already running at this base URL (no launch)")
    p.add_argument("--users", type=_positive(int), help="concurrent users (overrides load.users)")
    p.add_argument("--spawn-rate", type=_positive(float), help="users started per second")
    p.add_argument("--num-prompts", type=_positive(int), help="send exactly this many requests")
    p.add_argument("--max-tokens", type=_positive(int), help="cap on each request's max_tokens")
    p.add_argument("--max-seconds", type=_positive(float), help="time cap per variant")
    p.add_argument("--dataset", help="ShareGPT V3 JSON file (or synthetic[:N])")
    p.add_argument("--results-dir", type=Path, default=DEFAULT_ROOT, help="where results/<run>/ goes")


def run_main(args: argparse.Namespace) -> int:
    from orchestrate.runloop import run_scenario
    from orchestrate.scenario import load_scenario
    scenario = load_scenario(args.scenario)
    load = {k: v for k, v in (("users", args.users), ("spawn_rate", args.spawn_rate or args.users),
                              ("num_prompts", args.num_prompts), ("max_tokens", args.max_tokens),
                              ("max_seconds", args.max_seconds), ("dataset", args.dataset)) if v is not None}
    server = {"launcher": "external", "url": args.url} if args.url else {}
    if args.url and not args.url.startswith(("http://", "https://")):
        raise ScenarioError(f"--url: must start with http:// or https://, got {args.url!r}")
    run = run_scenario(scenario.with_overrides(server=server, load=load), args.results_dir)
    statuses = [json.loads(p.summary_json.read_text())["status"] for p in variant_dirs(run)]
    return 0 if statuses and all(s == "completed" for s in statuses) else 1


def add_validate_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("scenario", type=Path)


def validate_main(args: argparse.Namespace) -> int:
    from orchestrate.scenario import load_scenario
    scenario = load_scenario(args.scenario)
    print(f"{args.scenario}: ok, {len(scenario.variants)} variant(s): "
          + ", ".join(v.name for v in scenario.variants))
    return 0


def add_report_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", type=Path, help="a results/<run>/ directory")


def report_main(args: argparse.Namespace) -> int:
    """Rebuild every summary of a run from its files alone (no server needed)."""
    from orchestrate.report import headline, latency_table
    from orchestrate.runloop import build_summary
    if not args.run_dir.is_dir():
        raise ScenarioError(f"{args.run_dir}: no such run directory")
    for paths in variant_dirs(args.run_dir):
        old = json.loads(paths.summary_json.read_text()) if paths.summary_json.exists() else {}
        keep = {k: old[k] for k in ("status", "error", "stopped_by", "planned_prompts", "sampling") if k in old}
        summary = build_summary(paths, old.get("scenario", args.run_dir.name), paths.dir.name, keep)
        print(f"== {paths.dir.name}")
        for line in headline(summary) + latency_table(summary):
            print(f"   {line}")
    return 0


COMMANDS = (
    ("run", "run a scenario: start each server variant, load it, report", add_run_arguments, run_main),
    ("validate", "check a scenario file without running anything", add_validate_arguments, validate_main),
    ("report", "rebuild summaries of a finished run from its files", add_report_arguments, report_main),
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tokenswarm", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name, help_text, add_args, fn in COMMANDS:
        p = sub.add_parser(name, help=help_text)
        add_args(p)
        p.set_defaults(fn=fn)
    args = parser.parse_args(argv)
    try:
        return args.fn(args)
    except TokenswarmError as exc:
        print(f"tokenswarm: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("tokenswarm: interrupted; servers stopped, results so far kept", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
